//! SQLite's errors as docmeta's: a full database or disk, a uniqueness or foreign-key
//! violation, another constraint, or a storage failure.
//!
//! Part of `store` (layer 3): imports only `error`, `model`, `config`, `events` and its siblings.

use rusqlite::ErrorCode;

use crate::error::{Error, NON_FIELD_ERRORS};

/// `e` as docmeta's error, `operation` saying what failed.
pub(super) fn sqlite_error(operation: &str, e: rusqlite::Error) -> Error {
    if let rusqlite::Error::SqliteFailure(code, _) = &e
        && code.code == ErrorCode::DiskFull
    {
        // SQLITE_FULL: the database file (or its journal) could not grow.
        return Error::storage_full(operation.to_owned(), e);
    }
    if let rusqlite::Error::SqliteFailure(code, message) = &e
        && code.code == ErrorCode::ConstraintViolation
    {
        let message = message.clone().unwrap_or_default();
        return match code.extended_code {
            // SQLITE_CONSTRAINT_UNIQUE, SQLITE_CONSTRAINT_PRIMARYKEY: "UNIQUE constraint failed: t.col"
            2067 | 1555 => {
                let field = message
                    .rsplit('.')
                    .next()
                    .unwrap_or(NON_FIELD_ERRORS)
                    .trim()
                    .to_owned();
                Error::conflict(field, "This value is already taken.")
            }
            // SQLITE_CONSTRAINT_FOREIGNKEY
            787 => Error::InvalidInput(
                "the change refers to a record that does not exist, or removes one still in use"
                    .into(),
            ),
            _ => Error::InvalidInput(format!(
                "a database constraint refused the change: {message}"
            )),
        };
    }
    Error::storage(operation.to_owned(), e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Result;
    use crate::store::sqlite::conn::open_connection;

    /// SQLite says SQLITE_FULL when the database cannot grow; `max_page_count` makes that
    /// happen without filling a disk.
    #[test]
    fn a_full_database_is_storage_full() -> Result<()> {
        let conn = open_connection(None)?;
        conn.execute_batch("CREATE TABLE t (b BLOB); PRAGMA max_page_count = 8;")
            .map_err(|e| sqlite_error("setting up", e))?;
        let e = conn
            .execute("INSERT INTO t (b) VALUES (zeroblob(1000000))", [])
            .map_err(|e| sqlite_error("inserting a row", e))
            .expect_err("the database is full");
        assert_eq!(e.kind(), crate::error::ErrorKind::StorageFull, "{e}");
        Ok(())
    }

    #[test]
    fn a_unique_violation_is_a_conflict_not_storage_full() -> Result<()> {
        let conn = open_connection(None)?;
        conn.execute_batch("CREATE TABLE t (name TEXT UNIQUE); INSERT INTO t VALUES ('a');")
            .map_err(|e| sqlite_error("setting up", e))?;
        let e = conn
            .execute("INSERT INTO t VALUES ('a')", [])
            .map_err(|e| sqlite_error("inserting a row", e))
            .expect_err("duplicate");
        assert!(
            matches!(&e, Error::Conflict { field, .. } if field == "name"),
            "{e}"
        );
        Ok(())
    }
}
