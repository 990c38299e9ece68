//! docmeta
pub mod error;
pub mod metadata;
pub mod model;
