#!/usr/bin/env bash
# Builds the docmeta cdylib (release) and generates its Kotlin (package `docmeta`) and Swift
# (module `Docmeta`) bindings with this workspace's own uniffi-bindgen, into OUT
# (default: bindings-uniffi/generated).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bindings-uniffi/generated}
cargo build --release --quiet -p docmeta-uniffi --lib
lib=target/release/libdocmeta_uniffi.so
for language in kotlin swift; do
  rm -rf "$out/$language"
  cargo run --release --quiet -p docmeta-uniffi --bin uniffi-bindgen -- \
    generate --library "$lib" --language "$language" --out-dir "$out/$language"
done
echo "generated $out/kotlin and $out/swift from $lib"
