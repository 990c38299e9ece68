//! Following the event log as it grows (`Session::events_after`): a waiter wakes when an event
//! it may see is committed, by this process or another (a second handle on the same SQLite
//! file or PostgreSQL database), answers empty at its deadline, and its cursor moves past what
//! it may not see without ever showing it.
//!
//! Timing is asserted only loosely: a wake must come well before the wait's end, never within
//! some number of milliseconds.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use docmeta_core::{
    Docmeta, DocumentTypeId, Error, EventId, MAX_EVENT_WAIT, ObjectKind, ObjectRef, Permission,
    Result, UserId,
};

/// A wait long enough that a wake is told from a deadline whatever the machine's load.
const LONG: Duration = Duration::from_secs(30);

fn fast(db: docmeta_core::Builder) -> docmeta_core::Builder {
    db.config(docmeta_core::Config {
        password_hash_memory_kib: 64,
        password_hash_iterations: 1,
        ..Default::default()
    })
}

/// The newest event now, as a cursor to follow from.
fn head(db: &Docmeta) -> Result<Option<EventId>> {
    Ok(db
        .events(&docmeta_core::EventQuery {
            limit: Some(1),
            ..Default::default()
        })?
        .first()
        .map(|e| e.id))
}

/// A user who may view the documents of `shown` (through an ACL on the type) and nothing else.
fn viewer_of(db: &Docmeta, name: &str, shown: DocumentTypeId) -> Result<UserId> {
    let admin = db.system();
    let user = admin.create_user(name, "a long password", false)?.id;
    let group = admin.create_group(&format!("{name}'s group"))?.id;
    let role = admin.create_role(&format!("{name}'s role"))?.id;
    admin.set_group_member(group, user, true)?;
    admin.set_role_group(role, group, true)?;
    admin.grant(
        Permission::DocumentView,
        role,
        ObjectRef::new(ObjectKind::DOCUMENT_TYPE, shown.0),
    )?;
    Ok(user)
}

/// Runs `follow` on another thread after `commit` has run on this one, `pause` later; returns
/// what `follow` returned and how long it took.
fn waiting_for<T: Send>(
    follow: impl FnOnce() -> T + Send,
    pause: Duration,
    commit: impl FnOnce(),
) -> (T, Duration) {
    std::thread::scope(|scope| {
        let waiter = scope.spawn(move || {
            let started = Instant::now();
            let out = follow();
            (out, started.elapsed())
        });
        std::thread::sleep(pause);
        commit();
        waiter.join().expect("the waiter")
    })
}

#[test]
fn a_waiter_wakes_when_another_thread_commits_an_event_it_may_see() -> Result<()> {
    let db = Docmeta::in_memory()?;
    let admin = db.system();
    let memo = admin.create_document_type("Memo")?.id;
    let from = head(&db)?;
    let reader = db.system();
    let (feed, took) = waiting_for(
        || reader.events_after(from, LONG, 10),
        Duration::from_millis(200),
        || {
            admin
                .create_document(memo, "written meanwhile", &[])
                .expect("create");
        },
    );
    let feed = feed?;
    assert!(
        took < LONG / 2,
        "woken by the commit, not the deadline: {took:?}"
    );
    assert_eq!(feed.events.len(), 1, "{feed:?}");
    assert_eq!(feed.events[0].event.name, "documents.document_created");
    assert_eq!(feed.events[0].event.target.label, "written meanwhile");
    assert_eq!(feed.cursor, Some(feed.events[0].event.id));
    Ok(())
}

#[test]
fn an_empty_feed_answers_at_its_deadline_with_the_cursor_unchanged() -> Result<()> {
    let db = Docmeta::in_memory()?;
    db.system().create_document_type("Memo")?;
    let from = head(&db)?;
    let started = Instant::now();
    let feed = db
        .system()
        .events_after(from, Duration::from_millis(300), 10)?;
    let took = started.elapsed();
    assert!(feed.events.is_empty(), "{feed:?}");
    assert_eq!(feed.cursor, from);
    assert!(
        took >= Duration::from_millis(300),
        "waited its time: {took:?}"
    );
    assert!(took < LONG, "and no longer: {took:?}");
    // No wait: at once, the same.
    let feed = db.system().events_after(from, Duration::ZERO, 10)?;
    assert!(feed.events.is_empty());
    assert_eq!(feed.cursor, from);
    Ok(())
}

#[test]
fn a_feed_reads_the_log_in_order_in_pieces_from_its_start() -> Result<()> {
    let db = Docmeta::in_memory()?;
    let admin = db.system();
    let memo = admin.create_document_type("Memo")?.id;
    for i in 0..5 {
        admin.create_document(memo, &format!("memo {i}"), &[])?;
    }
    let every: Vec<EventId> = db
        .events(&docmeta_core::EventQuery {
            oldest_first: true,
            limit: Some(1000),
            ..Default::default()
        })?
        .iter()
        .map(|e| e.id)
        .collect();
    let mut read = Vec::new();
    let mut cursor = None;
    loop {
        let feed = admin.events_after(cursor, Duration::ZERO, 2)?;
        assert!(feed.events.len() <= 2);
        if feed.events.is_empty() {
            assert_eq!(feed.cursor, cursor, "nothing more: the cursor stays");
            break;
        }
        read.extend(feed.events.iter().map(|e| e.event.id));
        cursor = feed.cursor;
    }
    assert_eq!(read, every, "every event once, in order");
    Ok(())
}

#[test]
fn the_cursor_moves_past_hidden_events_which_are_never_shown() -> Result<()> {
    let db = fast(Docmeta::builder()).open()?;
    let admin = db.system();
    let shown = admin.create_document_type("Shown")?.id;
    let hidden = admin.create_document_type("Hidden")?.id;
    let ann = viewer_of(&db, "ann", shown)?;
    let from = head(&db)?;
    let secret = admin.create_document(hidden, "secret", &[])?.document;
    admin.update_document(secret.id, "still secret")?;
    let last_hidden = head(&db)?;
    let ann_session = db.session(ann);
    // Only hidden events: none shown, the cursor past them all.
    let feed = ann_session.events_after(from, Duration::ZERO, 10)?;
    assert!(feed.events.is_empty(), "{feed:?}");
    assert_eq!(feed.cursor, last_hidden);
    // Then a visible one: shown alone, with the cursor on it.
    let memo = admin.create_document(shown, "for ann", &[])?.document;
    admin.create_document(hidden, "secret too", &[])?;
    let feed = ann_session.events_after(feed.cursor, Duration::ZERO, 10)?;
    let labels: Vec<&str> = feed
        .events
        .iter()
        .map(|e| e.event.target.label.as_str())
        .collect();
    assert_eq!(labels, ["for ann"]);
    assert_eq!(feed.events[0].event.target.id, memo.id.0);
    assert_eq!(
        feed.cursor,
        head(&db)?,
        "past the hidden event after it too"
    );
    // Nothing of the hidden documents, read whole from the start.
    let mut cursor = None;
    loop {
        let feed = ann_session.events_after(cursor, Duration::ZERO, 1000)?;
        for e in &feed.events {
            assert!(
                !e.event.target.label.contains("secret"),
                "a hidden document was shown: {e:?}"
            );
        }
        if feed.cursor == cursor {
            break;
        }
        cursor = feed.cursor;
    }
    assert_eq!(cursor, head(&db)?);
    Ok(())
}

#[test]
fn a_waiter_without_access_sees_nothing_of_a_hidden_document_but_its_cursor_moves() -> Result<()> {
    let db = fast(Docmeta::builder()).open()?;
    let admin = db.system();
    let shown = admin.create_document_type("Shown")?.id;
    let hidden = admin.create_document_type("Hidden")?.id;
    let ann = viewer_of(&db, "ann", shown)?;
    let from = head(&db)?;
    let ann_session = db.session(ann);
    // A hidden commit wakes her waiter, which reads nothing it may show and waits on to its
    // deadline, its cursor moved past the hidden event.
    let wait = Duration::from_millis(1500);
    let (feed, took) = waiting_for(
        || ann_session.events_after(from, wait, 10),
        Duration::from_millis(200),
        || {
            admin
                .create_document(hidden, "secret", &[])
                .expect("create");
        },
    );
    let feed = feed?;
    assert!(feed.events.is_empty(), "{feed:?}");
    assert!(took >= wait, "a hidden event does not answer: {took:?}");
    assert_eq!(feed.cursor, head(&db)?);
    assert_ne!(feed.cursor, from);
    // A hidden event, then a shown one: she is woken by the second and shown it alone.
    let after_hidden = feed.cursor;
    let (feed, took) = waiting_for(
        || ann_session.events_after(after_hidden, LONG, 10),
        Duration::from_millis(200),
        || {
            admin
                .create_document(hidden, "secret again", &[])
                .expect("create");
            admin
                .create_document(shown, "for ann", &[])
                .expect("create");
        },
    );
    let feed = feed?;
    assert!(took < LONG / 2, "{took:?}");
    let labels: Vec<&str> = feed
        .events
        .iter()
        .map(|e| e.event.target.label.as_str())
        .collect();
    assert_eq!(labels, ["for ann"]);
    Ok(())
}

#[test]
fn invalid_input_is_a_validation_error_naming_it() -> Result<()> {
    let db = Docmeta::in_memory()?;
    let s = db.system();
    let field_of = |r: Result<docmeta_core::EventFeed>| match r {
        Err(Error::Validation { field, .. }) => field,
        other => panic!("expected a validation error, got {other:?}"),
    };
    assert_eq!(
        field_of(s.events_after(None, MAX_EVENT_WAIT + Duration::from_millis(1), 10)),
        "wait"
    );
    assert_eq!(field_of(s.events_after(None, Duration::ZERO, 0)), "limit");
    assert_eq!(
        field_of(s.events_after(None, Duration::ZERO, 1001)),
        "limit"
    );
    assert_eq!(
        field_of(s.events_after(Some(EventId(-1)), Duration::ZERO, 10)),
        "after"
    );
    // The bounds themselves are accepted.
    s.events_after(None, Duration::ZERO, 1000)?;
    s.events_after(Some(EventId(0)), Duration::ZERO, 1)?;
    Ok(())
}

#[test]
fn a_commit_through_another_handle_on_the_same_sqlite_file_wakes_a_waiter() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let open = || {
        fast(Docmeta::builder())
            .data_dir(dir.path())
            .worker(false)
            .open()
    };
    let a = open()?;
    let b = open()?;
    let memo = a.system().create_document_type("Memo")?.id;
    let from = head(&b)?;
    let reader = b.system();
    let (feed, took) = waiting_for(
        || reader.events_after(from, LONG, 10),
        Duration::from_millis(300),
        || {
            a.system()
                .create_document(memo, "from the other handle", &[])
                .expect("create");
        },
    );
    let feed = feed?;
    assert!(took < LONG / 2, "heard through the WAL index: {took:?}");
    assert_eq!(feed.events.len(), 1, "{feed:?}");
    assert_eq!(feed.events[0].event.target.label, "from the other handle");
    Ok(())
}

#[test]
fn a_watch_is_told_of_commits_until_it_is_dropped() -> Result<()> {
    let db = Docmeta::in_memory()?;
    let memo = db.system().create_document_type("Memo")?.id;
    let told = std::sync::Arc::new(AtomicU32::new(0));
    let watch = {
        let told = told.clone();
        db.watch_events(move || {
            told.fetch_add(1, Ordering::SeqCst);
        })
    };
    db.system().create_document(memo, "one", &[])?;
    assert!(told.load(Ordering::SeqCst) >= 1, "told after the commit");
    drop(watch);
    let before = told.load(Ordering::SeqCst);
    db.system().create_document(memo, "two", &[])?;
    assert_eq!(told.load(Ordering::SeqCst), before, "not once dropped");
    Ok(())
}

// ----- PostgreSQL -------------------------------------------------------------------------

static NEXT: AtomicU32 = AtomicU32::new(0);

fn postgres_base() -> Option<String> {
    let url = std::env::var("DOCMETA_TEST_POSTGRES_URL")
        .ok()
        .filter(|u| !u.is_empty());
    if url.is_none() && std::env::var("DOCMETA_REQUIRE_POSTGRES").is_ok_and(|v| v == "1") {
        panic!("DOCMETA_REQUIRE_POSTGRES=1 but DOCMETA_TEST_POSTGRES_URL is not set");
    }
    url
}

/// The URL of a new, empty database.
fn fresh_postgres(base: &str) -> String {
    let name = format!(
        "docmeta_feed_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    );
    let mut admin = postgres::Client::connect(base, postgres::NoTls).expect("connect");
    for statement in [
        format!("DROP DATABASE IF EXISTS {name}"),
        format!("CREATE DATABASE {name}"),
    ] {
        admin.batch_execute(&statement).expect("create database");
    }
    format!(
        "{}/{name}",
        &base[..base.rfind('/').expect("a URL with a database")]
    )
}

#[test]
fn on_postgres_a_commit_through_one_handle_wakes_a_waiter_on_the_other() -> Result<()> {
    let Some(base) = postgres_base() else {
        eprintln!("skipped: DOCMETA_TEST_POSTGRES_URL is not set");
        return Ok(());
    };
    let url = fresh_postgres(&base);
    let dirs = [
        tempfile::tempdir().expect("tempdir"),
        tempfile::tempdir().expect("tempdir"),
    ];
    let open = |dir: &tempfile::TempDir| {
        fast(Docmeta::builder())
            .data_dir(dir.path())
            .worker(false)
            .store(docmeta_core::PostgresStore::open(&url).expect("open"))
            .open()
    };
    let a = open(&dirs[0])?;
    let b = open(&dirs[1])?;
    let shown = a.system().create_document_type("Shown")?.id;
    let hidden = a.system().create_document_type("Hidden")?.id;
    let ann = viewer_of(&a, "ann", shown)?;
    // Twice: the second time the listening connection is already there.
    for round in 0..2 {
        let from = head(&b)?;
        let reader = b.session(ann);
        let (feed, took) = waiting_for(
            || reader.events_after(from, LONG, 10),
            Duration::from_millis(300),
            || {
                a.system()
                    .create_document(hidden, &format!("secret {round}"), &[])
                    .expect("create");
                a.system()
                    .create_document(shown, &format!("for ann {round}"), &[])
                    .expect("create");
            },
        );
        let feed = feed?;
        assert!(took < LONG / 2, "heard through a notification: {took:?}");
        let labels: Vec<String> = feed
            .events
            .iter()
            .map(|e| e.event.target.label.clone())
            .collect();
        assert_eq!(labels, [format!("for ann {round}")]);
        assert_eq!(feed.cursor, head(&a)?, "past the hidden event too");
    }
    // A rolled-back change tells nobody: the waiter answers at its deadline.
    let from = head(&b)?;
    let wait = Duration::from_millis(800);
    let (feed, took) = waiting_for(
        || b.system().events_after(from, wait, 10),
        Duration::from_millis(100),
        || {
            let refused = a.system().create_document_type("Shown");
            assert!(refused.is_err(), "a duplicate label is refused");
        },
    );
    let feed = feed?;
    assert!(feed.events.is_empty(), "{feed:?}");
    assert!(took >= wait, "{took:?}");
    Ok(())
}
