#!/usr/bin/env bash
# Build ARX and the driver of benchmarks/anonymize_arx.py into benchmarks/.venvs/arx (idempotent).
#
#   ARX_SRC=/path/to/arx bash benchmarks/peers/setup_arx.sh
#
# ARX_SRC is a checkout of https://github.com/arx-deidentifier/arx (measured at aacd487,
# 2025-09-12) with its lib/ folder of jars.  Only ARX's library (src/main) is compiled, with
# javac (Java 17), against those jars; the PDF certificate needs pdfbox 2 and fontbox 2
# (Debian: apt-get install libpdfbox2-java).  When lib/ lacks hadoop-core (a large jar a
# shallow copy may not hold), a one-interface stand-in for org.apache.hadoop.io.Writable is
# compiled in its place: only ARX's classifiers use it, and the benchmark never runs them.
# Nothing of ARX is committed here.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUT="$(dirname "$HERE")/.venvs/arx"
: "${ARX_SRC:?set ARX_SRC to a checkout of github.com/arx-deidentifier/arx}"
mkdir -p "$OUT"
CP="$(find "$ARX_SRC/lib" -name '*.jar' | tr '\n' ':')/usr/share/java/pdfbox2.jar:/usr/share/java/fontbox2.jar"
if [ ! -f "$OUT/classes/org/deidentifier/arx/ARXAnonymizer.class" ]; then
    rm -rf "$OUT/classes" "$OUT/stub" && mkdir -p "$OUT/classes" "$OUT/stub/org/apache/hadoop/io"
    find "$ARX_SRC/src/main" -name '*.java' > "$OUT/sources.txt"
    if ! find "$ARX_SRC/lib" -name 'hadoop-core*.jar' | grep -q .; then
        cat > "$OUT/stub/org/apache/hadoop/io/Writable.java" <<'JAVA'
package org.apache.hadoop.io;
public interface Writable {
  void write(java.io.DataOutput out) throws java.io.IOException;
  void readFields(java.io.DataInput in) throws java.io.IOException;
}
JAVA
        echo "$OUT/stub/org/apache/hadoop/io/Writable.java" >> "$OUT/sources.txt"
    fi
    echo "compiling ARX into $OUT/classes"
    javac -nowarn -encoding UTF-8 -d "$OUT/classes" -cp "$CP" @"$OUT/sources.txt"
fi
javac -nowarn -encoding UTF-8 -d "$OUT" -cp "$OUT/classes:$CP" "$HERE/../drivers/ArxAnonymize.java"
echo "$OUT/classes:$OUT:$CP" > "$OUT/classpath.txt"
echo "ARX ready: java -cp \"\$(cat $OUT/classpath.txt)\" ArxAnonymize CASES.tsv"
