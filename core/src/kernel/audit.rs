//! The tamper-evident event log, as an installation operates it: the Ed25519 key that signs its
//! checkpoints, sealing committed events into the hash chain (PostgreSQL's, which are sealed
//! after commit), signed checkpoints, verification of the whole chain, and pruning old events
//! behind a checkpoint (see `events::chain` for the hash, `store/audit.rs` for the statements).
//!
//! Part of `kernel` (layer 5).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use ring::signature::{ED25519, Ed25519KeyPair, KeyPair, UnparsedPublicKey};

use super::Docmeta;
use crate::error::{Error, Result};
use crate::events::chain::{GENESIS, chain_hash, checkpoint_message, hex, unhex};
use crate::model::{AuditFailure, AuditReport, Checkpoint, PruneReport};
use crate::store::Dialect;
use crate::store::records::{from_micros, to_micros};

/// How often the background worker writes a checkpoint while events are being written.
pub(crate) const CHECKPOINT_EVERY: Duration = Duration::from_secs(3600);

/// Events read per transaction while verifying.
const VERIFY_BATCH: i64 = 10_000;

/// The file of the data directory that holds the installation's signing key (PKCS#8).
const KEY_FILE: &str = "audit_key";

fn key_error(what: &str, e: impl std::fmt::Display) -> Error {
    Error::storage(what, e.to_string())
}

/// A new Ed25519 key pair, as PKCS#8 bytes.
fn generate_key() -> Result<Vec<u8>> {
    let rng = ring::rand::SystemRandom::new();
    Ed25519KeyPair::generate_pkcs8(&rng)
        .map(|doc| doc.as_ref().to_vec())
        .map_err(|e| key_error("generating the audit key", e))
}

/// Reads `system/audit_key` of `dir`, creating it (mode 0600) on first use: written whole to a
/// file of its own first, then linked into place, so that a process that finds it finds it
/// whole (when two create it at once, the first link wins and both use that key).
fn load_or_create_key(dir: &Path) -> Result<Ed25519KeyPair> {
    let system = dir.join("system");
    let path = system.join(KEY_FILE);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            crate::owner_only::create_dir_all(&system)
                .map_err(|e| key_error("creating the system directory", e))?;
            let bytes = generate_key()?;
            let mut suffix = [0u8; 8];
            getrandom::fill(&mut suffix).map_err(|e| key_error("naming the audit key", e))?;
            let temp = system.join(format!(".{KEY_FILE}.{}", hex(&suffix)));
            let written = crate::owner_only::create_new(&temp).and_then(|mut file| {
                use std::io::Write;
                file.write_all(&bytes).and_then(|()| file.sync_all())
            });
            let linked = written.and_then(|()| std::fs::hard_link(&temp, &path));
            let _ = std::fs::remove_file(&temp);
            match linked {
                Ok(()) => bytes,
                // Another process linked its key first: that is the installation's.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    std::fs::read(&path).map_err(|e| key_error("reading the audit key", e))?
                }
                Err(e) => return Err(key_error("creating the audit key", e)),
            }
        }
        Err(e) => return Err(key_error("reading the audit key", e)),
    };
    Ed25519KeyPair::from_pkcs8(&bytes).map_err(|e| {
        Error::InvalidInput(format!(
            "{} is not an Ed25519 key in PKCS#8 form ({e})",
            path.display()
        ))
    })
}

/// Whether `c`'s signature verifies with `public_key` (hex), under the tag of what it is (a
/// periodic checkpoint, or a prune's base).
fn signed_by(c: &Checkpoint, public_key: &str) -> bool {
    let (Some(key), Some(hash), Some(signature)) = (
        crate::config::decode_hex(public_key),
        unhex::<32>(&c.hash),
        crate::config::decode_hex(&c.signature),
    ) else {
        return false;
    };
    let message = checkpoint_message(c.seq, c.event_id, &hash, to_micros(c.created), c.base);
    UnparsedPublicKey::new(&ED25519, key)
        .verify(&message, &signature)
        .is_ok()
}

/// A failure at position `seq`.
fn failure(seq: Option<i64>, event_id: Option<i64>, reason: String) -> Option<AuditFailure> {
    Some(AuditFailure {
        seq,
        event_id,
        reason,
    })
}

/// The setting that records the public key of the installation's checkpoints.
const KEY_SETTING: &str = "audit.public_key";

impl Docmeta {
    /// The installation's signing key: `system/audit_key` of the data directory (created on
    /// first use), or for an in-memory SQLite handle a key of its own for its lifetime. The
    /// first key used records its public key in the database; a process whose key differs
    /// (another data directory on a shared PostgreSQL without the same `system/audit_key`) is
    /// refused rather than sign checkpoints nobody else could check.
    fn audit_key(&self) -> Result<Arc<Ed25519KeyPair>> {
        if let Some(key) = self.inner.audit_key.get() {
            return Ok(key.clone());
        }
        let key = match self.data_dir() {
            Some(dir) => load_or_create_key(dir)?,
            None if self.store().dialect() != Dialect::Postgres => {
                Ed25519KeyPair::from_pkcs8(&generate_key()?)
                    .map_err(|e| key_error("reading the audit key", e))?
            }
            None => {
                return Err(Error::InvalidInput(
                    "this handle has no data directory to hold the installation's audit key \
                     (system/audit_key): open it with one to sign or check checkpoints"
                        .to_owned(),
                ));
            }
        };
        let public = hex(key.public_key().as_ref());
        let recorded = self.write_system(|tx| match tx.setting(KEY_SETTING)? {
            Some(recorded) => Ok(recorded),
            None => {
                tx.set_setting(KEY_SETTING, &public)?;
                Ok(public.clone())
            }
        })?;
        if recorded != public {
            return Err(Error::conflict(
                "audit_key",
                format!(
                    "this process's system/audit_key (public key {public}) is not the one the \
                     installation's checkpoints are signed with ({recorded}): give every process \
                     of the installation the same system/audit_key"
                ),
            ));
        }
        Ok(self.inner.audit_key.get_or_init(|| Arc::new(key)).clone())
    }

    /// The installation's Ed25519 public key, lower-case hex: what a third party needs to check
    /// the signature of a [`Checkpoint`] (`docmeta audit public-key`). Every process of an
    /// installation must share `system/audit_key` (as it shares `system/SECRET_KEY`).
    pub fn audit_public_key(&self) -> Result<String> {
        Ok(hex(self.audit_key()?.public_key().as_ref()))
    }

    /// Seals the events committed since the last seal into the hash chain; returns how many.
    /// SQLite seals each event as it is written, so this has work only on PostgreSQL (and for
    /// events written before the chain existed, when the database is first opened by this
    /// version). The background worker calls it every few seconds.
    pub(crate) fn seal_events(&self) -> Result<u64> {
        if self.store().dialect() != Dialect::Postgres {
            // An unsealed event on SQLite was put in behind the chain, unless the chain has
            // not started (a database from before it: no sealed event and no prune's base):
            // only then are they sealed.
            let started =
                self.read(|tx| Ok(tx.any_sealed_event()? || tx.base_checkpoint()?.is_some()))?;
            if started {
                return Ok(0);
            }
        }
        self.write_system(|tx| tx.seal_events())
    }

    /// A checkpoint of position `seq` (event `event_id`, hash `hash`), signed now.
    fn sign(
        key: &Ed25519KeyPair,
        (seq, event_id, hash): (i64, i64, &[u8; 32]),
        base: bool,
    ) -> Checkpoint {
        let created = from_micros(to_micros(Utc::now()));
        let message = checkpoint_message(seq, event_id, hash, to_micros(created), base);
        Checkpoint {
            seq,
            event_id,
            hash: hex(hash),
            created,
            public_key: hex(key.public_key().as_ref()),
            signature: hex(key.sign(&message).as_ref()),
            base,
        }
    }

    /// Writes a signed checkpoint of the chain's end (after sealing what is committed) and
    /// returns it: keep it outside the database (`docmeta audit checkpoint > FILE`) to prove
    /// later, with [`verify_events`](Self::verify_events), that no event up to it was
    /// altered, removed or added, including from the end of the log. Backups carry one in
    /// their manifest.
    pub fn audit_checkpoint(&self) -> Result<Checkpoint> {
        self.seal_events()?;
        let key = self.audit_key()?;
        self.write_system(|tx| {
            let head = tx.chain_head()?;
            let checkpoint = Self::sign(&key, (head.seq, head.event_id, &head.hash), false);
            tx.insert_checkpoint(&checkpoint)?;
            Ok(checkpoint)
        })
    }

    /// Seals new events (PostgreSQL) and writes a checkpoint when the last one is older than
    /// [`CHECKPOINT_EVERY`] and events came since: the background worker's round.
    pub(crate) fn audit_round(&self) -> Result<()> {
        self.seal_events()?;
        let (last, head) = self.read(|tx| Ok((tx.last_checkpoint()?, tx.chain_head()?)))?;
        let due = match last {
            None => head.seq > 0,
            Some(c) => {
                head.seq > c.seq
                    && (Utc::now() - c.created).to_std().unwrap_or_default() >= CHECKPOINT_EVERY
            }
        };
        if due {
            self.audit_checkpoint()?;
        }
        Ok(())
    }

    /// Walks the whole event log and checks that nothing in it was altered since it was
    /// written: each event's hash against its stored fields and the hash before it, the
    /// positions without a gap from where the chain starts (the first event, or a prune's
    /// signed base), every stored checkpoint's signature and hash, and `given` (a checkpoint
    /// kept outside the database, such as a backup's) likewise. The report names the first
    /// event that fails: one changed byte in any stored field, a deleted event, an inserted
    /// one, two swapped, the end of the log cut off (against a checkpoint past the end), an
    /// altered checkpoint (its signature does not verify with this installation's key), a
    /// checkpoint of events a prune removed. `progress` is called with the events checked so
    /// far and the total.
    pub fn verify_events(
        &self,
        given: Option<&Checkpoint>,
        mut progress: impl FnMut(u64, u64),
    ) -> Result<AuditReport> {
        if self.store().dialect() == Dialect::Postgres {
            self.seal_events()?;
        }
        let key = self.audit_public_key()?;
        let (base, stored, head) =
            self.read(|tx| Ok((tx.base_checkpoint()?, tx.checkpoints()?, tx.chain_head()?)))?;
        let start = base.as_ref().map_or(0, |b| b.seq);
        let mut report = AuditReport {
            verified: 0,
            start,
            head: start,
            checkpoints: 0,
            unsealed: 0,
            failure: None,
        };
        // Every checkpoint to check, with where it came from, by position.
        let mut checks: Vec<(&Checkpoint, &str)> = stored.iter().map(|c| (c, "stored")).collect();
        if let Some(g) = given {
            checks.push((g, "given"));
        }
        for (c, source) in &checks {
            // Signed as what it claims to be (a periodic checkpoint, or a prune's base: each
            // under a tag of its own).
            if !signed_by(c, &key) {
                report.failure = failure(
                    Some(c.seq),
                    Some(c.event_id),
                    format!(
                        "the {source} checkpoint at position {} is not signed by this \
                         installation's key as what it claims to be (altered, or from another \
                         installation)",
                        c.seq
                    ),
                );
                return Ok(report);
            }
        }
        // Then where each is: a forged one is named as forged, whatever else it moved.
        for (c, source) in &checks {
            // Only the prune's base the chain starts from may be one.
            let at_base = base.as_ref().is_some_and(|b| b.seq == c.seq);
            if c.base && !at_base {
                report.failure = failure(
                    Some(c.seq),
                    Some(c.event_id),
                    format!(
                        "the {source} checkpoint at position {} is the base of a prune, not of \
                         the one the chain starts from (position {start})",
                        c.seq
                    ),
                );
                return Ok(report);
            }
            // A periodic checkpoint at the base covers the last event the prune removed.
            if c.seq < start || (base.is_some() && !c.base && c.seq == start) {
                report.failure = failure(
                    Some(c.seq),
                    Some(c.event_id),
                    format!(
                        "the {source} checkpoint at position {} covers events a prune removed \
                         (the chain starts after position {start}): it cannot be checked",
                        c.seq
                    ),
                );
                return Ok(report);
            }
        }
        let by_position: std::collections::BTreeMap<i64, Vec<(&Checkpoint, &str)>> = checks
            .iter()
            .fold(Default::default(), |mut map, (c, source)| {
                map.entry(c.seq).or_default().push((*c, *source));
                map
            });
        let mut prev = match &base {
            Some(b) => unhex::<32>(&b.hash).unwrap_or(GENESIS),
            None => GENESIS,
        };
        // What a prune removed stays removed.
        if let Some((e, _)) = self
            .read(|tx| tx.chain_events((i64::MIN, i64::MIN), 1))?
            .first()
            && e.seq <= start
        {
            report.failure = failure(
                Some(e.seq),
                Some(e.id),
                format!(
                    "event {} at position {} is still in the log although the chain starts \
                     after position {start}",
                    e.id, e.seq
                ),
            );
            return Ok(report);
        }
        // A checkpoint at the start of the chain covers only what was pruned.
        for (c, source) in by_position.get(&start).into_iter().flatten() {
            report.checkpoints += 1;
            if c.hash != hex(&prev) {
                report.failure = failure(
                    Some(c.seq),
                    Some(c.event_id),
                    format!(
                        "the {source} checkpoint at position {} does not match where the chain \
                         starts",
                        c.seq
                    ),
                );
                return Ok(report);
            }
        }
        let total = u64::try_from(head.seq - start).unwrap_or(0);
        let mut expected = start + 1;
        // The last event walked, as commit order places it: `(tx, id)`.
        let mut last = (-1, 0);
        // Where the walk goes on from: `(position, id)`.
        let mut cursor = (start, i64::MIN);
        loop {
            let batch = self.read(|tx| tx.chain_events(cursor, VERIFY_BATCH))?;
            let full = batch.len() as i64 == VERIFY_BATCH;
            for (e, stored_hash) in batch {
                if e.seq != expected {
                    report.failure = failure(
                        Some(expected),
                        Some(e.id),
                        format!(
                            "the event at position {expected} is missing (removed from the \
                             log, or moved): the next one is event {} at position {}",
                            e.id, e.seq
                        ),
                    );
                    return Ok(report);
                }
                cursor = (e.seq, e.id);
                let hash = chain_hash(&prev, &e);
                if stored_hash.as_deref() != Some(hex(&hash).as_str()) {
                    report.failure = failure(
                        Some(e.seq),
                        Some(e.id),
                        format!(
                            "event {} at position {} does not match its hash: a stored field \
                             was changed, or it was moved or put in from elsewhere",
                            e.id, e.seq
                        ),
                    );
                    return Ok(report);
                }
                for (c, source) in by_position.get(&e.seq).into_iter().flatten() {
                    report.checkpoints += 1;
                    if c.hash != hex(&hash) || c.event_id != e.id {
                        report.failure = failure(
                            Some(e.seq),
                            Some(e.id),
                            format!(
                                "the {source} checkpoint at position {} does not match event \
                                 {} there: the log was rewritten from there or before",
                                c.seq, e.id
                            ),
                        );
                        return Ok(report);
                    }
                }
                prev = hash;
                last = (e.tx, e.id);
                report.verified += 1;
                report.head = e.seq;
                expected += 1;
                if report.verified.is_multiple_of(VERIFY_BATCH as u64) {
                    progress(report.verified, total.max(report.verified));
                }
            }
            if !full {
                break;
            }
        }
        progress(report.verified, total.max(report.verified));
        if let Some((seq, list)) = by_position.range(report.head + 1..).next() {
            let (c, source) = list[0];
            report.failure = failure(
                Some(*seq),
                Some(c.event_id),
                format!(
                    "the log ends at position {} but the {source} checkpoint covers position \
                     {seq}: events were removed from its end",
                    report.head
                ),
            );
            return Ok(report);
        }
        // What commit order puts inside the chain but is not in it: an event put in behind it
        // (on SQLite, which seals every event as it is written, any unsealed event; on
        // PostgreSQL, also one claiming a transaction that has not started). Unsealed events
        // after the chain's end are PostgreSQL's commits not sealed yet.
        let (inserted, count) = self.read(|tx| tx.events_behind_chain(last, 1))?;
        if let Some(id) = inserted.first() {
            report.failure = failure(
                None,
                Some(*id),
                format!(
                    "event {id} is not in the chain ({count} such): it was put into the log \
                     behind the events after it"
                ),
            );
            return Ok(report);
        }
        report.unsealed = self
            .read(|tx| tx.pending_seal_count())?
            .saturating_sub(count);
        Ok(report)
    }

    /// Removes the events written before `before`, keeping the chain verifiable: the longest
    /// run of oldest events all written before then goes, and a checkpoint of the last one
    /// removed, signed as a prune's base, becomes where the chain starts. The log is verified
    /// first; a log that fails verification is not pruned ([`Error::Conflict`] on `events`,
    /// with the failure), so a prune never hides an alteration. Webhook deliveries of the
    /// removed events go with them, delivered or not.
    ///
    /// No other call removes events. Every process following the log (search, access, a
    /// replica's sync) must have read past what is removed; a replica whose last sync is older
    /// starts a new pass.
    pub fn prune_events(&self, before: DateTime<Utc>) -> Result<PruneReport> {
        let report = self.verify_events(None, |_, _| {})?;
        if let Some(f) = report.failure {
            return Err(Error::conflict(
                "events",
                format!(
                    "the event log fails verification, so it is not pruned: {}",
                    f.reason
                ),
            ));
        }
        let key = self.audit_key()?;
        let (removed, base) = self.write_system(|tx| {
            tx.lock_chain()?;
            let start = tx.base_checkpoint()?.map_or(0, |b| b.seq);
            let Some(upto) = tx.prunable_until(to_micros(before))? else {
                return Ok((0, None));
            };
            if upto <= start {
                return Ok((0, None));
            }
            let Some((e, Some(hash))) = tx.chain_event(upto)? else {
                return Err(Error::storage(
                    "pruning events",
                    "the last event to remove is not sealed",
                ));
            };
            let hash = unhex::<32>(&hash)
                .ok_or_else(|| Error::storage("pruning events", "a stored hash is not a hash"))?;
            let base = Self::sign(&key, (upto, e.id, &hash), true);
            let removed = tx.prune_events(upto, &base)?;
            Ok((removed, Some(base)))
        })?;
        Ok(PruneReport { removed, base })
    }
}

/// Whether `checkpoint` is signed by `public_key` (lower-case or upper-case hex), as a third
/// party holding the installation's public key checks it without the installation.
pub fn checkpoint_signed_by(checkpoint: &Checkpoint, public_key: &str) -> bool {
    signed_by(checkpoint, &public_key.to_ascii_lowercase())
}
