//! Statements of the key-value settings (index cursors and the like).
//!
//! Part of `store` (layer 3): imports only `error`, `model`, `config`, `events` and its siblings.

use super::Tx;
use crate::error::Result;

impl Tx<'_> {
    // ----- settings ---------------------------------------------------------------------

    /// A stored setting.
    pub fn setting(&mut self, key: &str) -> Result<Option<String>> {
        self.optional(
            "SELECT value FROM settings WHERE key = ?1",
            &[key.into()],
            |r| r.text(0),
        )
    }

    /// Stores a setting.
    pub fn set_setting(&mut self, key: &str, value: &str) -> Result<()> {
        // Usually the last statement: it travels with the commit.
        self.execute_later(
            "INSERT INTO settings (key, value) \
             VALUES (?1, ?2) \
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            &[key.into(), value.into()],
        )
    }
}
