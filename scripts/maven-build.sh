#!/usr/bin/env bash
# Builds the Java gate with Maven (jvm/pom.xml), fully offline: no Maven Central.
#  1. installs what is missing: Debian's maven, a JDK 17 and the Maven plugins packaged by Debian
#     (their jars live in /usr/share/maven-repo);
#  2. fills a local Maven repository (target/maven/repo) with the Flink jars of the PyPI package
#     apache-flink-libraries (scripts/flink-jars.sh), under Flink's own coordinates, with
#     `install:install-file`;
#  3. runs `mvn -o clean package` (`verify` with --tests) on the unchanged jvm/pom.xml, with a
#     settings.xml (target/maven/settings.xml) whose only repository is /usr/share/maven-repo;
#  4. builds target/jvm/bluegreen-gate.jar with scripts/java-build.sh and checks that the Maven
#     jar holds exactly the same classes (class lists compared), and that the pom's version is the
#     workspace version (Cargo.toml).
# Exits non-zero with a message naming the failed step. The jar: target/maven/build/bluegreen-gate-<version>.jar.
#   scripts/maven-build.sh                  # package + checks (main code only, like java-build.sh)
#   scripts/maven-build.sh --tests [NAME]   # also the tests: compiled, run in `verify` (io.bluegreen.gate.TestRunner,
#                                           # only those whose name contains NAME if given)
#   scripts/maven-build.sh --install        # also `install` into target/maven/repo, for jobs built
#                                           # offline with -s target/maven/settings.xml (docs/jvm.md)
#   FLINK_VERSION=2.1.1 scripts/maven-build.sh
#   MAVEN_ARGS="-X" scripts/maven-build.sh  # extra arguments for mvn
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
STEP="start"
die() { trap - EXIT; echo "maven-build.sh: FAILED ($STEP): $*" >&2; exit 1; }
trap 'rc=$?; [[ $rc -eq 0 ]] || echo "maven-build.sh: FAILED during: $STEP (exit $rc)" >&2' EXIT

GOAL=package
RUN_TESTS=false
TEST_FILTER=""
while (($#)); do
  case "$1" in
    --tests)
      RUN_TESTS=true
      if [[ -n "${2:-}" && "$2" != --* ]]; then TEST_FILTER="$2"; shift; fi
      ;;
    --install) GOAL=install ;;
    *) die "unknown argument '$1' (usage: scripts/maven-build.sh [--tests [NAME]] [--install])" ;;
  esac
  shift
done
if $RUN_TESTS; then
  [[ "$GOAL" == install ]] || GOAL=verify
fi

# ---- 1. Debian packages ---------------------------------------------------------------------
STEP="Debian packages"
# Each plugin package puts its version (and its dependencies) into /usr/share/maven-repo; the
# versions in jvm/pom.xml are those of Debian bookworm.
PACKAGES=(maven openjdk-17-jdk-headless
  libmaven-resources-plugin-java libmaven-compiler-plugin-java libmaven-jar-plugin-java
  libmaven-install-plugin-java libmaven-clean-plugin-java libexec-maven-plugin-java
  junit5) # junit5: org.junit:junit-bom, imported by the poms of plexus-compiler (maven-compiler-plugin)
PACKAGES+=(python3) # scripts/flink-jars.sh, and the byte comparison below
# pip: scripts/flink-jars.sh downloads apache-flink-libraries with it (once per Flink version).
python3 -m pip --version >/dev/null 2>&1 || PACKAGES+=(python3-pip)
MISSING=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || MISSING+=("$p")
done
if ((${#MISSING[@]})); then
  command -v apt-get >/dev/null || die "missing Debian packages ${MISSING[*]} and no apt-get"
  [[ $(id -u) -eq 0 ]] || die "missing Debian packages; run: sudo apt-get install ${MISSING[*]}"
  echo "maven-build.sh: apt-get install ${MISSING[*]}" >&2
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${MISSING[@]}" >&2; then
    DEBIAN_FRONTEND=noninteractive apt-get update -q >&2 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${MISSING[@]}" >&2 \
      || die "apt-get install ${MISSING[*]} failed"
  fi
fi
DEBIAN_REPO=/usr/share/maven-repo
[[ -d "$DEBIAN_REPO/org/apache/maven/plugins/maven-compiler-plugin" ]] \
  || die "$DEBIAN_REPO has no maven-compiler-plugin (libmaven-compiler-plugin-java)"

# ---- 2. the version checks ------------------------------------------------------------------
STEP="versions"
pom_value() { # first <tag> of jvm/pom.xml outside <parent>/<dependencies> (the project's own)
  sed -n "/<dependencies>/,/<\/dependencies>/d; s:.*<$1>\(.*\)</$1>.*:\1:p" jvm/pom.xml | head -n1
}
POM_VERSION="$(pom_value version)"
CARGO_VERSION="$(sed -n '/^\[workspace.package\]/,/^\[/ s/^version *= *"\(.*\)".*/\1/p' Cargo.toml)"
[[ -n "$POM_VERSION" && "$POM_VERSION" == "$CARGO_VERSION" ]] \
  || die "jvm/pom.xml version '$POM_VERSION' is not the workspace version '$CARGO_VERSION' (Cargo.toml)"
[[ "$(pom_value groupId)" == io.bluegreen && "$(pom_value artifactId)" == bluegreen-gate ]] \
  || die "jvm/pom.xml coordinates are not io.bluegreen:bluegreen-gate"

# ---- 3. Flink jars into the local repository ------------------------------------------------
STEP="Flink jars (scripts/flink-jars.sh)"
LIB="$(scripts/flink-jars.sh)"
DIST="$(ls "$LIB"/flink-dist-*.jar 2>/dev/null | head -n1)"
[[ -n "$DIST" ]] || die "no flink-dist jar in $LIB"
FLINK="$(basename "$DIST" .jar)"; FLINK="${FLINK#flink-dist-}"
LOG4J="$(basename "$(ls "$LIB"/log4j-api-*.jar | head -n1)" .jar)"; LOG4J="${LOG4J#log4j-api-}"
# flink-dist bundles slf4j-api unshaded; its NOTICE names the version.
SLF4J="$(python3 -c 'import sys, zipfile; sys.stdout.write(zipfile.ZipFile(sys.argv[1]).read("META-INF/NOTICE").decode())' "$DIST" | sed -n 's/^- org\.slf4j:slf4j-api:\([0-9.]*\)$/\1/p' | head -n1)"
[[ -n "$SLF4J" ]] || die "cannot find the slf4j-api version in $DIST (META-INF/NOTICE)"
for j in flink-connector-files-"$FLINK" log4j-core-"$LOG4J" log4j-slf4j-impl-"$LOG4J"; do
  [[ -f "$LIB/$j.jar" ]] || die "$LIB/$j.jar missing"
done

M="$ROOT/target/maven"
REPO="$M/repo"
mkdir -p "$REPO"
SETTINGS="$M/settings.xml"
# Debian's maven: the plugins are in /usr/share/maven-repo (a Maven 2 layout, plus relocation
# poms and "debian"/"2.x"/"3.x" versions for the dependencies of the packaged plugins). Here it
# replaces Maven Central: the repository `central` is redefined as file:///usr/share/maven-repo
# (no checksums there; a miss is not cached, so installing a package later is enough), and every
# other repository is mirrored to it. `-o` still allows file:// with -Daether.offline.protocols=file.
# What a build takes from it is copied into the project's own local repository,
# target/maven/repo, next to the Flink jars; ~/.m2 is not touched.
repo_xml() { # element name
  cat <<EOF
      <$1>
        <id>central</id>
        <url>file://$DEBIAN_REPO</url>
        <releases><enabled>true</enabled><updatePolicy>always</updatePolicy><checksumPolicy>ignore</checksumPolicy></releases>
        <snapshots><enabled>false</enabled></snapshots>
      </$1>
EOF
}
cat > "$SETTINGS.tmp" <<EOF
<settings xmlns="http://maven.apache.org/SETTINGS/1.2.0">
  <!-- generated by scripts/maven-build.sh -->
  <localRepository>$REPO</localRepository>
  <offline>true</offline>
  <interactiveMode>false</interactiveMode>
  <mirrors>
    <mirror>
      <id>debian</id>
      <name>Debian's Maven repository (the libmaven-*-java packages)</name>
      <mirrorOf>*,!central</mirrorOf>
      <url>file://$DEBIAN_REPO</url>
    </mirror>
  </mirrors>
  <profiles>
    <profile>
      <id>debian-maven-repo</id>
      <repositories>
$(repo_xml repository)
      </repositories>
      <pluginRepositories>
$(repo_xml pluginRepository)
      </pluginRepositories>
    </profile>
  </profiles>
  <activeProfiles>
    <activeProfile>debian-maven-repo</activeProfile>
  </activeProfiles>
</settings>
EOF
mv "$SETTINGS.tmp" "$SETTINGS"
MVN=(mvn -B -ntp -Dstyle.color=never -o -s "$SETTINGS" -Daether.offline.protocols=file ${MAVEN_ARGS:-})
# mvn's output goes to stderr, without the ANSI reset that Debian's maven writes even with -B.
mvn_run() { "${MVN[@]}" "$@" 2>&1 | sed 's/\x1b\[[0-9;]*m//g' >&2; }

STEP="install:install-file of the Flink jars"
SEED="$M/seed-$FLINK"
FLINK_DIR="$REPO/org/apache/flink"
stand_in_pom() { # group artifact version description: an empty jar whose pom depends on flink-dist
  cat <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>$1</groupId>
  <artifactId>$2</artifactId>
  <version>$3</version>
  <packaging>jar</packaging>
  <description>Local stand-in written by scripts/maven-build.sh: $4 is inside flink-dist $FLINK (PyPI apache-flink-libraries).</description>
  <dependencies>
    <dependency>
      <groupId>org.apache.flink</groupId>
      <artifactId>flink-dist</artifactId>
      <version>$FLINK</version>
    </dependency>
  </dependencies>
</project>
EOF
}
plain_pom() { # group artifact version
  printf '<project xmlns="http://maven.apache.org/POM/4.0.0">\n  <modelVersion>4.0.0</modelVersion>\n  <groupId>%s</groupId>\n  <artifactId>%s</artifactId>\n  <version>%s</version>\n  <packaging>jar</packaging>\n  <description>Installed by scripts/maven-build.sh from PyPI apache-flink-libraries %s (lib/).</description>\n</project>\n' "$1" "$2" "$3" "$FLINK"
}
if [[ ! -f "$SEED/.installed" || ! -f "$FLINK_DIR/flink-dist/$FLINK/flink-dist-$FLINK.jar" ]]; then
  rm -rf "$SEED"
  mkdir -p "$SEED/poms" "$SEED/empty/META-INF"
  echo "Empty on purpose: the classes of this artifact are in org.apache.flink:flink-dist:$FLINK (a dependency)." \
    > "$SEED/empty/META-INF/bluegreen-stand-in.txt"
  jar --create --file "$SEED/stand-in.jar" -C "$SEED/empty" .
  # id|file|pom
  ARTIFACTS=()
  add() { # id jar pom-text
    printf '%s' "$3" > "$SEED/poms/$1.pom"
    ARTIFACTS+=("$1|$2|$SEED/poms/$1.pom")
  }
  # The real jars, under their own coordinates:
  add flink-dist "$DIST" "$(plain_pom org.apache.flink flink-dist "$FLINK")"
  add flink-connector-files "$LIB/flink-connector-files-$FLINK.jar" "$(plain_pom org.apache.flink flink-connector-files "$FLINK")"
  for a in log4j-api log4j-core log4j-slf4j-impl; do
    add "$a" "$LIB/$a-$LOG4J.jar" "$(plain_pom org.apache.logging.log4j "$a" "$LOG4J")"
  done
  # The modules a Flink job declares, which flink-dist bundles: stand-ins that depend on flink-dist.
  for a in flink-streaming-java flink-clients flink-runtime flink-core; do
    add "$a" "$SEED/stand-in.jar" "$(stand_in_pom org.apache.flink "$a" "$FLINK" "org.apache.flink:$a")"
  done
  add slf4j-api "$SEED/stand-in.jar" "$(stand_in_pom org.slf4j slf4j-api "$SLF4J" "org.slf4j:slf4j-api (unshaded)")"
  # One Maven run for all of them: a throw-away pom with one install-file execution per artifact.
  {
    echo '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
    echo "<groupId>local.seed</groupId><artifactId>flink-seed</artifactId><version>$FLINK</version><packaging>pom</packaging>"
    echo '<build><plugins><plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-install-plugin</artifactId><version>3.1.0</version><executions>'
    for entry in "${ARTIFACTS[@]}"; do
      IFS='|' read -r id file pom <<<"$entry"
      echo "<execution><id>$id</id><phase>validate</phase><goals><goal>install-file</goal></goals><configuration><file>$file</file><pomFile>$pom</pomFile></configuration></execution>"
    done
    echo '</executions></plugin></plugins></build></project>'
  } > "$SEED/pom.xml"
  echo "maven-build.sh: installing Flink $FLINK jars into $REPO (install:install-file)" >&2
  mvn_run -q -f "$SEED/pom.xml" validate || die "mvn install:install-file failed (see above)"
  touch "$SEED/.installed"
fi

# ---- 4. the Maven build ---------------------------------------------------------------------
STEP="mvn -o clean $GOAL (jvm/pom.xml)"
BUILD="$M/build"
mvn_run -f jvm/pom.xml \
  -Dbluegreen.build.directory="$BUILD" \
  -Dflink.version="$FLINK" -Dlog4j.version="$LOG4J" -Dslf4j.version="$SLF4J" \
  -Dbluegreen.tests="$TEST_FILTER" $($RUN_TESTS && echo -DskipTests=false || echo -Dmaven.test.skip=true) \
  clean "$GOAL" || die "mvn -o clean $GOAL failed (see above)"
MJAR="$BUILD/bluegreen-gate-$POM_VERSION.jar"
[[ -f "$MJAR" ]] || die "$MJAR was not built"

# ---- 5. the same classes as scripts/java-build.sh ------------------------------------------
STEP="scripts/java-build.sh"
scripts/java-build.sh
JJAR=target/jvm/bluegreen-gate.jar

STEP="class lists"
class_list() { jar --list --file "$1" | grep '\.class$' | LC_ALL=C sort; }
# same_lists A B: silent and 0 when equal, else the differences on stderr and 1.
same_lists() {
  if [[ "$(cat "$1")" == "$(cat "$2")" ]]; then return 0; fi
  echo "  only in the Maven jar:" >&2; LC_ALL=C comm -23 "$1" "$2" | sed 's/^/    /' >&2
  echo "  only in target/jvm/bluegreen-gate.jar:" >&2; LC_ALL=C comm -13 "$1" "$2" | sed 's/^/    /' >&2
  return 1
}
class_list "$MJAR" > "$M/classes-maven.txt"
class_list "$JJAR" > "$M/classes-javac.txt"
N="$(wc -l < "$M/classes-maven.txt")"
((N > 0)) || die "no classes in $MJAR"
# The comparison must be able to fail: one class fewer is a difference.
sed 1d "$M/classes-maven.txt" > "$M/classes-minus-one.txt"
if same_lists "$M/classes-minus-one.txt" "$M/classes-maven.txt" 2>/dev/null; then
  die "self-check: the class-list comparison did not notice a missing class"
fi
same_lists "$M/classes-maven.txt" "$M/classes-javac.txt" \
  || die "$MJAR and $JJAR hold different classes (above)"
# And byte for byte: jvm/pom.xml passes javac the same flags (-g:lines,source is javac's default).
STEP="class bytes"
DIFFERENT="$(python3 - "$MJAR" "$JJAR" <<'PY'
import sys, zipfile
a, b = (zipfile.ZipFile(p) for p in sys.argv[1:3])
print(" ".join(n for n in a.namelist() if n.endswith(".class") and a.read(n) != b.read(n)))
PY
)" || die "cannot read $MJAR or $JJAR"
[[ -z "$DIFFERENT" ]] || die "the same class names, but different bytes (javac flags of jvm/pom.xml and scripts/java-build.sh out of step?): $DIFFERENT"
STEP="jar contents"
# Nothing but classes and Maven's metadata in the jar (in particular, no Flink class).
OTHER="$(jar --list --file "$MJAR" | grep -v '\.class$' | grep -vE '^META-INF/(MANIFEST\.MF|maven/.*)?$|/$' || true)"
[[ -z "$OTHER" ]] || die "unexpected entries in $MJAR: $OTHER"
if grep -q '^org/apache/flink/' "$M/classes-maven.txt"; then die "Flink classes bundled into $MJAR"; fi

STEP="done"
echo "maven-build.sh: $MJAR: io.bluegreen:bluegreen-gate:$POM_VERSION (Flink $FLINK provided), $N classes, identical to those of $JJAR" >&2
echo "$MJAR"
