#!/usr/bin/env bash
# test.sh runs every kshare test: go vet, staticcheck and gofmt, then go test -race against a real
# Apache Kafka broker that it fetches (once, into .cache/kafka/), starts and
# always stops again. Tests that have no real broker fall back to kfake;
# here they all get the real one through KSHARE_KAFKA_BOOTSTRAP and the
# KSHARE_KAFKA_SASL_* variables (see scripts/kafka.sh).
#
#   scripts/test.sh                  every package
#   scripts/test.sh ./cmd/... -run X  arguments replace ./... for go test
#
# If KSHARE_KAFKA_BOOTSTRAP is already set, the tests use that broker and
# none is started (handy after `eval "$(scripts/kafka.sh start)"`); likewise
# KSHARE_PG_URL and PostgreSQL.
# Needs Go, Java 17, Maven and PostgreSQL 15 or later (initdb, pg_ctl); runs with no terminal and no standard input.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
start=$SECONDS

say() { echo "test.sh: $*" >&2; }

# Each run gets a broker of its own, recorded in a state dir of its own, so
# that two runs in one tree (or a developer's broker from kafka.sh) never
# see or stop each other's.
state=
pg_state=
pg_pid=
cleanup() {
	if [[ -n $pg_pid ]]; then
		# A start still under way when we were stopped: let it finish so
		# that the stop below finds what it made.
		wait "$pg_pid" 2>/dev/null || true
	fi
	if [[ -n $pg_state ]]; then
		rm -f "$pg_state.env"
		KSHARE_PG_STATE_DIR=$pg_state scripts/postgres.sh stop || true
		rm -rf "$pg_state"
	fi
	if [[ -n $state ]]; then
		KSHARE_KAFKA_STATE_DIR=$state scripts/kafka.sh stop || true
		rm -rf "$state"
	fi
}
trap cleanup EXIT

# Steps run in a process group of their own, in the background, and we wait
# for them: bash runs a trap only once a foreground command has finished,
# so a SIGTERM would otherwise leave the broker up until go test ended, and
# killing the group (by its id) also ends the test binaries go test started.
child=
on_signal() {
	if [[ -n $child ]]; then
		kill -TERM -- "-$child" 2>/dev/null || true
		wait "$child" 2>/dev/null || true
	fi
	exit "$1"
}
trap 'on_signal 130' INT
trap 'on_signal 143' TERM
trap 'on_signal 129' HUP
step() {
	local rc=0
	if command -v setsid >/dev/null 2>&1; then
		setsid "$@" </dev/null &
	else
		"$@" </dev/null &
	fi
	child=$!
	wait "$child" || rc=$?
	child=
	return "$rc"
}

# PostgreSQL starts in the background while the broker does: it takes a
# second, the broker ten or more.
if [[ -z ${KSHARE_PG_URL-} ]]; then
	pg_state=$(mktemp -d "${TMPDIR:-/tmp}/kshare-test-pg.XXXXXX")
	KSHARE_PG_STATE_DIR=$pg_state scripts/postgres.sh start >"$pg_state.env" </dev/null &
	pg_pid=$!
fi

if [[ -z ${KSHARE_KAFKA_BOOTSTRAP-} ]]; then
	scripts/kafka.sh fetch
	state=$(mktemp -d "${TMPDIR:-/tmp}/kshare-test-state.XXXXXX")
	export KSHARE_KAFKA_STATE_DIR=$state
	env_lines=$(scripts/kafka.sh start)
	eval "$env_lines"
else
	say "using the broker at KSHARE_KAFKA_BOOTSTRAP=$KSHARE_KAFKA_BOOTSTRAP"
fi
if [[ -n $pg_pid ]]; then
	rc=0
	wait "$pg_pid" || rc=$?
	pg_pid=
	if ((rc != 0)); then
		rm -f "$pg_state.env"
		say "PostgreSQL did not start (see above)"
		exit "$rc"
	fi
	pg_env=$(<"$pg_state.env")
	rm -f "$pg_state.env"
	eval "$pg_env"
else
	# Only what follows the '@': the URL carries the password.
	say "using the PostgreSQL server at KSHARE_PG_URL (...@${KSHARE_PG_URL##*@})"
fi
say "testing against Kafka at $KSHARE_KAFKA_BOOTSTRAP (SASL_SSL at ${KSHARE_KAFKA_SASL_BOOTSTRAP-none})"

args=("$@")
if ((${#args[@]} == 0)); then
	args=(./...)
fi

# vet's verdict is kept and the tests still run, so one run shows both.
vet=0
step go vet ./... || vet=$?
# staticcheck (pinned by the tool line in go.mod) finds what vet does not:
# dead code, results never used, deprecated calls. Its verdict counts
# with vet's.
step go tool staticcheck ./... || vet=$?
# gofmt's verdict counts with vet's: unformatted code fails the run.
unformatted=$(gofmt -l . | grep -v '^\.cache/' || true)
if [[ -n $unformatted ]]; then
	say "not gofmt-clean (run gofmt -w on them):"
	echo "$unformatted" >&2
	vet=1
fi
tests=0
# The timeout is generous for a shared two-core machine with the race
# detector on; a healthy run takes a few minutes.
step go test -race -count=1 -timeout 20m "${args[@]}" || tests=$?
# The same integration tests once more on kfake, the embedded broker the
# demo and a plain `go test` use: both brokers must behave as kshare expects.
# Only when no package list was given, so `test.sh ./pkg -run X` stays quick.
fake=0
if (($# == 0)); then
	say "again on kfake: the packages that talk to a broker"
	step env -u KSHARE_KAFKA_BOOTSTRAP -u KSHARE_KAFKA_SASL_BOOTSTRAP -u KSHARE_KAFKA_SASL_USER \
		-u KSHARE_KAFKA_SASL_PASSWORD -u KSHARE_KAFKA_CA_FILE \
		go test -race -count=1 -timeout 20m . ./admin/ ./sharegroup/ ./kafka/ ./cmd/... ./internal/... || fake=$?
fi

say "vet, staticcheck and gofmt exit $vet, go test exit $tests (real broker), $fake (kfake), $((SECONDS - start)) s in all"
if ((tests == 0)); then
	tests=$fake
fi
if ((tests != 0)); then
	if [[ -n $state ]]; then
		# The broker logs at WARN; its complaints often explain a failure.
		say "last lines of the broker's log:"
		KSHARE_KAFKA_STATE_DIR=$state scripts/kafka.sh log 2>/dev/null | tail -n 40 >&2 || true
	fi
	exit "$tests"
fi
exit "$vet"
