//! Values in SQLite's terms: docmeta's statement parameters bound as SQLite values, borrowed,
//! not copied. (The statements need no rewriting: SQLite takes their `?N` placeholders as they
//! are.)
//!
//! Part of `store` (layer 3): imports only `error`, `model`, `config`, `events` and its siblings.

use rusqlite::ToSql;
use rusqlite::types::{ToSqlOutput, ValueRef};

use crate::store::Param;

/// A statement parameter as rusqlite binds it.
pub(super) struct Bind<'a>(pub(super) &'a Param<'a>);

impl ToSql for Bind<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self.0 {
            Param::Null => ToSqlOutput::Borrowed(ValueRef::Null),
            Param::Int(v) => ToSqlOutput::Borrowed(ValueRef::Integer(*v)),
            Param::Text(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
        })
    }
}
