#!/usr/bin/env bash
# Build the embedded OpenSearch test node into target/classes + target/lib/*.jar.
#
# Idempotent: skips when target/ was built from the same pom.xml and sources (hash stamp).
# Tries Maven offline first (warm ~/.m2), then online (Maven Central).
# Needs: Java 17+, Maven 3.6+. Env: MVN (maven command, default "mvn"), FORCE=1 to rebuild.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$HERE"
MVN="${MVN:-mvn}"
STAMP="target/.build-stamp"
LOG="target/build.log"

die() { echo "opensearch_node/build.sh: ERROR: $*" >&2; exit 1; }

command -v java >/dev/null 2>&1 || die "java not found on PATH (Java 17 is required)"
command -v "$MVN" >/dev/null 2>&1 || die "maven ('$MVN') not found on PATH"
java_major="$(java -XshowSettings:properties -version 2>&1 \
  | sed -n 's/^ *java\.specification\.version = \([0-9]*\).*/\1/p')"
[[ -n "$java_major" && "$java_major" -ge 17 ]] \
  || die "Java 17+ is required (found specification version '${java_major:-?}')"

inputs_hash() {
  { cat pom.xml; find src -type f | LC_ALL=C sort | while read -r f; do echo "$f"; cat "$f"; done; } \
    | sha256sum | cut -d' ' -f1
}

is_built() {
  [[ -f "$STAMP" && "$(cat "$STAMP")" == "$(inputs_hash)" ]] \
    && [[ -f target/classes/npuwatch/testnode/TestNode.class ]] \
    && compgen -G "target/lib/opensearch-2*.jar" >/dev/null
}

build() {
  if [[ "${FORCE:-0}" != "1" ]] && is_built; then
    return 0
  fi
  rm -rf target/lib target/classes "$STAMP"
  mkdir -p target
  echo "opensearch_node/build.sh: building (log: $HERE/$LOG) ..." >&2
  local start=$SECONDS
  if ! "$MVN" -o -q -B package >"$LOG" 2>&1; then
    rm -rf target/lib target/classes
    if ! "$MVN" -q -B package >>"$LOG" 2>&1; then
      tail -n 40 "$LOG" >&2
      die "maven build failed (full log: $HERE/$LOG)"
    fi
  fi
  [[ -f target/classes/npuwatch/testnode/TestNode.class ]] \
    && compgen -G "target/lib/opensearch-2*.jar" >/dev/null \
    || die "maven succeeded but target/classes or target/lib is incomplete"
  inputs_hash >"$STAMP"
  echo "opensearch_node/build.sh: built in $((SECONDS - start))s" >&2
}

# Serialise concurrent builds (e.g. parallel test workers) when flock is available.
mkdir -p target
if command -v flock >/dev/null 2>&1; then
  exec 9>"target/.build.lock"
  flock 9
fi
build
