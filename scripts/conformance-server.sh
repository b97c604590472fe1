#!/usr/bin/env bash
# conformance-server.sh runs the official MCP conformance suite in server
# mode against `airlock serve --http`, which fronts the go-sdk's
# conformance everything-server (a stdio server, every tool allowed by
# policy, sampling requests passed to the client). The suite runs once for
# each requirement set (2026-07-28: stateless requests; 2025-11-25:
# sessions), with the baseline conformance/server-baseline.yml; the run
# fails on a failure the baseline does not list and on a listed one that
# passes.
#
# Each requirement set has a gateway of its own, whose upstream speaks
# that set's protocol version (protocol_versions): the everything-server's
# 2025-era tools ask their client with requests of their own
# (ServerSession.Elicit, CreateMessage), which the SDK refuses to send
# while serving a 2026-07-28 request, so the 2025-11-25 scenarios that ask
# the client (tools-call-sampling, tools-call-elicitation, the SEP-1034
# and SEP-1330 elicitations) exercise the relay only over a 2025-11-25
# upstream connection; the 2026-07-28 ones relay input_required results.
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
airlock_pids=()
passed=false

# finish stops each airlock (its servers stop with it) and removes the
# directory, or names it when the run failed.
finish() {
	for pid in "${airlock_pids[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	if $passed; then
		rm -rf "$dir"
	else
		echo "${0##*/}: the run failed; airlock's log and the suite's results are in $dir" >&2
	fi
}
trap finish EXIT

"$go" build -o "$dir/airlock" ./cmd/airlock
"$go" build -o "$dir/everything-server" github.com/modelcontextprotocol/go-sdk/conformance/everything-server
"$go" build -o "$dir/taskserver" ./conformance/taskserver

# The configuration an operator would write to put the everything-server
# behind the gateway for clients that expect its own tool and prompt
# names: every tool, resource and prompt allowed, and a policy that allows
# every call, read and get, since approvals are not the suite's business
# (the gateway's approval scenarios are tested in gateway/); its sampling requests go to the client (sampling: allow: the
# client's model answers, and only a client that declared sampling is
# asked). Its tools only compute their answers, so none needs an effect
# of its own. The upstream speaks the requirement set's version ($1).
configure() {
	mkdir -p "$dir/$1"
	cat >"$dir/$1/airlock.yaml" <<EOF
servers:
  - id: conformance
    command: "$dir/everything-server"
    allowed_tools: ["*"]
    allowed_resources: ["*"]
    allowed_prompts: ["*"]
    tool_prefix: ""
    sampling: allow
    protocol_versions: ["$1"]
policy:
  rules:
    - {server: conformance, decision: allow}
EOF
}

# The tasks extension (io.modelcontextprotocol/tasks) is not part of any
# requirement set: its scenarios are run one by one, in front of
# conformance/taskserver, whose tools know nothing of tasks: the gateway
# makes them tasks, by the tasks: mapping an operator would write. Its
# tools run as tasks for clients that declare the extension, and
# failing_job and test_tool_with_task only as tasks, as the suite
# registers them. The upstream speaks 2026-07-28.
configure_tasks() {
	mkdir -p "$dir/$1"
	cat >"$dir/$1/airlock.yaml" <<EOF
servers:
  - id: tasks
    command: "$dir/taskserver"
    allowed_tools: ["*"]
    tool_prefix: ""
    protocol_versions: ["2026-07-28"]
    tasks:
      tools: [slow_compute, protocol_error_job, confirm_delete, multi_input]
      required: [failing_job, test_tool_with_task]
      ttl: 10m
      poll_interval: 1s
policy:
  rules:
    - {server: tasks, decision: allow}
EOF
}

task_scenarios=(tasks-lifecycle tasks-capability-negotiation tasks-wire-fields tasks-request-state-removal
	tasks-mrtr-input tasks-request-headers tasks-dispatch-and-envelope tasks-status-notifications
	tasks-required-task-error tasks-mrtr-composition)

# serve starts airlock serve for the requirement set $1 (or the tasks
# extension) on a free loopback port (port 0: airlock names it on stderr
# once it listens, with the catalog listed) and sets url to its endpoint.
serve() {
	if [[ $1 == tasks ]]; then
		configure_tasks "$1"
	else
		configure "$1"
	fi
	"$dir/airlock" serve --http 127.0.0.1:0 --config "$dir/$1/airlock.yaml" --state "$dir/$1/state" \
		2>"$dir/$1/airlock.stderr" &
	local pid=$!
	airlock_pids+=("$pid")
	url=""
	for _ in $(seq 600); do
		url="$(sed -n 's#^airlock: serving MCP at \(http://[^ ]*\) .*#\1#p' "$dir/$1/airlock.stderr")"
		[[ -n $url ]] && return
		kill -0 "$pid" 2>/dev/null || die "airlock serve exited (its stderr: $(cat "$dir/$1/airlock.stderr"))"
		sleep 0.1
	done
	die "airlock serve did not start listening within 60s"
}

status=0
for req in "${requirements[@]}"; do
	serve "$req"
	echo "conformance: server mode, requirements $req, against airlock serve at $url"
	# The suite writes its results under its working directory too.
	(cd "$dir" && PATH="$root/$node_dir/node_modules/.bin:$PATH" "$node" "$conformance_js" server \
		--url "$url" --requirements "$req" \
		--expected-failures "$root/conformance/server-baseline.yml" -o "$dir/results-$req" "$@") || status=1
done
serve tasks
echo "conformance: server mode, the tasks extension, against airlock serve at $url"
for scenario in "${task_scenarios[@]}"; do
	(cd "$dir" && PATH="$root/$node_dir/node_modules/.bin:$PATH" "$node" "$conformance_js" server \
		--url "$url" --scenario "$scenario" -o "$dir/results-$scenario" "$@") || status=1
done
[[ $status == 0 ]] && passed=true
exit $status
