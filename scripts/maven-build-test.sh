#!/usr/bin/env bash
# Tests that scripts/maven-build.sh fails, with its message, when it should. Each case runs the
# script in a throw-away copy of jvm/, scripts/ and Cargo.toml (sharing target/flink and the local
# Maven repository target/maven/repo with this checkout) after breaking one thing:
#   version    jvm/pom.xml's version is not the workspace version          (no Maven run)
#   packages   a Debian package is missing and apt-get cannot install it    (no Maven run)
#   classes    the javac jar lacks a class the Maven jar has                (one `mvn -o package`)
#   bytes      the javac jar's classes are compiled with other flags (-g)   (one `mvn -o package`)
# and one that must succeed:
#   consumer   `scripts/maven-build.sh --install`, then a job declaring io.bluegreen:bluegreen-gate
#              (and Flink `provided`) compiles offline                     (two Maven runs)
# The success path is scripts/maven-build.sh itself (run it first: this test reuses its repository).
#   scripts/maven-build-test.sh [CASE...]     # default: all five; last line "N passed, N failed"
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
CASES=("$@")
((${#CASES[@]})) || CASES=(version packages classes bytes consumer)
LIB="$(scripts/flink-jars.sh)"
TMP="$(mktemp -d "${TMPDIR:-/tmp}/maven-build-test.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
PASSED=0
FAILED=0

copy() { # name: a fresh copy of what maven-build.sh reads
  local d="$TMP/$1"
  mkdir -p "$d/target/maven"
  cp -r jvm scripts Cargo.toml "$d/"
  rm -rf "$d/jvm/target"
  ln -s "$ROOT/target/flink" "$d/target/flink"
  mkdir -p "$ROOT/target/maven/repo"
  ln -s "$ROOT/target/maven/repo" "$d/target/maven/repo"
  cp -r "$ROOT"/target/maven/seed-* "$d/target/maven/" 2>/dev/null || true
  echo "$d"
}
# expect name dir message [env...]: maven-build.sh in dir must exit non-zero and print message.
expect() {
  local name="$1" dir="$2" message="$3"
  shift 3
  local rc=0
  env "$@" "$dir/scripts/maven-build.sh" > "$TMP/$name.out" 2> "$TMP/$name.err" || rc=$?
  local extra=true
  # EXTRA: a further check of the output (a command reading stderr on its stdin)
  [[ -z "${EXTRA:-}" ]] || { bash -c "$EXTRA" < "$TMP/$name.err" || extra=false; }
  if ((rc != 0)) && grep -qF -- "$message" "$TMP/$name.err" && $extra; then
    echo "ok   $name: exit $rc, \"$(grep -F -- "$message" "$TMP/$name.err" | head -n1 | cut -c1-160)\""
    PASSED=$((PASSED + 1))
  else
    echo "FAIL $name: exit $rc, expected a message containing \"$message\"${EXTRA:+ and [$EXTRA]}; stderr ends with:"
    tail -n 15 "$TMP/$name.err" | sed 's/^/    /'
    FAILED=$((FAILED + 1))
  fi
}

for c in "${CASES[@]}"; do
  case "$c" in
    version)
      d="$(copy version)"
      sed -i '0,/<version>[^<]*<\/version>/s//<version>9.9.9<\/version>/' "$d/jvm/pom.xml"
      expect version "$d" "jvm/pom.xml version '9.9.9' is not the workspace version"
      ;;
    packages)
      d="$(copy packages)"
      mkdir -p "$d/fakebin"
      # dpkg-query: libexec-maven-plugin-java not installed; apt-get: cannot install anything.
      printf '#!/bin/sh\nfor a; do p=$a; done\n[ "$p" = libexec-maven-plugin-java ] && exit 1\nexec /usr/bin/dpkg-query "$@"\n' > "$d/fakebin/dpkg-query"
      printf '#!/bin/sh\necho "E: Unable to locate package (fake apt-get of maven-build-test.sh)" >&2\nexit 100\n' > "$d/fakebin/apt-get"
      printf '#!/bin/sh\necho 0\n' > "$d/fakebin/id"
      chmod +x "$d/fakebin/"*
      expect packages "$d" "apt-get install libexec-maven-plugin-java failed" PATH="$d/fakebin:$PATH"
      ;;
    classes)
      d="$(copy classes)"
      # The javac build (a copy of scripts/java-build.sh) drops one class before packaging.
      sed -i 's|^jar --create --file "\$OUT/bluegreen-gate.jar"|rm "$(find "$OUT/classes" -name "*.class" \| LC_ALL=C sort \| head -n1)"\n&|' "$d/scripts/java-build.sh"
      grep -q '^rm "$(find' "$d/scripts/java-build.sh" || { echo "FAIL classes: could not edit the copy of java-build.sh"; FAILED=$((FAILED + 1)); continue; }
      # ... and the message names it.
      EXTRA="grep -A1 'only in the Maven jar:' | grep -q '\.class\$'" \
        expect classes "$d" "hold different classes" MAVEN_ARGS=-Dmaven.test.skip=true
      ;;
    bytes)
      d="$(copy bytes)"
      # The javac build (a copy of scripts/java-build.sh) adds local-variable debug info.
      sed -i '0,/^javac --release 17 /s//javac -g --release 17 /' "$d/scripts/java-build.sh"
      grep -q '^javac -g ' "$d/scripts/java-build.sh" || { echo "FAIL bytes: could not edit the copy of java-build.sh"; FAILED=$((FAILED + 1)); continue; }
      expect bytes "$d" "the same class names, but different bytes" MAVEN_ARGS=-Dmaven.test.skip=true
      ;;
    consumer)
      # The success path a user follows: --install, then a job that declares the dependency of
      # docs/jvm.md ("Building with Maven") compiles offline with the same settings.
      d="$(copy consumer)"
      if ! MAVEN_ARGS=-Dmaven.test.skip=true "$d/scripts/maven-build.sh" --install > "$TMP/consumer.out" 2> "$TMP/consumer.err"; then
        echo "FAIL consumer: scripts/maven-build.sh --install failed:"; tail -n 15 "$TMP/consumer.err" | sed 's/^/    /'
        FAILED=$((FAILED + 1)); continue
      fi
      VERSION="$(sed -n '/^\[workspace.package\]/,/^\[/ s/^version *= *"\(.*\)".*/\1/p' Cargo.toml)"
      FLINK="$(basename "$(ls "$LIB"/flink-dist-*.jar)" .jar)"; FLINK="${FLINK#flink-dist-}"
      mkdir -p "$d/job/src/main/java/example"
      cat > "$d/job/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>example</groupId>
  <artifactId>job</artifactId>
  <version>1</version>
  <properties>
    <maven.compiler.release>17</maven.compiler.release>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <dependencies>
    <dependency>
      <groupId>io.bluegreen</groupId>
      <artifactId>bluegreen-gate</artifactId>
      <version>$VERSION</version>
    </dependency>
    <dependency>
      <groupId>org.apache.flink</groupId>
      <artifactId>flink-streaming-java</artifactId>
      <version>$FLINK</version>
      <scope>provided</scope>
    </dependency>
  </dependencies>
  <build>
    <plugins>
      <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-resources-plugin</artifactId><version>3.3.0</version></plugin>
      <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-compiler-plugin</artifactId><version>3.10.1</version></plugin>
    </plugins>
  </build>
</project>
EOF
      cat > "$d/job/src/main/java/example/Job.java" <<'EOF'
package example;

import io.bluegreen.gate.Color;
import io.bluegreen.gate.GateProcessFunction;
import io.bluegreen.gate.SidecarStateSource;
import org.apache.flink.streaming.api.functions.ProcessFunction;

public final class Job {
    public static ProcessFunction<String, String> gate() {
        return new GateProcessFunction<>(Color.BLUE, new SidecarStateSource(8787));
    }
}
EOF
      if mvn -B -ntp -Dstyle.color=never -o -s "$d/target/maven/settings.xml" -Daether.offline.protocols=file \
          -f "$d/job/pom.xml" compile > "$TMP/consumer-job.out" 2>&1 && [[ -f "$d/job/target/classes/example/Job.class" ]]; then
        echo "ok   consumer: io.bluegreen:bluegreen-gate:$VERSION installed, a job using it compiles offline"
        PASSED=$((PASSED + 1))
      else
        echo "FAIL consumer: the job did not compile:"; grep -E 'ERROR' "$TMP/consumer-job.out" | head -n 15 | sed 's/^/    /'
        FAILED=$((FAILED + 1))
      fi
      ;;
    *)
      echo "maven-build-test.sh: unknown case '$c' (version packages classes bytes consumer)" >&2
      exit 2
      ;;
  esac
done
echo "$PASSED passed, $FAILED failed"
((FAILED == 0))
