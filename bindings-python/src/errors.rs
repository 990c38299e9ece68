//! docmeta-core's errors as Python exceptions (`docmeta.Error` and its subclasses, mapped by
//! kind, never by message text), and `run`, which calls the core with the GIL released.

use docmeta_core as core;
use docmeta_core::{ErrorKind, Permission};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(
    docmeta,
    Error,
    PyException,
    "Base class of docmeta's errors."
);
create_exception!(
    docmeta,
    ValidationError,
    Error,
    "Invalid input for a field: `.field`, `.message`."
);
create_exception!(
    docmeta,
    PermissionDenied,
    Error,
    "The user may see the object but not do this."
);
create_exception!(
    docmeta,
    NotFound,
    Error,
    "No such object, or one the user may not see."
);
create_exception!(
    docmeta,
    Conflict,
    Error,
    "A uniqueness rule or state conflict: `.field`, `.message`."
);
create_exception!(
    docmeta,
    InvalidInput,
    Error,
    "Malformed input (a query, an argument)."
);
create_exception!(
    docmeta,
    DecryptionError,
    Error,
    "Encrypted data could not be decrypted (InvalidTag)."
);
create_exception!(
    docmeta,
    DeadlineExceeded,
    Error,
    "The operation's deadline passed before it committed: nothing was changed."
);
create_exception!(
    docmeta,
    Throttled,
    Error,
    "Too much work of this kind is in progress (this user's template renders, or everyone's): nothing was done; the same call may succeed once some of it has finished."
);
create_exception!(
    docmeta,
    StorageError,
    Error,
    "The database, the file system or another backing service failed."
);
create_exception!(
    docmeta,
    StorageFull,
    StorageError,
    "The disk (or a quota) is full: nothing was stored; the same call may succeed once space is freed."
);

create_exception!(
    docmeta,
    Busy,
    StorageError,
    "The change conflicted with concurrent ones (PostgreSQL) and was retried without success: nothing was changed; the same call may succeed if tried again shortly."
);

/// Maps a core error to its Python exception, with `.field` and `.message` where it has them.
pub(crate) fn py_err(e: core::Error) -> PyErr {
    let message = e.to_string();
    let (field, detail) = match &e {
        core::Error::Validation { field, message } | core::Error::Conflict { field, message } => {
            (Some(field.clone()), message.clone())
        }
        _ => (None, message.clone()),
    };
    let err = match e.kind() {
        ErrorKind::Storage if e.is_busy() => Busy::new_err(message),
        ErrorKind::Validation => ValidationError::new_err(message),
        ErrorKind::PermissionDenied => PermissionDenied::new_err(message),
        ErrorKind::NotFound => NotFound::new_err(message),
        ErrorKind::Conflict => Conflict::new_err(message),
        ErrorKind::InvalidInput => InvalidInput::new_err(message),
        ErrorKind::Decryption => DecryptionError::new_err(message),
        ErrorKind::Storage => StorageError::new_err(message),
        ErrorKind::StorageFull => StorageFull::new_err(message),
        ErrorKind::Timeout => DeadlineExceeded::new_err(message),
        ErrorKind::Throttled => Throttled::new_err(message),
        _ => Error::new_err(message),
    };
    Python::attach(|py| {
        let value = err.value(py);
        let _ = value.setattr("field", field);
        let _ = value.setattr("message", detail);
    });
    err
}

/// Runs `f` with the GIL released and maps its error.
pub(crate) fn run<T: Send>(
    py: Python<'_>,
    f: impl FnOnce() -> core::Result<T> + Send,
) -> PyResult<T> {
    py.detach(f).map_err(py_err)
}

pub(crate) fn permission(key: &str) -> PyResult<Permission> {
    Permission::from_key(key).map_err(py_err)
}

/// The value type named `name` (`text`, `integer`, `decimal`, `date`, `datetime`, `time`,
/// `boolean`); another name is a `ValidationError` on `value_type`.
pub(crate) fn value_type(name: &str) -> PyResult<core::ValueType> {
    name.parse()
        .map_err(|e: String| py_err(core::Error::validation("value_type", e)))
}

/// The instant `seconds` from now (a deadline given in seconds).
pub(crate) fn deadline(seconds: f64) -> PyResult<std::time::Instant> {
    std::time::Duration::try_from_secs_f64(seconds)
        .map(|d| std::time::Instant::now() + d)
        .map_err(|e| InvalidInput::new_err(format!("deadline: {e}")))
}

/// Whether deciding access to `object` may read the store (the parents of files, metadata
/// values and workflow instances are too many to hold in memory); otherwise the decision is
/// taken from memory alone, quicker than releasing the GIL.
pub(crate) fn reads_the_store(object: docmeta_core::ObjectRef) -> bool {
    core::STORED_PARENT_KINDS.contains(&object.kind)
}
