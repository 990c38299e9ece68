//! Reading and writing backup archives (zstd-compressed tar) entry by entry, for tests that
//! build altered archives from real ones.

use std::io::Read;
use std::path::Path;

/// Every entry of a backup archive, in order: its path and bytes.
pub fn read_entries(archive: &Path) -> Vec<(String, Vec<u8>)> {
    let file = std::fs::File::open(archive).expect("open");
    let mut tar = tar::Archive::new(zstd::Decoder::new(file).expect("zstd"));
    let mut out = Vec::new();
    for entry in tar.entries().expect("entries") {
        let mut entry = entry.expect("entry");
        let path = entry.path().expect("path").to_string_lossy().into_owned();
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).expect("read");
        out.push((path, bytes));
    }
    out
}

/// Writes `entries` as a backup archive at `archive`, each with its real size and mode `0600`.
pub fn write_entries(archive: &Path, entries: &[(String, Vec<u8>)]) {
    let file = std::fs::File::create(archive).expect("create");
    let mut tar = tar::Builder::new(zstd::Encoder::new(file, 3).expect("zstd").auto_finish());
    for (path, bytes) in entries {
        let mut h = tar::Header::new_gnu();
        h.set_size(bytes.len() as u64);
        h.set_mode(0o600);
        tar.append_data(&mut h, path, &bytes[..]).expect("append");
    }
    tar.into_inner().expect("finish");
}
