#!/usr/bin/env bash
# conformance-server.sh runs the official MCP conformance suite in server
# mode against `airlock serve --http`, which fronts the go-sdk's
# conformance everything-server (a stdio server, every tool allowed by
# policy). The suite runs twice against the same URL, once for each
# requirement set (2026-07-28: stateless requests; 2025-11-25: sessions),
# with the baseline conformance/server-baseline.yml; the run fails on a
# failure the baseline does not list and on a listed one that passes.
#
# It builds airlock and the everything-server (from the go-sdk version
# go.mod requires, out of the module cache) into a temporary directory,
# which also holds the configuration, Airlock's state and log, and the
# suite's results; the directory is removed when the run passes, and kept,
# and named, when it fails. airlock listens on a free loopback port; the
# script stops it, and everything it started, when it ends.
#
# It needs the suite and Node.js from scripts/setup-conformance.sh (the
# Makefile's conformance targets run that first) and works from any
# directory. Arguments are passed to every run of the suite (such as
# --verbose).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/npm.sh"

# The Makefile (CONFORMANCE_JS) and docs/conformance.md spell this path out
# too.
conformance_js="$root/.cache/conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js"
node="$root/$node_bin"
[[ -f $conformance_js && -x $node ]] ||
	die "the conformance suite is not installed: run bash scripts/setup-conformance.sh (make conformance does)"

requirements=(2026-07-28 2025-11-25)
go=${GO:-go}

dir="$(mktemp -d)"
airlock_pid=""
passed=false

# finish stops airlock (its servers stop with it) and removes the
# directory, or names it when the run failed.
finish() {
	if [[ -n $airlock_pid ]]; then
		kill -TERM "$airlock_pid" 2>/dev/null || true
		wait "$airlock_pid" 2>/dev/null || true
	fi
	if $passed; then
		rm -rf "$dir"
	else
		echo "${0##*/}: the run failed; airlock's log and the suite's results are in $dir" >&2
	fi
}
trap finish EXIT

"$go" build -o "$dir/airlock" ./cmd/airlock
"$go" build -o "$dir/everything-server" github.com/modelcontextprotocol/go-sdk/conformance/everything-server

# The configuration an operator would write to put the everything-server
# behind the gateway for clients that expect its own tool names: every
# tool allowed, and a policy that allows every call, since approvals are
# not the suite's business (the gateway's approval scenarios are tested in
# gateway/). Its tools only compute their answers, so none needs an
# effect of its own.
cat >"$dir/airlock.yaml" <<EOF
servers:
  - id: conformance
    command: "$dir/everything-server"
    allowed_tools: ["*"]
    tool_prefix: ""
policy:
  rules:
    - {server: conformance, decision: allow}
EOF

# Port 0: airlock picks a free loopback port and names it on stderr once
# it listens, with the catalog listed.
"$dir/airlock" serve --http 127.0.0.1:0 --config "$dir/airlock.yaml" --state "$dir/state" \
	2>"$dir/airlock.stderr" &
airlock_pid=$!
url=""
for _ in $(seq 600); do
	url="$(sed -n 's#^airlock: serving MCP at \(http://[^ ]*\) .*#\1#p' "$dir/airlock.stderr")"
	[[ -n $url ]] && break
	kill -0 "$airlock_pid" 2>/dev/null || die "airlock serve exited (its stderr: $(cat "$dir/airlock.stderr"))"
	sleep 0.1
done
[[ -n $url ]] || die "airlock serve did not start listening within 60s"

status=0
for req in "${requirements[@]}"; do
	echo "conformance: server mode, requirements $req, against airlock serve at $url"
	# The suite writes its results under its working directory too.
	(cd "$dir" && PATH="$root/$node_dir/node_modules/.bin:$PATH" "$node" "$conformance_js" server \
		--url "$url" --requirements "$req" \
		--expected-failures "$root/conformance/server-baseline.yml" -o "$dir/results-$req" "$@") || status=1
done
[[ $status == 0 ]] && passed=true
exit $status
