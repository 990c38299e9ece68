//! Metadata types, document types and their associations, documents, values and files.

use std::time::SystemTime;

use docmeta_core as core;

/// A metadata type's definition (spec 2.1); empty strings for what is not used.
#[derive(Debug, Clone, uniffi::Record)]
pub struct MetadataTypeSpec {
    /// Unique name (an identifier).
    pub name: String,
    /// Label shown to users.
    pub label: String,
    /// Default value template.
    #[uniffi(default = "")]
    pub default_value: String,
    /// Lookup template (comma-separated choices).
    #[uniffi(default = "")]
    pub lookup: String,
    /// Validator class path.
    #[uniffi(default = "")]
    pub validation: String,
    /// Validator arguments (YAML).
    #[uniffi(default = "")]
    pub validation_arguments: String,
    /// Parser class path.
    #[uniffi(default = "")]
    pub parser: String,
    /// Parser arguments (YAML).
    #[uniffi(default = "")]
    pub parser_arguments: String,
    /// What its values are (`None`: text when created, unchanged when updated).
    #[uniffi(default = None)]
    pub value_type: Option<ValueType>,
}

/// What a metadata type's values are: after the value pipeline, a value must be of its type;
/// search compares and sorts values by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, uniffi::Enum)]
pub enum ValueType {
    /// Any text.
    Text,
    /// A whole number: `42`, `-7`.
    Integer,
    /// A number with a point: `1234.50`.
    Decimal,
    /// `YYYY-MM-DD`.
    Date,
    /// `YYYY-MM-DDTHH:MM:SS`.
    DateTime,
    /// `HH:MM` or `HH:MM:SS`.
    Time,
    /// `true` or `false`.
    Boolean,
}

impl From<ValueType> for core::ValueType {
    fn from(t: ValueType) -> Self {
        match t {
            ValueType::Text => core::ValueType::Text,
            ValueType::Integer => core::ValueType::Integer,
            ValueType::Decimal => core::ValueType::Decimal,
            ValueType::Date => core::ValueType::Date,
            ValueType::DateTime => core::ValueType::DateTime,
            ValueType::Time => core::ValueType::Time,
            ValueType::Boolean => core::ValueType::Boolean,
        }
    }
}

impl From<core::ValueType> for ValueType {
    fn from(t: core::ValueType) -> Self {
        match t {
            core::ValueType::Text => ValueType::Text,
            core::ValueType::Integer => ValueType::Integer,
            core::ValueType::Decimal => ValueType::Decimal,
            core::ValueType::Date => ValueType::Date,
            core::ValueType::DateTime => ValueType::DateTime,
            core::ValueType::Time => ValueType::Time,
            core::ValueType::Boolean => ValueType::Boolean,
        }
    }
}

/// A stored value that is not of a value type.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct ValueMisfit {
    /// The document holding it.
    pub document_id: i64,
    /// The value's id.
    pub metadata_id: i64,
    /// The value.
    pub value: String,
}

/// What a default and a lookup template render to before they are saved
/// (`previewTemplates`).
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct TemplatePreview {
    /// The default rendered; `None` when none was given or it failed (`default_error`).
    pub default: Option<String>,
    /// Why the default did not render.
    pub default_error: Option<String>,
    /// The lookup's choices; `None` when none was given or it failed (`lookup_error`).
    pub lookup_choices: Option<Vec<String>>,
    /// Why the lookup did not render.
    pub lookup_error: Option<String>,
}

impl From<core::TemplatePreview> for TemplatePreview {
    fn from(p: core::TemplatePreview) -> Self {
        TemplatePreview {
            default: p.default,
            default_error: p.default_error,
            lookup_choices: p.lookup_choices,
            lookup_error: p.lookup_error,
        }
    }
}

/// What changing a metadata type's value type would meet (`checkValueType`).
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct ValueTypeCheck {
    /// The value type checked.
    pub value_type: ValueType,
    /// How many non-empty values the caller may view were checked.
    pub checked: u64,
    /// How many of them are not of `value_type` (the change is refused while any value is not).
    pub count: u64,
    /// Those (only values the caller may view are counted and listed), at most 1,000.
    pub misfits: Vec<ValueMisfit>,
    /// Whether a value the caller may not view does not fit either.
    pub hidden_misfits: bool,
}

impl From<core::ValueTypeCheck> for ValueTypeCheck {
    fn from(c: core::ValueTypeCheck) -> Self {
        ValueTypeCheck {
            value_type: c.value_type.into(),
            checked: c.checked as u64,
            count: c.count as u64,
            misfits: c
                .misfits
                .into_iter()
                .map(|m| ValueMisfit {
                    document_id: m.document.0,
                    metadata_id: m.metadata.0,
                    value: m.value,
                })
                .collect(),
            hidden_misfits: c.hidden_misfits,
        }
    }
}

impl From<MetadataTypeSpec> for core::MetadataTypeInput {
    fn from(spec: MetadataTypeSpec) -> Self {
        core::MetadataTypeInput {
            name: spec.name,
            label: spec.label,
            default: spec.default_value,
            lookup: spec.lookup,
            validation: spec.validation,
            validation_arguments: spec.validation_arguments,
            parser: spec.parser,
            parser_arguments: spec.parser_arguments,
            value_type: spec.value_type.map(Into::into).unwrap_or_default(),
        }
    }
}

/// A stored metadata type, with its whole definition.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct MetadataType {
    /// Identifier.
    pub id: i64,
    /// Name.
    pub name: String,
    /// Label.
    pub label: String,
    /// Default value template (empty: none).
    pub default_value: String,
    /// Lookup template (empty: any value).
    pub lookup: String,
    /// Validator class path (empty: none).
    pub validation: String,
    /// Validator arguments (YAML).
    pub validation_arguments: String,
    /// Parser class path (empty: none).
    pub parser: String,
    /// Parser arguments (YAML).
    pub parser_arguments: String,
    /// What its values are.
    pub value_type: ValueType,
}

impl From<core::MetadataType> for MetadataType {
    fn from(t: core::MetadataType) -> Self {
        MetadataType {
            id: t.id.0,
            name: t.name,
            label: t.label,
            default_value: t.default,
            lookup: t.lookup,
            validation: t.validation,
            validation_arguments: t.validation_arguments,
            parser: t.parser,
            parser_arguments: t.parser_arguments,
            value_type: t.value_type.into(),
        }
    }
}

/// A document type.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct DocumentType {
    /// Identifier.
    pub id: i64,
    /// Label.
    pub label: String,
}

impl From<core::DocumentType> for DocumentType {
    fn from(t: core::DocumentType) -> Self {
        DocumentType {
            id: t.id.0,
            label: t.label,
        }
    }
}

/// A metadata type associated with a document type, with both.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct Association {
    /// Identifier.
    pub id: i64,
    /// Whether documents of the type must have a value.
    pub required: bool,
    /// The document type.
    pub document_type: DocumentType,
    /// The metadata type.
    pub metadata_type: MetadataType,
}

impl From<core::AssociationView> for Association {
    fn from(v: core::AssociationView) -> Self {
        Association {
            id: v.association.id.0,
            required: v.association.required,
            document_type: v.document_type.into(),
            metadata_type: v.metadata_type.into(),
        }
    }
}

/// A document.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct Document {
    /// Identifier.
    pub id: i64,
    /// Label.
    pub label: String,
    /// Its type.
    pub document_type_id: i64,
    /// When it was created.
    pub created: SystemTime,
}

impl From<core::Document> for Document {
    fn from(d: core::Document) -> Self {
        Document {
            id: d.id.0,
            label: d.label,
            document_type_id: d.document_type_id.0,
            created: d.created.into(),
        }
    }
}

impl From<core::DocumentView> for Document {
    fn from(v: core::DocumentView) -> Self {
        v.document.into()
    }
}

/// A metadata value to set on a new document: a type and the submitted value.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct NewValue {
    /// The metadata type.
    pub metadata_type_id: i64,
    /// The value as submitted (it goes through the pipeline of spec 2.10).
    pub value: String,
}

/// One document of a batch (`createDocuments`): its type, its label and its initial values.
#[derive(Debug, Clone, uniffi::Record)]
pub struct NewDocument {
    /// The document's type.
    pub document_type_id: i64,
    /// Its label.
    pub label: String,
    /// Its initial values (each through the pipeline of spec 2.10).
    pub values: Vec<NewValue>,
}

/// A metadata value to add to an existing document (`addDocumentMetadataBatch`).
#[derive(Debug, Clone, uniffi::Record)]
pub struct NewDocumentValue {
    /// The document.
    pub document_id: i64,
    /// The metadata type.
    pub metadata_type_id: i64,
    /// The value as submitted.
    pub value: String,
}

/// A metadata value of a document.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct DocumentMetadata {
    /// Identifier.
    pub id: i64,
    /// The document.
    pub document_id: i64,
    /// The metadata type.
    pub metadata_type_id: i64,
    /// The stored value.
    pub value: String,
}

impl From<core::DocumentMetadata> for DocumentMetadata {
    fn from(m: core::DocumentMetadata) -> Self {
        DocumentMetadata {
            id: m.id.0,
            document_id: m.document_id.0,
            metadata_type_id: m.metadata_type_id.0,
            value: m.value,
        }
    }
}

impl From<core::MetadataValueView> for DocumentMetadata {
    fn from(v: core::MetadataValueView) -> Self {
        v.value.into()
    }
}

/// A value with its metadata type.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct MetadataValue {
    /// The value.
    pub value: DocumentMetadata,
    /// Its type.
    pub metadata_type: MetadataType,
}

/// A document with every value it holds and their types, read at once.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct DocumentDetails {
    /// The document.
    pub document: Document,
    /// Its values the session may view.
    pub values: Vec<MetadataValue>,
}

/// A file of a document.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct DocumentFile {
    /// Identifier.
    pub id: i64,
    /// The document.
    pub document_id: i64,
    /// File name.
    pub filename: String,
    /// Size in bytes.
    pub size: u64,
    /// SHA-256, hex.
    pub checksum: String,
    /// MIME type.
    pub mimetype: String,
    /// When it was stored.
    pub created: SystemTime,
}

impl From<core::DocumentFile> for DocumentFile {
    fn from(f: core::DocumentFile) -> Self {
        DocumentFile {
            id: f.id.0,
            document_id: f.document_id.0,
            filename: f.filename,
            size: f.size,
            checksum: f.checksum,
            mimetype: f.mimetype,
            created: f.created.into(),
        }
    }
}

/// A document created together with its first file.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct DocumentWithFile {
    /// The document.
    pub document: Document,
    /// Its file.
    pub file: DocumentFile,
}

/// A cabinet: a folder of documents, in a tree.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct Cabinet {
    /// Identifier.
    pub id: i64,
    /// Label.
    pub label: String,
    /// The parent cabinet; `None` for a root.
    pub parent_id: Option<i64>,
}

impl From<core::Cabinet> for Cabinet {
    fn from(c: core::Cabinet) -> Self {
        Cabinet {
            id: c.id.0,
            label: c.label,
            parent_id: c.parent_id.map(|p| p.0),
        }
    }
}
