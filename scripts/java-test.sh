#!/usr/bin/env bash
# Builds the Java gate library and its tests, then runs every Java test (protocol vectors,
# transitions, the GateProcessFunction, the sidecar client, the blue/green handover on a Flink
# MiniCluster). The last line is "N passed, N failed"; the exit code is non-zero on failure.
#   scripts/java-test.sh                 # all tests
#   scripts/java-test.sh handover        # only tests whose name contains "handover"
#   JAVA_OPTS=-Xmx768m scripts/java-test.sh
#   JAVA_OPTS="-Xmx1g -Dbluegreen.test.hold-ms=120000" scripts/java-test.sh "hold with checkpoints"   # the 2-minute hold (default 8 s)
#   scripts/java-test.sh --bench [RECORDS [RUNS [--object-reuse]]]   # the figures of docs/performance.md instead
#   scripts/java-test.sh --jni-bench     # JNI shim vs Java gate figures (release build of bluegreen-gate-jni)
# The JNI tests load the shim built by `cargo build -p bluegreen-gate-jni` (or BLUEGREEN_GATE_JNI_LIBRARY).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v java >/dev/null || { echo "java-test.sh: 'java' not found: install a JDK 17" >&2; exit 1; }
scripts/java-build.sh --tests
LIB="$(scripts/flink-jars.sh)"
CP="target/jvm/test-classes:target/jvm/classes:$(ls "$LIB"/*.jar | tr '\n' ':')"
MAIN=io.bluegreen.gate.JniTestRunner
JNI_PROFILE=debug
if [[ "${1:-}" == "--bench" ]]; then
  shift
  MAIN=io.bluegreen.gate.GateBench
elif [[ "${1:-}" == "--jni-bench" ]]; then
  shift
  MAIN=io.bluegreen.gate.JniBench
  JNI_PROFILE=release
fi
if [[ "$MAIN" == *JniTestRunner ]]; then
  # The real sidecar test runs the cargo-built sidecar against the cargo-built local API server.
  cargo build --quiet --locked -p bluegreen-sidecar -p bluegreen-local --bins
fi
if [[ -z "${BLUEGREEN_GATE_JNI_LIBRARY:-}" ]]; then
  cargo build --quiet --locked -p bluegreen-gate-jni $([[ $JNI_PROFILE == release ]] && echo --release)
  BLUEGREEN_GATE_JNI_LIBRARY="$PWD/target/$JNI_PROFILE/libbluegreen_gate_jni.so"
fi
exec java ${JAVA_OPTS:--Xmx1g} -XX:+UseSerialGC \
  -Dlog4j2.configurationFile=jvm/src/test/resources/log4j2-test.properties \
  -Dbluegreen.repo="$PWD" \
  -Dbluegreen.gate.jni.library="$BLUEGREEN_GATE_JNI_LIBRARY" \
  -Dbluegreen.sidecar.binary="$PWD/target/debug/bluegreen-sidecar" \
  -Dbluegreen.apiserver.binary="$PWD/target/debug/bluegreen-local-apiserver" \
  -cp "$CP" "$MAIN" "$@"
