#!/usr/bin/env bash
# Compiles the local real-mode launcher (local-flink/launcher/src/main/java) with `javac --release 17`
# against the Flink jars installed by scripts/flink-jars.sh and packages
# target/launcher/bluegreen-launcher.jar. Also builds the real-mode test job
# (local-flink/launcher/src/test/java) into target/launcher/bluegreen-test-job.jar (Main-Class set).
# Prints the launcher jar's path on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in javac jar; do
  command -v "$tool" >/dev/null || { echo "build-launcher.sh: '$tool' not found: install a JDK 17 (e.g. openjdk-17-jdk-headless)" >&2; exit 1; }
done
LIB="$(scripts/flink-jars.sh)"
CP="$(ls "$LIB"/*.jar | tr '\n' ':')"
OUT=target/launcher
build() { # name, source dir, jar, [main class]; skipped when the jar is newer than every source
  if [[ -f "$3" && -z "$(find "$2" -newer "$3" -print -quit)" ]]; then
    return
  fi
  rm -rf "$OUT/$1"
  mkdir -p "$OUT/$1"
  find "$2" -name '*.java' > "$OUT/$1-sources.txt"
  javac --release 17 -encoding UTF-8 -Xlint:all,-serial,-options -Werror -cp "$CP" -d "$OUT/$1" @"$OUT/$1-sources.txt"
  if [[ -n "${4:-}" ]]; then
    jar --create --file "$3.tmp" --main-class "$4" -C "$OUT/$1" .
  else
    jar --create --file "$3.tmp" -C "$OUT/$1" .
  fi
  mv "$3.tmp" "$3"
  echo "build-launcher.sh: $3" >&2
}
mkdir -p "$OUT"
build classes local-flink/launcher/src/main/java "$OUT/bluegreen-launcher.jar"
build test-classes local-flink/launcher/src/test/java "$OUT/bluegreen-test-job.jar" io.bluegreen.local.testjob.CountingJob
echo "$PWD/$OUT/bluegreen-launcher.jar"
