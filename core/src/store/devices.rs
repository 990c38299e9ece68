//! Statements of devices: a user's token-signed sign-ins (see `model/device.rs`).
//!
//! Part of `store` (layer 3): imports only `error`, `model`, `config`, `events` and its siblings.

use chrono::{DateTime, Utc};

use super::records::*;
use super::{Row, Tx};
use crate::error::Result;
use crate::model::*;

/// The columns [`device`] reads, in its order.
const DEVICE_COLUMNS: &str = "id, user_id, name, created, expires, last_used, last_sync";

fn device(r: &Row) -> Result<Device> {
    Ok(Device {
        id: DeviceId(r.int(0)?),
        user: UserId(r.int(1)?),
        name: r.text(2)?,
        created: from_micros(r.int(3)?),
        expires: from_micros(r.int(4)?),
        last_used: r.opt_int(5)?.map(from_micros),
        last_sync: r.opt_int(6)?.map(from_micros),
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

    // ----- what a device's replica was sent ------------------------------------------------

    /// Starts a new pass of a device's sync: its pass number, one more than the last.
    pub fn next_sync_pass(&mut self, device: DeviceId) -> Result<i64> {
        self.execute(
            "UPDATE devices \
             SET sync_pass = sync_pass + 1 \
             WHERE id = ?1",
            &[device.0.into()],
        )?;
        self.sync_pass(device)
    }

    /// The pass a device's sync is in (0 before its first).
    pub fn sync_pass(&mut self, device: DeviceId) -> Result<i64> {
        self.optional(
            "SELECT sync_pass \
             FROM devices \
             WHERE id = ?1",
            &[device.0.into()],
            |r| r.int(0),
        )
        .map(|p| p.unwrap_or(0))
    }

    /// Records that `documents` were sent to a device in `pass`.
    pub fn record_sent(
        &mut self,
        device: DeviceId,
        documents: &[DocumentId],
        pass: i64,
    ) -> Result<()> {
        for d in documents {
            self.execute(
                "INSERT INTO device_documents (device_id, document_id, pass) \
                 VALUES (?1, ?2, ?3) \
                 ON CONFLICT (device_id, document_id) DO UPDATE SET pass = excluded.pass",
                &[device.0.into(), d.0.into(), pass.into()],
            )?;
        }
        Ok(())
    }

    /// Which of `documents` were sent to a device (and not removed since).
    pub fn sent_among(
        &mut self,
        device: DeviceId,
        documents: &[DocumentId],
    ) -> Result<Vec<DocumentId>> {
        let mut out = Vec::new();
        for d in documents {
            let sent = self.optional(
                "SELECT document_id \
                 FROM device_documents \
                 WHERE device_id = ?1 \
                 AND document_id = ?2",
                &[device.0.into(), d.0.into()],
                |r| r.int(0),
            )?;
            if sent.is_some() {
                out.push(*d);
            }
        }
        Ok(out)
    }

    /// Up to `limit` documents sent to a device in a pass before `pass`, by id.
    pub fn sent_before_pass(
        &mut self,
        device: DeviceId,
        pass: i64,
        limit: usize,
    ) -> Result<Vec<DocumentId>> {
        self.rows(
            "SELECT document_id \
             FROM device_documents \
             WHERE device_id = ?1 \
             AND pass < ?2 \
             ORDER BY document_id \
             LIMIT ?3",
            &[
                device.0.into(),
                pass.into(),
                i64::try_from(limit).unwrap_or(i64::MAX).into(),
            ],
            |r| r.int(0).map(DocumentId),
        )
    }

    /// Forgets that `documents` were sent to a device (they were removed from its replica).
    pub fn forget_sent(&mut self, device: DeviceId, documents: &[DocumentId]) -> Result<()> {
        for d in documents {
            self.execute(
                "DELETE FROM device_documents \
                 WHERE device_id = ?1 \
                 AND document_id = ?2",
                &[device.0.into(), d.0.into()],
            )?;
        }
        Ok(())
    }

    /// Forgets everything sent to a device (its replica starts again from nothing).
    pub fn forget_all_sent(&mut self, device: DeviceId) -> Result<()> {
        self.execute(
            "DELETE FROM device_documents \
             WHERE device_id = ?1",
            &[device.0.into()],
        )
        .map(drop)
    }

    /// Records that a device's replica is up to date at `at`, unless it was recorded after
    /// `unless_after` (written at most once a minute).
    pub fn record_device_synced(
        &mut self,
        device: DeviceId,
        at: DateTime<Utc>,
        unless_after: DateTime<Utc>,
    ) -> Result<()> {
        self.execute(
            "UPDATE devices \
             SET last_sync = ?2 \
             WHERE id = ?1 \
             AND (last_sync IS NULL OR last_sync < ?3)",
            &[
                device.0.into(),
                to_micros(at).into(),
                to_micros(unless_after).into(),
            ],
        )
        .map(drop)
    }

    /// The document a device's create pushed under `key` made, if it made one.
    pub fn device_created(&mut self, device: DeviceId, key: &str) -> Result<Option<DocumentId>> {
        self.optional(
            "SELECT document_id \
             FROM device_creates \
             WHERE device_id = ?1 \
             AND key = ?2",
            &[device.0.into(), key.into()],
            |r| r.int(0).map(DocumentId),
        )
    }

    /// Records that a device's create pushed under `key` made `document`.
    pub fn record_device_created(
        &mut self,
        device: DeviceId,
        key: &str,
        document: DocumentId,
    ) -> Result<()> {
        self.execute(
            "INSERT INTO device_creates (device_id, key, document_id) \
             VALUES (?1, ?2, ?3)",
            &[device.0.into(), key.into(), document.0.into()],
        )
        .map(drop)
    }
}
