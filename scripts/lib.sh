# lib.sh holds what kafka.sh and postgres.sh both need to run a throwaway
# server: messages, usage, a free loopback port and the tail of its logs.
# A script sets `me` (its name, for messages) and sources this file.

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
