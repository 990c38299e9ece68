//! Subscribers: callbacks run with every event once the unit of work that appended it has
//! committed.
//!
//! Part of `kernel` (layer 5 of `scripts/check-structure`): it may import only what `kernel`
//! may (see `kernel`'s module documentation).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::Docmeta;
use crate::events::Event;

/// A subscriber to committed events.
pub type Subscriber = Arc<dyn Fn(&Event) + Send + Sync + 'static>;

/// Identifies a subscription, to cancel it with [`Docmeta::unsubscribe`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SubscriptionId(u64);

impl Docmeta {
    /// Calls `f` with every event after the transaction that appended it commits, in the
    /// committing thread. Keep it fast; a panicking subscriber is isolated from the others.
    pub fn subscribe(&self, f: impl Fn(&Event) + Send + Sync + 'static) -> SubscriptionId {
        let id = SubscriptionId(self.inner.next_subscription.fetch_add(1, Ordering::Relaxed));
        self.inner.subscribers.write().push((id, Arc::new(f)));
        id
    }

    /// Cancels a subscription.
    pub fn unsubscribe(&self, id: SubscriptionId) {
        self.inner.subscribers.write().retain(|(s, _)| *s != id);
    }

    /// Calls every subscriber with each of `events`, in order; a panicking subscriber is
    /// isolated from the others.
    pub(super) fn publish(&self, events: &[Event]) {
        if events.is_empty() {
            return;
        }
        let subscribers: Vec<Subscriber> = self
            .inner
            .subscribers
            .read()
            .iter()
            .map(|(_, s)| s.clone())
            .collect();
        for e in events {
            for s in &subscribers {
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| s(e)));
            }
        }
    }
}
