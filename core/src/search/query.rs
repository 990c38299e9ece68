//! The query language of spec 2.5 and api.md: `field:value` terms combined with AND (implicit or
//! explicit), `OR`, `NOT` (or `-`), parentheses, quoted phrases, ranges
//! `field:[a TO b]` and comparisons `field:>=a`, and bare words over every field.
//!
//! Beyond the spec: a name that is none of the spec's fields is a metadata type's name, and the
//! term matches only values of that type, compared by its value type (`amount:>1000`,
//! `due:[2024-01-01 TO 2024-03-31]`); `has:<name>` matches documents with a value of that type.
//! The session resolves the names ([`resolve`]) before the index translates the query: a type
//! whose values the caller may not view matches nothing; a name that is no type the caller may
//! know of (none, or one it may not view) is an unknown field, as the spec's grammar says, so an
//! answer never tells a hidden type from an absent one.
//!
//! Part of `search` (layer 7 of `scripts/check-structure`): it may import only what `search`
//! may (see `search`'s module documentation).

use crate::error::{Error, Result};
use crate::model::ValueType;

/// A metadata type a term names, and what the session found for the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeField {
    /// The name written in the query.
    pub name: String,
    /// Where the term starts in the query.
    pub position: usize,
    /// The type with that name, when the caller may view its values (see [`resolve`]).
    pub resolved: Option<ResolvedType>,
}

/// What a caller may know of the metadata type a name names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// A type whose values the caller may view.
    Found(ResolvedType),
    /// A type the caller may know of (view it, or view its values somewhere) but whose values it
    /// may not view: the term matches nothing.
    Hidden,
    /// No type, or one the caller may not know of: an unknown field.
    Unknown,
}

/// A metadata type found for a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResolvedType {
    /// Its id.
    pub id: i64,
    /// How its values compare.
    pub value_type: ValueType,
}

/// The word that asks for documents with a value of a type: `has:<name>`.
pub const HAS: &str = "has";

/// A searchable field (after resolving aliases).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Field {
    /// The document's label.
    Label,
    /// The label of the document's type (`document_type__label`, `document__document_type__label`).
    DocumentTypeLabel,
    /// A metadata type name (`metadata__metadata_type__name`, `metadata_type__name`).
    MetadataTypeName,
    /// A metadata value (`metadata__value`, `metadata_value`, `value`).
    Value,
    /// The values of one metadata type (`<name>:...`).
    Type(TypeField),
}

impl Field {
    /// The field `name` (a term at `position`) names: one of the spec's, else a metadata type's
    /// when it could be a type's name (`None` otherwise: no type can have it).
    fn parse(name: &str, position: usize) -> Option<Field> {
        Some(match name {
            "label" => Field::Label,
            "document_type__label" | "document__document_type__label" => Field::DocumentTypeLabel,
            "metadata__metadata_type__name" | "metadata_type__name" => Field::MetadataTypeName,
            "metadata__value" | "metadata_value" | "value" => Field::Value,
            name => Field::Type(type_field(name, position)?),
        })
    }
}

/// The metadata type `name` names, unresolved; `None` when no type can have that name.
fn type_field(name: &str, position: usize) -> Option<TypeField> {
    let mut chars = name.chars();
    let first = chars.next()?;
    let fits = (first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= crate::metadata::names::MAX_NAME_LEN;
    fits.then(|| TypeField {
        name: name.to_owned(),
        position,
        resolved: None,
    })
}

/// What a term matches.
#[derive(Debug, Clone, PartialEq)]
pub enum Match {
    /// Whole words (or, for values, a substring).
    Words(String),
    /// The words in this order.
    Phrase(String),
    /// A range of dates, times or numbers; `None` is open.
    Range {
        /// Lower bound and whether it is included.
        lower: Option<(String, bool)>,
        /// Upper bound and whether it is included.
        upper: Option<(String, bool)>,
    },
}

/// A parsed query.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// All of these.
    And(Vec<Expr>),
    /// Any of these.
    Or(Vec<Expr>),
    /// Not this.
    Not(Box<Expr>),
    /// Documents with a non-empty value of this metadata type (`has:<name>`).
    Has(TypeField),
    /// Every record (not written in queries: a list sorted through the index).
    All,
    /// The documents of one document type (not written in queries: a list of one type).
    DocumentType(i64),
    /// One term; `field` `None` searches every field.
    Term {
        /// The field searched.
        field: Option<Field>,
        /// What it must match.
        matching: Match,
    },
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Word(String, usize),
    Quoted(String, usize),
    Open(usize),
    Close(usize),
}

fn invalid(position: usize, message: &str) -> Error {
    Error::InvalidInput(format!("query: {message} at position {position}"))
}

/// Longest query accepted.
const MAX_QUERY_LEN: usize = 2_000;
/// Deepest nesting accepted, counting every construct that nests: a parenthesis, `NOT` and a
/// leading `-` each add a level. The parser, the translation into index queries and the drop of
/// the parsed expression all recurse once per level, so this bounds their stack use whatever the
/// query (about 500 `NOT`s fit in the length limit and used to overflow a runtime thread's stack).
pub const MAX_DEPTH: usize = 32;

fn tokenize(text: &str) -> Result<Vec<Token>> {
    let mut tokens = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some(&(i, c)) = chars.peek() {
        match c {
            c if c.is_whitespace() => {
                chars.next();
            }
            '(' => {
                tokens.push(Token::Open(i));
                chars.next();
            }
            ')' => {
                tokens.push(Token::Close(i));
                chars.next();
            }
            '"' => {
                chars.next();
                let mut s = String::new();
                let mut closed = false;
                for (_, c) in chars.by_ref() {
                    if c == '"' {
                        closed = true;
                        break;
                    }
                    s.push(c);
                }
                if !closed {
                    return Err(invalid(i, "unclosed quote"));
                }
                tokens.push(Token::Quoted(s, i));
            }
            _ => {
                let mut s = String::new();
                let mut in_range = false;
                while let Some(&(_, c)) = chars.peek() {
                    // A range `[a TO b]` is one word, spaces included.
                    match c {
                        '[' | '{' => in_range = true,
                        ']' | '}' => in_range = false,
                        '"' if s.ends_with(':') => break,
                        c if (c.is_whitespace() || c == '(' || c == ')') && !in_range => break,
                        _ => {}
                    }
                    s.push(c);
                    chars.next();
                }
                if in_range {
                    return Err(invalid(i, "unclosed range"));
                }
                tokens.push(Token::Word(s, i));
            }
        }
    }
    Ok(tokens)
}

/// Parses a query; a malformed query is [`Error::InvalidInput`] naming the position.
pub fn parse(text: &str) -> Result<Expr> {
    if text.len() > MAX_QUERY_LEN {
        return Err(invalid(MAX_QUERY_LEN, "query too long"));
    }
    let tokens = tokenize(text)?;
    if tokens.is_empty() {
        return Err(invalid(0, "empty query"));
    }
    let mut parser = Parser {
        tokens,
        at: 0,
        depth: 0,
    };
    let expr = parser.or()?;
    if let Some(t) = parser.tokens.get(parser.at) {
        return Err(invalid(position(t), "unexpected ')'"));
    }
    Ok(expr)
}

/// Resolves every metadata type name of `expr` with `find`; the first name that is
/// [`Lookup::Unknown`] is an unknown field ([`Error::InvalidInput`] naming its position, as
/// the parser says of any other). Recursion is bounded by [`MAX_DEPTH`].
pub fn resolve(expr: &mut Expr, find: &mut dyn FnMut(&str) -> Lookup) -> Result<()> {
    match expr {
        Expr::And(parts) | Expr::Or(parts) => {
            for p in parts {
                resolve(p, find)?;
            }
        }
        Expr::Not(inner) => resolve(inner, find)?,
        Expr::Has(field)
        | Expr::Term {
            field: Some(Field::Type(field)),
            ..
        } => {
            field.resolved = match find(&field.name) {
                Lookup::Found(t) => Some(t),
                Lookup::Hidden => None,
                Lookup::Unknown => {
                    let message = format!("unknown field '{}'", field.name);
                    return Err(invalid(field.position, &message));
                }
            }
        }
        Expr::Term { .. } | Expr::All | Expr::DocumentType(_) => {}
    }
    Ok(())
}

fn position(t: &Token) -> usize {
    match t {
        Token::Word(_, p) | Token::Quoted(_, p) | Token::Open(p) | Token::Close(p) => *p,
    }
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
    depth: usize,
}

impl Parser {
    /// Parses one nested construct starting at `p`, one level deeper; refused beyond
    /// [`MAX_DEPTH`] levels.
    fn nested(&mut self, p: usize, parse: impl FnOnce(&mut Self) -> Result<Expr>) -> Result<Expr> {
        if self.depth >= MAX_DEPTH {
            return Err(invalid(
                p,
                &format!("nested too deep (at most {MAX_DEPTH} levels of parentheses, NOT and -)"),
            ));
        }
        self.depth += 1;
        let parsed = parse(self);
        self.depth -= 1;
        parsed
    }

    fn peek_word(&self, word: &str) -> bool {
        matches!(self.tokens.get(self.at), Some(Token::Word(w, _)) if w == word)
    }

    fn or(&mut self) -> Result<Expr> {
        let mut parts = vec![self.and()?];
        while self.peek_word("OR") {
            self.at += 1;
            parts.push(self.and()?);
        }
        Ok(if parts.len() == 1 {
            parts.remove(0)
        } else {
            Expr::Or(parts)
        })
    }

    fn and(&mut self) -> Result<Expr> {
        let mut parts = vec![self.unary()?];
        loop {
            match self.tokens.get(self.at) {
                None | Some(Token::Close(_)) => break,
                Some(Token::Word(w, _)) if w == "OR" => break,
                Some(Token::Word(w, _)) if w == "AND" => self.at += 1,
                _ => {}
            }
            parts.push(self.unary()?);
        }
        Ok(if parts.len() == 1 {
            parts.remove(0)
        } else {
            Expr::And(parts)
        })
    }

    fn unary(&mut self) -> Result<Expr> {
        let Some(token) = self.tokens.get(self.at).cloned() else {
            let end = self.tokens.last().map_or(0, position);
            return Err(invalid(end, "a term is missing"));
        };
        self.at += 1;
        match token {
            Token::Word(w, p) if w == "NOT" => {
                let inner = self.nested(p, Self::unary)?;
                Ok(Expr::Not(Box::new(inner)))
            }
            Token::Word(w, p) if w == "AND" || w == "OR" => {
                Err(invalid(p, &format!("'{w}' needs a term before it")))
            }
            Token::Word(w, p) if w.starts_with('-') && w.len() > 1 => {
                let inner = self.nested(p, |_| term(&w[1..], p))?;
                Ok(Expr::Not(Box::new(inner)))
            }
            Token::Open(p) => {
                let inner = self.nested(p, Self::or)?;
                match self.tokens.get(self.at) {
                    Some(Token::Close(_)) => {
                        self.at += 1;
                        Ok(inner)
                    }
                    _ => Err(invalid(p, "unclosed '('")),
                }
            }
            Token::Close(p) => Err(invalid(p, "unexpected ')'")),
            Token::Quoted(s, _) => Ok(Expr::Term {
                field: None,
                matching: Match::Phrase(s),
            }),
            Token::Word(w, p) => {
                // `field:"a phrase"` arrives as the word `field:` followed by a quoted token.
                if let Some(name) = w.strip_suffix(':')
                    && let Some(Token::Quoted(s, _)) = self.tokens.get(self.at).cloned()
                {
                    self.at += 1;
                    let field = Field::parse(name, p)
                        .ok_or_else(|| invalid(p, &format!("unknown field '{name}'")))?;
                    return Ok(Expr::Term {
                        field: Some(field),
                        matching: Match::Phrase(s),
                    });
                }
                term(&w, p)
            }
        }
    }
}

fn term(word: &str, p: usize) -> Result<Expr> {
    let Some((name, value)) = word.split_once(':') else {
        return Ok(Expr::Term {
            field: None,
            matching: Match::Words(word.to_owned()),
        });
    };
    if value.is_empty() {
        return Err(invalid(p + word.len(), "a value is missing"));
    }
    if name == HAS {
        let field =
            type_field(value, p).ok_or_else(|| invalid(p, &format!("unknown field '{value}'")))?;
        return Ok(Expr::Has(field));
    }
    let field =
        Field::parse(name, p).ok_or_else(|| invalid(p, &format!("unknown field '{name}'")))?;
    Ok(Expr::Term {
        field: Some(field),
        matching: value_match(value, p)?,
    })
}

fn value_match(value: &str, p: usize) -> Result<Match> {
    if let Some(rest) = value.strip_prefix('[').or_else(|| value.strip_prefix('{')) {
        let inclusive_lower = value.starts_with('[');
        let inclusive_upper = rest.ends_with(']');
        let inner = rest
            .strip_suffix(']')
            .or_else(|| rest.strip_suffix('}'))
            .ok_or_else(|| invalid(p, "unclosed range"))?;
        let (lo, hi) = inner
            .split_once(" TO ")
            .ok_or_else(|| invalid(p, "a range is written [a TO b]"))?;
        let bound =
            |s: &str, inclusive| (s.trim() != "*").then(|| (s.trim().to_owned(), inclusive));
        let (lower, upper) = (bound(lo, inclusive_lower), bound(hi, inclusive_upper));
        if lower.is_none() && upper.is_none() {
            return Err(invalid(
                p,
                "a range needs at least one bound ([* TO *] is open on both sides)",
            ));
        }
        if [&lower, &upper]
            .into_iter()
            .flatten()
            .any(|(b, _)| b.is_empty())
        {
            return Err(invalid(
                p,
                "a range bound is empty: write * for an open side",
            ));
        }
        return Ok(Match::Range { lower, upper });
    }
    for (op, lower, inclusive) in [
        (">=", true, true),
        ("<=", false, true),
        (">", true, false),
        ("<", false, false),
    ] {
        if let Some(v) = value.strip_prefix(op) {
            if v.is_empty() {
                return Err(invalid(p, "a comparison needs a value"));
            }
            let bound = Some((v.to_owned(), inclusive));
            return Ok(if lower {
                Match::Range {
                    lower: bound,
                    upper: None,
                }
            } else {
                Match::Range {
                    lower: None,
                    upper: bound,
                }
            });
        }
    }
    Ok(Match::Words(value.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(field: Option<Field>, w: &str) -> Expr {
        Expr::Term {
            field,
            matching: Match::Words(w.into()),
        }
    }

    #[test]
    fn syntax() {
        assert_eq!(
            parse("metadata_type__name:due metadata_value:2024").ok(),
            Some(Expr::And(vec![
                words(Some(Field::MetadataTypeName), "due"),
                words(Some(Field::Value), "2024")
            ]))
        );
        assert_eq!(
            parse("a OR b c").ok(),
            Some(Expr::Or(vec![
                words(None, "a"),
                Expr::And(vec![words(None, "b"), words(None, "c")])
            ]))
        );
        assert_eq!(
            parse("NOT a").ok(),
            Some(Expr::Not(Box::new(words(None, "a"))))
        );
        assert_eq!(
            parse("-label:x").ok(),
            Some(Expr::Not(Box::new(words(Some(Field::Label), "x"))))
        );
        assert_eq!(
            parse("label:\"march invoice\"").ok(),
            Some(Expr::Term {
                field: Some(Field::Label),
                matching: Match::Phrase("march invoice".into())
            })
        );
        assert_eq!(
            parse("value:[2024-01-01 TO 2024-03-31]").ok(),
            Some(Expr::Term {
                field: Some(Field::Value),
                matching: Match::Range {
                    lower: Some(("2024-01-01".into(), true)),
                    upper: Some(("2024-03-31".into(), true))
                }
            })
        );
        assert_eq!(
            parse("value:>=5").ok(),
            Some(Expr::Term {
                field: Some(Field::Value),
                matching: Match::Range {
                    lower: Some(("5".into(), true)),
                    upper: None
                }
            })
        );
        assert_eq!(
            parse("(a OR b) AND c").ok(),
            Some(Expr::And(vec![
                Expr::Or(vec![words(None, "a"), words(None, "b")]),
                words(None, "c")
            ]))
        );
    }

    #[test]
    fn errors_name_the_position() {
        for (q, at) in [
            ("no-pe:x", 0),
            ("has:no-pe", 0),
            ("a \"b", 2),
            ("(a", 0),
            ("a)", 1),
            ("value:[1 TO", 0),
            ("OR a", 0),
            ("label:", 6),
            ("", 0),
            ("value:>=", 0),
        ] {
            let e = parse(q).expect_err(q).to_string();
            assert!(e.contains(&format!("position {at}")), "{q}: {e}");
        }
        assert!(parse(&"(".repeat(100)).is_err());
    }

    #[test]
    fn nesting_of_every_kind_is_bounded() {
        let at_limit = [
            format!("{}x", "NOT ".repeat(MAX_DEPTH)),
            format!("{}x{}", "(".repeat(MAX_DEPTH), ")".repeat(MAX_DEPTH)),
            format!("{}-x", "NOT ".repeat(MAX_DEPTH - 1)),
        ];
        for q in &at_limit {
            assert!(parse(q).is_ok(), "{q}");
        }
        let beyond = [
            format!("{}x", "NOT ".repeat(MAX_DEPTH + 1)),
            format!(
                "{}x{}",
                "(".repeat(MAX_DEPTH + 1),
                ")".repeat(MAX_DEPTH + 1)
            ),
            format!("{}-x", "NOT ".repeat(MAX_DEPTH)),
            format!(
                "{}x{}",
                "(NOT ".repeat(MAX_DEPTH / 2 + 1),
                ")".repeat(MAX_DEPTH / 2 + 1)
            ),
            format!("{}x", "NOT ".repeat(490)),
        ];
        for q in &beyond {
            let e = parse(q).expect_err(q).to_string();
            assert!(e.contains("nested too deep"), "{e}");
        }
    }

    #[test]
    fn other_names_are_metadata_types() {
        let field = |name: &str, position| {
            Some(Field::Type(TypeField {
                name: name.into(),
                position,
                resolved: None,
            }))
        };
        assert_eq!(
            parse("amount:>1000 has:due NOT has:po_number").ok(),
            Some(Expr::And(vec![
                Expr::Term {
                    field: field("amount", 0),
                    matching: Match::Range {
                        lower: Some(("1000".into(), false)),
                        upper: None
                    }
                },
                Expr::Has(TypeField {
                    name: "due".into(),
                    position: 13,
                    resolved: None
                }),
                Expr::Not(Box::new(Expr::Has(TypeField {
                    name: "po_number".into(),
                    position: 25,
                    resolved: None
                }))),
            ]))
        );
        assert_eq!(
            parse("party:\"acme corp\"").ok(),
            Some(Expr::Term {
                field: field("party", 0),
                matching: Match::Phrase("acme corp".into())
            })
        );
        let mut expr = parse("(amount:5 OR label:x) -has:due").expect("parses");
        let found = |name: &str| match name {
            "amount" => Lookup::Found(ResolvedType {
                id: 7,
                value_type: ValueType::Integer,
            }),
            "due" => Lookup::Hidden,
            _ => Lookup::Unknown,
        };
        resolve(&mut expr, &mut |name| found(name)).expect("known names");
        let Expr::And(parts) = &expr else {
            panic!("{expr:?}")
        };
        let Expr::Or(first) = &parts[0] else {
            panic!("{expr:?}")
        };
        assert!(matches!(
            &first[0],
            Expr::Term {
                field: Some(Field::Type(TypeField {
                    resolved: Some(ResolvedType { id: 7, .. }),
                    ..
                })),
                ..
            }
        ));
        assert!(
            matches!(&parts[1], Expr::Not(inner) if matches!(&**inner, Expr::Has(TypeField { resolved: None, .. })))
        );
    }

    #[test]
    fn an_unknown_name_is_an_unknown_field_where_it_stands() {
        let mut expr = parse("label:x OR nope:1").expect("parses");
        let e = resolve(&mut expr, &mut |_| Lookup::Unknown).expect_err("unknown");
        assert!(
            e.to_string()
                .contains("unknown field 'nope' at position 11"),
            "{e}"
        );
        let mut expr = parse("NOT has:nope").expect("parses");
        let e = resolve(&mut expr, &mut |_| Lookup::Unknown).expect_err("unknown");
        assert!(
            e.to_string().contains("unknown field 'nope' at position 4"),
            "{e}"
        );
    }

    #[test]
    fn a_range_needs_a_bound() {
        for q in [
            "value:[* TO *]",
            "value:{ * TO * }",
            "value:[* TO *}",
            "value:[ TO 5]",
            "value:[5 TO  ]",
        ] {
            assert!(parse(q).is_err(), "{q}");
        }
        assert!(parse("value:[* TO 5]").is_ok());
        assert!(parse("value:{5 TO *}").is_ok());
    }

    proptest::proptest! {
        #[test]
        fn never_panics(q in "\\PC{0,80}") {
            let _ = parse(&q);
        }
    }
}
