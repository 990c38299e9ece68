//! Document files: stored (encrypted when configured), read back checked against their SHA-256.

use docmeta_core as core;

use super::Session;
use crate::errors::{DocmetaError, Result};
use crate::records::DocumentFile;

#[uniffi::export]
impl Session {
    /// Checks that this session may add a file to `document`, before sending its bytes.
    pub fn check_add_file(&self, document: i64) -> Result<()> {
        Ok(self.inner.check_add_file(core::DocumentId(document))?)
    }

    /// Checks that this session may create a document of `document_type` (with a first file:
    /// `with_file`), before sending its content; nothing is created.
    pub fn check_create_document(&self, document_type: i64, with_file: bool) -> Result<()> {
        Ok(self
            .inner
            .check_create_document(core::DocumentTypeId(document_type), with_file)?)
    }

    /// Stores bytes as a new file of a document.
    pub fn add_file(&self, document: i64, filename: String, data: Vec<u8>) -> Result<DocumentFile> {
        Ok(self
            .inner
            .add_file(core::DocumentId(document), &filename, &mut data.as_slice())?
            .into())
    }

    /// Stores the file at `path` (streamed) as a new file of a document.
    pub fn add_file_from_path(
        &self,
        document: i64,
        path: String,
        filename: String,
    ) -> Result<DocumentFile> {
        let mut f = std::fs::File::open(&path).map_err(|e| DocmetaError::Storage {
            reason: format!("opening {path}: {e}"),
        })?;
        Ok(self
            .inner
            .add_file(core::DocumentId(document), &filename, &mut f)?
            .into())
    }

    /// The files of a document.
    pub fn files(&self, document: i64) -> Result<Vec<DocumentFile>> {
        Ok(self
            .inner
            .files(core::DocumentId(document))?
            .into_iter()
            .map(Into::into)
            .collect())
    }

    /// One file's record.
    pub fn file(&self, id: i64) -> Result<DocumentFile> {
        Ok(self.inner.file(core::DocumentFileId(id))?.into())
    }

    /// A file's content (checked against its SHA-256).
    pub fn read_file(&self, id: i64) -> Result<Vec<u8>> {
        Ok(self.inner.read_file(core::DocumentFileId(id))?)
    }

    /// Writes a file's content to `path` (streamed, checked against its SHA-256 as it goes:
    /// a damaged file fails and leaves `path` incomplete); returns its record.
    pub fn open_file(&self, id: i64, path: String) -> Result<DocumentFile> {
        let (record, mut content) = self.inner.open_file(core::DocumentFileId(id))?;
        let mut out = std::fs::File::create(&path).map_err(|e| DocmetaError::Storage {
            reason: format!("creating {path}: {e}"),
        })?;
        std::io::copy(&mut content, &mut out).map_err(|e| DocmetaError::Storage {
            reason: format!("writing file {id} to {path}: {e}"),
        })?;
        Ok(record.into())
    }

    /// Deletes a file.
    pub fn delete_file(&self, id: i64) -> Result<()> {
        Ok(self.inner.delete_file(core::DocumentFileId(id))?)
    }
}
