#!/usr/bin/env bash
# Builds the Java gate library and its tests, then runs every Java test (protocol vectors,
# transitions, the GateProcessFunction, the sidecar client, the blue/green handover on a Flink
# MiniCluster). The last line is "N passed, N failed"; the exit code is non-zero on failure.
#   scripts/java-test.sh                 # all tests
#   scripts/java-test.sh handover        # only tests whose name contains "handover"
#   JAVA_OPTS=-Xmx768m scripts/java-test.sh
#   scripts/java-test.sh --bench [RECORDS [RUNS [--object-reuse]]]   # the figures of docs/performance.md instead
set -euo pipefail
cd "$(dirname "$0")/.."
command -v java >/dev/null || { echo "java-test.sh: 'java' not found: install a JDK 17" >&2; exit 1; }
scripts/java-build.sh --tests
LIB="$(scripts/flink-jars.sh)"
CP="target/jvm/test-classes:target/jvm/classes:$(ls "$LIB"/*.jar | tr '\n' ':')"
MAIN=io.bluegreen.gate.TestRunner
if [[ "${1:-}" == "--bench" ]]; then
  shift
  MAIN=io.bluegreen.gate.GateBench
fi
exec java ${JAVA_OPTS:--Xmx1g} -XX:+UseSerialGC \
  -Dlog4j2.configurationFile=jvm/src/test/resources/log4j2-test.properties \
  -Dbluegreen.repo="$PWD" \
  -cp "$CP" "$MAIN" "$@"
