//! The value pipeline of spec 2.10: default, required, lookup, validator, parser, store.
//!
//! A [`CompiledMetadataType`] holds a metadata type with its validator and parser already built
//! from their YAML arguments, so processing a value costs no parsing of configuration.
//!
//! Part of `metadata` (layer 4 of `scripts/check-structure`): it may import only what `metadata`
//! may (see `metadata`'s module documentation).

use minijinja::Value;

use super::lookup::split_choices;
use super::names::{check_label, check_name};
use super::parsers::Parser;
use super::registry::ClassRegistry;
use super::template::{MAX_TEMPLATE_LEN, TemplateEngine, TemplateError};
use super::validators::Validator;
use crate::error::{Error, Result};
use crate::model::{MetadataType, MetadataTypeInput, MetadataTypeShapers, TemplatePreview};

/// Longest stored value, in characters.
pub const MAX_VALUE_LEN: usize = crate::model::MAX_VALUE_CHARS;
/// Longest lookup output, in bytes.
const MAX_LOOKUP_OUTPUT: usize = 1 << 20;

/// The field name of value-pipeline errors.
pub const VALUE_FIELD: &str = "value";

/// A metadata type ready to process values.
pub struct CompiledMetadataType {
    /// The definition.
    pub metadata_type: MetadataType,
    validator: Option<Box<dyn Validator>>,
    parser: Option<Box<dyn Parser>>,
    /// Who shaped its default and lookup: their renders see no more than all of
    /// them may view. Empty unless read from a store (see `Docmeta::compiled`).
    pub(crate) shapers: MetadataTypeShapers,
}

impl std::fmt::Debug for CompiledMetadataType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledMetadataType")
            .field("metadata_type", &self.metadata_type)
            .finish()
    }
}

/// Checks every field of a metadata type definition; errors name the field. Templates must
/// compile and classes must exist with the arguments they need (checked on save, not first use).
pub fn check_definition(
    input: &MetadataTypeInput,
    registry: &ClassRegistry,
    templates: &TemplateEngine,
) -> Result<()> {
    for (field, text) in [
        ("name", &input.name),
        ("default", &input.default),
        ("lookup", &input.lookup),
        ("validation", &input.validation),
        ("validation_arguments", &input.validation_arguments),
        ("parser", &input.parser),
        ("parser_arguments", &input.parser_arguments),
    ] {
        crate::model::check_no_nul(field, text)?;
    }
    check_name(input.name.trim())?;
    check_label("label", &input.label)?;
    for (field, source) in [("default", &input.default), ("lookup", &input.lookup)] {
        if source.len() > MAX_TEMPLATE_LEN {
            return Err(Error::validation(
                field,
                format!("Ensure this field has no more than {MAX_TEMPLATE_LEN} characters."),
            ));
        }
        templates
            .check(source)
            .map_err(|e| Error::validation(field, e))?;
    }
    build_classes(input, registry).map(drop)
}

/// What `default` and `lookup` render to through `inputs`, as a metadata type's templates would
/// (an empty one is not rendered); each longer than a template may be is refused on its field.
pub fn preview_templates(
    templates: &TemplateEngine,
    default: &str,
    lookup: &str,
    inputs: &mut dyn TemplateInputs,
) -> Result<TemplatePreview> {
    for (field, source) in [("default", default), ("lookup", lookup)] {
        crate::model::check_no_nul(field, source)?;
        if source.len() > MAX_TEMPLATE_LEN {
            return Err(Error::validation(
                field,
                format!("Ensure this field has no more than {MAX_TEMPLATE_LEN} characters."),
            ));
        }
    }
    let mut preview = TemplatePreview::default();
    if !default.trim().is_empty() {
        match inputs.render(templates, default, false, MAX_VALUE_LEN * 4)? {
            Ok(value) => preview.default = Some(value),
            Err(e) => preview.default_error = Some(e.to_string()),
        }
    }
    if !lookup.trim().is_empty() {
        match inputs.render(templates, lookup, true, MAX_LOOKUP_OUTPUT)? {
            Ok(csv) => preview.lookup_choices = Some(split_choices(&csv)),
            Err(e) => preview.lookup_error = Some(e.to_string()),
        }
    }
    Ok(preview)
}

type Classes = (Option<Box<dyn Validator>>, Option<Box<dyn Parser>>);

fn build_classes(input: &MetadataTypeInput, registry: &ClassRegistry) -> Result<Classes> {
    let validator = match input.validation.trim() {
        "" if input.validation_arguments.trim().is_empty() => None,
        "" => {
            return Err(Error::validation(
                "validation_arguments",
                "Arguments given without a validator.",
            ));
        }
        path => Some(
            registry
                .validator(path, &input.validation_arguments)
                .map_err(|e| {
                    let field = if e.starts_with("unknown") {
                        "validation"
                    } else {
                        "validation_arguments"
                    };
                    Error::validation(field, e)
                })?,
        ),
    };
    let parser = match input.parser.trim() {
        "" if input.parser_arguments.trim().is_empty() => None,
        "" => {
            return Err(Error::validation(
                "parser_arguments",
                "Arguments given without a parser.",
            ));
        }
        path => Some(
            registry
                .parser(path, &input.parser_arguments)
                .map_err(|e| {
                    let field = if e.starts_with("unknown") {
                        "parser"
                    } else {
                        "parser_arguments"
                    };
                    Error::validation(field, e)
                })?,
        ),
    };
    Ok((validator, parser))
}

/// Where the template contexts come from: built only when a template needs them.
pub trait TemplateInputs {
    /// The context of the default template: `now` and `document` (spec 2.6).
    fn default_context(&mut self) -> Result<Value>;
    /// The context of the lookup template: `now`, `users`, `groups` (spec 2.7).
    fn lookup_context(&mut self) -> Result<Value>;

    /// Renders `source`, a lookup (`lookup`) or default template, with its context; the outer
    /// error is a failure to build the context, the inner one the template's. docmeta's own
    /// inputs render before the write lock is taken (see `Docmeta::write`).
    fn render(
        &mut self,
        templates: &TemplateEngine,
        source: &str,
        lookup: bool,
        max_output: usize,
    ) -> Result<std::result::Result<String, TemplateError>> {
        let context = if lookup {
            self.lookup_context()?
        } else {
            self.default_context()?
        };
        Ok(templates.render(source, context, max_output))
    }
}

impl CompiledMetadataType {
    /// Builds the validator and parser of `metadata_type`.
    pub fn new(metadata_type: MetadataType, registry: &ClassRegistry) -> Result<Self> {
        let (validator, parser) =
            build_classes(&MetadataTypeInput::from(&metadata_type), registry)?;
        Ok(CompiledMetadataType {
            metadata_type,
            validator,
            parser,
            shapers: MetadataTypeShapers::default(),
        })
    }

    /// This type with the shapers of its templates, as stored.
    pub(crate) fn shaped_by(self, shapers: MetadataTypeShapers) -> Self {
        CompiledMetadataType { shapers, ..self }
    }

    /// The allowed values of the lookup, in order, or `None` when the type has no lookup.
    pub fn lookup_choices(
        &self,
        templates: &TemplateEngine,
        inputs: &mut dyn TemplateInputs,
    ) -> Result<Option<Vec<String>>> {
        let lookup = &self.metadata_type.lookup;
        if lookup.trim().is_empty() {
            return Ok(None);
        }
        let csv = inputs
            .render(templates, lookup, true, MAX_LOOKUP_OUTPUT)?
            .map_err(|e| Error::validation(VALUE_FIELD, format!("lookup: {e}")))?;
        Ok(Some(split_choices(&csv)))
    }

    /// Runs spec 2.10 on a submitted `value` and returns the value to store.
    pub fn process(
        &self,
        value: &str,
        required: bool,
        templates: &TemplateEngine,
        inputs: &mut dyn TemplateInputs,
    ) -> Result<String> {
        if value.chars().count() > MAX_VALUE_LEN {
            return Err(too_long());
        }
        crate::model::check_no_nul(VALUE_FIELD, value)?;
        let t = &self.metadata_type;
        // Step 1: an empty value takes the rendered default.
        let mut value = if value.trim().is_empty() && !t.default.is_empty() {
            inputs
                .render(templates, &t.default, false, MAX_VALUE_LEN * 4)?
                .map_err(|e| Error::validation(VALUE_FIELD, format!("default: {e}")))?
        } else {
            value.to_owned()
        };
        // Step 2: still empty.
        if value.trim().is_empty() {
            if required {
                return Err(Error::validation(
                    VALUE_FIELD,
                    format!("'{}' is required for this document type.", t.name),
                ));
            }
            // An optional metadata without a value is stored empty: "no value" is not malformed.
            return Ok(String::new());
        }
        // Step 3: lookup.
        if let Some(choices) = self.lookup_choices(templates, inputs)?
            && !choices.contains(&value)
        {
            return Err(Error::validation(
                VALUE_FIELD,
                format!("'{value}' is not one of the available choices."),
            ));
        }
        // Step 4: validator.
        if let Some(validator) = &self.validator {
            validator
                .validate(&value)
                .map_err(|e| Error::validation(VALUE_FIELD, e))?;
        }
        // Step 5: parser.
        if let Some(parser) = &self.parser {
            value = parser
                .parse(&value)
                .map_err(|e| Error::validation(VALUE_FIELD, e))?;
        }
        if value.chars().count() > MAX_VALUE_LEN {
            return Err(too_long());
        }
        // A default or a parser's replacement may produce one too.
        crate::model::check_no_nul(VALUE_FIELD, &value)?;
        // The value, as the parser left it, must be of the type's value type.
        t.value_type
            .check(&value)
            .map_err(|e| Error::validation(VALUE_FIELD, e))?;
        // Step 6: the caller stores it.
        Ok(value)
    }
}

fn too_long() -> Error {
    Error::validation(
        VALUE_FIELD,
        format!("Ensure this field has no more than {MAX_VALUE_LEN} characters."),
    )
}
