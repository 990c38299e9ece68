//! The registry of validator and parser classes, addressed by their class paths (spec 2.8/2.9).
//!
//! The built-in classes are registered under `svc.apps.metadata.…`; the `mayan.apps.metadata.…`
//! spellings of the original system resolve to the same classes. An embedding application adds
//! its own classes with [`ClassRegistry::register_validator`] / [`ClassRegistry::register_parser`].
//!
//! Part of `metadata` (layer 4 of `scripts/check-structure`): it may import only what `metadata`
//! may (see `metadata`'s module documentation).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::parsers::{self, Parser};
use super::validators::{self, Validator};

/// Builds a validator from its YAML arguments.
pub type ValidatorFactory =
    Arc<dyn Fn(&str) -> Result<Box<dyn Validator>, String> + Send + Sync + 'static>;
/// Builds a parser from its YAML arguments.
pub type ParserFactory =
    Arc<dyn Fn(&str) -> Result<Box<dyn Parser>, String> + Send + Sync + 'static>;

/// A registered class: its path, its label and how to build it.
#[derive(Clone)]
pub struct Class<F> {
    /// The class path stored in a metadata type's `validation` / `parser` field.
    pub path: String,
    /// The human-readable label (spec 2.8/2.9 tables).
    pub label: String,
    factory: F,
}

impl<F> std::fmt::Debug for Class<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Class")
            .field("path", &self.path)
            .field("label", &self.label)
            .finish()
    }
}

/// The validator and parser classes known to a [`crate::Docmeta`].
#[derive(Clone, Debug)]
pub struct ClassRegistry {
    validators: BTreeMap<String, Class<ValidatorFactory>>,
    parsers: BTreeMap<String, Class<ParserFactory>>,
}

impl Default for ClassRegistry {
    fn default() -> Self {
        let mut registry = ClassRegistry {
            validators: BTreeMap::new(),
            parsers: BTreeMap::new(),
        };
        for (path, label, factory) in validators::builtins() {
            registry.register_validator(&path, label, factory);
        }
        for (path, label, factory) in parsers::builtins() {
            registry.register_parser(&path, label, factory);
        }
        registry
    }
}

/// The original system's path prefix, accepted as an alias of ours.
const LEGACY_PREFIX: &str = "mayan.apps.metadata.";
const PREFIX: &str = "svc.apps.metadata.";

fn canonical(path: &str) -> std::borrow::Cow<'_, str> {
    match path.trim().strip_prefix(LEGACY_PREFIX) {
        Some(rest) => format!("{PREFIX}{rest}").into(),
        None => path.trim().into(),
    }
}

impl ClassRegistry {
    /// Registers (or replaces) a validator class. `factory` receives the YAML arguments.
    pub fn register_validator<F>(&mut self, path: &str, label: &str, factory: F)
    where
        F: Fn(&str) -> Result<Box<dyn Validator>, String> + Send + Sync + 'static,
    {
        let path = canonical(path).into_owned();
        let class = Class {
            path: path.clone(),
            label: label.to_owned(),
            factory: Arc::new(factory) as _,
        };
        self.validators.insert(path, class);
    }

    /// Registers (or replaces) a parser class. `factory` receives the YAML arguments.
    pub fn register_parser<F>(&mut self, path: &str, label: &str, factory: F)
    where
        F: Fn(&str) -> Result<Box<dyn Parser>, String> + Send + Sync + 'static,
    {
        let path = canonical(path).into_owned();
        let class = Class {
            path: path.clone(),
            label: label.to_owned(),
            factory: Arc::new(factory) as _,
        };
        self.parsers.insert(path, class);
    }

    /// The registered validator classes, by path.
    pub fn validators(&self) -> impl Iterator<Item = &Class<ValidatorFactory>> {
        self.validators.values()
    }

    /// The registered parser classes, by path.
    pub fn parsers(&self) -> impl Iterator<Item = &Class<ParserFactory>> {
        self.parsers.values()
    }

    /// Builds the validator at `path` with its YAML `arguments`.
    pub fn validator(&self, path: &str, arguments: &str) -> Result<Box<dyn Validator>, String> {
        let class = self
            .validators
            .get(canonical(path).as_ref())
            .ok_or_else(|| format!("unknown validator class '{path}'"))?;
        (class.factory)(arguments)
    }

    /// Builds the parser at `path` with its YAML `arguments`.
    pub fn parser(&self, path: &str, arguments: &str) -> Result<Box<dyn Parser>, String> {
        let class = self
            .parsers
            .get(canonical(path).as_ref())
            .ok_or_else(|| format!("unknown parser class '{path}'"))?;
        (class.factory)(arguments)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_paths_and_argument_checks() {
        let r = ClassRegistry::default();
        assert!(
            r.validator("mayan.apps.metadata.metadata_validators.DateValidator", "")
                .is_ok()
        );
        assert!(
            r.validator("svc.apps.metadata.metadata_validators.Nope", "")
                .is_err()
        );
        let err = r
            .validator(
                "svc.apps.metadata.metadata_validators.RegularExpressionValidator",
                "",
            )
            .err();
        assert!(err.is_some_and(|e| e.contains("pattern")));
        assert!(
            r.validator(
                "svc.apps.metadata.metadata_validators.DateValidator",
                "x: 1"
            )
            .is_err()
        );
        let p = r
            .parser(
                "svc.apps.metadata.metadata_parsers.RegularExpressionParser",
                "pattern: '[ -]'\nreplacement: ''",
            )
            .map_err(|e| e.to_string());
        assert_eq!(p.and_then(|p| p.parse("12 34-5")), Ok("12345".to_owned()));
    }
}
