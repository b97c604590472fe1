#!/usr/bin/env bash
# setup-postgres.sh starts the project-local PostgreSQL 15 that the tests of
# store/postgres (and of the host on PostgreSQL) run against, and prints its
# URL on stdout, for AIRLOCK_TEST_POSTGRES; everything else goes to stderr.
#
# The cluster lives in .cache/postgres (AIRLOCK_PG_DATA, for a cluster of
# its own elsewhere: a test that stops and starts its server), listens on
# 127.0.0.1 only (port AIRLOCK_PG_PORT, default 55432) and on a unix socket in its data directory,
# and trusts every connection from loopback: it holds nothing but test
# databases. It is idempotent: a running server is reused, one that is down
# (after a reboot, or a crash that left a stale pid file) is started again.
#
#   scripts/setup-postgres.sh        start it if needed, print the URL
#   scripts/setup-postgres.sh stop   stop it (fast shutdown)
#
# initdb and postgres refuse to run as root: as root, the script runs them
# as the postgres user. The binaries are taken from AIRLOCK_PG_BIN (default
# /usr/local/bin). It works from any directory.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

die() {
	echo "setup-postgres: $*" >&2
	exit 1
}

port=${AIRLOCK_PG_PORT:-55432}
[[ $port =~ ^[0-9]+$ ]] || die "AIRLOCK_PG_PORT=$port is not a port number"

# The binaries: AIRLOCK_PG_BIN, else those on this machine (linked into
# /usr/local/bin, or where Debian's postgresql-15 package puts them), else,
# as root on Debian, that package installed now.
has_bin() { [[ -x $1/initdb && -x $1/pg_ctl && -x $1/postgres ]]; }
debian=/usr/lib/postgresql/15/bin
if [[ -n ${AIRLOCK_PG_BIN:-} ]]; then
	bin=$AIRLOCK_PG_BIN
elif has_bin /usr/local/bin; then
	bin=/usr/local/bin
else
	bin=$debian
	if ! has_bin "$bin" && [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
		echo "setup-postgres: installing Debian's postgresql-15" >&2
		apt-get install -y -q postgresql-15 >&2 || die "apt-get install postgresql-15 failed"
	fi
fi
has_bin "$bin" || die "initdb, pg_ctl or postgres not found in $bin: install PostgreSQL 15 (Debian: apt-get install postgresql-15) or set AIRLOCK_PG_BIN to its bin directory"

# .cache may be a symbolic link; the server is given the real path.
if [[ -n ${AIRLOCK_PG_DATA:-} ]]; then
	mkdir -p "$(dirname "$AIRLOCK_PG_DATA")"
	data="$(cd "$(dirname "$AIRLOCK_PG_DATA")" && pwd -P)/$(basename "$AIRLOCK_PG_DATA")"
else
	mkdir -p .cache
	data="$(cd .cache && pwd -P)/postgres"
fi

# as_db runs a command as the user that owns the cluster.
as_db() {
	if [[ $(id -u) == 0 ]]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

running() {
	as_db "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1
}

# accepting waits up to ten seconds for the server to accept connections on
# loopback; without pg_isready (it sits beside the real pg_ctl), it trusts
# pg_ctl status.
isready="$(dirname "$(readlink -f "$bin/pg_ctl")")/pg_isready"
accepting() {
	[[ -x $isready ]] || return 0
	for _ in $(seq 20); do
		"$isready" -q -h 127.0.0.1 -p "$port" -t 2 && return 0
		sleep 0.5
	done
	return 1
}

if [[ ${1:-} == stop ]]; then
	if running; then
		as_db "$bin/pg_ctl" -D "$data" -m fast -w stop >&2
	fi
	exit 0
fi
[[ $# == 0 ]] || die "usage: $0 [stop]"

if [[ ! -f $data/PG_VERSION ]]; then
	if [[ $(id -u) == 0 ]]; then
		id postgres >/dev/null 2>&1 || die "running as root needs a postgres user to own the cluster"
	fi
	rm -rf "$data"
	mkdir -m 0700 "$data"
	[[ $(id -u) != 0 ]] || chown postgres: "$data"
	echo "setup-postgres: creating a cluster in $data" >&2
	as_db "$bin/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --locale=C >"$data.initdb.log" 2>&1 ||
		die "initdb failed; its output is in $data.initdb.log"
	rm -f "$data.initdb.log"
	# Loopback only, the socket beside the data, and room for the many
	# connections of tests that open several stores at once. Durability
	# stays on: the journal's tests rely on it.
	as_db tee -a "$data/postgresql.conf" >/dev/null <<EOF
# Set by scripts/setup-postgres.sh.
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$data'
max_connections = 300
shared_buffers = 32MB
fsync = on
synchronous_commit = on
EOF
fi

if running && ! accepting; then
	# A pid file whose process does not answer: a server that was killed
	# and not yet reaped, or a pid reused since a crash.
	echo "setup-postgres: the server in $data does not answer; starting it again" >&2
	as_db "$bin/pg_ctl" -D "$data" -m immediate -w stop >/dev/null 2>&1 || true
fi
if ! running; then
	# pg_ctl status found no live server: a pid file left by a crash is
	# stale, and postgres would refuse to start beside it.
	rm -f "$data/postmaster.pid"
	echo "setup-postgres: starting PostgreSQL on 127.0.0.1:$port" >&2
	as_db "$bin/pg_ctl" -D "$data" -l "$data/server.log" -w -t 60 -o "-p $port" start >/dev/null ||
		die "PostgreSQL did not start; see $data/server.log"
fi

echo "postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
