//! Statements of devices: a user's token-signed sign-ins (see `model/device.rs`).
//!
//! Part of `store` (layer 3): imports only `error`, `model`, `config`, `events` and its siblings.

use chrono::{DateTime, Utc};

use super::records::*;
use super::{Row, Tx};
use crate::error::Result;
use crate::model::*;

/// The columns [`device`] reads, in its order.
const DEVICE_COLUMNS: &str = "id, user_id, name, created, expires, last_used";

fn device(r: &Row) -> Result<Device> {
    Ok(Device {
        id: DeviceId(r.int(0)?),
        user: UserId(r.int(1)?),
        name: r.text(2)?,
        created: from_micros(r.int(3)?),
        expires: from_micros(r.int(4)?),
        last_used: r.opt_int(5)?.map(from_micros),
    })
}

impl Tx<'_> {
    /// Adds a device of `user` whose token hashes to `token_hash`.
    pub fn insert_device(
        &mut self,
        user: UserId,
        name: &str,
        token_hash: &str,
        created: DateTime<Utc>,
        expires: DateTime<Utc>,
    ) -> Result<DeviceId> {
        self.insert(
            "INSERT INTO devices (user_id, name, token_hash, created, expires) \
             VALUES (?1, ?2, ?3, ?4, ?5) \
             RETURNING id",
            &[
                user.0.into(),
                name.into(),
                token_hash.into(),
                to_micros(created).into(),
                to_micros(expires).into(),
            ],
        )
        .map(DeviceId)
    }

    /// One device.
    pub fn device(&mut self, id: DeviceId) -> Result<Option<Device>> {
        self.optional(
            &format!(
                "SELECT {DEVICE_COLUMNS} \
                 FROM devices \
                 WHERE id = ?1"
            ),
            &[id.0.into()],
            device,
        )
    }

    /// The device whose token hashes to `token_hash`, whatever its expiry.
    pub fn device_by_token_hash(&mut self, token_hash: &str) -> Result<Option<Device>> {
        self.optional(
            &format!(
                "SELECT {DEVICE_COLUMNS} \
                 FROM devices \
                 WHERE token_hash = ?1"
            ),
            &[token_hash.into()],
            device,
        )
    }

    /// How many devices `user` has (expired ones included).
    pub fn count_devices(&mut self, user: UserId) -> Result<usize> {
        self.optional(
            "SELECT count(*) \
             FROM devices \
             WHERE user_id = ?1",
            &[user.0.into()],
            |r| r.int(0),
        )
        .map(|n| usize::try_from(n.unwrap_or(0)).unwrap_or(0))
    }

    /// The devices of `user`, by id, `limit` of them from the `offset`th.
    pub fn devices(&mut self, user: UserId, offset: usize, limit: usize) -> Result<Vec<Device>> {
        self.rows(
            &format!(
                "SELECT {DEVICE_COLUMNS} \
                 FROM devices \
                 WHERE user_id = ?1 \
                 ORDER BY id \
                 LIMIT ?2 OFFSET ?3"
            ),
            &[
                user.0.into(),
                i64::try_from(limit).unwrap_or(i64::MAX).into(),
                i64::try_from(offset).unwrap_or(i64::MAX).into(),
            ],
            device,
        )
    }

    /// Records that a device's token was accepted at `at`, unless it was at or after `since`
    /// already: answers whether it wrote.
    pub fn touch_device(
        &mut self,
        id: DeviceId,
        at: DateTime<Utc>,
        since: DateTime<Utc>,
    ) -> Result<bool> {
        self.execute(
            "UPDATE devices \
             SET last_used = ?2 \
             WHERE id = ?1 \
             AND (last_used IS NULL OR last_used < ?3)",
            &[id.0.into(), to_micros(at).into(), to_micros(since).into()],
        )
        .map(|n| n > 0)
    }

    /// Deletes a device: its token is no longer accepted.
    pub fn delete_device(&mut self, id: DeviceId) -> Result<()> {
        self.execute(
            "DELETE FROM devices \
             WHERE id = ?1",
            &[id.0.into()],
        )
        .map(drop)
    }

    /// Deletes the devices of `user` whose tokens expired before `before`.
    pub fn delete_expired_devices(&mut self, user: UserId, before: DateTime<Utc>) -> Result<u64> {
        self.execute(
            "DELETE FROM devices \
             WHERE user_id = ?1 \
             AND expires < ?2",
            &[user.0.into(), to_micros(before).into()],
        )
    }
}
