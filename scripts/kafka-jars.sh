#!/usr/bin/env bash
# Installs a real Apache Kafka broker (KRaft) from Maven Central: org.apache.kafka:kafka_2.13 and its
# runtime dependencies (scripts/kafka/pom.xml, `mvn dependency:copy-dependencies`) into
# target/kafka/<version>/libs, and compiles scripts/kafka/KafkaTool.java (the test bed's producer and
# read_committed oracle) into target/kafka/<version>/tool. A no-op when done. Prints the directory.
#   KAFKA_VERSION=4.1.1 scripts/kafka-jars.sh   # override the pinned version
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION="${KAFKA_VERSION:-4.1.1}"
ROOT="$PWD/target/kafka/$VERSION"
STAMP="$ROOT/.complete"
SOURCES=(scripts/kafka/pom.xml scripts/kafka/KafkaTool.java scripts/kafka/log4j2.properties)
if [[ -f "$STAMP" ]] && [[ -z "$(find "${SOURCES[@]}" -newer "$STAMP")" ]]; then
  echo "$ROOT"
  exit 0
fi
for tool in javac mvn; do
  command -v "$tool" >/dev/null || { echo "kafka-jars.sh: '$tool' is required (a JDK 17 and Maven)" >&2; exit 1; }
done
rm -rf "$ROOT.tmp"
mkdir -p "$ROOT.tmp/tool"
echo "kafka-jars.sh: resolving org.apache.kafka:kafka_2.13:$VERSION from Maven Central into $ROOT/libs" >&2
mvn -B -q --no-transfer-progress -f scripts/kafka/pom.xml -Dkafka.version="$VERSION" \
  dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$ROOT.tmp/libs" >&2
ls "$ROOT.tmp/libs"/kafka_2.13-"$VERSION".jar >/dev/null
javac -Xlint:all -Werror -d "$ROOT.tmp/tool" -cp "$ROOT.tmp/libs/*" scripts/kafka/KafkaTool.java >&2
cp scripts/kafka/log4j2.properties "$ROOT.tmp/"
rm -rf "$ROOT"
mv "$ROOT.tmp" "$ROOT"
touch "$STAMP"
echo "$ROOT"
