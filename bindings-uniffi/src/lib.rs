//! Kotlin and Swift bindings of docmeta, through uniffi proc-macros (no UDL).
//!
//! Objects: [`Docmeta`] (thread-safe, share one per process) and [`Session`] (everything one
//! actor does), [`Classes`] (the application's own validators and parsers, written in Kotlin
//! or Swift) and [`MetadataProcessor`] (a metadata type's pipeline without a database), plus
//! the top-level functions [`validate`] and [`parse`] and those on backup archives. Records
//! carry plain ids; times are `java.time.Instant` / `Date`. Every failure is a
//! [`DocmetaError`] (a Kotlin exception, a Swift `throws`) mirroring the core's error kinds.
//! Nothing is async: callers use their own threads or coroutines. Events reach an
//! [`EventListener`] implemented in the foreign language.
//!
//! ```kotlin
//! val db = Docmeta.inMemory()
//! val admin = db.system()
//! val invoice = admin.createDocumentType("Invoice")
//! ```
//!
//! Modules point one way: `errors` and `records` at the bottom; `classes` (foreign validators
//! and parsers) and `offline` (validation without a store) on them; `session/` (the `Session`
//! object, one file per concern) and `backup` (archive functions); `docmeta` on top, handing
//! out sessions, and `replica` beside it (a replica of a server, read through a session).

mod backup;
mod classes;
mod docmeta;
mod errors;
mod offline;
mod records;
mod replica;
mod session;

pub use backup::*;
pub use classes::*;
pub use docmeta::*;
pub use errors::DocmetaError;
pub use offline::*;
pub use records::*;
pub use replica::{
    PendingWrite, PushAction, PushOutcome, PushStatus, RejectedWrite, Replica, SyncListener,
    SyncProgress,
};
pub use session::Session;

uniffi::setup_scaffolding!("docmeta");
