//! The translation of a parsed query (`query.rs`'s [`Expr`]) into a tantivy query over the
//! index's records: words, phrases and substrings (n-grams) of text fields, ranges over the
//! typed fast fields, typed terms by their metadata type's value type, and, in a document
//! search, metadata terms joined to their documents through the values the caller may view.
//!
//! Part of `search` (layer 7 of `scripts/check-structure`): it may import only what `search`
//! may (see `search`'s module documentation).

use std::ops::Bound;

use tantivy::Term;
use tantivy::query::{
    AllQuery, BooleanQuery, ConstScoreQuery, EmptyQuery, Occur, PhraseQuery, Query, RangeQuery,
    TermQuery,
};
use tantivy::schema::{Field as TField, IndexRecordOption};

use super::collectors::Compared;
use super::index::{SearchIndex, Target, number_of, search_error, time_of};
use super::query::{Expr, Field, Match, ResolvedType};
use super::visible::{Records, ToDocument};
use crate::error::{Error, Result};
use crate::model::{TypedKey, ValueType};

impl SearchIndex {
    fn tokens(&self, field: TField, text: &str) -> Result<Vec<Term>> {
        let mut analyzer = self
            .index
            .tokenizer_for_field(field)
            .map_err(|e| search_error("tokenizing a query", e))?;
        let mut stream = analyzer.token_stream(text);
        let mut terms = Vec::new();
        while let Some(token) = stream.next() {
            terms.push(Term::from_field_text(field, &token.text));
        }
        Ok(terms)
    }

    /// Every word of `text` in `field` (AND), or the phrase.
    fn words(&self, field: TField, text: &str, phrase: bool) -> Result<Box<dyn Query>> {
        let terms = self.tokens(field, text)?;
        Ok(match terms.len() {
            0 => Box::new(EmptyQuery),
            1 => Box::new(TermQuery::new(
                terms[0].clone(),
                IndexRecordOption::WithFreqs,
            )),
            _ if phrase => Box::new(PhraseQuery::new(terms)),
            _ => Box::new(BooleanQuery::new(
                terms
                    .into_iter()
                    .map(|t| {
                        (
                            Occur::Must,
                            Box::new(TermQuery::new(t, IndexRecordOption::WithFreqs))
                                as Box<dyn Query>,
                        )
                    })
                    .collect(),
            )),
        })
    }

    /// A value matches as words, or as a substring (all of its n-grams), or as a phrase.
    fn value_query(&self, matching: &Match) -> Result<Box<dyn Query>> {
        let f = self.fields;
        Ok(match matching {
            Match::Phrase(p) => self.words(f.value, p, true)?,
            Match::Words(w) => {
                let grams: Vec<Term> = self
                    .tokens(f.value_ngram, w)?
                    .into_iter()
                    .filter(|t| {
                        t.value()
                            .as_str()
                            .is_some_and(|s| s.chars().count() == w.chars().count().min(3))
                    })
                    .collect();
                if grams.is_empty() {
                    // Too short for n-grams: whole words only.
                    return self.words(f.value, w, false);
                }
                // Every whole-word match is also a substring match: the n-grams alone decide.
                let partial: Box<dyn Query> = {
                    Box::new(BooleanQuery::new(
                        grams
                            .into_iter()
                            .map(|t| {
                                (
                                    Occur::Must,
                                    Box::new(TermQuery::new(t, IndexRecordOption::Basic))
                                        as Box<dyn Query>,
                                )
                            })
                            .collect(),
                    ))
                };
                partial
            }
            Match::Range { lower, upper } => self.range_query(lower, upper)?,
        })
    }

    fn range_query(
        &self,
        lower: &Option<(String, bool)>,
        upper: &Option<(String, bool)>,
    ) -> Result<Box<dyn Query>> {
        // Checked here, before tantivy sees the range (it panics on a range without bounds).
        if lower.is_none() && upper.is_none() {
            return Err(Error::InvalidInput(
                "query: a range needs at least one bound".into(),
            ));
        }
        let f = self.fields;
        if let Some((lo, hi)) = read_bounds(lower, upper, time_of) {
            return Ok(bounded_range(lo, hi, |v| {
                Term::from_field_i64(f.value_time, v)
            }));
        }
        if let Some((lo, hi)) = read_bounds(lower, upper, number_of) {
            return Ok(bounded_range(lo, hi, |v| {
                Term::from_field_f64(f.value_number, v)
            }));
        }
        Err(Error::InvalidInput(
            "query: range bounds must both be dates, times or numbers".into(),
        ))
    }

    /// A metadata term of a document search: the documents with a value the caller may view
    /// that `leaf` matches.
    fn join(&self, leaf: Box<dyn Query>, values: &Option<Option<Records>>) -> Box<dyn Query> {
        let child: Box<dyn Query> = match values {
            None => return Box::new(EmptyQuery),
            Some(None) => leaf,
            Some(Some(values)) => Box::new(BooleanQuery::new(vec![
                (Occur::Must, leaf),
                (Occur::Must, Box::new(values.clone())),
            ])),
        };
        Box::new(ToDocument {
            child,
            documents: self.documents.clone(),
            cache: self.records.clone(),
        })
    }

    fn type_name_query(&self, matching: &Match) -> Result<Box<dyn Query>> {
        match matching {
            Match::Words(w) | Match::Phrase(w) => Ok(Box::new(TermQuery::new(
                Term::from_field_text(self.fields.type_name, w),
                IndexRecordOption::Basic,
            ))),
            Match::Range { .. } => Err(Error::InvalidInput(
                "query: metadata type names take no range".into(),
            )),
        }
    }

    /// The records of `target` matching `expr`. Recursion is bounded by the parser's
    /// [`MAX_DEPTH`](super::query::MAX_DEPTH).
    pub(super) fn translate(&self, expr: &Expr, target: &Target) -> Result<Box<dyn Query>> {
        let f = self.fields;
        let type_label = match target {
            Target::Documents { .. } => f.type_label,
            Target::Values => f.value_type_label,
        };
        let metadata = |leaf: Box<dyn Query>| match target {
            Target::Documents { values } => self.join(leaf, values),
            Target::Values => leaf,
        };
        Ok(match expr {
            Expr::And(parts) => Box::new(BooleanQuery::new(
                parts
                    .iter()
                    .map(|p| Ok((Occur::Must, self.translate(p, target)?)))
                    .collect::<Result<_>>()?,
            )),
            Expr::Or(parts) => Box::new(BooleanQuery::new(
                parts
                    .iter()
                    .map(|p| Ok((Occur::Should, self.translate(p, target)?)))
                    .collect::<Result<_>>()?,
            )),
            // Unscored: tantivy's score for the "everything" side of an exclusion depends on how
            // records fall into segments, which reindexing (of hidden values too) changes.
            Expr::Not(inner) => Box::new(ConstScoreQuery::new(
                Box::new(BooleanQuery::new(vec![
                    (Occur::Must, Box::new(AllQuery) as Box<dyn Query>),
                    (Occur::MustNot, self.translate(inner, target)?),
                ])),
                0.0,
            )),
            Expr::Term {
                field: Some(Field::Label),
                matching,
            } => self.text_query(f.label, matching)?,
            Expr::Term {
                field: Some(Field::DocumentTypeLabel),
                matching,
            } => self.text_query(type_label, matching)?,
            Expr::Term {
                field: Some(Field::MetadataTypeName),
                matching,
            } => metadata(self.type_name_query(matching)?),
            Expr::Term {
                field: Some(Field::Value),
                matching,
            } => metadata(self.value_query(matching)?),
            Expr::Term {
                field: Some(Field::Type(field)),
                matching,
            } => match field.resolved {
                Some(t) => metadata(self.typed_query(&field.name, t, matching)?),
                None => Box::new(EmptyQuery),
            },
            Expr::Has(field) => match field.resolved {
                Some(t) => metadata(Box::new(TermQuery::new(
                    Term::from_field_i64(f.filled_type, t.id),
                    IndexRecordOption::Basic,
                ))),
                None => Box::new(EmptyQuery),
            },
            Expr::All => Box::new(AllQuery),
            Expr::DocumentType(t) => Box::new(TermQuery::new(
                Term::from_field_i64(f.document_type_id, *t),
                IndexRecordOption::Basic,
            )),
            Expr::Term {
                field: None,
                matching,
            } => {
                let mut values = vec![(Occur::Should, self.value_query(matching)?)];
                if let Match::Words(_) = matching {
                    values.push((Occur::Should, self.type_name_query(matching)?));
                }
                let mut any: Vec<(Occur, Box<dyn Query>)> =
                    vec![(Occur::Should, metadata(Box::new(BooleanQuery::new(values))))];
                if !matches!(matching, Match::Range { .. }) {
                    any.push((Occur::Should, self.text_query(f.label, matching)?));
                    any.push((Occur::Should, self.text_query(type_label, matching)?));
                }
                Box::new(BooleanQuery::new(any))
            }
        })
    }

    /// The values of metadata type `t` (named `name` in the query) that `matching` matches,
    /// compared by the type's value type: a word that reads as the type is that value, another
    /// word or a phrase matches the values' text as any value's would; range bounds must read as
    /// the type.
    fn typed_query(&self, name: &str, t: ResolvedType, matching: &Match) -> Result<Box<dyn Query>> {
        let f = self.fields;
        let of_type: Box<dyn Query> = Box::new(TermQuery::new(
            Term::from_field_i64(f.metadata_type_id, t.id),
            IndexRecordOption::Basic,
        ));
        let typed = |lower: RangeBound<TypedKey>, upper: RangeBound<TypedKey>| {
            if Compared::of(t.value_type) == Compared::AsNumber {
                let number = |b: RangeBound<TypedKey>| {
                    b.map(|(k, i)| (if let TypedKey::Number(n) = k { n } else { 0.0 }, i))
                };
                bounded_range(number(lower), number(upper), |v| {
                    Term::from_field_f64(f.value_number, v)
                })
            } else {
                let time = |b: RangeBound<TypedKey>| {
                    b.map(|(k, i)| (if let TypedKey::Time(t) = k { t } else { 0 }, i))
                };
                bounded_range(time(lower), time(upper), |v| {
                    Term::from_field_i64(f.value_time, v)
                })
            }
        };
        let values = match (t.value_type, matching) {
            (ValueType::Text, _) | (_, Match::Phrase(_)) => self.value_query(matching)?,
            // `true` and `false` are whole words.
            (ValueType::Boolean, Match::Words(w)) => self.words(f.value, w, false)?,
            (ValueType::Boolean, Match::Range { .. }) => {
                return Err(Error::InvalidInput(format!(
                    "query: {name} holds {}: it takes no range",
                    t.value_type.form()
                )));
            }
            (value_type, Match::Words(w)) => {
                match (
                    typed_bound(value_type, w, true, true),
                    typed_bound(value_type, w, true, false),
                ) {
                    (Some(lower), Some(upper)) => typed(Some(lower), Some(upper)),
                    _ => self.value_query(matching)?,
                }
            }
            (value_type, Match::Range { lower, upper }) => {
                let bound = |b: &Option<(String, bool)>, is_lower| match b {
                    None => Some(None),
                    Some((v, inclusive)) => {
                        typed_bound(value_type, v, *inclusive, is_lower).map(Some)
                    }
                };
                let (Some(lower), Some(upper)) = (bound(lower, true), bound(upper, false)) else {
                    return Err(Error::InvalidInput(format!(
                        "query: {name} holds {}: a range over it needs bounds of that form",
                        value_type.form()
                    )));
                };
                if lower.is_none() && upper.is_none() {
                    return Err(Error::InvalidInput(
                        "query: a range needs at least one bound".into(),
                    ));
                }
                typed(lower, upper)
            }
        };
        Ok(Box::new(BooleanQuery::new(vec![
            (Occur::Must, of_type),
            (Occur::Must, values),
        ])))
    }

    fn text_query(&self, field: TField, matching: &Match) -> Result<Box<dyn Query>> {
        match matching {
            Match::Words(w) => self.words(field, w, false),
            Match::Phrase(p) => self.words(field, p, true),
            Match::Range { .. } => Err(Error::InvalidInput(
                "query: ranges apply to metadata values".into(),
            )),
        }
    }
}

type RangeBound<T> = Option<(T, bool)>;

/// Both bounds read by `read` (an open bound stays open), or `None` when one does not read.
fn read_bounds<T>(
    lower: &Option<(String, bool)>,
    upper: &Option<(String, bool)>,
    read: impl Fn(&str) -> Option<T>,
) -> Option<(RangeBound<T>, RangeBound<T>)> {
    let one = |b: &Option<(String, bool)>| match b {
        None => Some(None),
        Some((v, inclusive)) => read(v).map(|t| Some((t, *inclusive))),
    };
    Some((one(lower)?, one(upper)?))
}

/// A range over a fast field; an empty range (lower above upper) matches nothing without
/// reaching tantivy.
fn bounded_range<T: PartialOrd + Copy>(
    lower: RangeBound<T>,
    upper: RangeBound<T>,
    term: impl Fn(T) -> Term,
) -> Box<dyn Query> {
    if let (Some((lo, lo_in)), Some((hi, hi_in))) = (lower, upper)
        && (lo > hi || (lo == hi && !(lo_in && hi_in)))
    {
        return Box::new(EmptyQuery);
    }
    let bound = |b: RangeBound<T>| match b {
        None => Bound::Unbounded,
        Some((v, true)) => Bound::Included(term(v)),
        Some((v, false)) => Bound::Excluded(term(v)),
    };
    Box::new(RangeQuery::new(bound(lower), bound(upper)))
}

/// A bound of a range over a field of `value_type` (`lower` or upper), as its key: a value of the
/// type; for a date and time also a date alone, which stands for the whole day (`> 2024-03-31`
/// is from the next midnight on, `<= 2024-03-31` until it, and a date as a word is its day).
fn typed_bound(
    value_type: ValueType,
    bound: &str,
    inclusive: bool,
    lower: bool,
) -> Option<(TypedKey, bool)> {
    if value_type == ValueType::DateTime
        && let Some(TypedKey::Time(day)) = ValueType::Date.key(bound)
    {
        const DAY: i64 = 86_400;
        let (at, inclusive) = match (lower, inclusive) {
            (true, true) => (day, true),
            (true, false) => (day + DAY, true),
            (false, true) => (day + DAY, false),
            (false, false) => (day, false),
        };
        return Some((TypedKey::Time(at), inclusive));
    }
    value_type.key(bound).map(|k| (k, inclusive))
}
