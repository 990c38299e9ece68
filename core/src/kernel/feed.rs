//! Waking whoever waits for new events: a generation counter that every commit appending events
//! moves, a condition variable for the threads that wait on it
//! ([`Session::events_after`](crate::Session::events_after)), and callbacks for those that
//! wait without a thread ([`Docmeta::watch_events`]: an async server).
//!
//! This process's own commits move it at once, after the commit (`unit.rs`). Other processes'
//! commits reach it through the store's watch ([`Store::watch_commits`]: PostgreSQL's
//! notifications, SQLite's WAL index), which runs while anyone waits and for [`LINGER`] after
//! the last one left (so a follower that asks again at once finds it running), then ends.
//!
//! Part of `kernel` (layer 5 of `scripts/check-structure`): it may import only what `kernel`
//! may (see `kernel`'s module documentation).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, RwLock};

use super::Docmeta;
use crate::store::{CommitSink, CommitWatch, Store};

/// How long the store's watch goes on after the last waiter left.
const LINGER: Duration = Duration::from_secs(10);

/// A callback of [`Docmeta::watch_events`].
type Waker = Arc<dyn Fn() + Send + Sync + 'static>;

/// The generation counter and who waits on it (see the module documentation).
pub(crate) struct EventSignal {
    state: Mutex<SignalState>,
    changed: Condvar,
    wakers: RwLock<Vec<(u64, Waker)>>,
    next_waker: AtomicU64,
}

struct SignalState {
    /// Moved by every commit that appended events (as far as this process can tell).
    generation: u64,
    /// Waiters now: blocked threads and live [`EventWatch`]es.
    waiting: usize,
    /// When the last waiter left.
    idle_since: Instant,
    /// The store's watch of other processes' commits, while it runs.
    watch: Option<CommitWatch>,
    /// The store said it cannot watch: it is not asked again.
    unwatchable: bool,
}

impl EventSignal {
    pub(crate) fn new() -> Arc<EventSignal> {
        Arc::new(EventSignal {
            state: Mutex::new(SignalState {
                generation: 0,
                waiting: 0,
                idle_since: Instant::now(),
                watch: None,
                unwatchable: false,
            }),
            changed: Condvar::new(),
            wakers: RwLock::new(Vec::new()),
            next_waker: AtomicU64::new(0),
        })
    }

    /// The current generation: a commit after this call moves it.
    pub(crate) fn generation(&self) -> u64 {
        self.state.lock().generation
    }

    /// Moves the generation and wakes every waiter.
    pub(crate) fn bump(&self) {
        self.state.lock().generation += 1;
        self.changed.notify_all();
        let wakers: Vec<Waker> = self.wakers.read().iter().map(|(_, w)| w.clone()).collect();
        for w in wakers {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w()));
        }
    }

    /// Counts a waiter in, starting the store's watch when none runs.
    fn enter(self: &Arc<Self>, store: &dyn Store) {
        let mut state = self.state.lock();
        state.waiting += 1;
        if state.watch.is_some() || state.unwatchable {
            return;
        }
        let sink: Arc<dyn CommitSink> = Arc::new(Sink(Arc::downgrade(self)));
        match store.watch_commits(sink) {
            Ok(Some(watch)) => state.watch = Some(watch),
            Ok(None) => state.unwatchable = true,
            // Tried again by the next waiter; this one hears of this process's commits.
            Err(_) => {}
        }
    }

    /// Counts a waiter out.
    fn leave(&self) {
        let mut state = self.state.lock();
        state.waiting = state.waiting.saturating_sub(1);
        if state.waiting == 0 {
            state.idle_since = Instant::now();
        }
    }

    /// Waits until the generation is no longer `seen`, or until `deadline`.
    fn wait(&self, seen: u64, deadline: Instant) {
        let mut state = self.state.lock();
        while state.generation == seen {
            if self.changed.wait_until(&mut state, deadline).timed_out() {
                return;
            }
        }
    }
}

/// What the store's watch tells: it holds the signal weakly, so a watch never keeps a closed
/// instance alive, and ends once the instance is gone.
struct Sink(Weak<EventSignal>);

impl CommitSink for Sink {
    fn committed(&self) {
        if let Some(signal) = self.0.upgrade() {
            signal.bump();
        }
    }

    fn wanted(&self) -> bool {
        let Some(signal) = self.0.upgrade() else {
            return false;
        };
        let mut state = signal.state.lock();
        if state.waiting > 0 || state.idle_since.elapsed() < LINGER {
            return true;
        }
        // Forgotten under the lock, so the next waiter starts a new watch.
        let watch = state.watch.take();
        drop(state);
        drop(watch);
        false
    }
}

/// A waiter counted in while it lives (see [`EventSignal::enter`]).
pub(crate) struct Waiting(Arc<EventSignal>);

impl Drop for Waiting {
    fn drop(&mut self) {
        self.0.leave();
    }
}

/// Calls its callback whenever events may have been committed, until it is dropped (see
/// [`Docmeta::watch_events`]).
pub struct EventWatch {
    signal: Arc<EventSignal>,
    id: u64,
    _waiting: Waiting,
}

impl std::fmt::Debug for EventWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventWatch").field("id", &self.id).finish()
    }
}

impl Drop for EventWatch {
    fn drop(&mut self) {
        self.signal.wakers.write().retain(|(id, _)| *id != self.id);
    }
}

impl Docmeta {
    /// Calls `wake` whenever events may have been committed to this instance's database: at
    /// once after each commit made through this process, and for other processes' commits as
    /// soon as the store tells (PostgreSQL: a notification sent with the commit; SQLite: the WAL
    /// index, looked at every 50 ms), until the returned [`EventWatch`] is dropped. For callers
    /// that wait without holding a thread (an async server): on each wake, read with
    /// [`Session::events_after`](crate::Session::events_after) and no wait, which decides what
    /// the reader may see. A wake may find nothing new (a commit whose events the reader may
    /// not see, or one already read); what was committed before this call is not announced.
    /// `wake` runs on the committing thread or the store's watching thread: keep it short (a
    /// channel's send, a `Notify`); a panicking one is isolated.
    pub fn watch_events(&self, wake: impl Fn() + Send + Sync + 'static) -> EventWatch {
        let signal = &self.inner.event_signal;
        let id = signal.next_waker.fetch_add(1, Ordering::Relaxed);
        signal.wakers.write().push((id, Arc::new(wake)));
        EventWatch {
            signal: signal.clone(),
            id,
            _waiting: self.waiting_for_events(),
        }
    }

    /// Counts the caller among those waiting for events while the result lives (the store's
    /// watch of other processes' commits runs meanwhile).
    pub(crate) fn waiting_for_events(&self) -> Waiting {
        let signal = &self.inner.event_signal;
        signal.enter(self.inner.store.as_ref());
        Waiting(signal.clone())
    }

    /// The generation of committed events now (see the module documentation).
    pub(crate) fn event_generation(&self) -> u64 {
        self.inner.event_signal.generation()
    }

    /// Blocks until events may have been committed after the generation `seen` was read, or
    /// until `deadline`. Count the caller in with [`waiting_for_events`](Self::waiting_for_events)
    /// first, or other processes' commits go unheard.
    pub(crate) fn wait_for_events(&self, seen: u64, deadline: Instant) {
        self.inner.event_signal.wait(seen, deadline);
    }

    /// Tells the waiters that this process committed events.
    pub(crate) fn events_committed(&self) {
        self.inner.event_signal.bump();
    }
}
