//! PostgreSQL's errors as docmeta's: a conflict with concurrent transactions (run the unit
//! again), a uniqueness or foreign-key violation, a full disk, or a storage failure.
//!
//! Part of `store` (layer 3): imports only `error`, `model`, `config`, `events` and its siblings.

use crate::error::{Error, NON_FIELD_ERRORS};

pub(super) type PgError = tokio_postgres::Error;
pub(super) type PgResult<T> = std::result::Result<T, PgError>;

/// SQLSTATEs after which running the whole transaction again may succeed:
/// `serialization_failure` and `deadlock_detected`.
fn is_contention(code: &str) -> bool {
    code == "40001" || code == "40P01"
}

/// `e` as docmeta's error, `operation` saying what failed.
pub(super) fn pg_error(operation: &str, e: PgError) -> Error {
    if let Some(db) = e.as_db_error() {
        return db_error(
            operation,
            db.code().code(),
            db.severity(),
            db.message(),
            db.detail(),
        );
    }
    Error::storage(operation.to_owned(), e)
}

/// Maps an error the server reported, by its SQLSTATE `code`.
fn db_error(
    operation: &str,
    code: &str,
    severity: &str,
    message: &str,
    detail: Option<&str>,
) -> Error {
    if is_contention(code) {
        return Error::contended(
            operation.to_owned(),
            format!("{severity} ({code}): {message}"),
        );
    }
    if code == "23505" {
        // "Key (name)=(x) already exists."
        let field = detail
            .and_then(|d| d.strip_prefix("Key ("))
            .and_then(|d| d.split(')').next())
            .map(|f| f.rsplit(", ").next().unwrap_or(f).to_owned())
            .unwrap_or_else(|| NON_FIELD_ERRORS.to_owned());
        return Error::conflict(field, "This value is already taken.");
    }
    if code == "23503" {
        return Error::InvalidInput(
            "the change refers to a record that does not exist, or removes one still in use".into(),
        );
    }
    if code.starts_with("23") {
        return Error::InvalidInput(format!(
            "a database constraint refused the change: {message}"
        ));
    }
    let source = format!("{severity} ({code}): {message}");
    // disk_full: the server could not extend a table, an index, a temporary file or the WAL.
    if code == "53100" {
        return Error::storage_full(operation.to_owned(), source);
    }
    Error::storage(operation.to_owned(), source)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn disk_full_is_storage_full() {
        let e = db_error(
            "inserting a row",
            "53100",
            "ERROR",
            "could not extend file \"base/16384/16385\": No space left on device",
            None,
        );
        assert_eq!(e.kind(), ErrorKind::StorageFull, "{e}");
    }

    #[test]
    fn other_resource_errors_are_storage() {
        // 53200 out_of_memory: same class, but freeing disk space does not help.
        let e = db_error("inserting a row", "53200", "ERROR", "out of memory", None);
        assert_eq!(e.kind(), ErrorKind::Storage, "{e}");
    }

    #[test]
    fn unique_violation_names_the_field() {
        let e = db_error(
            "inserting a row",
            "23505",
            "ERROR",
            "duplicate key value violates unique constraint",
            Some("Key (name)=(x) already exists."),
        );
        assert!(
            matches!(&e, Error::Conflict { field, .. } if field == "name"),
            "{e}"
        );
    }
}
