//! The records (Kotlin data classes, Swift structs) the face hands out and takes, with their
//! conversions from the core's types. Ids are plain integers; times are `java.time.Instant` /
//! `Date`; permissions and object kinds are their keys (`documents.document_view`,
//! `documents.document`). By concern: metadata and documents, access, workflows, and the
//! instance's operations (events, tasks, search, storage, backups).

mod access;
mod devices;
mod history;
mod metadata;
mod operations;
mod webhooks;
mod workflows;

pub use access::*;
pub use devices::*;
pub use history::*;
pub use metadata::*;
pub use operations::*;
pub use webhooks::*;
pub use workflows::*;
