//! `uniffi-bindgen` at the workspace's uniffi version: `generate --library <cdylib> --language
//! kotlin|swift --out-dir <dir>`.

fn main() {
    uniffi::uniffi_bindgen_main()
}
