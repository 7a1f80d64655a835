#!/usr/bin/env bash
# Compiles the Java gate library (jvm/src/main/java) with `javac --release 17` against the Flink
# jars installed by scripts/flink-jars.sh and packages target/jvm/bluegreen-gate.jar.
# With --tests, also compiles jvm/src/test/java into target/jvm/test-classes.
# JAVA_BUILD_OUT=dir builds into dir instead of target/jvm (scripts/java-test.sh builds the Flink 2.x
# check there, leaving the default build in place).
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in javac jar; do
  command -v "$tool" >/dev/null || { echo "java-build.sh: '$tool' not found: install a JDK 17 (e.g. openjdk-17-jdk-headless)" >&2; exit 1; }
done
LIB="$(scripts/flink-jars.sh)"
CP="$(ls "$LIB"/*.jar | tr '\n' ':')"
OUT="${JAVA_BUILD_OUT:-target/jvm}"
rm -rf "$OUT/classes"
mkdir -p "$OUT/classes"
find jvm/src/main/java -name '*.java' > "$OUT/main-sources.txt"
javac --release 17 -encoding UTF-8 -Xlint:all,-serial,-options -Werror -cp "$CP" -d "$OUT/classes" @"$OUT/main-sources.txt"
jar --create --file "$OUT/bluegreen-gate.jar" -C "$OUT/classes" .
echo "java-build.sh: $OUT/bluegreen-gate.jar" >&2
if [[ "${1:-}" == "--tests" ]]; then
  rm -rf "$OUT/test-classes"
  mkdir -p "$OUT/test-classes"
  find jvm/src/test/java -name '*.java' > "$OUT/test-sources.txt"
  javac --release 17 -encoding UTF-8 -Xlint:all,-serial,-options,-try -cp "$OUT/classes:$CP" -d "$OUT/test-classes" @"$OUT/test-sources.txt"
  cp -r jvm/src/test/resources/. "$OUT/test-classes/" 2>/dev/null || true
  echo "java-build.sh: $OUT/test-classes" >&2
fi
