# lib.sh holds what kafka.sh and postgres.sh both need to run a throwaway
# server: messages, usage, a free loopback port, the tail of its logs, and
# starting and stopping it. A script sets `me` (its name, for messages) and
# `state` (the folder of its server's records) and sources this file.

log() { echo "$me: $*" >&2; }
die() {
	log "$*"
	exit 1
}

# usage prints the sourcing script's header comment (its lines 2 up to
# `set -euo`) and exits 2.
usage() {
	sed -n '2,/^set -euo/p' "${BASH_SOURCE[-1]}" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
}

# free_port sets the variable named $1 to a loopback TCP port nobody listens
# on (no subshell, so ports_taken remembers what we handed out). It stays
# below the kernel's ephemeral range (32768+) so that outgoing connections
# do not take it between our check and the server's bind; the scripts'
# start retries on a clash.
free_port() {
	local p i
	for ((i = 0; i < 100; i++)); do
		p=$((20000 + RANDOM % 12000))
		if [[ " ${ports_taken-} " == *" $p "* ]]; then
			continue
		fi
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			ports_taken="${ports_taken-} $p"
			printf -v "$1" '%s' "$p"
			return 0
		fi
	done
	die "found no free loopback port"
}

# show_logs prints the last $1 lines of each of the other arguments that
# is a file with something in it, on stderr.
show_logs() {
	local n=$1 f
	shift
	for f in "$@"; do
		if [[ -s $f ]]; then
			echo "----- $f (last $n lines) -----" >&2
			tail -n "$n" "$f" >&2
		fi
	done
}

# alive reports whether process $1 runs; a zombie does not (a server is
# reparented to whoever reaps orphans here, which may be slow to).
alive() {
	local st
	st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
	[[ -n $st && $st != Z ]]
}

# start_retrying calls the script's start_once up to three times and prints
# the started server's `export ...` lines. free_port cannot reserve the port
# it picks, so another process may bind it first: start_once sets
# retry_port=1 when that is why it failed, and only then is another try
# worth it. $1 names the server in messages.
start_retrying() {
	local what=$1 attempt
	for attempt in 1 2 3; do
		if start_once; then
			cat "$state/env"
			return 0
		fi
		[[ ${retry_port-} == 1 ]] || exit 1
		log "a port was taken before the $what bound it; retrying ($attempt)"
	done
	die "could not start the $what"
}

# await_exit gives process $1, already asked to stop, $2 tenths of a second
# to exit, and then kills it: the server's files are thrown away, so a
# clean shutdown is a courtesy, not a need. $3 names it in messages.
await_exit() {
	local pid=$1 tenths=$2 what=$3 i
	for ((i = 0; i < tenths; i++)); do
		alive "$pid" || return 0
		sleep 0.1
	done
	log "$what $pid did not stop in time; killing it"
	kill -KILL "$pid" 2>/dev/null || true
	for ((i = 0; i < 50; i++)); do
		alive "$pid" || return 0
		sleep 0.1
	done
}

# need_running fails unless the server recorded in $state runs; $1 names it.
need_running() {
	running_pid >/dev/null || die "no $1 running (state in $state)"
}

# forget_server removes dir ($1), the folder start_once made for the
# server, and the records in $state. Only a folder named as the script
# names its own ($2.*) is removed: the records may have been edited or
# left by something else, and rm -rf must not follow them anywhere.
forget_server() {
	local dir=$1 stem=$2
	if [[ $dir == */$stem.* && -d $dir ]]; then
		rm -rf "$dir"
	fi
	rm -rf "$state"
}
