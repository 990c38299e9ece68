//! The one error type of the face, [`DocmetaError`], mapped from the core's kinds (never from
//! message text), and the small conversions every call needs (permission keys).

use docmeta_core as core;
use docmeta_core::{ErrorKind, Permission};

/// A docmeta failure, by kind. (`reason`, not `message`: Kotlin exceptions already have one.)
#[derive(Debug, thiserror::Error, uniffi::Error)]
pub enum DocmetaError {
    /// Invalid input for a field.
    #[error("{field}: {reason}")]
    Validation {
        /// The field.
        field: String,
        /// Why.
        reason: String,
    },
    /// The user may see the object but not do this.
    #[error("{reason}")]
    PermissionDenied {
        /// Why.
        reason: String,
    },
    /// No such object, or one the user may not see.
    #[error("{reason}")]
    NotFound {
        /// What.
        reason: String,
    },
    /// A uniqueness rule or state conflict.
    #[error("{field}: {reason}")]
    Conflict {
        /// The field.
        field: String,
        /// Why.
        reason: String,
    },
    /// Malformed input (a search query, an argument).
    #[error("{reason}")]
    InvalidInput {
        /// Why.
        reason: String,
    },
    /// Encrypted data could not be decrypted (InvalidTag).
    #[error("{reason}")]
    Decryption {
        /// Why.
        reason: String,
    },
    /// The operation's deadline passed before it committed: nothing was changed.
    #[error("{reason}")]
    DeadlineExceeded {
        /// What ran out of time.
        reason: String,
    },
    /// Too much work of this kind is in progress (this user's template renders, or
    /// everyone's): nothing was done; the same call may succeed once some of it has finished.
    #[error("{reason}")]
    Throttled {
        /// What is busy.
        reason: String,
    },
    /// The database, the file system or another backing service failed.
    #[error("{reason}")]
    Storage {
        /// What failed.
        reason: String,
    },
    /// The disk (or a quota) is full: nothing was stored, and the same call may succeed once
    /// space is freed.
    #[error("{reason}")]
    StorageFull {
        /// What could not be stored.
        reason: String,
    },
    /// The change conflicted with concurrent ones (PostgreSQL) and was retried without
    /// success: nothing was changed, and the same call may succeed if tried again shortly.
    #[error("{reason}")]
    Busy {
        /// What conflicted.
        reason: String,
    },
}

impl From<core::Error> for DocmetaError {
    fn from(e: core::Error) -> Self {
        let message = e.to_string();
        match e {
            core::Error::Validation { field, message } => DocmetaError::Validation {
                field,
                reason: message,
            },
            core::Error::Conflict { field, message } => DocmetaError::Conflict {
                field,
                reason: message,
            },
            other => match other.kind() {
                ErrorKind::PermissionDenied => DocmetaError::PermissionDenied { reason: message },
                ErrorKind::NotFound => DocmetaError::NotFound { reason: message },
                ErrorKind::InvalidInput => DocmetaError::InvalidInput { reason: message },
                ErrorKind::Decryption => DocmetaError::Decryption { reason: message },
                ErrorKind::Timeout => DocmetaError::DeadlineExceeded { reason: message },
                ErrorKind::Throttled => DocmetaError::Throttled { reason: message },
                ErrorKind::StorageFull => DocmetaError::StorageFull { reason: message },
                ErrorKind::Storage if other.is_busy() => DocmetaError::Busy { reason: message },
                _ => DocmetaError::Storage { reason: message },
            },
        }
    }
}

pub(crate) type Result<T> = std::result::Result<T, DocmetaError>;

/// A permission by its key (`documents.document_view`).
pub(crate) fn permission(key: &str) -> Result<Permission> {
    Ok(Permission::from_key(key)?)
}

/// Permissions by their keys.
pub(crate) fn permissions(keys: &[String]) -> Result<Vec<Permission>> {
    keys.iter().map(|k| permission(k)).collect()
}

/// An exception thrown by a Kotlin or Swift callback that does not declare `DocmetaException`
/// (`DocmetaError` in Swift): a refusal of the value, as a validator's or parser's own refusal
/// would be.
impl From<uniffi::UnexpectedUniFFICallbackError> for DocmetaError {
    fn from(e: uniffi::UnexpectedUniFFICallbackError) -> Self {
        DocmetaError::Validation {
            field: "value".into(),
            reason: e.reason,
        }
    }
}
