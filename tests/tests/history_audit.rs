//! A value's history and point-in-time reads, and the tamper-evident event log: each shape of
//! tampering (one edited byte in any stored field, a deleted event, an inserted one, two
//! swapped, a truncated tail against a checkpoint, an altered checkpoint) is found and the
//! first failing event named; a prune keeps the chain verifiable; a backup carries a
//! checkpoint its restore verifies against. On SQLite, and on PostgreSQL when
//! `DOCMETA_TEST_POSTGRES_URL` is set.

use std::path::Path;

use chrono::{Duration, Utc};
use docmeta_core::{
    Checkpoint, Config, Docmeta, DocumentId, MetadataTypeId, MetadataTypeInput, ObjectKind,
    ObjectRef, PageRequest, Permission as P, Result, ValueAction, checkpoint_signed_by,
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
    let db = open_in(dir)?;
    fixture(&db)?;
    let admin = db.system();
    for i in 0..10 {
        admin.create_document_type(&format!("Type {i}"))?;
    }
    let checkpoint = db.audit_checkpoint()?;
    let report = db.verify_events(None, |_, _| {})?;
    assert!(report.is_intact(), "{report:?}");
    assert_eq!(report.head, checkpoint.seq);
    assert!(report.verified >= 20);
    Ok(checkpoint)
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

/// A copy of `pristine` tampered with by `sql`, verified (with `given` as a checkpoint kept
/// outside): the failure's event id and position.
fn tampered(
    pristine: &Path,
    sql: &str,
    given: Option<&Checkpoint>,
) -> (Option<i64>, Option<i64>, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    copy_dir(pristine, dir.path());
    let conn = rusqlite::Connection::open(dir.path().join("db.sqlite3")).expect("open");
    conn.execute_batch(sql).expect(sql);
    drop(conn);
    let db = open_in(dir.path()).expect("open tampered");
    let report = db.verify_events(given, |_, _| {}).expect("verify");
    let f = report
        .failure
        .unwrap_or_else(|| panic!("not detected: {sql}"));
    (f.event_id, f.seq, f.reason)
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
    pristine(dir.path())?;
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
    let (_, seq, reason) = tampered(
        dir.path(),
        "UPDATE events SET seq = -seq WHERE seq >= 4; UPDATE events SET seq = 1 - seq WHERE seq < 0; \
         INSERT INTO events (id, timestamp, name, target_kind, target_id, target_label, changes, seq, hash) \
         SELECT 100001, timestamp, name, target_kind, target_id, target_label, changes, 4, hash FROM events WHERE seq = 5;",
        None,
    );
    assert_eq!(seq, Some(4), "{reason}");
    assert_ne!(at4, 100_001);
    // Two swapped (their places exchanged).
    let (event, seq, reason) = tampered(
        dir.path(),
        "UPDATE events SET seq = -1 WHERE seq = 8; UPDATE events SET seq = 8 WHERE seq = 9; \
         UPDATE events SET seq = 9 WHERE seq = -1;",
        None,
    );
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
    pristine(dir.path())?;
    let db = open_in(dir.path())?;
    let before = db.verify_events(None, |_, _| {})?;
    let report = db.prune_events(Utc::now() + Duration::seconds(1))?;
    assert_eq!(report.removed, before.head as u64);
    let base = report.base.expect("a base checkpoint");
    assert_eq!(base.seq, before.head);
    // New events chain on from the base.
    db.system().create_document_type("After the prune")?;
    let after = db.verify_events(None, |_, _| {})?;
    assert!(after.is_intact(), "{after:?}");
    assert_eq!(
        (after.start, after.head, after.verified),
        (base.seq, base.seq + 1, 1)
    );
    // History before the prune is gone with its events.
    drop(db);
    // The base altered, or an event right after it removed, is found.
    let (_, _, reason) = tampered(
        dir.path(),
        "UPDATE audit_checkpoints SET hash = '00' || substr(hash, 3);",
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
    // History reads the same on PostgreSQL.
    let page = db
        .system()
        .history(f.doc, Some(f.amount), PageRequest::new(1, 10))?;
    assert_eq!(page.count, 5);
    // One edited byte, then a deleted event, each found.
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
    // The end cut off: found against the checkpoint.
    client
        .batch_execute(&format!(
            "DELETE FROM events WHERE seq >= {}",
            checkpoint.seq
        ))
        .expect("truncate");
    let report = db.verify_events(Some(&checkpoint), |_, _| {})?;
    assert_eq!(report.failure.expect("found").seq, Some(checkpoint.seq));
    Ok(())
}
