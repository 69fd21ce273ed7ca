#!/usr/bin/env bash
# bench.sh runs kshare's benchmark suite in one go: it fetches Kafka (once,
# like the tests), starts a broker of its own with scripts/kafka.sh, builds
# kshare and the benchmark driver (bench/cmd/kbench), runs every part, and
# stops the broker on every way out. The markdown table goes to stdout and
# to bench/results/<date>-<cores>c-kafka<version>.md; progress goes to
# stderr.
#
#   scripts/bench.sh                      the full run (N = 2,000,000)
#   BENCH_N=50000 BENCH_RUNS=1 scripts/bench.sh   a quick look
#   scripts/bench.sh --only 'java|franz'  extra flags go to `kbench suite`
#   scripts/bench.sh --only 'kshare-(json|tumble|insert)'   SELECT * against TUMBLE and INSERT
#
# Environment:
#   BENCH_N           orders per throughput topic (default 2000000)
#   BENCH_RUNS        rounds of every contestant; the table shows medians (default 3)
#   BENCH_PARTITIONS  partition counts of the throughput topics (default 1,8)
#   BENCH_SECTIONS    parts to run: throughput,latency,workers,pool,models (default all)
#   BENCH_MODEL_JOBS  jobs of the models section's one process at 64 calls at
#                     once (default 20000: 15.6 s at the ideal 1,280 rows/s);
#                     its other configurations scale with it
#   BENCH_OUT         results file or directory/ (default bench/results/)
#   KAFKA_VERSION     as for scripts/kafka.sh (default: its default, CI's)
#   KSHARE_BENCH_STATE_DIR  where the broker's pid is kept (default
#                     .cache/bench-kafka-state), apart from the tests' and
#                     other developers' brokers
#   KSHARE_BENCH_PG_STATE_DIR  the same for the PostgreSQL server (default
#                     .cache/bench-pg-state); KSHARE_PG_URL set: use that server
#
# Needs Go, Java 17, Maven and PostgreSQL 15 or later (its server and
# psql), as scripts/test.sh does. CPU time and peak
# memory come from the kernel's accounting of each contestant process, so
# /usr/bin/time is not needed.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

say() { echo "bench.sh: $*" >&2; }

n=${BENCH_N:-2000000}
runs=${BENCH_RUNS:-3}
partitions=${BENCH_PARTITIONS:-1,8}
sections=${BENCH_SECTIONS:-throughput,latency,workers,pool,models}
model_jobs=${BENCH_MODEL_JOBS:-20000}
out=${BENCH_OUT:-$root/bench/results/}
# scripts/kafka.sh's own default, so that the benchmark runs what CI tests.
version=${KAFKA_VERSION:-$(sed -n 's/^version=\${KAFKA_VERSION:-\([0-9.]*\)}$/\1/p' scripts/kafka.sh)}
if [[ -z $version ]]; then
	say "could not read the default Kafka version from scripts/kafka.sh; set KAFKA_VERSION"
	exit 1
fi
export KAFKA_VERSION=$version
cache=${KSHARE_CACHE_DIR:-$root/.cache}
export KSHARE_KAFKA_STATE_DIR=${KSHARE_BENCH_STATE_DIR:-$cache/bench-kafka-state}

# Only the broker this run started is ever stopped, by the pid kafka.sh
# recorded in our own state dir.
started=0
pg_started=0
pg_state=${KSHARE_BENCH_PG_STATE_DIR:-$cache/bench-pg-state}
cleanup() {
	if ((started)); then
		scripts/kafka.sh stop || true
	fi
	if ((pg_started)); then
		KSHARE_PG_STATE_DIR=$pg_state scripts/postgres.sh stop || true
	fi
}
trap cleanup EXIT
# Signals become an exit so that the EXIT trap stops the broker.
trap 'exit 130' INT
trap 'exit 143' TERM HUP

if [[ -f $KSHARE_KAFKA_STATE_DIR/pid ]] && kill -0 "$(<"$KSHARE_KAFKA_STATE_DIR/pid")" 2>/dev/null; then
	say "a broker is already recorded in $KSHARE_KAFKA_STATE_DIR (another bench.sh running?);"
	say "stop it with: KSHARE_KAFKA_STATE_DIR=$KSHARE_KAFKA_STATE_DIR scripts/kafka.sh stop"
	exit 1
fi

start=$SECONDS
scripts/kafka.sh fetch
mkdir -p bench/tmp
say "building kshare and kbench"
go build -o bench/tmp/kshare ./cmd/kshare
go build -o bench/tmp/kbench ./bench/cmd/kbench

started=1
env_lines=$(scripts/kafka.sh start)
eval "$env_lines"
broker_pid=$(<"$KSHARE_KAFKA_STATE_DIR/pid")

# The jdbc contestants and psql's \copy write into a PostgreSQL server of
# the run's own, unless KSHARE_PG_URL names one. Only the throughput
# section has them.
if [[ -z ${KSHARE_PG_URL-} && ,$sections, == *,throughput,* ]]; then
	pg_started=1
	pg_env=$(KSHARE_PG_STATE_DIR=$pg_state scripts/postgres.sh start)
	eval "$pg_env"
fi

bench/tmp/kbench suite \
	--bootstrap "$KSHARE_KAFKA_BOOTSTRAP" \
	--n "$n" --runs "$runs" --partitions "$partitions" --sections "$sections" \
	--java-cp "$cache/kafka/$version/*" --kafka-version "$version" \
	--kshare "$root/bench/tmp/kshare" --broker-pid "$broker_pid" --pg-url "${KSHARE_PG_URL-}" \
	--model-jobs "$model_jobs" \
	--out "$out" "$@" </dev/null

say "done in $((SECONDS - start)) s"
