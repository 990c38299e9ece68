//! Document files: upload, list, download, delete (spec 1; api.md "Files").
//!
//! Part of `session` (layer 6 of `scripts/check-structure`): it may import only what `session`
//! may (see `session`'s module documentation).

use std::io::{self, Read};

use super::{Session, event_object, obj};
use crate::access::{KnownParents, ObjectKind, Permission as P};
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

/// A document file's content, checked against the recorded size and SHA-256 so that a damaged
/// or swapped file is never passed on as whole: a file up to `download_verify_max_bytes` was
/// checked before [`Session::open_file`] returned; a larger one is checked as it is read, and
/// the read that reaches its end holds its bytes back until the checksum matches (it fails with
/// `InvalidData` otherwise), so a streaming download of a bad file always breaks off short of
/// its `Content-Length`.
pub struct FileContent {
    inner: Box<dyn Read + Send>,
    /// `None` once the content is known to match (checked up front, or at its end).
    digest: Option<ring::digest::Context>,
    read: u64,
    expected: (u64, String),
}

impl std::fmt::Debug for FileContent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileContent")
            .field("size", &self.expected.0)
            .finish_non_exhaustive()
    }
}

fn mismatch(expected: &(u64, String), got: (u64, String)) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "the stored file does not match its checksum (expected {} bytes, sha256 {}; read {} \
             bytes, sha256 {})",
            expected.0, expected.1, got.0, got.1
        ),
    )
}

impl FileContent {
    /// Content still to be checked as it is read.
    fn streamed(inner: Box<dyn Read + Send>, expected: (u64, String)) -> FileContent {
        FileContent {
            inner,
            digest: Some(ring::digest::Context::new(&ring::digest::SHA256)),
            read: 0,
            expected,
        }
    }

    /// Reads all of `inner` (at most the expected size and one byte) and checks it now.
    fn verified(
        mut inner: Box<dyn Read + Send>,
        expected: (u64, String),
        what: &str,
    ) -> Result<FileContent> {
        let mut bytes = Vec::with_capacity(usize::try_from(expected.0).unwrap_or(0));
        (&mut inner)
            .take(expected.0.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| content_error(what, e))?;
        let got = crate::files::sha256(&mut &bytes[..]).map_err(|e| content_error(what, e))?;
        if got != expected {
            return Err(content_error(what, mismatch(&expected, got)));
        }
        Ok(FileContent {
            inner: Box::new(io::Cursor::new(bytes)),
            digest: None,
            read: expected.0,
            expected,
        })
    }

    /// Whether `inner` has nothing after the expected size, and everything read hashes to the
    /// recorded SHA-256.
    fn check_end(&mut self) -> io::Result<()> {
        let mut probe = [0u8; 1];
        let extra = loop {
            match self.inner.read(&mut probe) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        };
        let digest = self
            .digest
            .take()
            .map(|d| crate::config::encode_hex(d.finish().as_ref()))
            .unwrap_or_default();
        let got = (self.read + extra as u64, digest);
        if got != self.expected {
            return Err(mismatch(&self.expected, got));
        }
        Ok(())
    }
}

impl Read for FileContent {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let Some(digest) = self.digest.as_mut() else {
            return self.inner.read(buf);
        };
        // Never more than the recorded size: what lies beyond is an error, not content.
        let left = self.expected.0 - self.read.min(self.expected.0);
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        if want == 0 && !buf.is_empty() {
            self.check_end()?;
            return Ok(0);
        }
        let n = self.inner.read(&mut buf[..want])?;
        digest.update(&buf[..n]);
        self.read += n as u64;
        if n == 0 && !buf.is_empty() {
            // Shorter than recorded.
            self.check_end()?;
        } else if self.read == self.expected.0 {
            // These are the last bytes: they are released only if the whole file matches.
            self.check_end()?;
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
        let mut parents = KnownParents::of(file_ref(id), vec![doc_ref(f.file.document_id)]);
        self.require_with(&mut parents, permission, file_ref(id), what)?;
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
        self.add_file_once(document, filename, content, None)?
            .ok_or_else(|| Error::InvalidInput("no file was added".into()))
    }

    /// [`add_file`](Self::add_file), recording in the same unit of work that the write `key`
    /// of `device` added it (`pushed`): a key recorded before adds nothing (`None`, the bytes
    /// received are dropped), so a file pushed again after a lost answer is added once.
    pub(crate) fn add_file_once(
        &self,
        document: DocumentId,
        filename: &str,
        content: &mut dyn Read,
        pushed: Option<(DeviceId, &str)>,
    ) -> Result<Option<DocumentFile>> {
        // Checked before the upload is stored (and again in the transaction).
        let doc = self.checked_for_new_file(document)?;
        let filename = clean_filename(filename);
        let storage = &self.db.inner.files;
        let mut hashing = Hashing::new(content);
        let name = storage.put(&mut hashing)?;
        let (size, checksum) = hashing.finish();
        let result = self.write(|u| {
            if let Some((device, key)) = pushed
                && u.tx.device_created(device, key)?.is_some()
            {
                return Ok(None);
            }
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
                    created: crate::model::now(),
                },
                &name,
                storage.encrypts(),
            )?;
            u.event(
                names::DOCUMENT_FILE_CREATED,
                event_object(FILE, file.id.0, &file.filename),
                Some(event_object(DOC, doc.id.0, &doc.label)),
                Changes::new(),
            )?;
            if let Some((device, key)) = pushed {
                u.tx.record_device_created(device, key, doc.id)?;
            }
            Ok(Some(file))
        });
        if !matches!(result, Ok(Some(_))) {
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

    /// A document file's record and its content, checked against the recorded size and
    /// SHA-256 (see [`FileContent`]): up to `download_verify_max_bytes` before this returns
    /// (a mismatch is [`Error::Storage`] and no byte is handed out), beyond that as it is
    /// read. Needs `documents.document_view`. A file of an encrypted storage read without it,
    /// with the wrong password, or stored under another file's name is [`Error::Decryption`].
    ///
    /// ```
    /// use docmeta_core::Error;
    /// use std::io::Read;
    ///
    /// let db = docmeta_core::Docmeta::in_memory()?;
    /// let admin = db.system();
    /// let memo = admin.create_document_type("Memo")?;
    /// let (doc, file) =
    ///     admin.create_document_with_file(memo.id, "Note", &[], "note.txt", &mut &b"hello"[..])?;
    /// assert_eq!((file.document_id, file.size), (doc.document.id, 5));
    /// assert_eq!(file.mimetype, "text/plain");
    ///
    /// let (record, mut content) = admin.open_file(file.id)?;
    /// let mut text = String::new();
    /// content.read_to_string(&mut text).map_err(|e| Error::storage("reading", e))?;
    /// assert_eq!((record.filename.as_str(), text.as_str()), ("note.txt", "hello"));
    /// assert_eq!(admin.files(doc.document.id)?, [record]);
    /// # Ok::<(), docmeta_core::Error>(())
    /// ```
    pub fn open_file(&self, id: DocumentFileId) -> Result<(DocumentFile, FileContent)> {
        let stored = self.read(|tx| self.stored_file(tx, id, P::DocumentView))?;
        let what = format!("reading document file {id}");
        // The log of whoever reports the failure says which file is damaged.
        let named = |e: Error| match e {
            Error::Decryption(m) if !m.contains(&format!("document file {id}")) => {
                Error::Decryption(format!("document file {id}: {m}"))
            }
            other => other,
        };
        let content = self.db.open_stored(&stored).map_err(named)?;
        let expected = (stored.file.size, stored.file.checksum.clone());
        let content = if stored.file.size <= self.db.inner.config.download_verify_max_bytes {
            FileContent::verified(content, expected, &what).map_err(named)?
        } else {
            FileContent::streamed(content, expected)
        };
        Ok((stored.file, content))
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
            u.forget_object(FILE, super::obj(ObjectKind::DOCUMENT_FILE, id.0))?;
            u.tx.delete_document_file(id)?;
            u.unlink.push(f.storage_name);
            // The document too, as on creation: a follower of the log (a replica, the search
            // index) learns which document lost a file.
            let document = u.tx.document(f.file.document_id)?;
            u.event(
                names::DOCUMENT_FILE_DELETED,
                event_object(FILE, id.0, &f.file.filename),
                document.map(|d| event_object(DOC, d.id.0, &d.label)),
                Changes::new(),
            )
        })
    }
}
