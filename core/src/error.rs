//! One error type for every operation of docmeta.
//!
//! The variants are the *kinds* a caller acts on differently (show a field error, ask for other
//! credentials, report "not found", ...). Faces (HTTP, Python, Kotlin) map kinds, never message
//! text. Messages say what was being done when the failure happened.
//!
//! The bottom layer: imports nothing of the crate.

use std::fmt;

/// The result type of docmeta operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A boxed source error kept for diagnostics (never shown to remote callers by the faces).
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Field name used for errors not tied to one input field (Django REST Framework's spelling).
pub const NON_FIELD_ERRORS: &str = "non_field_errors";

/// The `field` of the [`Error::Conflict`] that refuses exclusive use of a data directory another
/// process has open (a restore, converting the storage): the message names that process.
pub const DATA_DIRECTORY_IN_USE: &str = "data_directory";

/// Everything that can go wrong in docmeta.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Input was well-formed but a rule refused it (spec section 7). `field` names the input
    /// field (`value`, `name`, `lookup`, ... or [`NON_FIELD_ERRORS`]).
    #[error("invalid {field}: {message}")]
    Validation {
        /// The input field the error is about.
        field: String,
        /// A human-readable explanation.
        message: String,
    },
    /// The actor may see the object but holds no permission for the action.
    #[error("permission denied: {0}")]
    PermissionDenied(String),
    /// The object does not exist, or the actor may not know that it exists.
    #[error("not found: {0}")]
    NotFound(String),
    /// A uniqueness rule refused the change (spec 8 items 1-2).
    #[error("conflict on {field}: {message}")]
    Conflict {
        /// The input field whose value is already taken.
        field: String,
        /// A human-readable explanation.
        message: String,
    },
    /// The request itself is malformed (unknown permission key, bad query syntax, ...).
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// Encrypted data could not be decrypted: wrong key or tampered data (spec 7, InvalidTag).
    #[error("decryption failed: {0}")]
    Decryption(String),
    /// The work did not finish before its deadline (see [`crate::Docmeta::with_deadline`]) and
    /// was rolled back: nothing changed, and it may be tried again.
    #[error("timed out: {0}")]
    Timeout(String),
    /// Refused before it started because too much work of its kind is in progress: the caller's
    /// own (`renders_per_user` template renders at once) or everyone's (`renders_at_once`).
    /// Nothing was done, and the same call may succeed once some of that work has finished (the
    /// HTTP server answers `429` with `Retry-After`).
    #[error("too busy: {0}")]
    Throttled(String),
    /// The database, the file system or another backing service failed.
    #[error("{operation} failed: {source}")]
    Storage {
        /// What docmeta was doing.
        operation: String,
        /// The underlying failure.
        #[source]
        source: BoxError,
    },
    /// The disk (or a quota) holding the database or the files is full: nothing was stored, and
    /// the same request may succeed once space is freed. Set where the failure is first seen
    /// (SQLite's `SQLITE_FULL`, PostgreSQL's `disk_full` 53100, an I/O error of kind
    /// `StorageFull` or `QuotaExceeded`), never guessed from message text.
    #[error("{operation} failed: {source}")]
    StorageFull {
        /// What docmeta was doing.
        operation: String,
        /// The underlying failure.
        #[source]
        source: BoxError,
    },
}

impl Error {
    /// A validation error on `field`.
    pub fn validation(field: impl Into<String>, message: impl fmt::Display) -> Self {
        Error::Validation {
            field: field.into(),
            message: message.to_string(),
        }
    }

    /// A "not found" error for an object described as `what` (e.g. `document 7`).
    pub fn not_found(what: impl fmt::Display) -> Self {
        Error::NotFound(what.to_string())
    }

    /// A conflict (uniqueness) error on `field`.
    pub fn conflict(field: impl Into<String>, message: impl fmt::Display) -> Self {
        Error::Conflict {
            field: field.into(),
            message: message.to_string(),
        }
    }

    /// A storage failure while doing `operation`. When `source` is, or was caused by, an I/O
    /// error saying the disk or a quota is full, this is [`Error::StorageFull`].
    pub fn storage(operation: impl Into<String>, source: impl Into<BoxError>) -> Self {
        let source = source.into();
        if io_says_full(source.as_ref()) {
            return Error::StorageFull {
                operation: operation.into(),
                source,
            };
        }
        Error::Storage {
            operation: operation.into(),
            source,
        }
    }

    /// A "storage full" failure while doing `operation`, for stores that learn it from their own
    /// result codes.
    pub fn storage_full(operation: impl Into<String>, source: impl Into<BoxError>) -> Self {
        Error::StorageFull {
            operation: operation.into(),
            source: source.into(),
        }
    }

    /// This error as one about entry `index` (from 0) of the list input `list`: a field error
    /// ([`Error::Validation`] or [`Error::Conflict`]) then names its field inside that entry,
    /// `list[index].field` (e.g. `metadata[1].value`), which [`field_path`](Self::field_path)
    /// reads back; other errors are returned unchanged.
    pub fn in_entry(self, list: &str, index: usize) -> Error {
        match self {
            Error::Validation { field, message } => Error::Validation {
                field: format!("{list}[{index}].{field}"),
                message,
            },
            Error::Conflict { field, message } => Error::Conflict {
                field: format!("{list}[{index}].{field}"),
                message,
            },
            other => other,
        }
    }

    /// The path to the input a field error ([`Error::Validation`] or [`Error::Conflict`]) is
    /// about: `[Field("label")]` for a field of the request, `[Field("metadata"), Entry(1),
    /// Field("value")]` for a field of an entry of a list (see [`in_entry`](Self::in_entry)).
    /// Django REST framework answers the latter as `{"metadata": [{}, {"value": [message]}]}`.
    /// `None` for other errors.
    pub fn field_path(&self) -> Option<Vec<FieldStep<'_>>> {
        let (Error::Validation { field, .. } | Error::Conflict { field, .. }) = self else {
            return None;
        };
        let mut path = Vec::new();
        for part in field.split('.') {
            let entry = part
                .strip_suffix(']')
                .and_then(|p| p.rsplit_once('['))
                .and_then(|(name, i)| Some((name, i.parse::<usize>().ok()?)));
            match entry {
                Some((name, index)) => {
                    path.push(FieldStep::Field(name));
                    path.push(FieldStep::Entry(index));
                }
                None => path.push(FieldStep::Field(part)),
            }
        }
        Some(path)
    }

    /// A transaction the database aborted because it conflicted with concurrent ones (on
    /// PostgreSQL: a serialization failure or a deadlock): nothing of it was stored, and running
    /// the whole unit of work again may succeed. Units of work retry it themselves; callers see
    /// it only when every retry conflicted too (see [`Error::is_busy`]).
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) fn contended(operation: impl Into<String>, source: impl fmt::Display) -> Self {
        Error::Storage {
            operation: operation.into(),
            source: Box::new(Contended {
                what: source.to_string(),
                retry: true,
            }),
        }
    }

    /// A unit of work that gave up because concurrent changes kept changing what it read
    /// (see `Docmeta::write`): [`Error::is_busy`] for callers, but not run again as a whole by
    /// the unit itself (it already tried as long as it made progress).
    pub(crate) fn contended_finally(
        operation: impl Into<String>,
        source: impl fmt::Display,
    ) -> Self {
        Error::Storage {
            operation: operation.into(),
            source: Box::new(Contended {
                what: source.to_string(),
                retry: false,
            }),
        }
    }

    /// Whether a unit of work runs again as a whole after this error (see
    /// `Docmeta::retrying`): a conflict the database reported, not a unit that gave up.
    pub(crate) fn retries_unit(&self) -> bool {
        matches!(self, Error::Storage { source, .. }
            if source.downcast_ref::<Contended>().is_some_and(|c| c.retry))
    }

    /// Whether this error is the database's refusal of a change that conflicted with
    /// concurrent changes (several processes or threads writing the same records on
    /// PostgreSQL), after docmeta retried it a few times, or a change that gave up because the
    /// values its templates read kept changing under it: nothing was changed, and the same
    /// request may succeed if tried again shortly. Its kind is [`ErrorKind::Storage`]; the HTTP
    /// server answers it `503` with `Retry-After`.
    pub fn is_busy(&self) -> bool {
        matches!(self, Error::Storage { source, .. } if source.is::<Contended>())
    }

    /// Whether this is [`Error::StorageFull`]: nothing was stored, and the same request may
    /// succeed once space is freed.
    pub fn is_storage_full(&self) -> bool {
        self.kind() == ErrorKind::StorageFull
    }

    /// The stable name of this error's kind, for faces that map kinds to their own types.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Validation { .. } => ErrorKind::Validation,
            Error::PermissionDenied(_) => ErrorKind::PermissionDenied,
            Error::NotFound(_) => ErrorKind::NotFound,
            Error::Conflict { .. } => ErrorKind::Conflict,
            Error::InvalidInput(_) => ErrorKind::InvalidInput,
            Error::Decryption(_) => ErrorKind::Decryption,
            Error::Timeout(_) => ErrorKind::Timeout,
            Error::Throttled(_) => ErrorKind::Throttled,
            Error::Storage { .. } => ErrorKind::Storage,
            Error::StorageFull { .. } => ErrorKind::StorageFull,
        }
    }
}

/// The source of a [`Error::contended`] error (crate-private: callers ask [`Error::is_busy`]).
#[derive(Debug)]
struct Contended {
    what: String,
    /// Whether the unit of work runs again as a whole (see [`Error::retries_unit`]).
    retry: bool,
}

impl fmt::Display for Contended {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "conflicted with concurrent changes: {}", self.what)
    }
}

impl std::error::Error for Contended {}

/// One step of the path to the input a field error is about (see [`Error::field_path`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldStep<'a> {
    /// A named field of the request or of a list entry.
    Field(&'a str),
    /// An entry of a list field, counted from 0.
    Entry(usize),
}

/// The kind of an [`Error`], without its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// See [`Error::Validation`].
    Validation,
    /// See [`Error::PermissionDenied`].
    PermissionDenied,
    /// See [`Error::NotFound`].
    NotFound,
    /// See [`Error::Conflict`].
    Conflict,
    /// See [`Error::InvalidInput`].
    InvalidInput,
    /// See [`Error::Decryption`].
    Decryption,
    /// See [`Error::Storage`].
    Storage,
    /// See [`Error::Timeout`].
    Timeout,
    /// See [`Error::Throttled`].
    Throttled,
    /// See [`Error::StorageFull`].
    StorageFull,
}

impl ErrorKind {
    const NAMES: [(ErrorKind, &'static str); 10] = [
        (ErrorKind::Validation, "validation"),
        (ErrorKind::PermissionDenied, "permission_denied"),
        (ErrorKind::NotFound, "not_found"),
        (ErrorKind::Conflict, "conflict"),
        (ErrorKind::InvalidInput, "invalid_input"),
        (ErrorKind::Decryption, "decryption"),
        (ErrorKind::Storage, "storage"),
        (ErrorKind::Timeout, "timeout"),
        (ErrorKind::Throttled, "throttled"),
        (ErrorKind::StorageFull, "storage_full"),
    ];

    /// The kind's name in snake case (`permission_denied`), as the faces write it.
    pub fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(k, _)| *k == self)
            .map_or("storage", |(_, n)| n)
    }

    /// The kind [`name`](Self::name) gives `name`.
    pub fn from_name(name: &str) -> Option<ErrorKind> {
        Self::NAMES
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(k, _)| *k)
    }
}

/// Whether `e` or one of its causes is an I/O error saying the disk or a quota is full.
fn io_says_full(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(e);
    while let Some(e) = cause {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            if matches!(
                io.kind(),
                std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
            ) {
                return true;
            }
            // An `io::Error`'s `source()` skips the error it wraps: look at that one first.
            if let Some(inner) = io.get_ref() {
                cause = Some(inner);
                continue;
            }
        }
        cause = e.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_error_of_a_list_entry_has_the_path_through_the_entry() {
        let e = Error::validation("value", "Enter a whole number.").in_entry("metadata", 1);
        assert_eq!(
            e.field_path(),
            Some(vec![
                FieldStep::Field("metadata"),
                FieldStep::Entry(1),
                FieldStep::Field("value")
            ])
        );
    }

    #[test]
    fn a_field_error_of_the_request_has_a_one_step_path() {
        let e = Error::conflict("label", "taken");
        assert_eq!(e.field_path(), Some(vec![FieldStep::Field("label")]));
    }

    #[test]
    fn errors_other_than_field_errors_are_not_moved_into_an_entry() {
        let e = Error::PermissionDenied("no".into()).in_entry("metadata", 0);
        assert!(matches!(&e, Error::PermissionDenied(m) if m == "no"));
        assert_eq!(e.field_path(), None);
    }

    #[test]
    fn an_io_error_saying_the_disk_is_full_is_storage_full() {
        let e = Error::storage(
            "writing",
            std::io::Error::from(std::io::ErrorKind::StorageFull),
        );
        assert_eq!(e.kind(), ErrorKind::StorageFull);
        assert!(e.is_storage_full());
    }

    #[test]
    fn an_exceeded_quota_is_storage_full() {
        let e = Error::storage(
            "writing",
            std::io::Error::from(std::io::ErrorKind::QuotaExceeded),
        );
        assert_eq!(e.kind(), ErrorKind::StorageFull);
    }

    #[test]
    fn a_full_disk_wrapped_in_another_io_error_is_storage_full() {
        let inner = std::io::Error::from(std::io::ErrorKind::StorageFull);
        let e = Error::storage("writing", std::io::Error::other(inner));
        assert_eq!(e.kind(), ErrorKind::StorageFull);
    }

    #[test]
    fn message_text_alone_does_not_make_storage_full() {
        let e = Error::storage(
            "writing",
            "database or disk is full: no space left on device",
        );
        assert_eq!(e.kind(), ErrorKind::Storage);
        assert!(!e.is_storage_full());
    }

    #[test]
    fn other_io_errors_stay_storage() {
        let e = Error::storage(
            "writing",
            std::io::Error::from(std::io::ErrorKind::PermissionDenied),
        );
        assert_eq!(e.kind(), ErrorKind::Storage);
    }
}
