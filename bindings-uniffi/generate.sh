#!/usr/bin/env bash
# Builds the docmeta cdylib and generates its Kotlin (package `docmeta`) and Swift (module
# `Docmeta`) bindings with this workspace's own uniffi-bindgen, into OUT (default:
# bindings-uniffi/generated). PROFILE=release (the default, what apps ship) or PROFILE=debug
# (what the tests use: the workspace's test build already compiled everything it needs;
# SCOPE=crate builds this crate alone, for a quick run outside the workspace's tests).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bindings-uniffi/generated}
profile=${PROFILE:-release}
if [ "$profile" = release ]; then
  cargo build --release --quiet -p docmeta-uniffi --lib --bin uniffi-bindgen
elif [ "${SCOPE:-workspace}" = crate ]; then
  cargo build --quiet -p docmeta-uniffi --lib --bin uniffi-bindgen
else
  # The whole workspace's features, as `cargo test --workspace` built them: nothing recompiles.
  cargo build --quiet --workspace --lib --bins
fi
lib=target/$profile/libdocmeta_uniffi.so
for language in kotlin swift; do
  rm -rf "$out/$language"
  "target/$profile/uniffi-bindgen" \
    generate --library "$lib" --language "$language" --out-dir "$out/$language"
done
echo "generated $out/kotlin and $out/swift from $lib"
