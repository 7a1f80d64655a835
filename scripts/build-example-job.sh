#!/usr/bin/env bash
# Builds the example job (examples/jobs) with `javac --release 17` against the Flink jars
# (scripts/flink-jars.sh) and the gate classes (target/jvm/classes, from scripts/java-build.sh),
# and packages target/examples/bluegreen-example-job.jar: the job's classes plus the gate
# library's (a user jar carries its dependencies), not Flink's. Prints the jar path on stdout.
#   scripts/build-example-job.sh          # build the jar
#   scripts/build-example-job.sh --test   # build, run the MiniCluster self-test (SelfTest) into
#                                         # target/examples/selftest and judge it with the Rust ledger
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in javac jar java; do
  command -v "$tool" >/dev/null || { echo "build-example-job.sh: '$tool' not found: install a JDK 17 (e.g. openjdk-17-jdk-headless)" >&2; exit 1; }
done
GATE=target/jvm/classes
[[ -d "$GATE/io/bluegreen/gate" ]] || { echo "build-example-job.sh: $GATE has no gate classes: run scripts/java-build.sh first" >&2; exit 1; }
LIB="$(scripts/flink-jars.sh)"
CP="$(ls "$LIB"/*.jar | tr '\n' ':')"
OUT=target/examples
rm -rf "$OUT/classes" "$OUT/test-classes"
mkdir -p "$OUT/classes" "$OUT/test-classes"
find examples/jobs/src/main/java -name '*.java' > "$OUT/main-sources.txt"
javac --release 17 -encoding UTF-8 -Xlint:all,-serial,-options -Werror -cp "$GATE:$CP" -d "$OUT/classes" @"$OUT/main-sources.txt"
cp -r "$GATE"/. "$OUT/classes/"
jar --create --file "$OUT/bluegreen-example-job.jar" -C "$OUT/classes" .
echo "$OUT/bluegreen-example-job.jar"
if [[ "${1:-}" == "--test" ]]; then
  find examples/jobs/src/test/java -name '*.java' > "$OUT/test-sources.txt"
  javac --release 17 -encoding UTF-8 -Xlint:all,-serial,-options -Werror -cp "$OUT/bluegreen-example-job.jar:$CP" -d "$OUT/test-classes" @"$OUT/test-sources.txt"
  rm -rf "$OUT/selftest"
  java -Xmx1g -cp "$OUT/bluegreen-example-job.jar:$OUT/test-classes:$LIB/*" io.bluegreen.examples.SelfTest "$OUT/selftest" >&2
  BLUEGREEN_EXAMPLE_OUTPUT="$PWD/$OUT/selftest" cargo test -p bluegreen-local-flink --test file_ledger >&2
fi
