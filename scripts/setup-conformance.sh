#!/usr/bin/env bash
# setup-conformance.sh installs the official MCP conformance suite,
# @modelcontextprotocol/conformance, pinned in scripts/npm/conformance/, into
# .cache/conformance/, and checks that it runs on the pinned Node.js 22 that
# scripts/setup-node.sh installs (it runs that script first). Change the
# version in scripts/npm/conformance/package.json, regenerate the lock file
# (see below), then rerun this script.
#
# The lock file is written, without registry URLs like the other lock files,
# with the pinned Node.js first on PATH:
#
#	npm install --package-lock-only --omit-lockfile-registry-resolved
#
# It is idempotent and quick when nothing changed: a stamp file records the
# lock files it was installed from. It prints one line per thing it installs
# and nothing else on success; on failure it exits non-zero and says what to
# fix. It works from any directory.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/npm.sh"

conformance_src=scripts/npm/conformance
conformance_dir=.cache/conformance

# The Makefile (CONFORMANCE_JS) and docs/conformance.md spell this path out
# too.
conformance_js="$conformance_dir/node_modules/@modelcontextprotocol/conformance/dist/index.js"

bash scripts/setup-node.sh || die "scripts/setup-node.sh failed (output above)"

version="$(pinned_version "$conformance_src" @modelcontextprotocol/conformance)"

stamp="$conformance_dir/.installed"
# A new Node.js means installing and checking the suite again.
want="$(fingerprint "$node_src/package-lock.json" "$conformance_src/package-lock.json")"
if stamped "$stamp" "$want" && [[ -f $conformance_js ]]; then
	exit 0
fi

use_pinned_node
rm -f "$stamp"
npm_ci "$conformance_src" "$conformance_dir"
[[ -f $conformance_js ]] || die "$conformance_js is missing after installing @modelcontextprotocol/conformance"

# The CLI reports its own version; anything else means the install is broken
# or this Node.js cannot run it.
got="$("$node_bin" "$conformance_js" --version 2>/dev/null)" ||
	die "@modelcontextprotocol/conformance $version does not start on $("$node_bin" --version)"
[[ $got == "$version" ]] || die "$conformance_js reports version $got, want $version"
echo "$want" >"$stamp"
echo "installed @modelcontextprotocol/conformance $version in $conformance_dir"
