//! **docmeta**: the metadata, access-control, search and backup core of a document-management
//! system, as a library.
//!
//! - **Metadata** (spec 2): global metadata types with default and lookup templates, validators
//!   and parsers, associated with document types; one value per (document, type), processed in
//!   the exact order of spec 2.10; lifecycle rules as durable background tasks; an event log.
//! - **Access control** (spec 5): users → groups → roles, global permissions, object ACLs with
//!   inheritance (document types → documents → files, cabinet trees, ...), no explicit deny, and
//!   an evaluator that can [`explain`](Docmeta::explain) its answers.
//! - **Storage**: a [`Store`] trait with an embedded SQLite default.
//!
//! ```
//! use docmeta_core::{Docmeta, MetadataTypeInput, Permission, ObjectRef, ObjectKind};
//!
//! let db = Docmeta::in_memory()?;
//! let admin = db.system();
//! let invoice = admin.create_document_type("Invoice")?;
//! let number = admin.create_metadata_type(
//!     MetadataTypeInput::new("number", "Invoice number").validation(
//!         "svc.apps.metadata.metadata_validators.RegularExpressionValidator",
//!         "pattern: 'INV-[0-9]+'",
//!     ),
//! )?;
//! admin.associate(invoice.id, number.id, false)?;
//! let doc = admin.create_document(invoice.id, "March invoice", &[])?.document;
//! assert!(admin.add_document_metadata(doc.id, number.id, "nope").is_err());
//! admin.add_document_metadata(doc.id, number.id, "INV-42")?;
//!
//! // A clerk sees invoices through an ACL on the document type.
//! let clerk = admin.create_user("clerk", "a long password", false)?;
//! let group = admin.create_group("Accounting")?;
//! let role = admin.create_role("Clerks")?;
//! admin.set_group_member(group.id, clerk.id, true)?;
//! admin.set_role_group(role.id, group.id, true)?;
//! admin.grant(Permission::DocumentView, role.id, ObjectRef::new(ObjectKind::DOCUMENT_TYPE, invoice.id.0))?;
//! // Each operation answers with what the caller may see: here the document with its type.
//! let seen = db.session(clerk.id).document(doc.id)?;
//! assert_eq!((seen.document.label.as_str(), seen.document_type.label.as_str()), ("March invoice", "Invoice"));
//! # Ok::<(), docmeta_core::Error>(())
//! ```
//!
//! This file only declares the modules and re-exports what a user needs; it owns no logic.

#![deny(missing_docs)]

mod access;
mod backup;
mod builder;
mod config;
mod error;
mod events;
mod files;
mod installation;
mod kernel;
mod metadata;
mod model;
mod owner_only;
mod replica;
mod search;
mod session;
pub mod store;
mod tasks;
mod tokens;
mod webhooks;
mod workflows;

// Every name a user needs is re-exported here; the modules are private but for two: `store`, the
// traits and rows a custom store implements, and `menc`, the encrypted file format (for tools
// that read or write MENC files outside a data directory).
pub use files::menc;

// The handle, sessions and their records.
pub use builder::{Builder, PASSWORD_VARIABLE};
pub use config::{Config, DEFAULT_CONFIG, DEFAULT_READ_CACHE_DOCUMENTS, StorageBackend};
pub use error::{
    BoxError, DATA_DIRECTORY_IN_USE, Error, ErrorKind, FieldStep, NON_FIELD_ERRORS, Result,
};
pub use kernel::{Docmeta, EventWatch, SubscriptionId, checkpoint_signed_by};
// A replica of a server on a device (offline reads and search).
pub use model::*;
pub use replica::{
    DEVICE_NAME as REPLICA_DEVICE_NAME, HttpServer, InProcessServer, LOCAL_IDS, Replica,
    ReplicaBuilder, SyncServer,
};
pub use session::{
    DEFAULT_DEVICE_LIFETIME, FileContent, MAX_DEVICE_LIFETIME, MAX_DEVICES_PER_USER,
    MAX_DOCUMENT_BATCH, MAX_EVENT_WAIT, MAX_FEED_EVENTS, MAX_HISTORY_PAGE, MAX_PUSH_WRITES,
    MAX_SYNC_BATCH, Session,
};
#[cfg(feature = "postgres")]
pub use store::PostgresStore;
pub use store::{SqliteStore, Store};
pub use tokens::TOKEN_LEN;

// Access control.
pub use access::password::MIN_PASSWORD_LEN;
pub use access::{ExistenceCheck, KindInfo, KindRegistry, STORED_KINDS, STORED_PARENT_KINDS};

// Metadata: the pipeline's classes and templates, and the offline processor.
pub use metadata::arguments::{NoArguments, compile_pattern, yaml_arguments};
pub use metadata::parsers::{
    DateAndTimeParser, DateParser, PREFIX as PARSER_PREFIX, RegularExpressionParser,
    SubstitutionArguments, TimeParser,
};
pub use metadata::pipeline::MAX_VALUE_LEN;
pub use metadata::template::{MAX_TEMPLATE_LEN, MAX_TEMPLATE_STRING, django_filter_arguments};
pub use metadata::validators::{
    DateAndTimeValidator, DateValidator, PREFIX as VALIDATOR_PREFIX, PatternArguments,
    RegularExpressionValidator, TimeValidator,
};
pub use metadata::{
    ClassRegistry, DocumentContext, MetadataEntry, MetadataProcessor, Moment, Parser,
    TemplateEngine, TemplateError, TemplateValue, Validator, parse as parse_value,
    validate as validate_value,
};

// Workflows.
pub use workflows::{MAX_CHAIN as MAX_WORKFLOW_CHAIN, TRIGGER_EVENTS};

// Webhooks (their records are in `model`).
pub use webhooks::{MAX_URL_LEN as MAX_WEBHOOK_URL_LEN, MAX_WEBHOOKS_PER_USER};

// Search.
pub use search::index::INDEX_SCHEMA_VERSION;
pub use search::query::MAX_DEPTH as MAX_QUERY_DEPTH;
pub use search::{Expr as QueryExpr, MAX_RESULT_WINDOW, parse as parse_query};

// Files, backup and installation schemas.
pub use backup::{
    FORMAT as BACKUP_FORMAT, prune_backups, read_info as read_backup_info, restore, restore_to,
    restore_to_storage, verify_backup, verify_backup_from,
};
#[cfg(feature = "s3")]
pub use files::s3::{S3Location, S3Storage};
pub use files::{
    EncryptedStorage, FileStorage, MemoryStorage, PlainStorage, clean_filename, generate_name,
    guess_mime, open_location, sha256,
};
pub use installation::{apply as apply_schema, export as export_schema};

// Engine parts that the benchmarks and the fuzz harness drive directly: not part of the API a
// user builds on, and free to change in any release.
#[doc(hidden)]
pub use access::{AccessSnapshot, DocumentVisibility, SnapshotOnly};
#[doc(hidden)]
pub use metadata::{CompiledMetadataType, TemplateInputs};
#[doc(hidden)]
pub use search::query::resolve as resolve_query;
#[doc(hidden)]
pub use search::{Lookup, ResolvedType, SearchIndex, SearchScope, Sort, TypeVisibility};
