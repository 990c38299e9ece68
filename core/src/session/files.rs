//! Document files: upload, list, download, delete (spec 1; api.md "Files").

use std::io::{self, Read};

use super::{Session, event_object, obj};
use crate::access::{ObjectKind, Permission as P};
use crate::error::{Error, Result};
use crate::events::names;
use crate::files::{Hashing, clean_filename, content_error, guess_mime};
use crate::model::*;
use crate::store::records::StoredFile;

const FILE: &str = "documents.documentfile";
const DOC: &str = "documents.document";

fn file_ref(id: DocumentFileId) -> crate::access::ObjectRef {
    obj(ObjectKind::DOCUMENT_FILE, id.0)
}

fn doc_ref(id: DocumentId) -> crate::access::ObjectRef {
    obj(ObjectKind::DOCUMENT, id.0)
}

/// A document file's content, checked as it is read: the last read fails (`InvalidData`) if the
/// bytes do not match the recorded size and SHA-256, so a damaged file is never passed on as
/// whole.
pub struct FileContent {
    inner: Hashing<Box<dyn Read + Send>>,
    expected: (u64, String),
    checked: bool,
}

impl std::fmt::Debug for FileContent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileContent")
            .field("size", &self.expected.0)
            .finish_non_exhaustive()
    }
}

impl Read for FileContent {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n == 0 && !buf.is_empty() && !self.checked {
            self.checked = true;
            let hashing = std::mem::replace(
                &mut self.inner,
                Hashing::new(Box::new(io::empty()) as Box<dyn Read + Send>),
            );
            let got = hashing.finish();
            if got != self.expected {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "the stored file does not match its checksum (expected {} bytes, sha256 \
                         {}; read {} bytes, sha256 {})",
                        self.expected.0, self.expected.1, got.0, got.1
                    ),
                ));
            }
        }
        Ok(n)
    }
}

impl Session {
    fn stored_file(
        &self,
        tx: &mut crate::store::Tx<'_>,
        id: DocumentFileId,
        permission: P,
    ) -> Result<StoredFile> {
        let what = format!("document file {id}");
        let f = tx
            .document_file(id)?
            .ok_or_else(|| Error::not_found(&what))?;
        // An ACL on the file itself, or (inheritance, spec 5.3) anything on its document.
        if self.can(permission, file_ref(id)) {
            return Ok(f);
        }
        self.require(permission, doc_ref(f.file.document_id), what)?;
        Ok(f)
    }

    /// Refuses as [`Session::add_file`] would refuse before reading any content (an unknown or
    /// invisible document, no `documents.document_file_new` on it): a face that receives the
    /// content first (an HTTP server spooling an upload) asks this before accepting the bytes.
    pub fn check_add_file(&self, document: DocumentId) -> Result<()> {
        self.checked_for_new_file(document).map(drop)
    }

    fn checked_for_new_file(&self, document: DocumentId) -> Result<Document> {
        self.read(|tx| {
            self.checked(
                tx.document(document)?,
                P::DocumentFileNew,
                doc_ref(document),
                format!("document {document}"),
            )
        })
    }

    /// Stores `content` as a new file of `document`, streaming (memory use does not depend on
    /// the size), and records its name, size, SHA-256 and MIME type. Needs
    /// `documents.document_file_new` on the document. The bytes are durable before the record
    /// commits; if the record cannot be written they are removed.
    pub fn add_file(
        &self,
        document: DocumentId,
        filename: &str,
        content: &mut dyn Read,
    ) -> Result<DocumentFile> {
        // Checked before the upload is stored (and again in the transaction).
        let doc = self.checked_for_new_file(document)?;
        let filename = clean_filename(filename);
        let storage = &self.db.inner.files;
        let mut hashing = Hashing::new(content);
        let name = storage.put(&mut hashing)?;
        let (size, checksum) = hashing.finish();
        let result = self.write(|u| {
            let doc = self.checked(
                u.tx.document(doc.id)?,
                P::DocumentFileNew,
                doc_ref(doc.id),
                format!("document {document}"),
            )?;
            let file = u.tx.insert_document_file(
                &DocumentFile {
                    id: DocumentFileId(0),
                    document_id: doc.id,
                    filename: filename.clone(),
                    size,
                    checksum: checksum.clone(),
                    mimetype: guess_mime(&filename),
                    created: chrono::Utc::now(),
                },
                &name,
                storage.encrypts(),
            )?;
            u.event(
                names::DOCUMENT_FILE_CREATED,
                event_object(FILE, file.id.0, &file.filename),
                Some(event_object(DOC, doc.id.0, &doc.label)),
            )?;
            Ok(file)
        });
        if result.is_err() {
            let _ = storage.delete(&name);
        }
        result
    }

    /// The files of a document, oldest first. Needs `documents.document_view` on it.
    pub fn files(&self, document: DocumentId) -> Result<Vec<DocumentFile>> {
        self.read(|tx| {
            self.checked(
                tx.document(document)?,
                P::DocumentView,
                doc_ref(document),
                format!("document {document}"),
            )?;
            Ok(tx
                .document_files(document)?
                .into_iter()
                .map(|f| f.file)
                .collect())
        })
    }

    /// One document file's record. Needs `documents.document_view` on it or its document.
    pub fn file(&self, id: DocumentFileId) -> Result<DocumentFile> {
        self.read(|tx| Ok(self.stored_file(tx, id, P::DocumentView)?.file))
    }

    /// A document file's record and its content, streamed and checked against the recorded
    /// SHA-256 as it is read (see [`FileContent`]). Needs `documents.document_view`. A file
    /// of an encrypted storage read without it, or with the wrong password, is
    /// [`Error::Decryption`].
    pub fn open_file(&self, id: DocumentFileId) -> Result<(DocumentFile, FileContent)> {
        let stored = self.read(|tx| self.stored_file(tx, id, P::DocumentView))?;
        let content = self.db.open_stored(&stored)?;
        let expected = (stored.file.size, stored.file.checksum.clone());
        Ok((
            stored.file,
            FileContent {
                inner: Hashing::new(content),
                expected,
                checked: false,
            },
        ))
    }

    /// A document file's whole content in memory (small files, tests).
    pub fn read_file(&self, id: DocumentFileId) -> Result<Vec<u8>> {
        let (_, mut content) = self.open_file(id)?;
        let mut out = Vec::new();
        content
            .read_to_end(&mut out)
            .map_err(|e| content_error("reading a document file", e))?;
        Ok(out)
    }

    /// Deletes a document file: the record now, the bytes once that commits. Needs
    /// `documents.document_edit` on the document (or the file).
    pub fn delete_file(&self, id: DocumentFileId) -> Result<()> {
        self.write(|u| {
            let f = self.stored_file(&mut u.tx, id, P::DocumentEdit)?;
            u.tx.delete_acls_of(FILE, id.0)?;
            u.tx.delete_document_file(id)?;
            u.unlink.push(f.storage_name);
            u.event(
                names::DOCUMENT_FILE_DELETED,
                event_object(FILE, id.0, &f.file.filename),
                None,
            )
        })
    }
}
