//! The event log (listed, or followed as it grows) and the durable tasks, as this session may
//! see them.

use std::time::Duration;

use docmeta_core as core;

use super::Session;
use crate::errors::Result;
use crate::records::{DurableTask, Event, EventFeed};

#[uniffi::export]
impl Session {
    /// Events whose target this session may view, newest first, with their actors' names.
    pub fn events(&self, limit: u32) -> Result<Vec<Event>> {
        Ok(self
            .inner
            .events(&core::EventQuery {
                limit: Some(limit),
                ..Default::default()
            })?
            .into_iter()
            .map(Into::into)
            .collect())
    }

    /// Follows the event log: the events committed after `cursor` (`null`: from the start), in
    /// commit order, that this session may see, at most `limit` (1 to 1,000), with the cursor to
    /// pass next. Answers as soon as one such event is committed, here or by another process on
    /// the same database, or after `waitMs` (at most 60,000) with none. Blocks its thread while
    /// it waits: call it off the main thread.
    pub fn events_after(&self, cursor: Option<i64>, wait_ms: u64, limit: u32) -> Result<EventFeed> {
        Ok(self
            .inner
            .events_after(
                cursor.map(core::EventId),
                Duration::from_millis(wait_ms),
                limit,
            )?
            .into())
    }

    /// The durable tasks not done yet (pending, running, failed); superusers only.
    pub fn tasks(&self) -> Result<Vec<DurableTask>> {
        Ok(self.inner.tasks()?.into_iter().map(Into::into).collect())
    }
}
