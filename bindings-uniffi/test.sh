#!/usr/bin/env bash
# Packages the bindings as an app installs them (package.sh), then:
# - Swift (cannot be compiled here): checks the package layout (Package.swift, the sources, the
#   module map and header, the libraries), that the C header compiles with gcc, and that every
#   function it declares is exported by the library.
# - Kotlin: compiles tests/kotlin/DocmetaTest.kt against docmeta.jar and runs it from the JAR
#   alone (`java -cp docmeta.jar:test.jar:jna.jar:kotlin-stdlib.jar`, no -Djna.library.path:
#   JNA loads the native library out of the JAR). Needs `kotlinc` on PATH and JNA, e.g.
#   Debian's libjna-java. The example of bindings-uniffi/README.md, examples/Example.kt, runs
#   the same way.
# Without kotlinc or JNA the Kotlin part is skipped with the reason, unless
# DOCMETA_REQUIRE_KOTLIN=1 (set by .ci/run), which makes it a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
out=target/uniffi-test
# The debug build: `cargo test --workspace` has compiled it already (PROFILE=release tests the
# optimised library instead, at the cost of a release build).
profile=${PROFILE:-debug}
PROFILE=$profile bindings-uniffi/package.sh "$out"
lib=target/$profile/libdocmeta_uniffi.so

echo "-- swift"
swift="$out/swift"
for f in Package.swift Sources/Docmeta/Docmeta.swift Sources/DocmetaFFI/include/DocmetaFFI.h \
  Sources/DocmetaFFI/include/module.modulemap lib/libdocmeta_uniffi.a lib/libdocmeta_uniffi.so; do
  [ -s "$swift/$f" ] || { echo "missing or empty: $swift/$f"; exit 1; }
done
header=$swift/Sources/DocmetaFFI/include
grep -q 'header "DocmetaFFI.h"' "$header/module.modulemap" || { echo "the module map does not name the header"; exit 1; }
# `_Nonnull`/`_Nullable` are clang nullability annotations gcc does not know.
echo '#include "DocmetaFFI.h"' | gcc -fsyntax-only -Wall -Werror -D_Nonnull= -D_Nullable= -I "$header" -x c -
declared=$(grep -oE '\b(uniffi_docmeta_[a-z0-9_]+|ffi_docmeta_[a-z0-9_]+)\(' "$header/DocmetaFFI.h" | tr -d '(' | sort -u)
exported=$(nm -D --defined-only "$lib" | awk '{print $3}' | sort -u)
missing=$(comm -23 <(echo "$declared") <(echo "$exported"))
if [ -n "$missing" ]; then echo "declared in the header but not exported:"; echo "$missing"; exit 1; fi
echo "swift: $(wc -l < "$swift/Sources/Docmeta/Docmeta.swift") lines; $(echo "$declared" | wc -l) header functions, all exported"

echo "-- kotlin"
jna=${JNA_JAR:-/usr/share/java/jna.jar}
if [ ! -f "$out/docmeta.jar" ]; then
  # package.sh said why (and failed when DOCMETA_REQUIRE_KOTLIN=1).
  exit 0
fi
# The compiler the tests passed with is pinned (scripts/pins/kotlin; .ci/run installs it into
# target/kotlin-compiler): another one is named, and refused when DOCMETA_REQUIRE_KOTLIN=1.
pinned=$(sed -n 's/.*"kotlin-compiler": "\([^"]*\)".*/\1/p' scripts/pins/kotlin/package.json | head -1)
found=$(kotlinc -version 2>&1 | sed -n 's/.*kotlinc-jvm \([^ ]*\).*/\1/p')
if [ "$found" != "$pinned" ]; then
  echo "kotlinc ${found:-(unknown version)} is not the pinned $pinned (scripts/pins/kotlin/)"
  if [ "${DOCMETA_REQUIRE_KOTLIN:-0}" = 1 ]; then exit 1; fi
fi
# The example of bindings-uniffi/README.md (bindings-uniffi/examples/Example.kt) is compiled and
# run too.
kotlinc bindings-uniffi/tests/kotlin/DocmetaTest.kt bindings-uniffi/examples/Example.kt \
  -cp "$out/docmeta.jar:$jna" -d "$out/test.jar" 2> >(grep -v '^warning:' >&2)
stdlib="$(dirname "$(command -v kotlinc)")/../lib/kotlin-stdlib.jar"
java -cp "$out/docmeta.jar:$out/test.jar:$jna:$stdlib" DocmetaTestKt
java -cp "$out/docmeta.jar:$out/test.jar:$jna:$stdlib" example.ExampleKt > /dev/null
echo "kotlin: the README example runs"
