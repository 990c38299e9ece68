//! Validation and parsing without a database: a form field checked before the app has a
//! `Docmeta`, or a mobile app validating offline. The same code as the pipeline of a
//! `Docmeta`, so the same errors.

use std::sync::Arc;

use docmeta_core as core;

use crate::classes::{Classes, registry};
use crate::errors::Result;
use crate::records::MetadataTypeSpec;

/// A metadata type definition checked once (every field, as creating the type would), ready to
/// run spec 2.10's steps (default, required, lookup, validator, parser) on values without a
/// database. Errors are the pipeline's: a refused value is a `Validation` error on `value`.
#[derive(uniffi::Object)]
pub struct MetadataProcessor {
    inner: core::MetadataProcessor,
}

#[uniffi::export]
impl MetadataProcessor {
    /// Checks `definition` with the built-in classes, or with `classes`; errors name the field
    /// of the definition that is wrong.
    #[uniffi::constructor(default(classes = None))]
    pub fn new(definition: MetadataTypeSpec, classes: Option<Arc<Classes>>) -> Result<Arc<Self>> {
        let input: core::MetadataTypeInput = definition.into();
        let inner = core::MetadataProcessor::with_classes(&input, &registry(classes))?;
        Ok(Arc::new(MetadataProcessor { inner }))
    }

    /// Runs the pipeline on `value` and returns the value a store would keep. `required` is
    /// what the document type's association would say.
    pub fn process(&self, value: String, required: bool) -> Result<String> {
        Ok(self.inner.process(&value, required)?)
    }

    /// The lookup's choices, or `None` when the type has no lookup (any value).
    pub fn lookup_choices(&self) -> Result<Option<Vec<String>>> {
        Ok(self.inner.lookup_choices()?)
    }
}

/// Checks `value` with the built-in validator class at `path` (spec 2.8) and its YAML
/// `arguments`, without a database. An unknown class is a `Validation` error on `validation`,
/// bad arguments one on `validation_arguments`, a refused value one on `value`.
#[uniffi::export]
pub fn validate(path: String, arguments: String, value: String) -> Result<()> {
    Ok(core::validate_value(&path, &arguments, &value)?)
}

/// Parses `value` with the built-in parser class at `path` (spec 2.9) and its YAML `arguments`,
/// without a database; returns the value to store. Errors name `parser`, `parser_arguments` or
/// `value`.
#[uniffi::export]
pub fn parse(path: String, arguments: String, value: String) -> Result<String> {
    Ok(core::parse_value(&path, &arguments, &value)?)
}
