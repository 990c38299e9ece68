//! Webhooks: the event log flowing out, as signed HTTP POSTs (Standard Webhooks).
//!
//! - A webhook belongs to the user who created it and sends the events of the log that user
//!   may see, as they may see them when each is sent ([`Session::create_webhook`] and the
//!   other operations, in `api.rs`).
//! - Every event queues, in the transaction that writes it, a delivery for each webhook it is
//!   for (the outbox, written by the store), so nothing is lost when a process stops.
//! - The deliverer (`deliver.rs`) sends them: at least once, in order per webhook, signed
//!   (`sign.rs`), retried for a day, a slow receiver delaying only its own webhook, and only to
//!   public addresses unless `webhooks_allow_private_networks` (`address.rs`).
//!
//! Layer 7 (with `workflows`, `tasks` and `search`): imports sessions, the kernel and the layers
//! below, never another layer-7 module nor the facade, which starts the deliverer.
//!
//! [`Session::create_webhook`]: crate::Session::create_webhook

mod address;
mod api;
mod deliver;
mod sign;

pub use address::MAX_URL_LEN;
pub use api::MAX_WEBHOOKS_PER_USER;
pub(crate) use deliver::Deliverer;
