//! Statements of the tamper-evident event log: sealing events into the hash chain, reading the
//! chain back, signed checkpoints, and pruning old events (see `events::chain`).
//!
//! Part of `store` (layer 3): imports only `error`, `model`, `config`, `events` and its siblings.

use super::records::*;
use super::{Dialect, Row, Tx};
use crate::error::{Error, Result};
use crate::events::chain::{GENESIS, StoredEvent, chain_hash, hex, unhex};
use crate::model::Checkpoint;

/// Events sealed or read per statement.
const BATCH: i64 = 5000;

/// The advisory lock PostgreSQL's sealers take, so that one process at a time extends the chain.
const SEAL_LOCK: i64 = 0x0000_646f_6363_686e; // "docchn"

/// Every column the chain covers (see [`StoredEvent`]), in its order; `tx` is PostgreSQL's only.
fn stored_columns(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Postgres => {
            "seq, id, timestamp, name, actor_id, target_kind, target_id, target_label, \
             action_kind, action_id, action_label, follow, changes, tx, hash"
        }
        _ => {
            "seq, id, timestamp, name, actor_id, target_kind, target_id, target_label, \
             action_kind, action_id, action_label, follow, changes, 0, hash"
        }
    }
}

/// An event as stored, with its stored hash (`seq` is 0 while it is not sealed).
fn stored_event(r: &Row) -> Result<(StoredEvent, Option<String>)> {
    Ok((
        StoredEvent {
            seq: r.opt_int(0)?.unwrap_or(0),
            id: r.int(1)?,
            timestamp: r.int(2)?,
            name: r.text(3)?,
            actor_id: r.opt_int(4)?,
            target_kind: r.text(5)?,
            target_id: r.int(6)?,
            target_label: r.text(7)?,
            action_kind: r.opt_text(8)?,
            action_id: r.opt_int(9)?,
            action_label: r.opt_text(10)?,
            follow: r.int(11)?,
            changes: r.text(12)?,
            tx: r.int(13)?,
        },
        r.opt_text(14)?,
    ))
}

const CHECKPOINT_COLUMNS: &str = "seq, event_id, hash, created, public_key, signature, base";

fn checkpoint(r: &Row) -> Result<Checkpoint> {
    Ok(Checkpoint {
        seq: r.int(0)?,
        event_id: r.int(1)?,
        hash: r.text(2)?,
        created: from_micros(r.int(3)?),
        public_key: r.text(4)?,
        signature: r.text(5)?,
        base: r.int(6)? != 0,
    })
}

/// The end of the chain: the last sealed event, or where the chain starts when none is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ChainHead {
    /// Its position (0 before the first event).
    pub seq: i64,
    /// Its hash.
    pub hash: [u8; 32],
    /// Its event's id (0 before the first event).
    pub event_id: i64,
    /// Its event's transaction on PostgreSQL (-1 when unknown).
    pub tx: i64,
}

/// The hash a new event chains to when the stored one is not a hash (the log was altered):
/// the digest of the stored text, so that the log goes on and verification names the event.
fn stored_or_digest(text: Option<&str>) -> [u8; 32] {
    let text = text.unwrap_or_default();
    unhex(text).unwrap_or_else(|| {
        let mut out = [0; 32];
        out.copy_from_slice(ring::digest::digest(&ring::digest::SHA256, text.as_bytes()).as_ref());
        out
    })
}

impl Tx<'_> {
    /// Takes the chain for the rest of this transaction, so that one process at a time
    /// extends or prunes it: PostgreSQL's advisory lock (SQLite has one writer anyway).
    pub(crate) fn lock_chain(&mut self) -> Result<()> {
        if self.dialect() == Dialect::Postgres {
            self.execute(&format!("SELECT pg_advisory_xact_lock({SEAL_LOCK})"), &[])?;
        }
        Ok(())
    }

    /// The end of the chain (see [`ChainHead`]): its last sealed event, else the base checkpoint
    /// a prune kept, else the start.
    pub(crate) fn chain_head(&mut self) -> Result<ChainHead> {
        // SQLite seals in id order (see `chain_events`).
        let (tx, last) = match self.dialect() {
            Dialect::Postgres => ("tx", "seq"),
            _ => ("-1", "id"),
        };
        let last = self.optional(
            &format!(
                "SELECT seq, hash, id, {tx} \
                 FROM events \
                 WHERE seq IS NOT NULL \
                 ORDER BY {last} DESC \
                 LIMIT 1"
            ),
            &[],
            |r| Ok((r.int(0)?, r.opt_text(1)?, r.int(2)?, r.int(3)?)),
        )?;
        if let Some((seq, hash, event_id, tx)) = last {
            let hash = stored_or_digest(hash.as_deref());
            return Ok(ChainHead {
                seq,
                hash,
                event_id,
                tx,
            });
        }
        Ok(match self.base_checkpoint()? {
            Some(base) => ChainHead {
                seq: base.seq,
                hash: stored_or_digest(Some(&base.hash)),
                event_id: base.event_id,
                tx: -1,
            },
            None => ChainHead {
                seq: 0,
                hash: GENESIS,
                event_id: 0,
                tx: -1,
            },
        })
    }

    /// The next event id SQLite's `AUTOINCREMENT` will assign to `events`, and the chain's
    /// end, read in one statement: a new event's hash covers its id, so it is written with it.
    pub(crate) fn sqlite_next_event(&mut self) -> Result<(i64, ChainHead)> {
        let row = self.optional(
            "SELECT \
                 COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'events'), 0) + 1, \
                 e.seq, e.hash, e.id \
             FROM (SELECT 1) \
             LEFT JOIN (SELECT seq, hash, id FROM events WHERE seq IS NOT NULL \
                        ORDER BY id DESC LIMIT 1) e ON 1 = 1",
            &[],
            |r| Ok((r.int(0)?, r.opt_int(1)?, r.opt_text(2)?, r.opt_int(3)?)),
        )?;
        let Some((next, seq, hash, id)) = row else {
            return Err(Error::storage("appending an event", "no chain head read"));
        };
        let head = match (seq, hash, id) {
            (Some(seq), Some(hash), Some(event_id)) => ChainHead {
                seq,
                hash: stored_or_digest(Some(&hash)),
                event_id,
                tx: -1,
            },
            _ => self.chain_head()?,
        };
        Ok((next, head))
    }

    /// Seals the events committed after the chain's end into the chain, in commit order (on
    /// PostgreSQL, those every transaction older than theirs has finished for, one sealer at a
    /// time); returns how many. An unsealed event of a transaction older than the chain's last
    /// is left for verification to report: it was put in behind the chain. (An event of the
    /// last event's own transaction is sealed after it whatever its id: every event of a
    /// transaction commits at once, so only a restore into another cluster, which rewrites the
    /// transaction ids to 0, leaves one unsealed there.)
    pub(crate) fn seal_events(&mut self) -> Result<u64> {
        let dialect = self.dialect();
        self.lock_chain()?;
        let mut head = self.chain_head()?;
        let mut sealed = 0;
        loop {
            let sql = match dialect {
                Dialect::Postgres => format!(
                    "SELECT {} \
                     FROM events \
                     WHERE seq IS NULL AND tx >= ?1 AND ?2 = ?2 \
                         AND tx < (pg_snapshot_xmin(pg_current_snapshot())::text::bigint) \
                     ORDER BY tx, id \
                     LIMIT ?3",
                    stored_columns(dialect)
                ),
                _ => format!(
                    "SELECT {} \
                     FROM events \
                     WHERE seq IS NULL AND ?1 = ?1 AND id > ?2 \
                     ORDER BY id \
                     LIMIT ?3",
                    stored_columns(dialect)
                ),
            };
            let batch: Vec<(StoredEvent, Option<String>)> = self.rows(
                &sql,
                &[head.tx.into(), head.event_id.into(), BATCH.into()],
                stored_event,
            )?;
            let full = batch.len() as i64 == BATCH;
            for (mut e, _) in batch {
                e.seq = head.seq + 1;
                let hash = chain_hash(&head.hash, &e);
                self.execute(
                    "UPDATE events SET seq = ?1, hash = ?2 WHERE id = ?3",
                    &[e.seq.into(), hex(&hash).as_str().into(), e.id.into()],
                )?;
                head = ChainHead {
                    seq: e.seq,
                    hash,
                    event_id: e.id,
                    tx: e.tx,
                };
                sealed += 1;
            }
            if !full {
                return Ok(sealed);
            }
        }
    }

    /// Whether any event is sealed (SQLite seals events as they are written once one is).
    pub(crate) fn any_sealed_event(&mut self) -> Result<bool> {
        Ok(self
            .optional(
                "SELECT 1 FROM events WHERE seq IS NOT NULL LIMIT 1",
                &[],
                |_| Ok(()),
            )?
            .is_some())
    }

    /// Up to `limit` sealed events after position `after`, in chain order, with their stored
    /// hashes.
    ///
    /// `after` is the last event read, `(position, id)`. SQLite keeps no index of positions
    /// (one less index to write with every event): it seals events in id order, so its chain
    /// is walked by id and every event's position must be the next one; PostgreSQL walks its
    /// index of positions.
    pub(crate) fn chain_events(
        &mut self,
        after: (i64, i64),
        limit: i64,
    ) -> Result<Vec<(StoredEvent, Option<String>)>> {
        let dialect = self.dialect();
        let order = match dialect {
            Dialect::Postgres => "seq > ?1 AND ?2 = ?2 ORDER BY seq",
            _ => "seq IS NOT NULL AND ?1 = ?1 AND id > ?2 ORDER BY id",
        };
        let sql = format!(
            "SELECT {} \
             FROM events \
             WHERE {order} \
             LIMIT ?3",
            stored_columns(dialect)
        );
        self.rows(
            &sql,
            &[after.0.into(), after.1.into(), limit.into()],
            stored_event,
        )
    }

    /// Events put into the log behind the chain: unsealed although their transaction is older
    /// than that of its sealed event `head` (`(tx, id)`), or one that has not started; on
    /// SQLite, which seals every event as it is written, every unsealed event. Their ids, oldest first, at most `limit`, and how many
    /// there are in all.
    pub(crate) fn events_behind_chain(
        &mut self,
        head: (i64, i64),
        limit: i64,
    ) -> Result<(Vec<i64>, u64)> {
        let filter = match self.dialect() {
            // Behind the chain's end, or claiming a transaction that has not started (it could
            // never be sealed).
            Dialect::Postgres => {
                "seq IS NULL AND ?2 = ?2 AND (tx < ?1 \
                 OR tx >= (pg_snapshot_xmax(pg_current_snapshot())::text::bigint))"
            }
            _ => "seq IS NULL AND ?1 = ?1 AND ?2 = ?2",
        };
        let ids = self.rows(
            &format!("SELECT id FROM events WHERE {filter} ORDER BY id LIMIT ?3"),
            &[head.0.into(), head.1.into(), limit.into()],
            |r| r.int(0),
        )?;
        let count = self
            .optional(
                &format!("SELECT count(*) FROM events WHERE {filter}"),
                &[head.0.into(), head.1.into()],
                |r| r.int(0),
            )?
            .unwrap_or(0);
        Ok((ids, count.max(0) as u64))
    }

    /// Events not sealed yet whatever their transaction (PostgreSQL's sealer takes them soon).
    pub(crate) fn pending_seal_count(&mut self) -> Result<u64> {
        let n = self
            .optional("SELECT count(*) FROM events WHERE seq IS NULL", &[], |r| {
                r.int(0)
            })?
            .unwrap_or(0);
        Ok(n.max(0) as u64)
    }

    /// The hash of sealed event `seq` and its id, as stored.
    pub(crate) fn chain_event(
        &mut self,
        seq: i64,
    ) -> Result<Option<(StoredEvent, Option<String>)>> {
        let sql = format!(
            "SELECT {} FROM events WHERE seq = ?1",
            stored_columns(self.dialect())
        );
        self.optional(&sql, &[seq.into()], stored_event)
    }

    // ----- checkpoints -------------------------------------------------------------------

    /// Keeps a signed checkpoint (one per position; a second at the same position replaces
    /// nothing and is dropped).
    pub(crate) fn insert_checkpoint(&mut self, c: &Checkpoint) -> Result<()> {
        self.execute(
            "INSERT INTO audit_checkpoints \
                 (seq, event_id, hash, created, public_key, signature, base) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) \
             ON CONFLICT (seq) DO NOTHING",
            &[
                c.seq.into(),
                c.event_id.into(),
                c.hash.as_str().into(),
                to_micros(c.created).into(),
                c.public_key.as_str().into(),
                c.signature.as_str().into(),
                i64::from(c.base).into(),
            ],
        )?;
        Ok(())
    }

    /// Every stored checkpoint, oldest position first.
    pub(crate) fn checkpoints(&mut self) -> Result<Vec<Checkpoint>> {
        self.rows(
            &format!("SELECT {CHECKPOINT_COLUMNS} FROM audit_checkpoints ORDER BY seq"),
            &[],
            checkpoint,
        )
    }

    /// The newest checkpoint.
    pub(crate) fn last_checkpoint(&mut self) -> Result<Option<Checkpoint>> {
        self.optional(
            &format!(
                "SELECT {CHECKPOINT_COLUMNS} FROM audit_checkpoints ORDER BY seq DESC LIMIT 1"
            ),
            &[],
            checkpoint,
        )
    }

    /// The checkpoint the chain starts from after a prune.
    pub(crate) fn base_checkpoint(&mut self) -> Result<Option<Checkpoint>> {
        self.optional(
            &format!(
                "SELECT {CHECKPOINT_COLUMNS} \
                 FROM audit_checkpoints \
                 WHERE base = 1 \
                 ORDER BY seq DESC \
                 LIMIT 1"
            ),
            &[],
            checkpoint,
        )
    }

    /// The position of the last sealed event written before `before` (microseconds) such that
    /// every sealed event up to it was written before then too: how far a prune may go.
    pub(crate) fn prunable_until(&mut self, before: i64) -> Result<Option<i64>> {
        let first_kept = self.optional(
            "SELECT min(seq) FROM events WHERE seq IS NOT NULL AND timestamp >= ?1",
            &[before.into()],
            |r| r.opt_int(0),
        )?;
        match first_kept.flatten() {
            Some(seq) => Ok(Some(seq - 1)),
            None => self
                .optional("SELECT max(seq) FROM events", &[], |r| r.opt_int(0))
                .map(Option::flatten),
        }
    }

    /// Removes the sealed events up to position `upto`, with their webhook deliveries, and the
    /// checkpoints before `base`, which becomes the only base; returns how many events went.
    pub(crate) fn prune_events(&mut self, upto: i64, base: &Checkpoint) -> Result<u64> {
        self.execute(
            "DELETE FROM webhook_deliveries \
             WHERE event_id IN (SELECT id FROM events WHERE seq <= ?1)",
            &[upto.into()],
        )?;
        let removed = self.execute("DELETE FROM events WHERE seq <= ?1", &[upto.into()])?;
        self.execute(
            "DELETE FROM audit_checkpoints WHERE seq < ?1",
            &[base.seq.into()],
        )?;
        self.execute("UPDATE audit_checkpoints SET base = 0", &[])?;
        self.execute(
            "DELETE FROM audit_checkpoints WHERE seq = ?1",
            &[base.seq.into()],
        )?;
        self.insert_checkpoint(base)?;
        Ok(removed)
    }
}
