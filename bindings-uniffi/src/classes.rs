//! Applications' own validators and parsers (spec 2.8/2.9), written in Kotlin or Swift.
//!
//! A [`Classes`] registry holds the built-in classes plus those an application registers under
//! a dotted path, like `app.validators.Even`. A metadata type names the path; a `Docmeta`
//! opened with the registry runs the class inside the value pipeline, as it runs the built-in
//! ones. The factory receives the type's YAML arguments once per use and returns the validator
//! or parser; a refusal (a `DocmetaException` thrown, or any other exception) becomes a
//! `Validation` error on the value's field (`value`, or `metadata[i].value` among a new
//! document's values), as a built-in refusal does.

use std::sync::{Arc, Mutex};

use docmeta_core as core;

use crate::errors::{DocmetaError, Result};
use crate::records::ClassInfo;

/// Checks a metadata value; implemented in Kotlin or Swift.
#[uniffi::export(with_foreign)]
pub trait MetadataValidator: Send + Sync {
    /// Accepts `value`, or throws why it is refused (its `reason`, or the exception's message,
    /// becomes the `Validation` error's reason).
    fn validate(&self, value: String) -> Result<()>;
}

/// Rewrites a metadata value before it is stored; implemented in Kotlin or Swift.
#[uniffi::export(with_foreign)]
pub trait MetadataParser: Send + Sync {
    /// The value to store, or throws why `value` cannot be parsed.
    fn parse(&self, value: String) -> Result<String>;
}

/// Builds a validator from a metadata type's YAML validator arguments.
#[uniffi::export(with_foreign)]
pub trait MetadataValidatorFactory: Send + Sync {
    /// The validator for these `arguments` (YAML; empty when the type gives none); throws when
    /// they are wrong, which refuses the metadata type's definition.
    fn create(&self, arguments: String) -> Result<Arc<dyn MetadataValidator>>;
}

/// Builds a parser from a metadata type's YAML parser arguments.
#[uniffi::export(with_foreign)]
pub trait MetadataParserFactory: Send + Sync {
    /// The parser for these `arguments`; throws when they are wrong.
    fn create(&self, arguments: String) -> Result<Arc<dyn MetadataParser>>;
}

/// Why a foreign call refused: the reason alone when it is a validation refusal, as the
/// pipeline adds the field itself.
fn refusal(e: DocmetaError) -> String {
    match e {
        DocmetaError::Validation { reason, .. } => reason,
        other => other.to_string(),
    }
}

struct ForeignValidator(Arc<dyn MetadataValidator>);

impl core::Validator for ForeignValidator {
    fn validate(&self, value: &str) -> std::result::Result<(), String> {
        self.0.validate(value.to_owned()).map_err(refusal)
    }
}

struct ForeignParser(Arc<dyn MetadataParser>);

impl core::Parser for ForeignParser {
    fn parse(&self, value: &str) -> std::result::Result<String, String> {
        self.0.parse(value.to_owned()).map_err(refusal)
    }
}

/// The validator and parser classes a `Docmeta` or a `MetadataProcessor` uses: the built-ins,
/// plus the application's own. Register before opening: an opened `Docmeta` keeps the classes
/// it was given.
#[derive(uniffi::Object)]
pub struct Classes {
    registry: Mutex<core::ClassRegistry>,
}

impl Classes {
    /// A copy of the registry as it is now.
    pub(crate) fn registry(&self) -> core::ClassRegistry {
        self.registry
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub(crate) fn of(registry: core::ClassRegistry) -> Arc<Classes> {
        Arc::new(Classes {
            registry: Mutex::new(registry),
        })
    }
}

/// The registry of `classes`, or the built-ins.
pub(crate) fn registry(classes: Option<Arc<Classes>>) -> core::ClassRegistry {
    classes.map_or_else(core::ClassRegistry::default, |c| c.registry())
}

#[uniffi::export]
impl Classes {
    /// The built-in classes only.
    #[uniffi::constructor]
    pub fn new() -> Arc<Self> {
        Classes::of(core::ClassRegistry::default())
    }

    /// Registers (or replaces) a validator class at `path`, shown as `label`.
    pub fn register_validator(
        &self,
        path: String,
        label: String,
        factory: Arc<dyn MetadataValidatorFactory>,
    ) {
        let mut registry = self.registry.lock().unwrap_or_else(|p| p.into_inner());
        registry.register_validator(&path, &label, move |arguments| {
            let validator = factory.create(arguments.to_owned()).map_err(refusal)?;
            Ok(Box::new(ForeignValidator(validator)))
        });
    }

    /// Registers (or replaces) a parser class at `path`, shown as `label`.
    pub fn register_parser(
        &self,
        path: String,
        label: String,
        factory: Arc<dyn MetadataParserFactory>,
    ) {
        let mut registry = self.registry.lock().unwrap_or_else(|p| p.into_inner());
        registry.register_parser(&path, &label, move |arguments| {
            let parser = factory.create(arguments.to_owned()).map_err(refusal)?;
            Ok(Box::new(ForeignParser(parser)))
        });
    }

    /// The validator classes, by path.
    pub fn validators(&self) -> Vec<ClassInfo> {
        let registry = self.registry.lock().unwrap_or_else(|p| p.into_inner());
        registry
            .validators()
            .map(|c| ClassInfo {
                path: c.path.clone(),
                label: c.label.clone(),
            })
            .collect()
    }

    /// The parser classes, by path.
    pub fn parsers(&self) -> Vec<ClassInfo> {
        let registry = self.registry.lock().unwrap_or_else(|p| p.into_inner());
        registry
            .parsers()
            .map(|c| ClassInfo {
                path: c.path.clone(),
                label: c.label.clone(),
            })
            .collect()
    }

    /// Checks `value` with the validator class at `path` of this registry and its YAML
    /// `arguments` (see the top-level `validate`).
    pub fn validate(&self, path: String, arguments: String, value: String) -> Result<()> {
        Ok(self.registry().validate(&path, &arguments, &value)?)
    }

    /// Parses `value` with the parser class at `path` of this registry (see the top-level
    /// `parse`).
    pub fn parse(&self, path: String, arguments: String, value: String) -> Result<String> {
        Ok(self.registry().parse(&path, &arguments, &value)?)
    }
}
