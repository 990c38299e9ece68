//! Checking one stored document file against its record: its presence, size and SHA-256 and,
//! for a MENC file, every chunk's tag. `Docmeta::verify_storage` checks them all; a backup
//! checks the encrypted files it archives.
//!
//! Part of `kernel` (layer 5 of `scripts/check-structure`): it may import only what `kernel`
//! may (see `kernel`'s module documentation).

use std::io::{self, Read};

use super::Docmeta;
use crate::error::{Error, Result};
use crate::files::Hashing;
use crate::model::FileDamage;
use crate::store::records::StoredFile;

impl Docmeta {
    /// Reads `f`'s stored bytes through the storage (decrypting MENC, every chunk
    /// authenticated) and compares them with its record. Returns the content bytes read and
    /// what is wrong, `None` when the file is intact. Fails only when the file cannot be checked
    /// at all: an encrypted file while this instance has no storage password.
    pub(crate) fn check_stored_file(&self, f: &StoredFile) -> Result<(u64, Option<FileDamage>)> {
        let storage = &self.inner.files;
        if f.encrypted && !storage.encrypts() {
            return Err(Error::Decryption(format!(
                "document file {} is encrypted (MENC): checking it needs \
                 documents_file_storage_backend: encrypted and the storage password",
                f.file.id
            )));
        }
        let unreadable = |e: Error| FileDamage::Unreadable {
            reason: e.to_string(),
        };
        match storage.stored_len(&f.storage_name) {
            Ok(None) => return Ok((0, Some(FileDamage::Missing))),
            // A plain file's length is its content's: no need to read it to know it is wrong.
            Ok(Some(len)) if !f.encrypted && len != f.file.size => {
                return Ok((
                    0,
                    Some(FileDamage::WrongSize {
                        expected: f.file.size,
                        found: len,
                    }),
                ));
            }
            Ok(Some(_)) => {}
            Err(e) => return Ok((0, Some(unreadable(e)))),
        }
        let content = match self.open_stored(f) {
            Ok(content) => content,
            Err(Error::Decryption(reason)) => {
                return Ok((0, Some(FileDamage::FailedAuthentication { reason })));
            }
            Err(e) => return Ok((0, Some(unreadable(e)))),
        };
        let mut hashing = Hashing::new(content);
        let read = drain(&mut hashing);
        let (size, sha256) = hashing.finish();
        if let Err(e) = read {
            let damage = match crate::files::menc::io_error("reading a document file", e) {
                Error::Decryption(reason) => FileDamage::FailedAuthentication { reason },
                other => unreadable(other),
            };
            return Ok((size, Some(damage)));
        }
        if size != f.file.size {
            return Ok((
                size,
                Some(FileDamage::WrongSize {
                    expected: f.file.size,
                    found: size,
                }),
            ));
        }
        if sha256 != f.file.checksum {
            return Ok((
                size,
                Some(FileDamage::WrongChecksum {
                    expected: f.file.checksum.clone(),
                    found: sha256,
                }),
            ));
        }
        Ok((size, None))
    }
}

/// Reads `r` to its end in large reads (a MENC chunk is 64 KiB).
fn drain(r: &mut impl Read) -> io::Result<()> {
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        match r.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}
