#!/usr/bin/env bash
# Generates the bindings, then:
# - Kotlin: compiles the generated bindings with tests/kotlin/DocmetaTest.kt against JNA and runs
#   it on the cdylib (needs `kotlinc` on PATH and JNA, e.g. Debian's libjna-java).
# - Swift (cannot be compiled here): checks that the bindings are produced and non-empty, that
#   the C header compiles with gcc, and that every function it declares is exported by the
#   library.
# Without kotlinc or JNA the Kotlin part is skipped with the reason, unless
# DOCMETA_REQUIRE_KOTLIN=1 (set by .ci/run), which makes it a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
out=target/uniffi-test
rm -rf "$out"
# The debug build: `cargo test --workspace` has compiled it already (PROFILE=release tests the
# optimised library instead).
profile=${PROFILE:-debug}
PROFILE=$profile bindings-uniffi/generate.sh "$out" > /dev/null
lib=target/$profile/libdocmeta_uniffi.so

echo "-- swift"
swift="$out/swift"
for f in Docmeta.swift DocmetaFFI.h DocmetaFFI.modulemap; do
  [ -s "$swift/$f" ] || { echo "missing or empty: $swift/$f"; exit 1; }
done
# `_Nonnull`/`_Nullable` are clang nullability annotations gcc does not know.
echo '#include "DocmetaFFI.h"' | gcc -fsyntax-only -Wall -Werror -D_Nonnull= -D_Nullable= -I "$swift" -x c -
declared=$(grep -oE '\b(uniffi_docmeta_[a-z0-9_]+|ffi_docmeta_[a-z0-9_]+)\(' "$swift/DocmetaFFI.h" | tr -d '(' | sort -u)
exported=$(nm -D --defined-only "$lib" | awk '{print $3}' | sort -u)
missing=$(comm -23 <(echo "$declared") <(echo "$exported"))
if [ -n "$missing" ]; then echo "declared in the header but not exported:"; echo "$missing"; exit 1; fi
echo "swift: $(wc -l < "$swift/Docmeta.swift") lines; $(echo "$declared" | wc -l) header functions, all exported"

echo "-- kotlin"
jna=${JNA_JAR:-/usr/share/java/jna.jar}
if ! command -v kotlinc > /dev/null || [ ! -f "$jna" ]; then
  reason="kotlinc not on PATH or JNA missing at $jna (npm install -g kotlin-compiler; apt-get install libjna-java)"
  if [ "${DOCMETA_REQUIRE_KOTLIN:-0}" = 1 ]; then echo "error: $reason"; exit 1; fi
  echo "skipped: $reason"
  exit 0
fi
kotlinc "$out"/kotlin/docmeta/*.kt bindings-uniffi/tests/kotlin/DocmetaTest.kt \
  -cp "$jna" -d "$out/test.jar" 2> >(grep -v '^warning:' >&2)
java -Djna.library.path="$PWD/target/$profile" -cp "$out/test.jar:$jna:$(dirname "$(command -v kotlinc)")/../lib/kotlin-stdlib.jar" DocmetaTestKt
