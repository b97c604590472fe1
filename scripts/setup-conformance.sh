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

# The CLI reports its own version; anything else means the install is broken
# or this Node.js cannot run it.
install_checked "$conformance_src" "$conformance_dir" @modelcontextprotocol/conformance "$conformance_js"
