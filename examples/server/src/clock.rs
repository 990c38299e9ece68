//! The request being handled: when it arrived and its time limit, as task-locals that both the
//! authentication (`auth`) and the handlers' state (`state`) read.
//!
//! May import nothing of this crate.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

tokio::task_local! {
    /// The time limit of the request being handled (absent for uploads, which have their own).
    pub static REQUEST: Arc<RequestClock>;
    /// When the request being handled arrived: it is answered with every change committed
    /// before then, by any process (see `Session::consistent_from`).
    pub static BEGAN: Instant;
}

/// When the request being handled arrived (now, outside a request).
pub fn request_began() -> Instant {
    BEGAN
        .try_with(|began| *began)
        .unwrap_or_else(|_| Instant::now())
}

/// A request's time limit, and whether its handler has begun work in the core.
#[derive(Debug)]
pub struct RequestClock {
    pub deadline: Instant,
    /// Set when the handler hands work to the core: from then on the core's deadline check
    /// decides the outcome, and the answer waits for it.
    pub started: AtomicBool,
}
