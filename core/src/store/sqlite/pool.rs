//! The reader connections: a bounded pool of at most [`READER_POOL`], opened as reads need
//! them; a read that needs one while all are in use waits for one to come back.
//!
//! Part of `store` (layer 3): imports only `error`, `model`, `config`, `events` and its siblings.

use std::path::Path;

use parking_lot::{Condvar, Mutex};
use rusqlite::Connection;

use super::conn::open_connection;
use crate::error::Result;

/// Reader connections kept open; more concurrent readers wait for one (opening a connection per
/// read would cost more than the read).
const READER_POOL: usize = 8;

#[derive(Default)]
struct PoolState {
    idle: Vec<Connection>,
    opened: usize,
}

/// A bounded pool of reader connections.
#[derive(Default)]
pub(super) struct ReaderPool {
    state: Mutex<PoolState>,
    returned: Condvar,
}

impl ReaderPool {
    pub(super) fn take(&self, path: &Path) -> Result<Connection> {
        let mut state = self.state.lock();
        loop {
            if let Some(c) = state.idle.pop() {
                return Ok(c);
            }
            if state.opened < READER_POOL {
                state.opened += 1;
                drop(state);
                return open_connection(Some(path)).inspect_err(|_| self.state.lock().opened -= 1);
            }
            self.returned.wait(&mut state);
        }
    }

    pub(super) fn give_back(&self, c: Connection) {
        self.state.lock().idle.push(c);
        self.returned.notify_one();
    }
}
