//! The event log and the durable tasks, as this session may see them.

use docmeta_core as core;

use super::Session;
use crate::errors::Result;
use crate::records::{DurableTask, Event};

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

    /// The durable tasks not done yet (pending, running, failed); superusers only.
    pub fn tasks(&self) -> Result<Vec<DurableTask>> {
        Ok(self.inner.tasks()?.into_iter().map(Into::into).collect())
    }
}
