#!/usr/bin/env bash
# Builds what an app installs, into OUT (default: target/uniffi-package):
# - docmeta.jar: the generated Kotlin bindings (package `docmeta`), compiled, with the native
#   library as a JNA resource for this platform (`linux-x86-64/libdocmeta_uniffi.so`): with
#   JNA and the Kotlin standard library beside it on the class path, nothing else is needed
#   (no -Djna.library.path).
# - swift/: a Swift package (Package.swift; Sources/DocmetaFFI with the C header and its module
#   map, linking libdocmeta_uniffi; Sources/Docmeta with the generated Docmeta.swift; lib/ with
#   the static and shared libraries) that a Swift toolchain builds with `swift build`.
# PROFILE=release (the default, what apps ship) or PROFILE=debug (the tests' build, see
# generate.sh). Needs `kotlinc` on PATH and JNA (JNA_JAR, default Debian's libjna-java) for the
# JAR; without them only the Swift package is made, unless DOCMETA_REQUIRE_KOTLIN=1.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-target/uniffi-package}
profile=${PROFILE:-release}
rm -rf "$out"
mkdir -p "$out"
PROFILE=$profile bindings-uniffi/generate.sh "$out/generated" > /dev/null
lib=target/$profile/libdocmeta_uniffi
case "$(uname -s)" in Darwin) shared=dylib ;; *) shared=so ;; esac

echo "-- swift package: $out/swift"
swift=$out/swift
mkdir -p "$swift/Sources/Docmeta" "$swift/Sources/DocmetaFFI/include" "$swift/lib"
cp "$out/generated/swift/Docmeta.swift" "$swift/Sources/Docmeta/"
cp "$out/generated/swift/DocmetaFFI.h" "$swift/Sources/DocmetaFFI/include/"
# The generated module map names the header; a system-library target also names the library.
cat > "$swift/Sources/DocmetaFFI/include/module.modulemap" <<'MAP'
module DocmetaFFI {
    header "DocmetaFFI.h"
    link "docmeta_uniffi"
    export *
}
MAP
# Hard links where the file system allows (the debug static library is large).
cp -l "$lib.a" "$lib.$shared" "$swift/lib/" 2> /dev/null || cp "$lib.a" "$lib.$shared" "$swift/lib/"
cat > "$swift/Package.swift" <<'SWIFT'
// swift-tools-version:5.9
// docmeta's Swift bindings: `import Docmeta`. The native library is in lib/ (built by
// bindings-uniffi/package.sh for the platform it ran on).
import PackageDescription

let package = Package(
    name: "Docmeta",
    products: [.library(name: "Docmeta", targets: ["Docmeta"])],
    targets: [
        .systemLibrary(name: "DocmetaFFI", path: "Sources/DocmetaFFI/include"),
        .target(
            name: "Docmeta",
            dependencies: ["DocmetaFFI"],
            path: "Sources/Docmeta",
            linkerSettings: [.unsafeFlags(["-Llib"]), .linkedLibrary("docmeta_uniffi")]
        ),
    ]
)
SWIFT

echo "-- kotlin jar: $out/docmeta.jar"
jna=${JNA_JAR:-/usr/share/java/jna.jar}
if ! command -v kotlinc > /dev/null || [ ! -f "$jna" ]; then
  reason="kotlinc not on PATH or JNA missing at $jna (the pinned kotlin-compiler of scripts/pins/kotlin/, as .ci/run installs it; apt-get install libjna-java)"
  if [ "${DOCMETA_REQUIRE_KOTLIN:-0}" = 1 ]; then echo "error: $reason"; exit 1; fi
  echo "skipped: $reason"
  exit 0
fi
# JNA's resource prefix for this platform (com.sun.jna.Platform.RESOURCE_PREFIX).
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) prefix=linux-x86-64 ;;
  Linux-aarch64) prefix=linux-aarch64 ;;
  Darwin-x86_64) prefix=darwin-x86-64 ;;
  Darwin-arm64) prefix=darwin-aarch64 ;;
  *) echo "error: no JNA resource prefix known for $(uname -s)-$(uname -m)"; exit 1 ;;
esac
kotlinc "$out"/generated/kotlin/docmeta/*.kt -cp "$jna" -d "$out/docmeta.jar" \
  2> >(grep -v '^warning:' >&2)
mkdir -p "$out/resources/$prefix"
cp "$lib.$shared" "$out/resources/$prefix/"
jar uf "$out/docmeta.jar" -C "$out/resources" "$prefix/libdocmeta_uniffi.$shared"
echo "docmeta.jar: $(unzip -l "$out/docmeta.jar" | grep -c '\.class$') classes, $prefix/libdocmeta_uniffi.$shared"
