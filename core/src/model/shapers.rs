//! Who shaped a piece of stored code: a metadata type's default or lookup, a
//! transition's condition. Such code runs later for someone else, so it runs with no more than
//! what every one of its shapers may view (see `kernel::TemplateView`).
//!
//! Part of `model` (layer 1 of `scripts/check-structure`): it may import only what `model`
//! may (see `model`'s module documentation).

use super::{Actor, SYSTEM_AUTHOR, author_id};
use crate::error::{Error, Result};

/// The principals who shaped one stored template: its author and everyone who changed its text
/// afterwards, as user ids ([`SYSTEM_AUTHOR`], 0, is docmeta itself: a change made through
/// `Docmeta::system`). Kept sorted and without repeats; stored as the ids joined by commas.
///
/// An empty set on a template that is not empty means its shapers are unknown (stored before
/// they were recorded): it sees nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub(crate) struct Shapers(Vec<i64>);

impl Shapers {
    /// The shapers of a template `actor` has just written (`code` empty: none, the template is
    /// gone).
    pub(crate) fn of(actor: Actor, code: &str) -> Shapers {
        Shapers::default().after(actor, "", code)
    }

    /// The shapers after `actor` saved `new` where `old` was stored: unchanged when the text is
    /// the same (saving other fields shapes nothing), none when the template is emptied (nothing
    /// is left of what the others wrote), otherwise these plus `actor`.
    pub(crate) fn after(&self, actor: Actor, old: &str, new: &str) -> Shapers {
        if new.trim().is_empty() {
            return Shapers::default();
        }
        if new == old {
            return self.clone();
        }
        let mut ids = self.0.clone();
        let id = author_id(actor);
        if let Err(at) = ids.binary_search(&id) {
            ids.insert(at, id);
        }
        Shapers(ids)
    }

    /// The ids, sorted.
    pub(crate) fn ids(&self) -> &[i64] {
        &self.0
    }

    /// Whether docmeta itself is the only shaper.
    pub(crate) fn is_system_only(&self) -> bool {
        self.0 == [SYSTEM_AUTHOR]
    }

    /// The stored form: the ids joined by commas (empty: none).
    pub(crate) fn to_text(&self) -> String {
        self.0
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Reads the stored form.
    pub(crate) fn parse(text: &str) -> Result<Shapers> {
        let mut ids = text
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| {
                s.parse::<i64>().map_err(|e| {
                    Error::storage(
                        "reading the shapers of a template",
                        format!("'{text}': {e}"),
                    )
                })
            })
            .collect::<Result<Vec<i64>>>()?;
        ids.sort_unstable();
        ids.dedup();
        Ok(Shapers(ids))
    }
}

/// The shapers of a metadata type's two templates.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct MetadataTypeShapers {
    /// Of its default (spec 2.6).
    pub default: Shapers,
    /// Of its lookup (spec 2.7).
    pub lookup: Shapers,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::UserId;

    #[test]
    fn shapers_accumulate_until_the_template_is_emptied() {
        let (ann, eve) = (Actor::User(UserId(3)), Actor::User(UserId(7)));
        let s = Shapers::of(ann, "{{ x }}");
        assert_eq!(s.ids(), [3]);
        assert_eq!(
            s.after(eve, "{{ x }}", "{{ x }}"),
            s,
            "same text: unchanged"
        );
        let s = s.after(eve, "{{ x }}", "{{ y }}");
        assert_eq!(s.ids(), [3, 7]);
        assert_eq!(s.after(ann, "{{ y }}", "{{ z }}").ids(), [3, 7]);
        assert!(s.after(eve, "{{ y }}", " ").ids().is_empty());
        assert_eq!(Shapers::of(Actor::System, "a").ids(), [SYSTEM_AUTHOR]);
        assert!(Shapers::of(Actor::System, "").ids().is_empty());
        assert_eq!(Shapers::parse(&s.to_text()).expect("parse"), s);
        assert_eq!(Shapers::parse("7, 3,3,").expect("parse").ids(), [3, 7]);
        assert!(Shapers::parse("").expect("parse").ids().is_empty());
        assert!(Shapers::parse("x").is_err());
    }
}
