#!/usr/bin/env bash
# Vendors the console's htmx and its SSE extension from the npm registry
# into console/static, at the versions named here, checking each package's
# integrity as npm records it. The console embeds these files; nothing is
# fetched when it runs.
set -euo pipefail
cd "$(dirname "$0")/.."
HTMX=2.0.11
SSE=2.2.4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "htmx.org@$HTMX" "htmx-ext-sse@$SSE" >/dev/null)
tar -xzf "$work/htmx.org-$HTMX.tgz" -C "$work" && mv "$work/package" "$work/htmx"
tar -xzf "$work/htmx-ext-sse-$SSE.tgz" -C "$work" && mv "$work/package" "$work/sse"
cp "$work/htmx/dist/htmx.min.js" console/static/htmx.min.js
cp "$work/htmx/LICENSE" console/static/htmx.LICENSE
cp "$work/sse/dist/sse.min.js" console/static/sse.min.js
cp "$work/sse/LICENSE" console/static/sse.LICENSE
echo "vendored htmx.org $HTMX and htmx-ext-sse $SSE into console/static"
