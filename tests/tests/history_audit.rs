//! A value's history and point-in-time reads, and the tamper-evident event log: each shape of
//! tampering (one edited byte in any stored field, a deleted event, an inserted one, two
//! swapped, a truncated tail against a checkpoint, an altered checkpoint) is found and the
//! first failing event named; a prune keeps the chain verifiable; a backup carries a
//! checkpoint its restore verifies against, and a restore whose log does not match it is
//! refused; the background worker writes a checkpoint when one is due. On SQLite, and on
//! PostgreSQL when `DOCMETA_TEST_POSTGRES_URL` is set.

#[path = "support/archive.rs"]
mod archive;

use std::path::Path;

use chrono::{Duration, Utc};
use docmeta_core::{
    AuditReport, Checkpoint, Config, Docmeta, DocumentId, EventId, MetadataTypeId,
    MetadataTypeInput, ObjectKind, ObjectRef, PageRequest, Permission as P, Result, ValueAction,
    checkpoint_signed_by,
};

fn fast_hashing() -> Config {
    Config {
        password_hash_memory_kib: 64,
        password_hash_iterations: 1,
        ..Default::default()
    }
}

fn open_in(dir: &Path) -> Result<Docmeta> {
    Docmeta::builder()
        .data_dir(dir)
        .config(fast_hashing())
        .worker(false)
        .open()
}

fn memory() -> Result<Docmeta> {
    Docmeta::builder()
        .config(fast_hashing())
        .worker(false)
        .open()
}

struct Fixture {
    doc: DocumentId,
    amount: MetadataTypeId,
    secret: MetadataTypeId,
}

/// An invoice with an `amount` (added, edited twice, removed, added again) and a `secret`
/// value holding a canary.
fn fixture(db: &Docmeta) -> Result<Fixture> {
    let admin = db.system();
    let invoice = admin.create_document_type("Invoice")?;
    let amount = admin.create_metadata_type(MetadataTypeInput::new("amount", "Amount"))?;
    let secret = admin.create_metadata_type(MetadataTypeInput::new("secret", "Secret"))?;
    admin.associate(invoice.id, amount.id, false)?;
    admin.associate(invoice.id, secret.id, false)?;
    let doc = admin.create_document(invoice.id, "March", &[])?.document;
    let v = admin.add_document_metadata(doc.id, amount.id, "100")?;
    admin.edit_document_metadata(doc.id, v.value.id, "120", None)?;
    admin.add_document_metadata(doc.id, secret.id, "CANARY-history-1")?;
    admin.edit_document_metadata(doc.id, v.value.id, "130", None)?;
    admin.remove_document_metadata(doc.id, v.value.id)?;
    admin.add_document_metadata(doc.id, amount.id, "140")?;
    Ok(Fixture {
        doc: doc.id,
        amount: amount.id,
        secret: secret.id,
    })
}

#[test]
fn history_lists_every_change_newest_first_with_before_and_after() -> Result<()> {
    let db = memory()?;
    let f = fixture(&db)?;
    let admin = db.system();
    let page = admin.history(f.doc, Some(f.amount), PageRequest::new(1, 100))?;
    assert_eq!(page.count, 5);
    let seen: Vec<(ValueAction, Option<&str>, Option<&str>)> = page
        .items
        .iter()
        .map(|c| (c.action, c.before.as_deref(), c.after.as_deref()))
        .collect();
    assert_eq!(
        seen,
        [
            (ValueAction::Added, None, Some("140")),
            (ValueAction::Removed, Some("130"), None),
            (ValueAction::Edited, Some("120"), Some("130")),
            (ValueAction::Edited, Some("100"), Some("120")),
            (ValueAction::Added, None, Some("100")),
        ]
    );
    assert!(
        page.items
            .iter()
            .all(|c| !c.hidden && c.metadata_type == f.amount)
    );
    assert_eq!(page.items[0].metadata_type_label.as_deref(), Some("Amount"));
    // The whole document: both types; paging.
    let all = admin.history(f.doc, None, PageRequest::new(1, 100))?;
    assert_eq!(all.count, 6);
    let second = admin.history(f.doc, None, PageRequest::new(2, 4))?;
    assert_eq!(second.items.len(), 2);
    assert_eq!(second.items[1].after.as_deref(), Some("100"));
    Ok(())
}

#[test]
fn value_at_and_metadata_at_answer_the_past() -> Result<()> {
    let db = memory()?;
    let f = fixture(&db)?;
    answers_the_past(&db, &f)
}

/// `value_at` and `metadata_at` of `f`'s document at every time its history names, before it
/// and now (on SQLite and PostgreSQL alike).
fn answers_the_past(db: &Docmeta, f: &Fixture) -> Result<()> {
    let admin = db.system();
    let page = admin.history(f.doc, None, PageRequest::new(1, 100))?;
    // Oldest first: +100, 100→120, +secret, 120→130, -130, +140.
    let times: Vec<_> = page.items.iter().rev().map(|c| c.timestamp).collect();
    let before_all = times[0] - Duration::seconds(1);
    assert_eq!(admin.value_at(f.doc, f.amount, before_all)?, None);
    assert!(admin.metadata_at(f.doc, before_all)?.is_empty());
    // Each change's own time answers what it left (events at the same microsecond resolve in
    // log order).
    let expected = [
        Some("100"),
        Some("120"),
        Some("120"),
        Some("130"),
        None,
        Some("140"),
    ];
    for (t, want) in times.iter().zip(expected) {
        let got = admin.value_at(f.doc, f.amount, *t)?;
        if times.iter().filter(|x| *x == t).count() == 1 {
            assert_eq!(got.as_deref(), want, "at {t}");
        }
    }
    assert_eq!(
        admin.value_at(f.doc, f.amount, Utc::now())?.as_deref(),
        Some("140")
    );
    let now = admin.metadata_at(f.doc, Utc::now())?;
    let values: Vec<(&str, &str)> = now
        .iter()
        .map(|v| (v.metadata_type.name.as_str(), v.value.as_str()))
        .collect();
    assert_eq!(values, [("amount", "140"), ("secret", "CANARY-history-1")]);
    Ok(())
}

#[test]
fn history_hides_values_the_reader_may_not_view_now() -> Result<()> {
    let db = memory()?;
    let f = fixture(&db)?;
    let admin = db.system();
    let clerk = admin.create_user("clerk", "a long password", false)?;
    let group = admin.create_group("Clerks")?;
    let role = admin.create_role("Clerks")?;
    admin.set_group_member(group.id, clerk.id, true)?;
    admin.set_role_group(role.id, group.id, true)?;
    let doc = ObjectRef::new(ObjectKind::DOCUMENT, f.doc.0);
    admin.grant(P::DocumentView, role.id, doc)?;
    admin.grant(P::DocumentMetadataView, role.id, doc)?;
    let amount = ObjectRef::new(ObjectKind::METADATA_TYPE, f.amount.0);
    admin.grant(P::DocumentMetadataView, role.id, amount)?;
    admin.grant(P::MetadataTypeView, role.id, amount)?;
    let clerk_session = db.session(clerk.id);
    // The secret type is not viewable: its changes are left out, as if absent.
    let all = clerk_session.history(f.doc, None, PageRequest::new(1, 100))?;
    assert_eq!(all.count, 5);
    assert!(all.items.iter().all(|c| c.metadata_type == f.amount));
    assert!(!format!("{all:?}").contains("CANARY"));
    assert!(matches!(
        clerk_session.history(f.doc, Some(f.secret), PageRequest::new(1, 10)),
        Err(docmeta_core::Error::NotFound(_))
    ));
    assert!(clerk_session.value_at(f.doc, f.secret, Utc::now()).is_err());
    // Viewable as a type but not its values: listed, its values null.
    let secret = ObjectRef::new(ObjectKind::METADATA_TYPE, f.secret.0);
    admin.grant(P::MetadataTypeView, role.id, secret)?;
    let all = clerk_session.history(f.doc, None, PageRequest::new(1, 100))?;
    assert_eq!(all.count, 6);
    let text = format!("{all:?}");
    assert!(!text.contains("CANARY"), "{text}");
    let hidden: Vec<_> = all
        .items
        .iter()
        .filter(|c| c.metadata_type == f.secret)
        .collect();
    assert_eq!(hidden.len(), 1);
    assert!(hidden[0].hidden && hidden[0].before.is_none() && hidden[0].after.is_none());
    assert_eq!(hidden[0].metadata_type_label.as_deref(), Some("Secret"));
    assert_eq!(clerk_session.value_at(f.doc, f.secret, Utc::now())?, None);
    let past = clerk_session.metadata_at(f.doc, Utc::now())?;
    assert_eq!(past.len(), 1);
    assert!(!format!("{past:?}").contains("CANARY"));
    // An actor is named only to whoever may view that user.
    let boss = admin.create_user("boss", "a long password", true)?;
    let current = admin.metadata_at(f.doc, Utc::now())?;
    let amount_now = db
        .session(boss.id)
        .document_metadata(f.doc, PageRequest::ALL)?
        .items
        .into_iter()
        .find(|v| v.value.metadata_type_id == f.amount)
        .expect("the amount");
    db.session(boss.id)
        .edit_document_metadata(f.doc, amount_now.value.id, "150", None)?;
    assert_eq!(current.len(), 2);
    let by_boss = &admin
        .history(f.doc, Some(f.amount), PageRequest::new(1, 1))?
        .items[0];
    assert_eq!(
        by_boss.actor.as_ref().map(|a| a.username.as_str()),
        Some("boss")
    );
    let seen_by_clerk = &clerk_session
        .history(f.doc, Some(f.amount), PageRequest::new(1, 1))?
        .items[0];
    assert_eq!(seen_by_clerk.after.as_deref(), Some("150"));
    assert!(seen_by_clerk.actor.is_none(), "{seen_by_clerk:?}");
    // Values shown today are hidden once the grant goes.
    admin.revoke(P::DocumentMetadataView, role.id, amount)?;
    let after = clerk_session.history(f.doc, Some(f.amount), PageRequest::new(1, 100))?;
    assert!(after.items.iter().all(|c| c.hidden && c.after.is_none()));
    assert_eq!(clerk_session.value_at(f.doc, f.amount, Utc::now())?, None);
    assert!(clerk_session.metadata_at(f.doc, Utc::now())?.is_empty());
    // A document the user may not view: NotFound, nothing else.
    let other = db.session(admin.create_user("visitor", "a long password", false)?.id);
    assert!(matches!(
        other.history(f.doc, None, PageRequest::new(1, 10)),
        Err(docmeta_core::Error::NotFound(_))
    ));
    Ok(())
}

// ----- the tamper-evident log on SQLite -------------------------------------------------------

/// A data directory with a few dozen events and a stored checkpoint, closed; and the
/// checkpoint.
fn pristine(dir: &Path) -> Result<Checkpoint> {
    Ok(pristine_with(dir)?.0)
}

/// [`pristine`], with its fixture.
fn pristine_with(dir: &Path) -> Result<(Checkpoint, Fixture)> {
    let db = open_in(dir)?;
    let f = fixture(&db)?;
    let admin = db.system();
    for i in 0..10 {
        admin.create_document_type(&format!("Type {i}"))?;
    }
    let checkpoint = db.audit_checkpoint()?;
    let report = db.verify_events(None, |_, _| {})?;
    assert!(report.is_intact(), "{report:?}");
    assert_eq!(report.head, checkpoint.seq);
    assert!(report.verified >= 20);
    Ok((checkpoint, f))
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// A copy of `pristine` changed by `edit` (with a connection to its database), verified (with
/// `given` as a checkpoint kept outside).
fn verify_copy(
    pristine: &Path,
    edit: impl FnOnce(&rusqlite::Connection),
    given: Option<&Checkpoint>,
) -> AuditReport {
    let dir = tempfile::tempdir().expect("tempdir");
    copy_dir(pristine, dir.path());
    let conn = rusqlite::Connection::open(dir.path().join("db.sqlite3")).expect("open");
    edit(&conn);
    drop(conn);
    let db = open_in(dir.path()).expect("open tampered");
    db.verify_events(given, |_, _| {}).expect("verify")
}

/// A copy of `pristine` tampered with by `sql`, verified (with `given` as a checkpoint kept
/// outside): the failure's event id and position.
fn tampered(
    pristine: &Path,
    sql: &str,
    given: Option<&Checkpoint>,
) -> (Option<i64>, Option<i64>, String) {
    let report = verify_copy(pristine, |conn| conn.execute_batch(sql).expect(sql), given);
    let f = report
        .failure
        .unwrap_or_else(|| panic!("not detected: {sql}"));
    (f.event_id, f.seq, f.reason)
}

/// [`tampered`], by `edit` rather than SQL.
fn tampered_by(
    pristine: &Path,
    edit: impl FnOnce(&rusqlite::Connection),
    given: Option<&Checkpoint>,
) -> (Option<i64>, Option<i64>, String) {
    let report = verify_copy(pristine, edit, given);
    let f = report.failure.expect("the tampering is found");
    (f.event_id, f.seq, f.reason)
}

/// The stored hash of the event at position `seq`.
fn hash_at(conn: &rusqlite::Connection, seq: i64) -> String {
    conn.query_row("SELECT hash FROM events WHERE seq = ?1", [seq], |r| {
        r.get(0)
    })
    .expect("a sealed event")
}

/// Lower-case hex of `bytes`.
fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes that hex `text` spells.
fn from_hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
        .collect()
}

/// The chain hash of the event stored at position `seq` of `conn` following `prev` (hex), as
/// someone who knows the scheme recomputes it (docs/history.md; `events::chain` is not public):
/// SHA-256, with another implementation than docmeta's, of a version tag, the previous hash,
/// and every stored field in the chain's order, each tagged (0 null, 1 a big-endian 64-bit
/// integer, 2 a text after its 64-bit length).
fn recomputed_hash(conn: &rusqlite::Connection, seq: i64, prev: &str) -> String {
    use sha2::{Digest, Sha256};
    fn int(h: &mut Sha256, v: Option<i64>) {
        match v {
            None => h.update([0u8]),
            Some(v) => {
                h.update([1u8]);
                h.update(v.to_be_bytes());
            }
        }
    }
    fn text(h: &mut Sha256, v: Option<&str>) {
        match v {
            None => h.update([0u8]),
            Some(s) => {
                h.update([2u8]);
                h.update((s.len() as u64).to_be_bytes());
                h.update(s.as_bytes());
            }
        }
    }
    let (id, timestamp, name, actor, target_kind, target_id, target_label): (
        i64,
        i64,
        String,
        Option<i64>,
        String,
        i64,
        String,
    ) = conn
        .query_row(
            "SELECT id, timestamp, name, actor_id, target_kind, target_id, target_label \
             FROM events WHERE seq = ?1",
            [seq],
            |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                ))
            },
        )
        .expect("the event");
    let (action_kind, action_id, action_label, follow, changes): (
        Option<String>,
        Option<i64>,
        Option<String>,
        i64,
        String,
    ) = conn
        .query_row(
            "SELECT action_kind, action_id, action_label, follow, changes \
             FROM events WHERE seq = ?1",
            [seq],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
        )
        .expect("the event");
    let mut h = Sha256::new();
    h.update(b"docmeta-event-v1\0");
    h.update(from_hex(prev));
    int(&mut h, Some(seq));
    int(&mut h, Some(id));
    int(&mut h, Some(timestamp));
    text(&mut h, Some(name.as_str()));
    int(&mut h, actor);
    text(&mut h, Some(target_kind.as_str()));
    int(&mut h, Some(target_id));
    text(&mut h, Some(target_label.as_str()));
    text(&mut h, action_kind.as_deref());
    int(&mut h, action_id);
    text(&mut h, action_label.as_deref());
    int(&mut h, Some(follow));
    text(&mut h, Some(changes.as_str()));
    to_hex(&h.finalize())
}

/// Rewrites the stored hash of every event from position `from` to the end of the log, as
/// [`recomputed_hash`] gives it: the chain made whole again after an edit.
fn reseal_from(conn: &rusqlite::Connection, from: i64) {
    let head: i64 = conn
        .query_row("SELECT max(seq) FROM events", [], |r| r.get(0))
        .expect("the end of the log");
    for seq in from..=head {
        let hash = recomputed_hash(conn, seq, &hash_at(conn, seq - 1));
        conn.execute(
            "UPDATE events SET hash = ?1 WHERE seq = ?2",
            rusqlite::params![hash, seq],
        )
        .expect("reseal");
    }
}

/// The id of the event at position `seq`.
fn id_at(dir: &Path, seq: i64) -> i64 {
    let conn = rusqlite::Connection::open(dir.join("db.sqlite3")).expect("open");
    conn.query_row("SELECT id FROM events WHERE seq = ?1", [seq], |r| r.get(0))
        .expect("event")
}

#[test]
fn one_edited_byte_in_any_stored_field_is_found_at_its_event() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let checkpoint = pristine(dir.path())?;
    let k = 7;
    let id = id_at(dir.path(), k);
    let edits = [
        "timestamp = timestamp + 1",
        "name = name || 'x'",
        "actor_id = 5",
        "target_kind = 'documents.documenu'",
        "target_id = target_id + 1",
        "target_label = target_label || ' '",
        "action_kind = 'x'",
        "action_id = 999",
        "action_label = 'other'",
        "follow = 1 - follow",
        "changes = replace(changes, '1', '2')",
        "hash = replace(hash, substr(hash, 1, 1), CASE substr(hash, 1, 1) WHEN 'a' THEN 'b' ELSE 'a' END)",
    ];
    for edit in edits {
        let sql = format!("UPDATE events SET {edit} WHERE seq = {k};");
        let (event, seq, reason) = tampered(dir.path(), &sql, None);
        assert_eq!((event, seq), (Some(id), Some(k)), "{edit}: {reason}");
    }
    // Edited, and its hash recomputed by someone who knows the scheme: the next event fails.
    {
        let conn = rusqlite::Connection::open(dir.path().join("db.sqlite3")).expect("open");
        assert_eq!(
            recomputed_hash(&conn, k, &hash_at(&conn, k - 1)),
            hash_at(&conn, k),
            "the hash recomputed here is the chain's"
        );
    }
    let edit = |conn: &rusqlite::Connection| {
        conn.execute(
            "UPDATE events SET target_label = target_label || 'x' WHERE seq = ?1",
            [k],
        )
        .expect("edit");
    };
    let next = id_at(dir.path(), k + 1);
    let (event, seq, reason) = tampered_by(
        dir.path(),
        |conn| {
            edit(conn);
            let hash = recomputed_hash(conn, k, &hash_at(conn, k - 1));
            assert_ne!(hash, hash_at(conn, k), "the edit changes the hash");
            conn.execute(
                "UPDATE events SET hash = ?1 WHERE seq = ?2",
                rusqlite::params![hash, k],
            )
            .expect("reseal");
        },
        None,
    );
    assert_eq!((event, seq), (Some(next), Some(k + 1)), "{reason}");
    assert!(reason.contains("does not match its hash"), "{reason}");
    // Every hash from there to the end recomputed: the chain holds together, and the stored
    // checkpoint at the end does not match it.
    let rewrite = |conn: &rusqlite::Connection| {
        edit(conn);
        reseal_from(conn, k);
    };
    let (event, seq, reason) = tampered_by(dir.path(), rewrite, None);
    assert_eq!(
        (event, seq),
        (Some(checkpoint.event_id), Some(checkpoint.seq)),
        "{reason}"
    );
    assert!(reason.contains("stored checkpoint"), "{reason}");
    // The stored checkpoints deleted as well: what a hash chain cannot show alone (the whole
    // rewritten chain verifies)...
    let report = verify_copy(
        dir.path(),
        |conn| {
            rewrite(conn);
            conn.execute_batch("DELETE FROM audit_checkpoints;")
                .expect("delete");
        },
        None,
    );
    assert!(report.is_intact(), "{report:?}");
    assert_eq!(report.head, checkpoint.seq);
    // ...and what a checkpoint kept outside finds.
    let (_, seq, reason) = tampered_by(
        dir.path(),
        |conn| {
            rewrite(conn);
            conn.execute_batch("DELETE FROM audit_checkpoints;")
                .expect("delete");
        },
        Some(&checkpoint),
    );
    assert_eq!(seq, Some(checkpoint.seq), "{reason}");
    assert!(reason.contains("given checkpoint"), "{reason}");
    Ok(())
}

#[test]
fn an_edited_event_id_is_found() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let checkpoint = pristine(dir.path())?;
    let head = checkpoint.seq;
    // The last event's id raised (it stays last in id order): its hash covers its id.
    let id = id_at(dir.path(), head);
    let (event, seq, reason) = tampered(
        dir.path(),
        &format!("UPDATE events SET id = id + 1000 WHERE seq = {head};"),
        None,
    );
    assert_eq!((event, seq), (Some(id + 1000), Some(head)), "{reason}");
    assert!(reason.contains("does not match its hash"), "{reason}");
    // The first event's id lowered (it stays first).
    let id = id_at(dir.path(), 1);
    let (event, seq, reason) =
        tampered(dir.path(), "UPDATE events SET id = -5 WHERE seq = 1;", None);
    assert_eq!((event, seq), (Some(-5), Some(1)), "{reason}");
    assert_ne!(id, -5);
    assert!(reason.contains("does not match its hash"), "{reason}");
    // A middle event's id moved past the end (SQLite reads its chain in id order): its
    // position is missing there, the event after it named.
    let next = id_at(dir.path(), 8);
    let (event, seq, reason) = tampered(
        dir.path(),
        "UPDATE events SET id = id + 100000 WHERE seq = 7;",
        None,
    );
    assert_eq!((event, seq), (Some(next), Some(7)), "{reason}");
    assert!(reason.contains("missing"), "{reason}");
    Ok(())
}

/// An event inserted into the chain at position 4, the positions after it moved up (a copy of
/// the event there, under another id). The same statements on SQLite and PostgreSQL.
const INSERTED_INTO_THE_CHAIN: &str = "UPDATE events SET seq = -seq WHERE seq >= 4; \
     UPDATE events SET seq = 1 - seq WHERE seq < 0; \
     INSERT INTO events (id, timestamp, name, target_kind, target_id, target_label, changes, seq, hash) \
     SELECT 100001, timestamp, name, target_kind, target_id, target_label, changes, 4, hash \
     FROM events WHERE seq = 5;";

/// The events at positions 8 and 9 swapped (their places exchanged).
const SWAPPED: &str = "UPDATE events SET seq = -1 WHERE seq = 8; \
     UPDATE events SET seq = 8 WHERE seq = 9; UPDATE events SET seq = 9 WHERE seq = -1;";

/// A store's database reached with raw SQL, to tamper with its event log.
trait RawLog {
    /// Runs `sql` on the untampered log (a copy of it, or undone afterwards), verifies it with
    /// `given` as a checkpoint kept outside, and returns the first failure: its event id,
    /// position and reason.
    fn tampered(
        &mut self,
        sql: &str,
        given: Option<&Checkpoint>,
    ) -> (Option<i64>, Option<i64>, String);

    /// The id of the event at position `seq` of the untampered log.
    fn id_at(&mut self, seq: i64) -> i64;
}

/// A closed SQLite data directory: each tampering on a copy of it.
struct SqliteLog<'a>(&'a Path);

impl RawLog for SqliteLog<'_> {
    fn tampered(
        &mut self,
        sql: &str,
        given: Option<&Checkpoint>,
    ) -> (Option<i64>, Option<i64>, String) {
        tampered(self.0, sql, given)
    }

    fn id_at(&mut self, seq: i64) -> i64 {
        id_at(self.0, seq)
    }
}

/// What both stores find alike (docs/history.md's table), `log` reached with raw SQL;
/// `checkpoint` is the newest stored checkpoint, of the end of the log, which holds at least a
/// dozen events.
fn finds_tampering(log: &mut dyn RawLog, checkpoint: &Checkpoint) {
    let head = checkpoint.seq;
    assert!(head > 12, "{checkpoint:?}");
    // A deleted event: its position is named, with the event after the gap.
    let next = log.id_at(6);
    let (event, seq, reason) = log.tampered("DELETE FROM events WHERE seq = 5;", None);
    assert_eq!((event, seq), (Some(next), Some(5)), "{reason}");
    assert!(reason.contains("missing"), "{reason}");
    // An event's id edited: found at its position (SQLite, which reads its chain in id order,
    // names the event after it; PostgreSQL, which reads it by position, the edited one).
    let (at7, at8) = (log.id_at(7), log.id_at(8));
    let (event, seq, reason) =
        log.tampered("UPDATE events SET id = id + 100000 WHERE seq = 7;", None);
    assert_eq!(seq, Some(7), "{reason}");
    assert!(
        event == Some(at7 + 100_000) || event == Some(at8),
        "{event:?}: {reason}"
    );
    // Inserted into the chain: the inserted position does not match.
    let (_, seq, reason) = log.tampered(INSERTED_INTO_THE_CHAIN, None);
    assert_eq!(seq, Some(4), "{reason}");
    // Two swapped: the first of the two positions does not match.
    let (at8, at9) = (log.id_at(8), log.id_at(9));
    let (event, seq, reason) = log.tampered(SWAPPED, None);
    assert_eq!(seq, Some(8), "{reason}");
    assert!(
        event == Some(at8) || event == Some(at9),
        "{event:?}: {reason}"
    );
    // The end cut off: the stored checkpoint is past the end; with the stored checkpoints gone
    // too, the one kept outside.
    let truncate = format!("DELETE FROM events WHERE seq > {};", head - 3);
    let (_, seq, reason) = log.tampered(&truncate, None);
    assert_eq!(seq, Some(head), "{reason}");
    assert!(reason.contains("removed from its end"), "{reason}");
    let (_, seq, reason) = log.tampered(
        &format!("{truncate} DELETE FROM audit_checkpoints;"),
        Some(checkpoint),
    );
    assert_eq!(seq, Some(head), "{reason}");
    assert!(reason.contains("removed from its end"), "{reason}");
    // A stored checkpoint altered: its hash; its position.
    let (_, seq, reason) = log.tampered(
        &format!(
            "UPDATE audit_checkpoints SET hash = replace(hash, substr(hash, 2, 1), \
             CASE substr(hash, 2, 1) WHEN 'a' THEN 'b' ELSE 'a' END) WHERE seq = {head};"
        ),
        None,
    );
    assert_eq!(seq, Some(head), "{reason}");
    assert!(
        reason.contains("stored checkpoint") && reason.contains("not signed"),
        "{reason}"
    );
    let (_, seq, reason) = log.tampered(
        &format!("UPDATE audit_checkpoints SET seq = seq - 1 WHERE seq = {head};"),
        None,
    );
    assert_eq!(seq, Some(head - 1), "{reason}");
    assert!(reason.contains("not signed"), "{reason}");
    // A given checkpoint altered: its position; its signature.
    let mut earlier = checkpoint.clone();
    earlier.seq -= 1;
    let mut forged = checkpoint.clone();
    let first = if forged.signature.starts_with('0') {
        "1"
    } else {
        "0"
    };
    forged.signature = format!("{first}{}", &forged.signature[1..]);
    for altered in [earlier, forged] {
        let (_, seq, reason) = log.tampered("SELECT 1;", Some(&altered));
        assert_eq!(seq, Some(altered.seq), "{reason}");
        assert!(
            reason.contains("given checkpoint") && reason.contains("not signed"),
            "{reason}"
        );
    }
}

#[test]
fn the_tampering_both_stores_find_alike_is_found_on_sqlite() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let checkpoint = pristine(dir.path())?;
    finds_tampering(&mut SqliteLog(dir.path()), &checkpoint);
    Ok(())
}

#[test]
fn deleted_inserted_and_swapped_events_are_found() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    pristine(dir.path())?;
    // Deleted: the position is named, with the event after the gap.
    let next = id_at(dir.path(), 6);
    let (event, seq, reason) = tampered(dir.path(), "DELETE FROM events WHERE seq = 5;", None);
    assert_eq!((event, seq), (Some(next), Some(5)), "{reason}");
    assert!(reason.contains("missing"), "{reason}");
    // Inserted behind the chain (no place in it).
    let (event, _, reason) = tampered(
        dir.path(),
        "INSERT INTO events (id, timestamp, name, target_kind, target_id, target_label, changes) \
         VALUES (100000, 0, 'documents.document_deleted', 'documents.document', 1, 'x', '[]');",
        None,
    );
    assert_eq!(event, Some(100_000), "{reason}");
    // Inserted into the chain, the positions after it moved up.
    let at4 = id_at(dir.path(), 4);
    let (_, seq, reason) = tampered(dir.path(), INSERTED_INTO_THE_CHAIN, None);
    assert_eq!(seq, Some(4), "{reason}");
    assert_ne!(at4, 100_001);
    // Two swapped (their places exchanged).
    let (event, seq, reason) = tampered(dir.path(), SWAPPED, None);
    assert_eq!(seq, Some(8), "{reason}");
    // The first of the two (read in id order, it claims the second one's position).
    assert_eq!(event, Some(id_at(dir.path(), 8)), "{reason}");
    Ok(())
}

#[test]
fn a_truncated_tail_and_an_altered_checkpoint_are_found() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let checkpoint = pristine(dir.path())?;
    let head = checkpoint.seq;
    // The last three events cut off: the stored checkpoint is past the end.
    let truncate = format!("DELETE FROM events WHERE seq > {};", head - 3);
    let (_, seq, reason) = tampered(dir.path(), &truncate, None);
    assert_eq!(seq, Some(head), "{reason}");
    assert!(reason.contains("removed from its end"), "{reason}");
    // With the stored checkpoints gone too, the one kept outside still finds it.
    let both = format!("{truncate} DELETE FROM audit_checkpoints;");
    let (_, seq, reason) = tampered(dir.path(), &both, Some(&checkpoint));
    assert_eq!(seq, Some(head), "{reason}");
    // A stored checkpoint altered (its hash; its position).
    let (_, seq, reason) = tampered(
        dir.path(),
        "UPDATE audit_checkpoints SET hash = replace(hash, substr(hash, 2, 1), CASE substr(hash, 2, 1) WHEN 'a' THEN 'b' ELSE 'a' END);",
        None,
    );
    assert_eq!(seq, Some(head), "{reason}");
    assert!(reason.contains("not signed"), "{reason}");
    let (_, _, reason) = tampered(
        dir.path(),
        "UPDATE audit_checkpoints SET seq = seq - 1;",
        None,
    );
    assert!(reason.contains("not signed"), "{reason}");
    // A checkpoint file altered.
    let mut forged = checkpoint.clone();
    forged.seq -= 1;
    let (_, _, reason) = tampered(dir.path(), "SELECT 1;", Some(&forged));
    assert!(reason.contains("given checkpoint"), "{reason}");
    // Untouched, the given checkpoint verifies and is signed by the installation's key.
    let db = open_in(dir.path())?;
    let report = db.verify_events(Some(&checkpoint), |_, _| {})?;
    assert!(report.is_intact(), "{report:?}");
    assert_eq!(report.checkpoints, 2);
    assert!(checkpoint_signed_by(&checkpoint, &db.audit_public_key()?));
    let other = memory()?;
    assert!(!checkpoint_signed_by(
        &checkpoint,
        &other.audit_public_key()?
    ));
    Ok(())
}

#[test]
fn a_prune_removes_old_events_and_the_chain_still_verifies() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_, f) = pristine_with(dir.path())?;
    let db = open_in(dir.path())?;
    let before = db.verify_events(None, |_, _| {})?;
    // The history the prune removes: the amount was not 140 yet at its first change, the
    // secret not added.
    let old = db.system().history(f.doc, None, PageRequest::new(1, 100))?;
    assert_eq!(old.count, 6);
    let first_change = old.items.last().expect("a change").timestamp;
    assert_ne!(
        db.system()
            .value_at(f.doc, f.amount, first_change)?
            .as_deref(),
        Some("140")
    );
    assert_eq!(db.system().value_at(f.doc, f.secret, first_change)?, None);
    // A periodic checkpoint of the last event the prune will remove.
    let at_the_base = db.audit_checkpoint()?;
    assert_eq!(at_the_base.seq, before.head);
    let report = db.prune_events(Utc::now() + Duration::seconds(1))?;
    assert_eq!(report.removed, before.head as u64);
    let base = report.base.expect("a base checkpoint");
    assert_eq!(base.seq, before.head);
    // That checkpoint covers what the prune removed: named as such (it is genuine, not
    // altered), and not taken for the base.
    let given = db.verify_events(Some(&at_the_base), |_, _| {})?;
    let reason = given.failure.expect("a failure").reason;
    assert!(reason.contains("a prune removed"), "{reason}");
    // New events chain on from the base.
    db.system().create_document_type("After the prune")?;
    let after = db.verify_events(None, |_, _| {})?;
    assert!(after.is_intact(), "{after:?}");
    assert_eq!(
        (after.start, after.head, after.verified),
        (base.seq, base.seq + 1, 1)
    );
    // History before the prune is gone with its events: no change is listed, and with no
    // change of a value left in the log, a past time answers the value it has now (the
    // document existed then), set since the document's creation by no event.
    {
        let admin = db.system();
        let page = admin.history(f.doc, None, PageRequest::new(1, 100))?;
        assert_eq!((page.count, page.items.len()), (0, 0), "{page:?}");
        let amount = admin.history(f.doc, Some(f.amount), PageRequest::new(1, 100))?;
        assert_eq!(amount.count, 0);
        for change in &old.items {
            let t = change.timestamp;
            assert_eq!(
                admin.value_at(f.doc, f.amount, t)?.as_deref(),
                Some("140"),
                "at {t}"
            );
            assert_eq!(
                admin.value_at(f.doc, f.secret, t)?.as_deref(),
                Some("CANARY-history-1"),
                "at {t}"
            );
        }
        let created = admin.document(f.doc)?.document.created;
        let past = admin.metadata_at(f.doc, first_change)?;
        let values: Vec<(&str, &str)> = past
            .iter()
            .map(|v| (v.metadata_type.name.as_str(), v.value.as_str()))
            .collect();
        assert_eq!(values, [("amount", "140"), ("secret", "CANARY-history-1")]);
        assert!(
            past.iter()
                .all(|v| v.event == EventId(0) && v.since == created),
            "{past:?}"
        );
        // Before the document existed it had no value, whatever the log lost.
        let before_it = created - Duration::seconds(1);
        assert_eq!(admin.value_at(f.doc, f.amount, before_it)?, None);
        assert!(admin.metadata_at(f.doc, before_it)?.is_empty());
    }
    drop(db);
    // The base altered, or an event right after it removed, is found.
    let (_, _, reason) = tampered(
        dir.path(),
        "UPDATE audit_checkpoints SET hash = replace(hash, substr(hash, 2, 1), \
         CASE substr(hash, 2, 1) WHEN 'a' THEN 'b' ELSE 'a' END);",
        None,
    );
    assert!(reason.contains("not signed"), "{reason}");
    let first = format!("DELETE FROM events WHERE seq = {};", base.seq + 1);
    let (_, _, reason) = tampered(
        dir.path(),
        &format!(
            "{first} INSERT INTO events (id, timestamp, name, target_kind, target_id, target_label, changes, seq, hash) VALUES (100002, 0, 'x', 'x', 1, 'x', '[]', {}, '00');",
            base.seq + 2
        ),
        None,
    );
    assert!(reason.contains("missing"), "{reason}");
    // A periodic checkpoint passed off as a prune's base, to skip verifying what precedes it.
    let db = open_in(dir.path())?;
    db.system().create_document_type("Checkpointed")?;
    let later = db.audit_checkpoint()?;
    drop(db);
    let (_, seq, reason) = tampered(
        dir.path(),
        &format!(
            "UPDATE audit_checkpoints SET base = 1 WHERE seq = {};",
            later.seq
        ),
        None,
    );
    assert!(seq.is_some() && reason.contains("not signed"), "{reason}");
    // The real base unmarked: the chain would start at the first event, which is gone.
    let (_, _, reason) = tampered(dir.path(), "UPDATE audit_checkpoints SET base = 0;", None);
    assert!(
        reason.contains("not signed") || reason.contains("missing"),
        "{reason}"
    );
    // A checkpoint of events the prune removed cannot be checked.
    let mut old = base.clone();
    old.seq -= 1;
    old.base = false;
    let (_, _, reason) = tampered(dir.path(), "SELECT 1;", Some(&old));
    assert!(reason.contains("given checkpoint"), "{reason}");
    // A log that fails verification is not pruned.
    let copy = tempfile::tempdir().expect("tempdir");
    copy_dir(dir.path(), copy.path());
    let conn = rusqlite::Connection::open(copy.path().join("db.sqlite3")).expect("open");
    conn.execute_batch("UPDATE events SET target_label = 'edited';")
        .expect("edit");
    drop(conn);
    let db = open_in(copy.path())?;
    assert!(matches!(
        db.prune_events(Utc::now()),
        Err(docmeta_core::Error::Conflict { .. })
    ));
    Ok(())
}

#[test]
fn a_backup_carries_a_checkpoint_its_restore_verifies() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    pristine(dir.path())?;
    let db = open_in(dir.path())?;
    let out = tempfile::tempdir().expect("tempdir");
    let archive = out.path().join("full.tar.zst");
    db.backup(&archive, None, |_, _| {})?;
    let manifest = docmeta_core::verify_backup(&archive)?;
    let checkpoint = manifest
        .checkpoint
        .clone()
        .expect("a checkpoint in the manifest");
    assert!(checkpoint_signed_by(&checkpoint, &db.audit_public_key()?));
    drop(db);
    let target = out.path().join("restored");
    let report = docmeta_core::restore(std::slice::from_ref(&archive), &target, None)?;
    let audit = report.audit.expect("the restore verified the log");
    assert!(audit.is_intact(), "{audit:?}");
    assert_eq!(audit.head, checkpoint.seq);
    Ok(())
}

#[test]
fn events_from_before_the_chain_are_sealed_when_the_database_is_opened() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    pristine(dir.path())?;
    let conn = rusqlite::Connection::open(dir.path().join("db.sqlite3")).expect("open");
    conn.execute_batch("UPDATE events SET seq = NULL, hash = NULL; DELETE FROM audit_checkpoints;")
        .expect("unseal");
    drop(conn);
    let db = open_in(dir.path())?;
    let report = db.verify_events(None, |_, _| {})?;
    assert!(report.is_intact(), "{report:?}");
    assert!(report.verified >= 20);
    Ok(())
}

#[test]
fn after_a_prune_a_past_value_is_what_the_first_later_change_found() -> Result<()> {
    let db = memory()?;
    let f = fixture(&db)?;
    let admin = db.system();
    let old = admin.history(f.doc, None, PageRequest::new(1, 100))?;
    let first_change = old.items.last().expect("a change").timestamp;
    std::thread::sleep(std::time::Duration::from_millis(5));
    let cut = Utc::now();
    std::thread::sleep(std::time::Duration::from_millis(5));
    let amount_now = admin
        .document_metadata(f.doc, PageRequest::ALL)?
        .items
        .into_iter()
        .find(|v| v.value.metadata_type_id == f.amount)
        .expect("the amount");
    admin.edit_document_metadata(f.doc, amount_now.value.id, "150", None)?;
    let report = db.prune_events(cut)?;
    assert!(report.removed > 0 && report.base.is_some(), "{report:?}");
    assert!(db.verify_events(None, |_, _| {})?.is_intact());
    // Only the change after the cut is left.
    let page = admin.history(f.doc, None, PageRequest::new(1, 100))?;
    assert_eq!(page.count, 1, "{page:?}");
    let left = &page.items[0];
    assert_eq!(
        (left.action, left.before.as_deref(), left.after.as_deref()),
        (ValueAction::Edited, Some("140"), Some("150"))
    );
    // Before it: the amount it found; the secret, of which no change is left, as it is now.
    for t in [first_change, cut] {
        assert_eq!(
            admin.value_at(f.doc, f.amount, t)?.as_deref(),
            Some("140"),
            "at {t}"
        );
        assert_eq!(
            admin.value_at(f.doc, f.secret, t)?.as_deref(),
            Some("CANARY-history-1"),
            "at {t}"
        );
    }
    let created = admin.document(f.doc)?.document.created;
    let past = admin.metadata_at(f.doc, first_change)?;
    let values: Vec<(&str, &str)> = past
        .iter()
        .map(|v| (v.metadata_type.name.as_str(), v.value.as_str()))
        .collect();
    assert_eq!(values, [("amount", "140"), ("secret", "CANARY-history-1")]);
    assert!(
        past.iter()
            .all(|v| v.event == EventId(0) && v.since == created),
        "{past:?}"
    );
    // Now: the amount the change left, with its event.
    assert_eq!(
        admin.value_at(f.doc, f.amount, Utc::now())?.as_deref(),
        Some("150")
    );
    let now = admin.metadata_at(f.doc, Utc::now())?;
    let amount = now
        .iter()
        .find(|v| v.metadata_type.id == f.amount)
        .expect("the amount now");
    assert_eq!((amount.value.as_str(), amount.event), ("150", left.event));
    assert_eq!(amount.since, left.timestamp);
    // Before the document existed: nothing, whatever a later change found.
    assert_eq!(
        admin.value_at(f.doc, f.amount, created - Duration::seconds(1))?,
        None
    );
    Ok(())
}

// ----- restores whose log does not match the backup's checkpoint ------------------------------

/// A copy of backup `src` at `dst` whose manifest (`manifest.json`, the last entry) `edit`
/// changed.
fn with_manifest_edited(src: &Path, dst: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let mut entries = archive::read_entries(src);
    let (_, bytes) = entries
        .iter_mut()
        .find(|(p, _)| p == "manifest.json")
        .expect("the manifest");
    let mut manifest: serde_json::Value = serde_json::from_slice(bytes).expect("json");
    edit(&mut manifest);
    *bytes = serde_json::to_vec(&manifest).expect("json");
    archive::write_entries(dst, &entries);
}

/// A copy of backup `src` at `dst` whose database was changed by `sql`, with its size and
/// checksum updated in `contents.json` and the manifest: a consistent archive around an altered
/// event log.
fn with_database_edited(src: &Path, dst: &Path, sql: &str) {
    let mut entries = archive::read_entries(src);
    let i = entries
        .iter()
        .position(|(p, _)| p == "db.sqlite3")
        .expect("the database");
    let scratch = tempfile::tempdir().expect("tempdir");
    let file = scratch.path().join("db.sqlite3");
    std::fs::write(&file, &entries[i].1).expect("write");
    let conn = rusqlite::Connection::open(&file).expect("open");
    conn.execute_batch(sql).expect(sql);
    drop(conn);
    let new = std::fs::read(&file).expect("read");
    let (size, sha) = docmeta_core::sha256(&mut &new[..]).expect("hash");
    entries[i].1 = new;
    for (p, bytes) in entries.iter_mut() {
        if p != "contents.json" && p != "manifest.json" {
            continue;
        }
        let mut json: serde_json::Value = serde_json::from_slice(bytes).expect("json");
        for list in ["files", "entries"] {
            if let Some(items) = json.get_mut(list).and_then(|l| l.as_array_mut()) {
                for item in items.iter_mut().filter(|it| it["path"] == "db.sqlite3") {
                    item["size"] = size.into();
                    if list == "files" {
                        item["sha256"] = sha.clone().into();
                    }
                }
            }
        }
        *bytes = serde_json::to_vec(&json).expect("json");
    }
    archive::write_entries(dst, &entries);
}

/// Every file under `dir` (but the lock file, which a restore takes) and its bytes.
fn files_under(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut std::collections::BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).expect("read_dir") {
            let entry = entry.expect("entry");
            let path = entry.path();
            if entry.file_type().expect("type").is_dir() {
                walk(root, &path, out);
            } else if entry.file_name() != ".lock" {
                let name = path
                    .strip_prefix(root)
                    .expect("under the root")
                    .to_string_lossy()
                    .into_owned();
                out.insert(name, std::fs::read(&path).expect("read"));
            }
        }
    }
    let mut out = std::collections::BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

#[test]
fn a_restore_whose_log_does_not_match_the_backups_checkpoint_is_refused() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    pristine(dir.path())?;
    let db = open_in(dir.path())?;
    let out = tempfile::tempdir().expect("tempdir");
    let archive = out.path().join("full.tar.zst");
    db.backup(&archive, None, |_, _| {})?;
    let checkpoint = docmeta_core::verify_backup(&archive)?
        .checkpoint
        .expect("a checkpoint in the manifest");
    drop(db);
    // The installation a restore would replace.
    let target = out.path().join("live");
    {
        let live = open_in(&target)?;
        let admin = live.system();
        let memo = admin.create_document_type("Memo")?;
        admin.create_document(memo.id, "Still here", &[])?;
    }
    let before = files_under(&target);
    assert!(before.contains_key("db.sqlite3"), "{:?}", before.keys());
    let refused = |bad: &Path, why: &str| {
        let err = docmeta_core::restore(&[bad.to_path_buf()], &target, None)
            .expect_err("the restore is refused");
        let text = err.to_string();
        assert!(
            matches!(err, docmeta_core::Error::InvalidInput(_)),
            "{why}: {text}"
        );
        assert!(
            text.contains("does not match the backup's checkpoint"),
            "{why}: {text}"
        );
        // The target as it was, byte for byte, and nothing staged left beside it.
        assert!(files_under(&target) == before, "{why}: the target changed");
        let left: Vec<String> = std::fs::read_dir(out.path())
            .expect("read_dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".docmeta-restore"))
            .collect();
        assert!(left.is_empty(), "{why}: left behind {left:?}");
        text
    };
    // The manifest's checkpoint altered: the manifest holds the other entries' checksums, not
    // its own; the checkpoint's signature is what refuses it.
    let forged = out.path().join("forged-signature.tar.zst");
    with_manifest_edited(&archive, &forged, |m| {
        let signature = m["checkpoint"]["signature"]
            .as_str()
            .expect("a signature")
            .to_owned();
        let first = if signature.starts_with('0') { "1" } else { "0" };
        m["checkpoint"]["signature"] = format!("{first}{}", &signature[1..]).into();
    });
    let text = refused(&forged, "a forged signature");
    assert!(text.contains("not signed"), "{text}");
    let shorter = out.path().join("forged-position.tar.zst");
    with_manifest_edited(&archive, &shorter, |m| {
        m["checkpoint"]["seq"] = (checkpoint.seq - 1).into();
    });
    let text = refused(&shorter, "a checkpoint of an earlier position");
    assert!(text.contains("not signed"), "{text}");
    // An event of the archived database edited, the archive's checksums made to match.
    let edited = out.path().join("edited-event.tar.zst");
    with_database_edited(
        &archive,
        &edited,
        "UPDATE events SET target_label = target_label || '!' WHERE seq = 7;",
    );
    docmeta_core::verify_backup(&edited).expect("the archive itself is consistent");
    let text = refused(&edited, "an edited event");
    assert!(text.contains("position 7"), "{text}");
    // The archived log's end cut off, with the checkpoints the database kept: the manifest's
    // checkpoint still covers it.
    let cut = out.path().join("cut-off.tar.zst");
    with_database_edited(
        &archive,
        &cut,
        &format!(
            "DELETE FROM events WHERE seq > {}; DELETE FROM audit_checkpoints;",
            checkpoint.seq - 3
        ),
    );
    docmeta_core::verify_backup(&cut).expect("the archive itself is consistent");
    let text = refused(&cut, "a log cut off");
    assert!(text.contains("removed from its end"), "{text}");
    // Into a directory that did not exist: nothing left there either.
    let fresh = out.path().join("fresh");
    assert!(docmeta_core::restore(std::slice::from_ref(&edited), &fresh, None).is_err());
    assert!(!fresh.exists());
    // The target still opens with its own data; the untouched archive restores into it.
    {
        let live = open_in(&target)?;
        let labels: Vec<String> = live
            .system()
            .document_types()?
            .into_iter()
            .map(|t| t.label)
            .collect();
        assert_eq!(labels, ["Memo"]);
    }
    let report = docmeta_core::restore(std::slice::from_ref(&archive), &target, None)?;
    assert!(report.audit.expect("verified").is_intact());
    Ok(())
}

// ----- the background worker's checkpoints ----------------------------------------------------

/// The positions of the stored checkpoints of the database in `dir`.
fn stored_checkpoints(dir: &Path) -> Vec<i64> {
    let conn = rusqlite::Connection::open(dir.join("db.sqlite3")).expect("open");
    let mut stmt = conn
        .prepare("SELECT seq FROM audit_checkpoints ORDER BY seq")
        .expect("select");
    let rows: Vec<i64> = stmt
        .query_map([], |r| r.get(0))
        .expect("rows")
        .collect::<std::result::Result<_, _>>()
        .expect("rows");
    rows
}

/// The position of the last event of the database in `dir`.
fn last_position(dir: &Path) -> i64 {
    let conn = rusqlite::Connection::open(dir.join("db.sqlite3")).expect("open");
    conn.query_row("SELECT max(seq) FROM events", [], |r| r.get(0))
        .expect("an event")
}

/// When the stored checkpoint at `seq` was made (microseconds), as stored.
fn checkpoint_made(dir: &Path, seq: i64) -> i64 {
    let conn = rusqlite::Connection::open(dir.join("db.sqlite3")).expect("open");
    conn.query_row(
        "SELECT created FROM audit_checkpoints WHERE seq = ?1",
        [seq],
        |r| r.get(0),
    )
    .expect("a checkpoint")
}

/// Sets when the stored checkpoint at `seq` was made (its signature covers the time: it
/// verifies again only once the time is put back).
fn set_checkpoint_made(dir: &Path, seq: i64, micros: i64) {
    let conn = rusqlite::Connection::open(dir.join("db.sqlite3")).expect("open");
    conn.execute(
        "UPDATE audit_checkpoints SET created = ?1 WHERE seq = ?2",
        [micros, seq],
    )
    .expect("update");
}

#[test]
fn the_worker_checkpoints_when_the_last_checkpoint_is_an_hour_old_and_events_came_since()
-> Result<()> {
    const TWO_HOURS: i64 = 2 * 3600 * 1_000_000;
    let dir = tempfile::tempdir().expect("tempdir");
    let first = pristine(dir.path())?;
    let with_worker = || {
        Docmeta::builder()
            .data_dir(dir.path())
            .config(fast_hashing())
            .worker(true)
            .open()
    };
    // More than one round of the worker, which looks every 2 seconds (and when it starts).
    let rounds = std::time::Duration::from_secs(3);
    // Events since the last checkpoint, which is fresh: none due.
    let db = with_worker()?;
    db.system().create_document_type("Since the checkpoint")?;
    std::thread::sleep(rounds);
    assert_eq!(stored_checkpoints(dir.path()), [first.seq]);
    // The last checkpoint two hours old: the next round writes one of the end of the log.
    let made = checkpoint_made(dir.path(), first.seq);
    set_checkpoint_made(dir.path(), first.seq, made - TWO_HOURS);
    let head = last_position(dir.path());
    assert!(head > first.seq);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while stored_checkpoints(dir.path()).len() < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "no checkpoint written within 30 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(stored_checkpoints(dir.path()), [first.seq, head]);
    drop(db);
    set_checkpoint_made(dir.path(), first.seq, made);
    let db = open_in(dir.path())?;
    let report = db.verify_events(None, |_, _| {})?;
    assert!(report.is_intact(), "{report:?}");
    assert_eq!((report.head, report.checkpoints), (head, 2));
    drop(db);
    // The last checkpoint two hours old with no event since: none due.
    let made = checkpoint_made(dir.path(), head);
    set_checkpoint_made(dir.path(), head, made - TWO_HOURS);
    let db = with_worker()?;
    std::thread::sleep(rounds);
    drop(db);
    assert_eq!(last_position(dir.path()), head, "the worker wrote no event");
    assert_eq!(stored_checkpoints(dir.path()), [first.seq, head]);
    Ok(())
}

// ----- PostgreSQL: events sealed after commit, in the gap-free order ---------------------------

static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// A new, empty database, or `None` when no PostgreSQL is configured.
fn postgres_url() -> Option<String> {
    let base = std::env::var("DOCMETA_TEST_POSTGRES_URL")
        .ok()
        .filter(|u| !u.is_empty());
    let Some(base) = base else {
        assert!(
            std::env::var("DOCMETA_REQUIRE_POSTGRES").map_or(true, |v| v != "1"),
            "DOCMETA_REQUIRE_POSTGRES=1 but DOCMETA_TEST_POSTGRES_URL is not set"
        );
        eprintln!("skipped: DOCMETA_TEST_POSTGRES_URL is not set");
        return None;
    };
    let name = format!(
        "docmeta_audit_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
    );
    let mut admin = postgres::Client::connect(&base, postgres::NoTls).expect("connect");
    for statement in [
        format!("DROP DATABASE IF EXISTS {name}"),
        format!("CREATE DATABASE {name}"),
    ] {
        admin.batch_execute(&statement).expect("create database");
    }
    Some(format!(
        "{}/{name}",
        &base[..base.rfind('/').expect("a URL with a database")]
    ))
}

fn open_postgres(dir: &Path, url: &str) -> Result<Docmeta> {
    Docmeta::builder()
        .data_dir(dir)
        .postgres(url)
        .config(fast_hashing())
        .worker(false)
        .open()
}

#[test]
fn postgres_seals_concurrent_writers_in_commit_order_and_finds_tampering() -> Result<()> {
    let Some(url) = postgres_url() else {
        return Ok(());
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let db = open_postgres(dir.path(), &url)?;
    let f = fixture(&db)?;
    // Writers in two threads at once: their events commit in an order the ids do not give.
    std::thread::scope(|s| {
        for t in 0..2 {
            let db = db.clone();
            s.spawn(move || {
                for i in 0..25 {
                    db.system()
                        .create_document_type(&format!("T{t}-{i}"))
                        .expect("write");
                }
            });
        }
    });
    let checkpoint = db.audit_checkpoint()?;
    let report = db.verify_events(Some(&checkpoint), |_, _| {})?;
    assert!(report.is_intact(), "{report:?}");
    assert_eq!(report.head, checkpoint.seq);
    assert!(report.verified >= 56, "{report:?}");
    // Verified while writers commit: their events, sealed or not yet, are never taken for
    // events put in behind the chain.
    std::thread::scope(|s| {
        let writer = s.spawn(|| {
            for i in 0..40 {
                db.system()
                    .create_document_type(&format!("During {i}"))
                    .expect("write");
            }
        });
        while !writer.is_finished() {
            let report = db.verify_events(None, |_, _| {}).expect("verify");
            assert!(report.is_intact(), "{report:?}");
        }
    });
    // History reads the same on PostgreSQL, and so do the values at a past time.
    let page = db
        .system()
        .history(f.doc, Some(f.amount), PageRequest::new(1, 10))?;
    assert_eq!(page.count, 5);
    answers_the_past(&db, &f)?;
    // One edited byte found.
    let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    let id: i64 = client
        .query_one("SELECT id FROM events WHERE seq = 9", &[])
        .expect("event")
        .get(0);
    client
        .batch_execute("UPDATE events SET target_label = target_label || '.' WHERE seq = 9")
        .expect("tamper");
    let report = db.verify_events(None, |_, _| {})?;
    let failure = report.failure.expect("found");
    assert_eq!((failure.event_id, failure.seq), (Some(id), Some(9)));
    client
        .batch_execute(
            "UPDATE events SET target_label = left(target_label, length(target_label) - 1) WHERE seq = 9",
        )
        .expect("undo");
    assert!(db.verify_events(None, |_, _| {})?.is_intact());
    // An event put in behind the chain (its transaction older than every sealed one).
    client
        .batch_execute(
            "INSERT INTO events (timestamp, name, target_kind, target_id, target_label, tx) \
             VALUES (0, 'documents.document_deleted', 'documents.document', 1, 'x', 0)",
        )
        .expect("insert");
    let inserted: i64 = client
        .query_one("SELECT max(id) FROM events WHERE seq IS NULL", &[])
        .expect("id")
        .get(0);
    let failure = db.verify_events(None, |_, _| {})?.failure.expect("found");
    assert_eq!(failure.event_id, Some(inserted), "{failure:?}");
    client
        .batch_execute(&format!("DELETE FROM events WHERE id = {inserted}"))
        .expect("undo");
    assert!(db.verify_events(None, |_, _| {})?.is_intact());
    // A deleted event, one inserted into the chain, two swapped, an edited id, the end cut off,
    // a checkpoint altered (stored and given): as on SQLite, each undone after.
    let latest = db.audit_checkpoint()?;
    let mut log = PostgresLog {
        db: &db,
        client: &mut client,
    };
    finds_tampering(&mut log, &latest);
    // The end cut off, found against the first checkpoint (kept outside).
    let (_, seq, reason) = log.tampered(
        &format!("DELETE FROM events WHERE seq >= {}", checkpoint.seq),
        Some(&checkpoint),
    );
    assert_eq!(seq, Some(checkpoint.seq), "{reason}");
    // A prune, after which the chain verifies from its base; the history went with it.
    let first_change = db
        .system()
        .history(f.doc, Some(f.amount), PageRequest::new(1, 10))?
        .items
        .last()
        .expect("a change")
        .timestamp;
    let before = db.verify_events(None, |_, _| {})?;
    assert!(before.is_intact(), "{before:?}");
    let pruned = db.prune_events(Utc::now() + Duration::seconds(1))?;
    assert_eq!(pruned.removed, before.head as u64);
    let base = pruned.base.expect("a base checkpoint");
    assert!(base.base && base.seq == before.head, "{base:?}");
    db.system().create_document_type("After the prune")?;
    let after = db.verify_events(None, |_, _| {})?;
    assert!(after.is_intact(), "{after:?}");
    assert_eq!(
        (after.start, after.head, after.verified),
        (base.seq, base.seq + 1, 1)
    );
    assert_eq!(
        db.system()
            .history(f.doc, None, PageRequest::new(1, 10))?
            .count,
        0
    );
    assert_eq!(
        db.system()
            .value_at(f.doc, f.amount, first_change)?
            .as_deref(),
        Some("140")
    );
    // The base altered, or an event left at its position, is found.
    let (_, _, reason) = log.tampered(
        "UPDATE audit_checkpoints SET hash = replace(hash, substr(hash, 2, 1), \
         CASE substr(hash, 2, 1) WHEN 'a' THEN 'b' ELSE 'a' END) WHERE base = 1;",
        None,
    );
    assert!(reason.contains("not signed"), "{reason}");
    let (_, seq, reason) = log.tampered(
        &format!(
            "INSERT INTO events (id, timestamp, name, target_kind, target_id, target_label, \
             changes, seq, hash) VALUES (100003, 0, 'x', 'x', 1, 'x', '[]', {}, '00');",
            base.seq
        ),
        None,
    );
    assert_eq!(seq, Some(base.seq), "{reason}");
    assert!(reason.contains("still in the log"), "{reason}");
    Ok(())
}

/// A PostgreSQL database reached with raw SQL: each tampering undone after it is verified (the
/// events and checkpoints saved first and put back), the log then verified intact again.
struct PostgresLog<'a> {
    db: &'a Docmeta,
    client: &'a mut postgres::Client,
}

impl RawLog for PostgresLog<'_> {
    fn tampered(
        &mut self,
        sql: &str,
        given: Option<&Checkpoint>,
    ) -> (Option<i64>, Option<i64>, String) {
        self.client
            .batch_execute(
                "CREATE TABLE saved_events AS SELECT * FROM events; \
                 CREATE TABLE saved_checkpoints AS SELECT * FROM audit_checkpoints;",
            )
            .expect("save the log");
        self.client
            .batch_execute(sql)
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        let report = self.db.verify_events(given, |_, _| {}).expect("verify");
        self.client
            .batch_execute(
                "DELETE FROM events; INSERT INTO events SELECT * FROM saved_events; \
                 DELETE FROM audit_checkpoints; \
                 INSERT INTO audit_checkpoints SELECT * FROM saved_checkpoints; \
                 DROP TABLE saved_events, saved_checkpoints;",
            )
            .expect("undo");
        let undone = self.db.verify_events(None, |_, _| {}).expect("verify");
        assert!(undone.is_intact(), "not undone after {sql}: {undone:?}");
        let f = report
            .failure
            .unwrap_or_else(|| panic!("not detected: {sql}"));
        (f.event_id, f.seq, f.reason)
    }

    fn id_at(&mut self, seq: i64) -> i64 {
        self.client
            .query_one("SELECT id FROM events WHERE seq = $1", &[&seq])
            .expect("event")
            .get(0)
    }
}
