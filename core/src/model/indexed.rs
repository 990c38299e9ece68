//! What the search index holds of a document: the records the store reads for it.
//!
//! Part of `model` (layer 1 of `scripts/check-structure`): it may import only what `model`
//! may (see `model`'s module documentation).

/// What the index holds of one document.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IndexedDocument {
    /// Document id.
    pub id: i64,
    /// Label.
    pub label: String,
    /// Label of its type.
    pub document_type_label: String,
    /// Its metadata values.
    pub metadata: Vec<IndexedValue>,
    /// Id of its type (for permission filtering).
    pub document_type_id: i64,
}

/// What the index holds of one metadata value.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IndexedValue {
    /// The value's id (`DocumentMetadata`).
    pub id: i64,
    /// Its metadata type's id (for permission filtering).
    pub metadata_type_id: i64,
    /// Its metadata type's name.
    pub metadata_type_name: String,
    /// The value.
    pub value: String,
    /// Its metadata type's value type (how search compares and sorts it).
    pub value_type: super::ValueType,
}
