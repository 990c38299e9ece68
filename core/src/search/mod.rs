//! Search (spec 2.5): a tantivy index of documents and metadata values that follows the event
//! log, and permission-filtered queries.
//!
//! The index is derived data. It keeps, in the `settings` table, the id of the last event it
//! applied; [`Docmeta::wait_for_index`](crate::Docmeta::wait_for_index) (also run by the worker
//! thread and before each search) applies every event after it, so a crash or restart loses
//! nothing: the index catches up.
//!
//! The index is `index.rs` (its collectors `collectors.rs`, what a caller may see of it
//! `visible.rs`, the cache of its recent answers `answers.rs`), the query language `query.rs`
//! and its translation into the index's queries `translate.rs`, where the index lives `home.rs`; keeping it up
//! with the log and the index operations are `upkeep.rs`, work handed to the process writing
//! the index `work.rs`, and the session's searches `queries.rs`. The records searches answer
//! are `model/search.rs`.
//!
//! Layer 7 (with `workflows`, `tasks`, `backup`, `installation`): imports sessions, the kernel and the
//! layers below. The kernel uses only `search::home` (where the index lives).

mod answers;
mod collectors;
pub(crate) mod home;
pub mod index;
mod queries;
pub mod query;
mod translate;
mod upkeep;
mod visible;
mod work;

pub use collectors::Sort;
pub use index::SearchIndex;
pub(crate) use queries::sorted_documents;
pub use query::{Expr, Lookup, ResolvedType, parse};
pub use visible::{SearchScope, TypeVisibility};
pub(crate) use work::run_task;

/// Deepest result reachable by paging; beyond it a query must be refined.
pub const MAX_RESULT_WINDOW: usize = 10_000;
