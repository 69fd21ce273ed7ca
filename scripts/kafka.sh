#!/usr/bin/env bash
# kafka.sh runs a throwaway single-node Apache Kafka broker (KRaft, combined
# broker+controller) for kshare's tests, from the jars on Maven Central: no
# Docker, no system-wide install.
#
#   scripts/kafka.sh fetch   resolve the jars into .cache/kafka/<version>/ (once)
#   scripts/kafka.sh start   format + start a broker, print `export ...` lines
#   scripts/kafka.sh env     print the `export ...` lines of the running broker
#   scripts/kafka.sh log     print the running broker's log
#   scripts/kafka.sh stop    stop the broker this script started, remove its files
#   scripts/kafka.sh cluster-id  read 16-byte chunks on stdin, print an id for
#                           each (what start uses; for the harness's tests)
#
# Typical use: eval "$(scripts/kafka.sh start)"; go test ./...; scripts/kafka.sh stop
#
# Environment:
#   KAFKA_VERSION           Kafka release to run (default 4.3.1, oldest 4.2.0)
#   KSHARE_CACHE_DIR        where jars are kept (default <repo>/.cache)
#   KSHARE_KAFKA_STATE_DIR  where start records pid and addresses (default
#                           <repo>/.cache/kafka-state); give each concurrent
#                           broker its own
#   KSHARE_KAFKA_START_TIMEOUT  seconds start waits for the broker (default 120)
#   KSHARE_KAFKA_FIRST_PORTS  "PLAIN CONTROLLER SASL": ports for the first
#                           attempt instead of free ones (for the test of
#                           the retry after a port clash)
#
# The broker listens on loopback only: PLAINTEXT for most tests and SASL_SSL
# with SCRAM-SHA-256/512 for the connector's security tests. Its certificates
# are made here with openssl and live only as long as the broker.
set -euo pipefail

me=kafka.sh
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
version=${KAFKA_VERSION:-4.3.1}
cache=${KSHARE_CACHE_DIR:-$root/.cache}
jars=$cache/kafka/$version
state=${KSHARE_KAFKA_STATE_DIR:-$cache/kafka-state}
start_timeout=${KSHARE_KAFKA_START_TIMEOUT:-120}

check_version() {
	local major minor
	if [[ ! $version =~ ^([0-9]+)\.([0-9]+)\.[0-9]+$ ]]; then
		die "KAFKA_VERSION=$version is not a release number like 4.3.1"
	fi
	major=${BASH_REMATCH[1]} minor=${BASH_REMATCH[2]}
	# Share groups are generally available from 4.2; older brokers would
	# need feature flags and behave differently.
	if ((major < 4 || (major == 4 && minor < 2))); then
		die "KAFKA_VERSION=$version is too old: share groups need Kafka 4.2.0 or later"
	fi
}

need() {
	command -v "$1" >/dev/null 2>&1 || die "$1 not found on PATH: $2"
}

cmd_fetch() {
	check_version
	if [[ -f $jars/.complete ]]; then
		return 0
	fi
	need java "install a Java 17 runtime (apt-get install openjdk-17-jre-headless)"
	need mvn "install Maven (apt-get install maven)"
	mkdir -p "$cache/kafka"
	local tmp
	tmp=$(mktemp -d "$cache/kafka/.fetch-$version.XXXXXX")
	log "fetching Kafka $version jars from Maven Central into $jars (about a minute, once)"
	# Maven's output goes to a file: even -q prints terminal colour codes,
	# and only a failure needs its words.
	if ! mvn -q -B -Dstyle.color=never -f "$root/scripts/kafka/pom.xml" dependency:copy-dependencies \
		-DoutputDirectory="$tmp" -Dkafka.version="$version" >"$tmp.log" 2>&1 </dev/null; then
		sed 's/\x1b\[[0-9;]*m//g' "$tmp.log" >&2
		rm -rf "$tmp" "$tmp.log"
		die "maven could not resolve Kafka $version (is the version published?)"
	fi
	rm -f "$tmp.log"
	if [[ ! -f $tmp/kafka_2.13-$version.jar ]]; then
		rm -rf "$tmp"
		die "maven finished but kafka_2.13-$version.jar is missing"
	fi
	touch "$tmp/.complete"
	# The jars appear under their final name in one rename, so a fetch that
	# was interrupted, or two running at once, never leave a half folder
	# that later runs would trust.
	if ! mv -T "$tmp" "$jars" 2>/dev/null; then
		rm -rf "$tmp"
		[[ -f $jars/.complete ]] || die "could not move the jars into $jars"
	fi
}

running_pid() {
	local pid dir
	[[ -f $state/pid && -f $state/dir ]] || return 1
	pid=$(<"$state/pid")
	dir=$(<"$state/dir")
	# A recycled pid must not be mistaken for our broker: its command line
	# names the temporary directory we made for it.
	if alive "$pid" && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$dir/"; then
		echo "$pid"
		return 0
	fi
	return 1
}

# gen_certs makes a one-off CA and a broker certificate for 127.0.0.1 and
# localhost, and packs the broker's key and chain into a PKCS12 keystore.
gen_certs() {
	local d=$1 pass=$2
	need openssl "install openssl (apt-get install openssl)"
	mkdir -p "$d"
	{
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 7 \
			-subj "/CN=kshare test CA" -keyout "$d/ca.key" -out "$d/ca.pem" \
			-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
			-subj "/CN=localhost" -keyout "$d/broker.key" -out "$d/broker.csr"
		printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >"$d/broker.ext"
		openssl x509 -req -in "$d/broker.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial \
			-days 7 -extfile "$d/broker.ext" -out "$d/broker.pem"
		openssl pkcs12 -export -in "$d/broker.pem" -inkey "$d/broker.key" -certfile "$d/ca.pem" \
			-name broker -out "$d/broker.p12" -passout "pass:$pass"
	} >"$d/openssl.log" 2>&1 || {
		cat "$d/openssl.log" >&2
		die "openssl could not make the test certificates"
	}
}

write_configs() {
	local dir=$1
	cat >"$dir/server.properties" <<EOF
# Single-node combined mode: one JVM is broker and KRaft controller.
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:$controller_port
controller.listener.names=CONTROLLER
listeners=PLAINTEXT://127.0.0.1:$plain_port,CONTROLLER://127.0.0.1:$controller_port,SASL_SSL://127.0.0.1:$sasl_port
advertised.listeners=PLAINTEXT://127.0.0.1:$plain_port,SASL_SSL://127.0.0.1:$sasl_port
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_SSL:SASL_SSL
log.dirs=$dir/data

# One broker: every internal topic can have only one replica. Fewer
# partitions than the default 50 make the first group or share-group call
# much faster.
offsets.topic.replication.factor=1
offsets.topic.num.partitions=3
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=3
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
share.coordinator.state.topic.num.partitions=3
num.partitions=1
auto.create.topics.enable=false
group.initial.rebalance.delay.ms=0

# Short share-group timings so that tests of lock expiry and of killed
# consumers take seconds, not the default 30 s locks and 45 s sessions.
# internal/kafkatest gives kfake the same values (LockDuration,
# SessionTimeout, HeartbeatInterval): change both together. The floors let a
# test's group config go down to 1 s locks.
group.share.record.lock.duration.ms=10000
group.share.min.record.lock.duration.ms=1000
group.share.min.session.timeout.ms=1000
group.share.session.timeout.ms=6000
group.share.min.heartbeat.interval.ms=100
group.share.heartbeat.interval.ms=500

# An authorizer, so that tests can show how a refused operation is reported
# (admin's TestNotAuthorizedReal): a principal may do whatever no ACL names,
# the ANONYMOUS principal of the PLAINTEXT and CONTROLLER listeners is a
# super user, and a test denies the SASL user one operation by an ACL on a
# resource name of its own.
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
allow.everyone.if.no.acl.found=true
super.users=User:ANONYMOUS

# SASL_SSL with SCRAM for the connector's security tests; the user is
# created by StorageTool at format time.
sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512
listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.ssl.keystore.type=PKCS12
listener.name.sasl_ssl.ssl.keystore.location=$dir/tls/broker.p12
listener.name.sasl_ssl.ssl.keystore.password=$store_pass
listener.name.sasl_ssl.ssl.key.password=$store_pass
EOF
	# WARN keeps the log small; the one INFO line we wait for ("Kafka Server
	# started") comes from KafkaRaftServer.
	cat >"$dir/log4j2.properties" <<EOF
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = $dir/logs/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.file.ref = file
logger.started.name = kafka.server.KafkaRaftServer
logger.started.level = INFO
EOF
}

# probe sends an ApiVersions v0 request to the PLAINTEXT listener and
# succeeds when the answer carries our correlation id and no error: the
# broker then serves Kafka requests, which an open port alone does not say.
# Bash speaks the protocol itself so that no second JVM competes with the
# starting broker for the machine's two cores.
probe() {
	local port=$1 got
	# size 15 | api key 18 | version 0 | correlation id 7 | client id "probe"
	got=$(timeout 5 bash -c '
		exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
		printf "\x00\x00\x00\x0f\x00\x12\x00\x00\x00\x00\x00\x07\x00\x05probe" >&3
		head -c 10 <&3 | od -An -tx1
	' probe "$port" 2>/dev/null | tr -d ' \n') || return 1
	# size (any) | correlation id 7 | error code 0
	[[ ${got:8:12} == 000000070000 ]]
}

# cluster_ids prints a Kafka cluster id for each 16 bytes on stdin: URL-safe
# base64, unpadded. An id that starts with '-' reads as an option to
# StorageTool ("argument --cluster-id/-t: expected one argument"), which
# failed one start in 64. Kafka's own Uuid.randomUuid draws again in that
# case; clearing the first byte's top bit instead keeps the first character
# in A-Z, a-f (index below 32), so no id can start with '-' or '_', at the
# cost of one random bit of 128.
cluster_ids() {
	local all hex esc i
	all=$(od -An -v -tx1 | tr -d ' \n')
	while ((${#all} >= 32)); do
		hex=${all:0:32} all=${all:32}
		printf -v esc '\\x%02x' $((0x${hex:0:2} & 0x7f))
		for ((i = 2; i < 32; i += 2)); do
			esc+="\\x${hex:i:2}"
		done
		# shellcheck disable=SC2059 # the format is the bytes, as \xHH escapes
		printf "$esc" | base64 | tr '+/' '-_' | tr -d '=\n'
		echo
	done
}

cmd_start() {
	local pid
	if pid=$(running_pid); then
		log "broker already running (pid $pid)"
		cat "$state/env"
		return 0
	fi
	cmd_fetch
	need java "install a Java 17 runtime (apt-get install openjdk-17-jre-headless)"
	start_retrying broker
}

start_once() {
	retry_port=0
	local dir
	dir=$(mktemp -d "${TMPDIR:-/tmp}/kshare-kafka.XXXXXX")
	ports_taken=
	if [[ -n ${KSHARE_KAFKA_FIRST_PORTS-} ]]; then
		# For the harness's test of the retry below: the first attempt
		# binds these ports (PLAINTEXT, CONTROLLER, SASL_SSL), as if
		# another process had taken one since free_port chose it.
		read -r plain_port controller_port sasl_port <<<"$KSHARE_KAFKA_FIRST_PORTS"
		unset KSHARE_KAFKA_FIRST_PORTS
	else
		free_port plain_port
		free_port controller_port
		free_port sasl_port
	fi
	store_pass=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
	local sasl_user=kshare sasl_password
	sasl_password=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
	mkdir -p "$dir/logs" "$dir/data"
	gen_certs "$dir/tls" "$store_pass"
	write_configs "$dir"

	local jvm=(java -Djava.awt.headless=true -Dlog4j2.configurationFile="$dir/log4j2.properties" -cp "$jars/*")
	local cluster_id
	cluster_id=$(head -c 16 /dev/urandom | cluster_ids)
	if ! "${jvm[@]}" kafka.tools.StorageTool format --standalone -t "$cluster_id" -c "$dir/server.properties" \
		--add-scram "SCRAM-SHA-256=[name=$sasl_user,password=$sasl_password]" \
		--add-scram "SCRAM-SHA-512=[name=$sasl_user,password=$sasl_password]" \
		>"$dir/format.log" 2>&1 </dev/null; then
		show_logs 60 "$dir/format.log" "$dir/stdout.log" "$dir/logs/server.log"
		rm -rf "$dir"
		die "formatting the broker's storage failed"
	fi

	local t0 t1
	t0=$(date +%s%N)
	# Output goes to files, never to our stdout: start is meant to run
	# inside $(...), which would otherwise wait for the broker to exit.
	"${jvm[@]}" -Xms512m -Xmx512m -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:+ExitOnOutOfMemoryError \
		kafka.Kafka "$dir/server.properties" >"$dir/stdout.log" 2>&1 </dev/null &
	local pid=$!
	mkdir -p "$state"
	echo "$pid" >"$state/pid"
	echo "$dir" >"$state/dir"
	cat >"$state/env" <<EOF
export KSHARE_KAFKA_BOOTSTRAP=127.0.0.1:$plain_port
export KSHARE_KAFKA_SASL_BOOTSTRAP=127.0.0.1:$sasl_port
export KSHARE_KAFKA_SASL_MECHANISMS=SCRAM-SHA-256,SCRAM-SHA-512
export KSHARE_KAFKA_SASL_USER=$sasl_user
export KSHARE_KAFKA_SASL_PASSWORD=$sasl_password
export KSHARE_KAFKA_CA_FILE=$dir/tls/ca.pem
export KSHARE_KAFKA_VERSION=$version
export KSHARE_KAFKA_LOG=$dir/logs/server.log
EOF

	local deadline=$((SECONDS + start_timeout))
	while :; do
		if ! alive "$pid"; then
			show_logs 60 "$dir/format.log" "$dir/stdout.log" "$dir/logs/server.log"
			if grep -qs "Address already in use" "$dir/stdout.log" "$dir/logs/server.log"; then
				retry_port=1
			fi
			rm -rf "$dir" "$state"
			log "the broker exited during start-up"
			return 1
		fi
		if grep -qs "Kafka Server started" "$dir/logs/server.log" && probe "$plain_port"; then
			break
		fi
		if ((SECONDS >= deadline)); then
			show_logs 60 "$dir/format.log" "$dir/stdout.log" "$dir/logs/server.log"
			cmd_stop >/dev/null 2>&1 || true
			die "the broker did not answer within ${start_timeout}s"
		fi
		sleep 0.2
	done
	t1=$(date +%s%N)
	log "Kafka $version up in $(((t1 - t0) / 1000000)) ms (pid $pid, PLAINTEXT 127.0.0.1:$plain_port, SASL_SSL 127.0.0.1:$sasl_port, dir $dir)"
}

cmd_stop() {
	[[ -f $state/pid && -f $state/dir ]] || {
		log "no broker recorded in $state"
		return 0
	}
	local pid dir
	dir=$(<"$state/dir")
	if pid=$(running_pid); then
		# SIGTERM lets the broker shut down cleanly; its data is thrown
		# away, so a broker that takes too long is killed.
		kill -TERM "$pid" 2>/dev/null || true
		await_exit "$pid" 150 broker
	fi
	forget_server "$dir" kshare-kafka
	log "broker stopped"
}

cmd_env() {
	need_running broker
	cat "$state/env"
}

cmd_log() {
	need_running broker
	cat "$(<"$state/dir")/logs/server.log"
}

case ${1-} in
fetch) cmd_fetch ;;
start) cmd_start ;;
stop) cmd_stop ;;
cluster-id) cluster_ids ;;
env) cmd_env ;;
log) cmd_log ;;
-h | --help | help) usage ;;
*)
	log "unknown command '${1-}'"
	usage
	;;
esac
