#!/usr/bin/env bash
# setup-mcp-proxy.sh installs mcp-proxy, the common stdio to Streamable HTTP
# bridge that bench/callbench compares airlock serve with, pinned in
# scripts/npm/mcp-proxy/, into .cache/mcp-proxy/, and checks that it runs on
# the pinned Node.js 22 that scripts/setup-node.sh installs (it runs that
# script first). `make bench` runs it. Change the version in
# scripts/npm/mcp-proxy/package.json, regenerate the lock file as
# scripts/setup-conformance.sh says, then rerun this script.
#
# It is idempotent and quick when nothing changed. It prints one line per
# thing it installs and nothing else on success; on failure it exits non-zero
# and says what to fix. It works from any directory.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/npm.sh"

# bench/callbench spells this path out too (its -mcp-proxy flag's default).
mcp_proxy_js=.cache/mcp-proxy/node_modules/mcp-proxy/dist/bin/mcp-proxy.mjs

bash scripts/setup-node.sh || die "scripts/setup-node.sh failed (output above)"

# Its one install script (tldjs's, for the public tunnel the benchmark
# never opens) is not needed.
install_checked scripts/npm/mcp-proxy .cache/mcp-proxy mcp-proxy "$mcp_proxy_js"
