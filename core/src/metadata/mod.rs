//! The metadata value pipeline (spec 2.6-2.10): templates, lookups, validators and parsers.
//!
//! Layer 4 (with `access` and `files`): imports only `error` and `model`; the store and the
//! documents reach it through the [`TemplateInputs`] a session gives it.

pub mod arguments;
pub(crate) mod calendar;
pub mod datefmt;
pub mod lookup;
pub mod names;
pub mod offline;
pub mod parsers;
pub mod pipeline;
pub mod registry;
pub mod template;
pub mod validators;

pub use minijinja::Value as TemplateValue;
pub use offline::{MetadataProcessor, parse, validate};
pub use parsers::Parser;
pub use pipeline::{CompiledMetadataType, TemplateInputs, check_definition};
pub use registry::ClassRegistry;
pub use template::{DocumentContext, MetadataEntry, Moment, TemplateEngine, TemplateError};
pub use validators::Validator;
