//! Limits of downloads and uploads, so that slow clients cannot hold the server: how long one may
//! stall or last, and how many one user may have in progress at once.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use docmeta_core::{Config, UserId};
use parking_lot::Mutex;

use crate::error::ApiError;

/// The stream limits of `config.yml`.
#[derive(Debug, Clone, Copy)]
pub struct StreamLimits {
    /// Longest time without a byte moving (`stream_idle_timeout_ms`).
    pub idle: Duration,
    /// Longest time one stream may take (`stream_total_timeout_ms`).
    pub total: Duration,
    /// Streams in progress per user (`streams_per_user`).
    pub per_user: u32,
}

/// A time limit of `config.yml` in milliseconds, kept between a millisecond (zero would cut
/// everything at once) and a year (so that adding it to an instant cannot overflow).
pub fn config_duration(ms: u64) -> Duration {
    Duration::from_millis(ms.clamp(1, 365 * 24 * 3600 * 1000))
}

impl StreamLimits {
    pub fn from_config(config: &Config) -> StreamLimits {
        StreamLimits {
            idle: config_duration(config.stream_idle_timeout_ms),
            total: config_duration(config.stream_total_timeout_ms),
            per_user: config.streams_per_user,
        }
    }

    /// When a stream starting now must be done.
    pub fn deadline(&self) -> Instant {
        Instant::now() + self.total
    }
}

/// Counts the streams in progress of each user.
#[derive(Debug)]
pub struct StreamCounter {
    limits: StreamLimits,
    active: Mutex<HashMap<UserId, u32>>,
}

impl StreamCounter {
    pub fn new(limits: StreamLimits) -> Arc<StreamCounter> {
        Arc::new(StreamCounter {
            limits,
            active: Mutex::new(HashMap::new()),
        })
    }

    pub fn limits(&self) -> StreamLimits {
        self.limits
    }

    /// A place for one more stream of `user`, held until the permit is dropped; `429` when the
    /// user already has `streams_per_user` in progress.
    pub fn start(self: &Arc<Self>, user: UserId) -> Result<StreamPermit, ApiError> {
        let mut active = self.active.lock();
        let count = active.entry(user).or_insert(0);
        if *count >= self.limits.per_user {
            let mut e = ApiError::detail(
                StatusCode::TOO_MANY_REQUESTS,
                &format!(
                    "Too many downloads and uploads in progress for this user (at most {}); \
                     try again when one has finished.",
                    self.limits.per_user
                ),
            );
            e.retry_after = Some(1);
            return Err(e);
        }
        *count += 1;
        Ok(StreamPermit {
            counter: self.clone(),
            user,
        })
    }
}

/// One stream in progress (see [`StreamCounter::start`]).
#[derive(Debug)]
pub struct StreamPermit {
    counter: Arc<StreamCounter>,
    user: UserId,
}

impl Drop for StreamPermit {
    fn drop(&mut self) {
        let mut active = self.counter.active.lock();
        if let Some(count) = active.get_mut(&self.user) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                active.remove(&self.user);
            }
        }
    }
}
