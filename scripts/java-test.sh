#!/usr/bin/env bash
# Builds the Java gate library and its tests, then runs every Java test (protocol vectors,
# transitions, the GateProcessFunction, the sidecar client, the blue/green handovers on a Flink
# MiniCluster) on Flink 1.20 (the default line), then the real-Flink handover tests on Flink 2.x
# (FLINK2_VERSION, default 2.3.0; its jars are fetched from PyPI by scripts/flink-jars.sh like 1.20's).
# The 2.x tests run the very gate classes built against 1.20 (the one jar that is published), with
# the tests compiled against 2.x; the library is also compiled against 2.x as a check.
# The last line is "N passed, N failed" over both lines; the exit code is non-zero on failure.
#   scripts/java-test.sh                 # all tests on 1.20, then the 2.x handover tests
#   scripts/java-test.sh handover        # only tests whose name contains "handover" (1.20 only)
#   FLINK_VERSION=2.3.0 scripts/java-test.sh [NAME...]   # all tests (or those named) on that line only
#   scripts/java-test.sh --flink2        # only the 2.x handover tests
#   JAVA_OPTS=-Xmx768m scripts/java-test.sh
#   JAVA_OPTS="-Xmx1g -Dbluegreen.test.hold-ms=120000" scripts/java-test.sh "hold with checkpoints"   # the 2-minute hold (default 8 s)
#   scripts/java-test.sh --bench [RECORDS [RUNS [--object-reuse]]]   # the figures of docs/performance.md instead
#   scripts/java-test.sh --forked-bench [PAIRS [RECORDS [ROUNDS [VARIANTS [PIPELINES]]]]]   # job throughput ratios, one JVM per run
#   scripts/java-test.sh --jni-bench     # JNI shim vs Java gate figures (release build of bluegreen-gate-jni)
# The JNI tests load the shim built by `cargo build -p bluegreen-gate-jni` (or BLUEGREEN_GATE_JNI_LIBRARY).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v java >/dev/null || { echo "java-test.sh: 'java' not found: install a JDK 17" >&2; exit 1; }
DEFAULT_FLINK=1.20.3
FLINK2="${FLINK2_VERSION:-2.3.0}"
# The real-Flink handover tests run on 2.x: sinks at 0/0 with the gate inside (the documented default)
# and as an operator, FileSink and the sink with Kafka's transactional semantics, and one with the
# isolation off, which must show the defect. Each entry must match exactly one test name.
FLINK2_SLICE=(
  "sink isolation handover (gate in the sink, BlueGreenSinks.gated): FileSink row format, OnCheckpointRollingPolicy"
  "sink isolation handover (gate in the sink, BlueGreenSinks.gated): transactional sink (Kafka semantics)"
  "sink isolation handover: FileSink row format, OnCheckpointRollingPolicy, isolated"
  "sink isolation handover: transactional sink (Kafka semantics), isolated"
  "sink isolation handover: transactional sink, isolation off (one shared prefix)"
)
LOG4J="-Dlog4j2.configurationFile=jvm/src/test/resources/log4j2-test.properties"

# One line's 1.20 build, always: it is the jar that runs on every line.
ONLY_LINE="${FLINK_VERSION:-}"
[[ "$ONLY_LINE" == "$DEFAULT_FLINK" ]] && ONLY_LINE=""
FLINK_VERSION="$DEFAULT_FLINK" scripts/java-build.sh --tests
LIB="$(FLINK_VERSION="$DEFAULT_FLINK" scripts/flink-jars.sh)"

MODE=all
MAIN=io.bluegreen.gate.JniTestRunner
JNI_PROFILE=debug
case "${1:-}" in
  --bench) shift; MODE=bench; MAIN=io.bluegreen.gate.GateBench ;;
  --forked-bench) shift; MODE=bench; MAIN=io.bluegreen.gate.ForkedJobBench ;;
  --jni-bench) shift; MODE=bench; MAIN=io.bluegreen.gate.JniBench; JNI_PROFILE=release ;;
  --flink2) shift; MODE=flink2 ;;
  *) if [[ -n "$ONLY_LINE" ]]; then MODE=line; elif (($# > 0)); then MODE=filtered; fi ;;
esac
if [[ "$MAIN" == *JniTestRunner && ( "$MODE" == all || "$MODE" == filtered ) ]]; then
  # The real sidecar test runs the cargo-built sidecar against the cargo-built local API server.
  cargo build --quiet --locked -p bluegreen-sidecar -p bluegreen-local-apiserver --bins
fi
if [[ -z "${BLUEGREEN_GATE_JNI_LIBRARY:-}" ]]; then
  cargo build --quiet --locked -p bluegreen-gate-jni $([[ $JNI_PROFILE == release ]] && echo --release)
  BLUEGREEN_GATE_JNI_LIBRARY="$PWD/target/$JNI_PROFILE/libbluegreen_gate_jni.so"
fi
# Every JVM's temporary files (Flink's 24 MB RPC jar and I/O directories per MiniCluster, the tests'
# sink directories) in one directory of this run, removed at the end: the test runner halts the JVM,
# so nothing of Flink's own clean-up runs, and in the shared /tmp they added up to tens of gigabytes.
JAVA_TMP="$(mktemp -d "$PWD/target/jvm/tmp.XXXXXX")"
trap 'rm -rf "$JAVA_TMP"' EXIT
JAVA_PROPS=(
  -Djava.io.tmpdir="$JAVA_TMP"
  -Dbluegreen.repo="$PWD"
  -Dbluegreen.gate.jni.library="$BLUEGREEN_GATE_JNI_LIBRARY"
  -Dbluegreen.sidecar.binary="$PWD/target/debug/bluegreen-sidecar"
  -Dbluegreen.apiserver.binary="$PWD/target/debug/bluegreen-local-apiserver"
)
if [[ "$MODE" == bench ]]; then
  CP="target/jvm/test-classes:target/jvm/classes:$(ls "$LIB"/*.jar | tr '\n' ':')"
  java ${JAVA_OPTS:--Xmx1g} -XX:+UseSerialGC "$LOG4J" "${JAVA_PROPS[@]}" -cp "$CP" "$MAIN" "$@"
  exit
fi

PASSED=0
FAILED=0
SUMMARY=()
# run_tests LABEL EXPECTED CLASSPATH MAIN [NAME...]: runs the tests and adds their counts to the
# totals; EXPECTED (when not empty) is how many tests must run (the 2.x tests are named one by one).
run_tests() {
  local label="$1" expected="$2" cp="$3" main="$4" start=$SECONDS log rc counts p=0 f=1
  shift 4
  log="$(mktemp)"
  set +e
  java ${JAVA_OPTS:--Xmx1g} -XX:+UseSerialGC "$LOG4J" "${JAVA_PROPS[@]}" -cp "$cp" "$main" "$@" | tee "$log"
  rc=${PIPESTATUS[0]}
  set -e
  counts="$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n1 || true)"
  rm -f "$log"
  if [[ "$counts" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
    p="${BASH_REMATCH[1]}"
    f="${BASH_REMATCH[2]}"
  else
    echo "java-test.sh: $label: the test runner ended without its closing line (exit code $rc)" >&2
  fi
  if ((rc != 0 && f == 0)); then
    echo "java-test.sh: $label: exit code $rc" >&2
    f=1
  fi
  if [[ -n "$expected" ]] && ((p + f != expected)); then
    echo "java-test.sh: $label: $expected tests named, $((p + f)) ran: was a test renamed? (FLINK2_SLICE)" >&2
    f=$((f + 1))
  fi
  PASSED=$((PASSED + p))
  FAILED=$((FAILED + f))
  SUMMARY+=("$label: $p passed, $f failed in $((SECONDS - start)) s")
}

# run_line VERSION LABEL MAIN [NAME...]: the library and the tests compiled against Flink VERSION (in
# one javac run, a check that both compile there), run on it with the gate classes built against 1.20
# first on the class path (the published jar is what runs).
run_line() {
  local version="$1" label="$2" main="$3" start=$SECONDS lib libcp out expected=""
  shift 3
  lib="$(FLINK_VERSION="$version" scripts/flink-jars.sh)"
  libcp="$(ls "$lib"/*.jar | tr '\n' ':')"
  out="target/jvm/flink-$version"
  rm -rf "$out/classes"
  mkdir -p "$out/classes"
  find jvm/src/main/java jvm/src/test/java -name '*.java' > "$out/sources.txt"
  javac --release 17 -encoding UTF-8 -nowarn -cp "$libcp" -d "$out/classes" @"$out/sources.txt"
  cp -r jvm/src/test/resources/. "$out/classes/"
  echo "java-test.sh: Flink $version: library and tests compiled in $((SECONDS - start)) s" >&2
  [[ "$label" == *"handover tests" ]] && expected=$#
  run_tests "$label" "$expected" "target/jvm/classes:$out/classes:$libcp" "$main" "$@"
}

CP120="target/jvm/test-classes:target/jvm/classes:$(ls "$LIB"/*.jar | tr '\n' ':')"
case "$MODE" in
  all)
    run_tests "Flink $DEFAULT_FLINK, all tests" "" "$CP120" "$MAIN"
    echo "== Flink $FLINK2: the real-Flink handover tests"
    run_line "$FLINK2" "Flink $FLINK2, the real-Flink handover tests" io.bluegreen.gate.TestRunner "${FLINK2_SLICE[@]}"
    ;;
  filtered) run_tests "Flink $DEFAULT_FLINK, tests named $*" "" "$CP120" "$MAIN" "$@" ;;
  flink2) run_line "$FLINK2" "Flink $FLINK2, the real-Flink handover tests" io.bluegreen.gate.TestRunner "${FLINK2_SLICE[@]}" ;;
  line) run_line "$ONLY_LINE" "Flink $ONLY_LINE, ${*:-all tests}" io.bluegreen.gate.TestRunner "$@" ;;
esac
for s in "${SUMMARY[@]}"; do
  echo "java-test.sh: $s"
done
echo "$PASSED passed, $FAILED failed"
((FAILED == 0 && PASSED > 0))
