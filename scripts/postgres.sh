#!/usr/bin/env bash
# postgres.sh runs a throwaway PostgreSQL server for kshare's tests (the
# 'jdbc' sink's), from the PostgreSQL 15 or later already on the machine
# (initdb, pg_ctl): no Docker, no system-wide cluster.
#
#   scripts/postgres.sh start   initdb + start a server, print `export ...` lines
#   scripts/postgres.sh env     print the `export ...` lines of the running server
#   scripts/postgres.sh log     print the running server's log
#   scripts/postgres.sh restart stop the server at once and start it again (tests of retries)
#   scripts/postgres.sh stop    stop the server this script started, remove its files
#
# Typical use: eval "$(scripts/postgres.sh start)"; go test ./...; scripts/postgres.sh stop
#
# Environment:
#   KSHARE_CACHE_DIR     the cache folder (default <repo>/.cache); only the
#                        default state dir lives there
#   KSHARE_PG_STATE_DIR  where start records the server's dir and addresses
#                        (default <repo>/.cache/pg-state); give each
#                        concurrent server its own
#   KSHARE_PG_BIN        folder of initdb and pg_ctl (default: PATH, then
#                        /usr/local/bin, then the newest /usr/lib/postgresql/*/bin)
#   KSHARE_PG_START_TIMEOUT  seconds start waits for the server (default 60)
#
# The server listens on 127.0.0.1 only, on a free port, with its unix socket
# in its own directory (not /var/run/postgresql). Every connection, TCP or
# socket, needs the password of the user 'kshare' (scram-sha-256), made up
# at each start, so that a test of a wrong password meets a real refusal.
# 'kshare' is the cluster's superuser and owns the database 'kshare'.
#
# PostgreSQL refuses to run as root: as root (CI) the server runs as the
# user 'postgres' (runuser, setpriv or su, whichever is present), which owns
# the server's directory; otherwise it runs as the current user.
set -euo pipefail

me=postgres.sh
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${KSHARE_CACHE_DIR:-$root/.cache}
state=${KSHARE_PG_STATE_DIR:-$cache/pg-state}
start_timeout=${KSHARE_PG_START_TIMEOUT:-60}
pg_user=kshare
pg_db=kshare

# find_bin sets bin to the folder holding initdb and pg_ctl of PostgreSQL
# 15 or later. Debian and Ubuntu keep them off PATH, under
# /usr/lib/postgresql/<major>/bin.
find_bin() {
	local d cands=()
	if [[ -n ${KSHARE_PG_BIN-} ]]; then
		cands=("$KSHARE_PG_BIN")
	else
		if command -v initdb >/dev/null 2>&1; then
			cands+=("$(dirname "$(command -v initdb)")")
		fi
		cands+=(/usr/local/bin)
		# Newest major first.
		while IFS= read -r d; do
			cands+=("$d")
		done < <(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k4,4nr)
	fi
	for d in "${cands[@]}"; do
		if [[ -x $d/initdb && -x $d/pg_ctl ]]; then
			bin=$d
			local v major
			v=$("$bin/initdb" --version) || die "$bin/initdb --version failed"
			major=$(sed -E 's/.* ([0-9]+)(\.[0-9]+)*.*/\1/' <<<"$v")
			# The sink's checks read catalogs as PostgreSQL 15 has them,
			# and 15 is what CI runs.
			if ! [[ $major =~ ^[0-9]+$ ]] || ((major < 15)); then
				die "$bin/initdb is '$v': the tests need PostgreSQL 15 or later"
			fi
			return 0
		fi
	done
	die "initdb and pg_ctl not found (looked in ${cands[*]}): install PostgreSQL 15 or later (apt-get install postgresql), or set KSHARE_PG_BIN"
}

# as_server runs its arguments as the user the server runs as.
as_server() {
	if ((EUID != 0)); then
		"$@"
		return
	fi
	if command -v runuser >/dev/null 2>&1; then
		runuser -u postgres -- "$@"
	elif command -v setpriv >/dev/null 2>&1; then
		setpriv --reuid=postgres --regid=postgres --init-groups -- "$@"
	else
		local q
		printf -v q '%q ' "$@"
		su -s /bin/sh postgres -c "$q"
	fi
}

# running_pid prints the pid of the server recorded in $state, if that
# server still runs: its postmaster.pid names the pid, and the process's
# command line must name our data dir, so that a recycled pid is never
# taken for our server.
running_pid() {
	local pid dir
	[[ -f $state/dir ]] || return 1
	dir=$(<"$state/dir")
	[[ -f $dir/data/postmaster.pid ]] || return 1
	pid=$(head -n 1 "$dir/data/postmaster.pid")
	if [[ $pid =~ ^[0-9]+$ ]] && alive "$pid" &&
		tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$dir/data"; then
		echo "$pid"
		return 0
	fi
	return 1
}

cmd_start() {
	local pid
	if pid=$(running_pid); then
		log "server already running (pid $pid)"
		cat "$state/env"
		return 0
	fi
	find_bin
	if ((EUID == 0)) && ! id postgres >/dev/null 2>&1; then
		die "running as root, but there is no user 'postgres' to run the server as (PostgreSQL refuses root): create one, or run as another user"
	fi
	need_psql
	start_retrying server
}

need_psql() {
	psql=$(command -v psql 2>/dev/null || true)
	if [[ -z $psql && -x $bin/psql ]]; then
		psql=$bin/psql
	fi
	[[ -n $psql ]] || die "psql not found: install the PostgreSQL client (apt-get install postgresql-client)"
}

start_once() {
	retry_port=0
	local dir port password
	# The server's files live in a temporary folder, not the cache: they
	# are thrown away at stop, the unix socket's path must stay under the
	# kernel's 107 bytes, and as root the 'postgres' user must be able to
	# reach the folder, which a cache under a private home may not allow.
	dir=$(mktemp -d "${TMPDIR:-/tmp}/kshare-pg.XXXXXX")
	chmod 0755 "$dir"
	free_port port
	password=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
	mkdir -p "$dir/sock"
	printf '%s\n' "$password" >"$dir/pwfile"
	if ((EUID == 0)); then
		chown -R postgres: "$dir"
		if ! as_server test -w "$dir"; then
			rm -rf "$dir"
			die "the user 'postgres' cannot reach $dir (a parent folder is closed to it): set TMPDIR to a folder it can reach, such as /tmp"
		fi
	fi
	chmod 0600 "$dir/pwfile"
	# --no-sync: the cluster is thrown away, durability buys nothing here.
	if ! as_server "$bin/initdb" -D "$dir/data" --username="$pg_user" --pwfile="$dir/pwfile" \
		--auth=scram-sha-256 --encoding=UTF8 --locale=C --no-sync >"$dir/initdb.log" 2>&1 </dev/null; then
		show_logs 40 "$dir/initdb.log" "$dir/server.log" "$dir/psql.log"
		rm -rf "$dir"
		die "initdb failed"
	fi
	rm -f "$dir/pwfile"
	# fsync off and no synchronous commit: the data is thrown away at stop,
	# so a crash-safe disk buys nothing and would slow every test commit
	# on a shared machine. The sink still commits transactions as it
	# would on a real server.
	cat >>"$dir/data/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir/sock'
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 100
shared_buffers = 32MB
password_encryption = scram-sha-256
log_min_messages = warning
EOF
	mkdir -p "$state"
	echo "$dir" >"$state/dir"
	local t0 t1
	t0=$(date +%s%N)
	# pg_ctl -w waits until the server accepts connections; its output
	# goes to a file so that start can run inside $(...).
	if ! as_server "$bin/pg_ctl" start -D "$dir/data" -l "$dir/server.log" -w -t "$start_timeout" \
		>"$dir/pg_ctl.log" 2>&1 </dev/null; then
		show_logs 40 "$dir/initdb.log" "$dir/server.log" "$dir/psql.log"
		if grep -qs "could not bind\|Address already in use" "$dir/server.log"; then
			retry_port=1
		fi
		as_server "$bin/pg_ctl" stop -D "$dir/data" -m immediate >/dev/null 2>&1 </dev/null || true
		rm -rf "$dir" "$state"
		log "the server did not start"
		return 1
	fi
	if ! PGPASSWORD=$password "$psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U "$pg_user" -d postgres \
		-c "CREATE DATABASE $pg_db OWNER $pg_user" >"$dir/psql.log" 2>&1 </dev/null; then
		show_logs 40 "$dir/initdb.log" "$dir/server.log" "$dir/psql.log"
		cmd_stop >/dev/null 2>&1 || true
		die "could not create the database '$pg_db'"
	fi
	t1=$(date +%s%N)
	cat >"$state/env" <<EOF
export KSHARE_PG_URL=postgres://$pg_user:$password@127.0.0.1:$port/$pg_db?sslmode=disable
export KSHARE_PG_HOST=127.0.0.1
export KSHARE_PG_PORT=$port
export KSHARE_PG_USER=$pg_user
export KSHARE_PG_PASSWORD=$password
export KSHARE_PG_DATABASE=$pg_db
export KSHARE_PG_LOG=$dir/server.log
EOF
	log "PostgreSQL $("$bin/pg_ctl" --version | awk '{print $3}') up in $(((t1 - t0) / 1000000)) ms (pid $(running_pid || echo '?'), 127.0.0.1:$port, dir $dir)"
}

cmd_stop() {
	[[ -f $state/dir ]] || {
		log "no server recorded in $state"
		return 0
	}
	local dir pid
	dir=$(<"$state/dir")
	if pid=$(running_pid); then
		find_bin
		# Fast shutdown ends the sessions at once; the data is thrown
		# away, so a server that still hangs is killed by its pid.
		as_server "$bin/pg_ctl" stop -D "$dir/data" -m fast -w -t 15 >"$dir/pg_ctl.log" 2>&1 </dev/null ||
			cat "$dir/pg_ctl.log" >&2
		# pg_ctl returns once postmaster.pid is gone, a moment before the
		# process has exited.
		await_exit "$pid" 50 server
	fi
	forget_server "$dir" kshare-pg
	log "server stopped"
}

cmd_env() {
	need_running server
	cat "$state/env"
}

cmd_log() {
	need_running server
	cat "$(<"$state/dir")/server.log"
}

# cmd_restart stops the running server at once (its sessions end, as in a
# crash or a failover) and starts it again on the same data, port and
# password: what the tests of a sink's retries need.
cmd_restart() {
	local dir
	need_running server
	dir=$(<"$state/dir")
	find_bin
	if ! as_server "$bin/pg_ctl" restart -D "$dir/data" -m immediate -l "$dir/server.log" -w -t "$start_timeout" \
		>"$dir/pg_ctl.log" 2>&1 </dev/null; then
		show_logs 40 "$dir/server.log" "$dir/pg_ctl.log"
		die "the server did not restart"
	fi
	log "restarted (pid $(running_pid || echo '?'))"
}

case ${1-} in
start) cmd_start ;;
restart) cmd_restart ;;
stop) cmd_stop ;;
env) cmd_env ;;
log) cmd_log ;;
-h | --help | help) usage ;;
*)
	log "unknown command '${1-}'"
	usage
	;;
esac
