//! Statements and values in PostgreSQL's terms: the `?N` placeholders docmeta's statements
//! use become `$N` with a cast from the bound value's type, and bound values take the type
//! PostgreSQL expects for their placeholder.
//!
//! Part of `store` (layer 3): imports only `error`, `model`, `config`, `events` and its siblings.

use tokio_postgres::types::{IsNull, ToSql, Type};

use crate::store::Param;

/// `?N` placeholders to `$N` with the bound value's type, outside string literals.
pub(super) fn rewrite(sql: &str, params: &[Param<'_>]) -> String {
    let mut out = String::with_capacity(sql.len() + 16);
    let mut chars = sql.char_indices().peekable();
    let mut in_string = false;
    while let Some((_, c)) = chars.next() {
        if c == '\'' {
            in_string = !in_string;
            out.push(c);
            continue;
        }
        if c != '?' || in_string {
            out.push(c);
            continue;
        }
        let mut digits = String::new();
        while let Some((_, d)) = chars.peek().copied().filter(|(_, d)| d.is_ascii_digit()) {
            digits.push(d);
            chars.next();
        }
        let n: usize = digits.parse().unwrap_or(0);
        out.push('$');
        out.push_str(&digits);
        match params.get(n.wrapping_sub(1)) {
            Some(Param::Int(_)) => out.push_str("::int8"),
            Some(Param::Text(_)) => out.push_str("::text"),
            _ => {}
        }
    }
    out
}

/// A bound value (owned: a statement may wait in the transaction's pipeline) that takes the
/// type PostgreSQL expects for its placeholder.
#[derive(Debug)]
pub(super) enum Bound {
    Null,
    Int(i64),
    Text(String),
}

impl From<Param<'_>> for Bound {
    fn from(p: Param<'_>) -> Bound {
        match p {
            Param::Null => Bound::Null,
            Param::Int(v) => Bound::Int(v),
            Param::Text(t) => Bound::Text(t.to_owned()),
        }
    }
}

impl ToSql for Bound {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut tokio_postgres::types::private::BytesMut,
    ) -> std::result::Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Bound::Null => Ok(IsNull::Yes),
            Bound::Int(v) => match *ty {
                Type::INT2 => i16::try_from(*v)?.to_sql(ty, out),
                Type::INT4 => i32::try_from(*v)?.to_sql(ty, out),
                Type::BOOL => (*v != 0).to_sql(ty, out),
                _ => v.to_sql(ty, out),
            },
            Bound::Text(s) => s.as_str().to_sql(ty, out),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    tokio_postgres::types::to_sql_checked!();
}

/// The parameters of a statement as `tokio-postgres` takes them.
pub(super) fn refs(binds: &[Bound]) -> Vec<&(dyn ToSql + Sync)> {
    binds.iter().map(|b| b as &(dyn ToSql + Sync)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_typed_by_their_values() {
        assert_eq!(
            rewrite(
                "SELECT ?1, '?2', ?2 WHERE x = ?3",
                &[Param::Int(1), Param::Text("a"), Param::Null]
            ),
            "SELECT $1::int8, '?2', $2::text WHERE x = $3"
        );
    }
}
