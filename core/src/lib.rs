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

pub mod access;
pub mod backup;
mod builder;
pub mod config;
pub mod error;
pub mod events;
pub mod files;
pub mod installation;
mod kernel;
pub mod metadata;
pub mod model;
mod owner_only;
pub mod search;
mod session;
pub mod store;
mod tasks;
mod tokens;
pub mod workflows;

pub use access::{
    Explanation, Grant, KindRegistry, ObjectKind, ObjectRef, Permission, PermissionSet,
};
pub use backup::{
    BackupInfo, BackupReport, DamagedEntry, Manifest, ManifestEntry, PruneDecision, RestoreReport,
};
pub use builder::{Builder, PASSWORD_VARIABLE};
pub use config::Config;
pub use error::{DATA_DIRECTORY_IN_USE, Error, ErrorKind, FieldStep, Result};
pub use events::{Event, EventObject, EventQuery};
pub use files::{EncryptedStorage, FileStorage, MemoryStorage, PlainStorage};
pub use kernel::{Docmeta, SubscriptionId};
pub use metadata::{ClassRegistry, MetadataProcessor};
pub use model::*;
pub use search::{Hit, RecordKind};
pub use session::{
    Acl, AclView, AssociationView, DocumentQuery, DocumentView, EventActor, EventView, FileContent,
    Group, MAX_DOCUMENT_BATCH, MetadataPageVersion, MetadataValueView, NewDocument, Page,
    PageRequest, Role, Session, Task, TaskState, User, UserUpdate,
};
pub use store::records::Cabinet;
pub use store::{SqliteStore, Store};
pub use tokens::TOKEN_LEN;
