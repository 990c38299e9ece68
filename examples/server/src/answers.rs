//! Answers of `GET /api/v4/documents/{id}/metadata/` kept as the bytes that were sent.
//!
//! The core's read cache says, for each caller and each call, which copy of the document and
//! which of its values the caller is shown ([`MetadataPageVersion`]; the permissions are checked
//! there, on every request). Equal versions and the same request target (path and query: the
//! page, its size, the links in the answer) make the same answer, so the bytes made for one
//! request are sent again for the next with an equal version, for any caller: this module never
//! decides who sees what, and a write or a changed permission changes the version.
//!
//! Bounded: at most [`MAX_BYTES`] of answers are kept (past it all are dropped, and the hot
//! documents come back with their next read; versions of older copies are never asked for
//! again, so they go then too), answers over [`MAX_ANSWER_BYTES`] are not kept, and a version
//! keeps at most [`MAX_TARGETS`] request targets.
//!
//! May import nothing of this crate.

use std::collections::HashMap;

use axum::body::Bytes;
use docmeta_core::MetadataPageVersion;
use parking_lot::Mutex;

/// Most bytes of answers kept.
const MAX_BYTES: usize = 16 << 20;
/// Most request targets (pages, page sizes) kept per version.
const MAX_TARGETS: usize = 4;
/// Largest answer kept.
const MAX_ANSWER_BYTES: usize = 64 << 10;

/// See the module documentation.
#[derive(Default)]
pub struct MetadataAnswers {
    kept: Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    answers: HashMap<MetadataPageVersion, Vec<(String, Bytes)>>,
    /// The bytes of every kept answer and target.
    bytes: usize,
}

impl MetadataAnswers {
    /// The answer made for `target` under an equal version, if one is kept.
    pub fn get(&self, version: &MetadataPageVersion, target: &str) -> Option<Bytes> {
        let kept = self.kept.lock();
        kept.answers
            .get(version)?
            .iter()
            .find(|(t, _)| t == target)
            .map(|(_, bytes)| bytes.clone())
    }

    /// Keeps the answer made for `target` from a page that came with `version`.
    pub fn keep(&self, version: MetadataPageVersion, target: &str, bytes: Bytes) {
        if bytes.len() > MAX_ANSWER_BYTES {
            return;
        }
        let size = bytes.len() + target.len();
        let mut kept = self.kept.lock();
        if kept.bytes + size > MAX_BYTES {
            kept.answers.clear();
            kept.bytes = 0;
        }
        let targets = kept.answers.entry(version).or_default();
        if targets.iter().any(|(t, _)| t == target) {
            return;
        }
        let dropped = if targets.len() >= MAX_TARGETS {
            let (t, b) = targets.remove(0);
            t.len() + b.len()
        } else {
            0
        };
        targets.push((target.to_owned(), bytes));
        kept.bytes = kept.bytes + size - dropped;
    }
}
