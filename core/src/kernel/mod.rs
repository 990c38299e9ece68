//! The kernel: the [`Docmeta`] handle's shared state (store, templates, classes, the access
//! snapshot, subscribers, file storage, search home) and the unit of work every change runs in
//! (one transaction + its events + access changes + deferred effects), with the hooks through
//! which workflows and tasks take part in it.
//!
//! One job a file:
//!
//! - `docmeta`: the handle, [`Docmeta`], and the state its clones share;
//! - `unit`: transactions and the unit of work (the write path), with the hooks of the layers
//!   above;
//! - `access`: permission checks, object kinds and the parent links objects inherit ACLs
//!   through;
//! - `snapshot`: loading the access snapshot and applying the changes units of work make to it;
//! - `follow`: applying what other processes committed;
//! - `reads`: the read cache of documents with their metadata;
//! - `compiled`: the cache of compiled metadata types;
//! - `subscribers`: callbacks run with each committed event;
//! - `feed`: waking whoever waits for new events, for this process's commits and others';
//! - `render`: template renders of a unit of work, and how many may run at once;
//! - `verify`: checking a stored file against its record;
//! - `lock`: the data directory's lock.
//!
//! Layer 5: may import `model`, `error`, `config`, `store`, `access`, `metadata`, `events`,
//! `files` and `search::home`; never `session`, `workflows`, `tasks`, `backup` or the builder
//! (`builder.rs`), which plug in through `Hooks` filled when an instance opens.

mod access;
mod audit;
mod compiled;
mod docmeta;
mod feed;
mod follow;
mod lock;
mod reads;
mod render;
mod snapshot;
mod subscribers;
mod unit;
mod verify;

pub use audit::checkpoint_signed_by;
pub use docmeta::Docmeta;
pub(crate) use docmeta::Inner;
pub(crate) use feed::EventSignal;
pub use feed::EventWatch;
pub(crate) use follow::{Follow, InTransaction};
pub(crate) use lock::DataLock;
pub(crate) use reads::{CachedDocument, ReadCache};
pub(crate) use render::{RenderGate, RenderInput, Renders, TemplateView};
pub(crate) use snapshot::{AccessChange, load_access};
pub use subscribers::SubscriptionId;
pub(crate) use unit::{Hooks, TaskHandler, Unit};

use snapshot::apply;
use subscribers::Subscriber;
