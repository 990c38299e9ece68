//! Validation and parsing without a store: a form field checked before the application has a
//! database, or a mobile app validating offline.
//!
//! [`validate`] and [`parse`] run one class of the registry on one value; a [`MetadataProcessor`]
//! checks a whole metadata type definition once and then runs spec 2.10's steps on values. Both
//! return the errors the value pipeline of a [`crate::Docmeta`] returns for the same input,
//! because they are the same code: a [`CompiledMetadataType`] fed with templates contexts that
//! hold no store.
//!
//! What differs from a stored document: templates see `now`, but no `document` (a default that
//! reads the document renders it as undefined), and a lookup sees no `users` or `groups` (empty
//! lists), since there are none without a store.
//!
//! Part of `metadata` (layer 4 of `scripts/check-structure`): it may import only what `metadata`
//! may (see `metadata`'s module documentation).

use chrono::Utc;
use minijinja::Value;

use super::pipeline::{CompiledMetadataType, TemplateInputs, check_definition};
use super::registry::ClassRegistry;
use super::template::{Moment, TemplateEngine};
use crate::error::Result;
use crate::model::{MetadataType, MetadataTypeId, MetadataTypeInput};

/// Checks `value` with the built-in validator class at `path` (spec 2.8) and its YAML
/// `arguments`. An unknown class is an error on the field `validation`, bad arguments one on
/// `validation_arguments`, a refused value one on `value`.
pub fn validate(path: &str, arguments: &str, value: &str) -> Result<()> {
    ClassRegistry::default().validate(path, arguments, value)
}

/// Parses `value` with the built-in parser class at `path` (spec 2.9) and its YAML `arguments`;
/// returns the value to store. Errors name `parser`, `parser_arguments` or `value`, as
/// [`validate`]'s do.
pub fn parse(path: &str, arguments: &str, value: &str) -> Result<String> {
    ClassRegistry::default().parse(path, arguments, value)
}

impl ClassRegistry {
    /// Checks `value` with the validator class at `path` of this registry; see [`validate`].
    pub fn validate(&self, path: &str, arguments: &str, value: &str) -> Result<()> {
        let input = MetadataTypeInput {
            validation: path.to_owned(),
            validation_arguments: arguments.to_owned(),
            ..MetadataTypeInput::new("value", "Value")
        };
        // Optional, as the pipeline treats a type without `required`: an empty value is accepted
        // empty and never reaches the validator. A required field goes through a processor.
        self.processor(&input)?.process(value, false).map(drop)
    }

    /// Parses `value` with the parser class at `path` of this registry; see [`parse`].
    pub fn parse(&self, path: &str, arguments: &str, value: &str) -> Result<String> {
        let input = MetadataTypeInput {
            parser: path.to_owned(),
            parser_arguments: arguments.to_owned(),
            ..MetadataTypeInput::new("value", "Value")
        };
        self.processor(&input)?.process(value, false)
    }

    /// A [`MetadataProcessor`] using this registry's classes.
    pub fn processor(&self, input: &MetadataTypeInput) -> Result<MetadataProcessor> {
        MetadataProcessor::with_classes(input, self)
    }
}

/// A metadata type definition checked once (every field, as creating the type would), ready to
/// run spec 2.10's steps on values without a store.
///
/// ```
/// use docmeta_core::MetadataTypeInput;
/// use docmeta_core::MetadataProcessor;
///
/// let mut input = MetadataTypeInput::new("invoice_date", "Invoice date");
/// input.validation = "svc.apps.metadata.metadata_validators.DateValidator".into();
/// input.parser = "svc.apps.metadata.metadata_parsers.DateParser".into();
/// let date = MetadataProcessor::new(&input)?;
/// assert_eq!(date.process("24/11/2026", true)?, "2026-11-24");
/// assert!(date.process("31/02/2026", true).is_err());
/// assert!(date.process("", true).is_err()); // required, and no default
/// # Ok::<(), docmeta_core::Error>(())
/// ```
#[derive(Debug)]
pub struct MetadataProcessor {
    compiled: CompiledMetadataType,
    templates: TemplateEngine,
}

impl MetadataProcessor {
    /// Checks `input` with the built-in classes; errors name the field, as creating the type
    /// through a session would.
    pub fn new(input: &MetadataTypeInput) -> Result<Self> {
        Self::with_classes(input, &ClassRegistry::default())
    }

    /// Checks `input` with `classes` (the built-ins plus an application's own).
    pub fn with_classes(input: &MetadataTypeInput, classes: &ClassRegistry) -> Result<Self> {
        let templates = TemplateEngine::new();
        check_definition(input, classes, &templates)?;
        let metadata_type = MetadataType {
            id: MetadataTypeId(0),
            name: input.name.trim().to_owned(),
            label: input.label.clone(),
            default: input.default.clone(),
            lookup: input.lookup.clone(),
            validation: input.validation.clone(),
            validation_arguments: input.validation_arguments.clone(),
            parser: input.parser.clone(),
            parser_arguments: input.parser_arguments.clone(),
            value_type: input.value_type,
        };
        Ok(MetadataProcessor {
            compiled: CompiledMetadataType::new(metadata_type, classes)?,
            templates,
        })
    }

    /// The definition (its `id` is 0: it is not stored).
    pub fn metadata_type(&self) -> &MetadataType {
        &self.compiled.metadata_type
    }

    /// Runs spec 2.10 on `value` (default, required, lookup, validator, parser) and returns the
    /// value a store would keep. `required` is what the document type's association says.
    pub fn process(&self, value: &str, required: bool) -> Result<String> {
        self.compiled
            .process(value, required, &self.templates, &mut NoStore)
    }

    /// The lookup's choices (spec 2.7), or `None` when the type has no lookup.
    pub fn lookup_choices(&self) -> Result<Option<Vec<String>>> {
        self.compiled.lookup_choices(&self.templates, &mut NoStore)
    }
}

/// Template contexts without a store: `now` only, and empty `users` / `groups` for lookups.
struct NoStore;

impl TemplateInputs for NoStore {
    fn default_context(&mut self) -> Result<Value> {
        Ok(minijinja::context! {
            now => Value::from_object(Moment(Utc::now())),
            document => Value::from(()),
        })
    }

    fn lookup_context(&mut self) -> Result<Value> {
        Ok(minijinja::context! {
            now => Value::from_object(Moment(Utc::now())),
            document => Value::from(()),
            users => Vec::<Value>::new(),
            groups => Vec::<Value>::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DATE_VALIDATOR: &str = "svc.apps.metadata.metadata_validators.DateValidator";
    const DATE_PARSER: &str = "svc.apps.metadata.metadata_parsers.DateParser";

    use crate::error::Error;

    /// The field a refusal names, or `None` when `r` is not a validation error.
    fn field_of<T>(r: Result<T>) -> Option<String> {
        match r {
            Err(Error::Validation { field, .. }) => Some(field),
            _ => None,
        }
    }

    #[test]
    fn validate_accepts_a_valid_date() -> Result<()> {
        assert!(validate(DATE_VALIDATOR, "", "2026-11-24").is_ok());
        Ok(())
    }

    #[test]
    fn validate_refuses_an_impossible_date_on_the_value_field() -> Result<()> {
        assert_eq!(
            field_of(validate(DATE_VALIDATOR, "", "2026-02-30")),
            Some("value".into())
        );
        Ok(())
    }

    #[test]
    fn validate_names_the_validation_field_for_an_unknown_class() -> Result<()> {
        assert_eq!(
            field_of(validate(
                "svc.apps.metadata.metadata_validators.Nope",
                "",
                "x"
            )),
            Some("validation".into())
        );
        Ok(())
    }

    #[test]
    fn validate_names_the_arguments_field_for_bad_arguments() -> Result<()> {
        assert_eq!(
            field_of(validate(DATE_VALIDATOR, "unexpected: 1", "2026-11-24")),
            Some("validation_arguments".into())
        );
        Ok(())
    }

    #[test]
    fn parse_returns_the_value_to_store() -> Result<()> {
        assert_eq!(parse(DATE_PARSER, "", "24/11/2026")?, "2026-11-24");
        Ok(())
    }

    #[test]
    fn parse_refuses_an_unreadable_value_on_the_value_field() -> Result<()> {
        assert_eq!(
            field_of(parse(DATE_PARSER, "", "yesterday")),
            Some("value".into())
        );
        Ok(())
    }

    #[test]
    fn processor_refuses_a_bad_definition_naming_the_field() -> Result<()> {
        let mut input = MetadataTypeInput::new("bad name!", "Bad");
        input.parser = DATE_PARSER.into();
        assert_eq!(
            field_of(MetadataProcessor::new(&input)),
            Some("name".into())
        );
        Ok(())
    }

    #[test]
    fn processor_renders_the_default_for_an_empty_value() -> Result<()> {
        let mut input = MetadataTypeInput::new("year", "Year");
        input.default = "{{ now.year }}".into();
        let p = MetadataProcessor::new(&input)?;
        assert_eq!(p.process("", true)?, Utc::now().format("%Y").to_string());
        Ok(())
    }

    #[test]
    fn processor_refuses_an_empty_required_value_without_default() -> Result<()> {
        let p = MetadataProcessor::new(&MetadataTypeInput::new("ref", "Reference"))?;
        assert_eq!(field_of(p.process("  ", true)), Some("value".into()));
        Ok(())
    }

    #[test]
    fn processor_keeps_an_empty_optional_value_empty() -> Result<()> {
        let p = MetadataProcessor::new(&MetadataTypeInput::new("ref", "Reference"))?;
        assert_eq!(p.process("", false)?, "");
        Ok(())
    }

    #[test]
    fn processor_refuses_a_value_outside_the_lookup() -> Result<()> {
        let mut input = MetadataTypeInput::new("colour", "Colour");
        input.lookup = "red,green".into();
        let p = MetadataProcessor::new(&input)?;
        assert_eq!(p.process("green", true)?, "green");
        assert!(p.process("blue", true).is_err());
        Ok(())
    }

    #[test]
    fn processor_lists_the_lookup_choices() -> Result<()> {
        let mut input = MetadataTypeInput::new("colour", "Colour");
        input.lookup = "red, green".into();
        let p = MetadataProcessor::new(&input)?;
        assert_eq!(
            p.lookup_choices()?,
            Some(vec!["red".to_owned(), "green".to_owned()])
        );
        Ok(())
    }

    #[test]
    fn processor_uses_an_application_validator() -> Result<()> {
        struct Even;
        impl super::super::Validator for Even {
            fn validate(&self, value: &str) -> std::result::Result<(), String> {
                match value.parse::<i64>() {
                    Ok(n) if n % 2 == 0 => Ok(()),
                    _ => Err(format!("'{value}' is not an even number")),
                }
            }
        }
        let mut classes = ClassRegistry::default();
        classes.register_validator("app.validators.Even", "Even", |_| Ok(Box::new(Even)));
        assert!(classes.validate("app.validators.Even", "", "4").is_ok());
        assert_eq!(
            field_of(classes.validate("app.validators.Even", "", "5")),
            Some("value".into())
        );
        Ok(())
    }
}
