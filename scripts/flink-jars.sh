#!/usr/bin/env bash
# Installs the real Apache Flink jars without Maven Central: from the PyPI package
# `apache-flink-libraries` (PyFlink's jar bundle: flink-dist and the other jars of Flink's lib/;
# PyPI serves 1.20.3 as a source archive with them under deps/lib, a wheel has them in pyflink/lib).
# Cached under target/flink/<version>/; a no-op when cached. Prints the lib directory on stdout.
# The downloaded archive is also kept per machine in ${BLUEGREEN_CACHE:-~/.cache/bluegreen}/flink/, so
# that a fresh clone on the same machine (CI) extracts it (seconds) instead of downloading it again
# (~230 MB for 1.20.3, ~330 MB for 2.3.0). BLUEGREEN_CACHE=none keeps nothing outside target/.
# Needs python3 and pip (the PyPI index or a local mirror / wheel house configured for pip).
#   FLINK_VERSION=1.20.3 scripts/flink-jars.sh   # override the pinned version
#   FLINK_WHEEL=/path/to/apache_flink_libraries-*.whl scripts/flink-jars.sh   # fully offline
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION="${FLINK_VERSION:-1.20.3}"
ROOT="$PWD/target/flink/$VERSION"
LIB="$ROOT/lib"
if [[ -f "$ROOT/.complete" ]]; then
  echo "$LIB"
  exit 0
fi
command -v python3 >/dev/null || { echo "flink-jars.sh: python3 is required" >&2; exit 1; }
mkdir -p "$ROOT"
WHEEL="${FLINK_WHEEL:-}"
if [[ -z "$WHEEL" ]]; then
  CACHE="${BLUEGREEN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bluegreen}"
  if [[ "$CACHE" == none ]] || ! mkdir -p "$CACHE/flink" 2>/dev/null; then
    DL="$ROOT/download"
  else
    DL="$CACHE/flink"
  fi
  mkdir -p "$DL"
  WHEEL="$(ls "$DL"/apache[-_]flink[-_]libraries-"$VERSION"[.-]* 2>/dev/null | head -n1 || true)"
  if [[ -z "$WHEEL" ]]; then
    echo "flink-jars.sh: downloading apache-flink-libraries==$VERSION from PyPI into $DL (once per machine, 230-330 MB)" >&2
    python3 -m pip download --quiet --no-deps -d "$DL" \
      "apache-flink-libraries==$VERSION" >&2
    WHEEL="$(ls "$DL"/apache[-_]flink[-_]libraries-"$VERSION"[.-]* | head -n1)"
  else
    echo "flink-jars.sh: apache-flink-libraries==$VERSION from the machine's cache, $WHEEL" >&2
  fi
fi
echo "flink-jars.sh: extracting Flink's lib jars from $(basename "$WHEEL")" >&2
rm -rf "$LIB.tmp"
python3 - "$WHEEL" "$LIB.tmp" <<'PY' || { echo "flink-jars.sh: could not extract $WHEEL (damaged? delete it and run again)" >&2; exit 1; }
import os, sys, tarfile, zipfile
src, dest = sys.argv[1], sys.argv[2]
os.makedirs(dest, exist_ok=True)
n = 0
def keep(name):
    # pyflink/lib/*.jar (wheel) or <sdist-root>/deps/lib/*.jar / pyflink/lib/*.jar (sdist)
    parts = name.split("/")
    return name.endswith(".jar") and len(parts) >= 2 and parts[-2] == "lib" and ("pyflink" in parts or "deps" in parts)
if zipfile.is_zipfile(src):
    with zipfile.ZipFile(src) as z:
        for info in z.infolist():
            if keep(info.filename):
                with z.open(info) as r, open(os.path.join(dest, os.path.basename(info.filename)), "wb") as w:
                    w.write(r.read()); n += 1
else:
    with tarfile.open(src) as t:
        for m in t.getmembers():
            if m.isfile() and keep(m.name):
                with t.extractfile(m) as r, open(os.path.join(dest, os.path.basename(m.name)), "wb") as w:
                    w.write(r.read()); n += 1
if n == 0:
    sys.exit(f"flink-jars.sh: no pyflink/lib/*.jar or deps/lib/*.jar in {src}")
print(f"flink-jars.sh: {n} jars", file=sys.stderr)
PY
rm -rf "$LIB"
mv "$LIB.tmp" "$LIB"
ls "$LIB"/flink-dist*.jar >/dev/null 2>&1 || { echo "flink-jars.sh: flink-dist jar missing in $LIB" >&2; exit 1; }
touch "$ROOT/.complete"
echo "$LIB"
