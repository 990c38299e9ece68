//! Renders must not starve the server, in the library: no template renders under the write lock (a
//! chain of defaults, each reading the value the one before gave, used to render its later links
//! under the lock after four attempts: one document creation stalled every writer 10.9 s); the
//! renders of one unit of work share one budget; a unit whose templates' inputs keep changing
//! gives up with a clear error instead of rendering under the lock; and renders are capped per
//! user and in all (`Error::Throttled`).
//!
//! The slow templates are CPU-bound loops calibrated on this machine first, so that a chain's
//! renders together fit the 2 s budget (or, for the budget test, do not).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use docmeta_core::TemplateEngine;
use docmeta_core::{
    Config, Docmeta, DocumentId, DocumentQuery, DocumentTypeId, Error, MetadataTypeId,
    MetadataTypeInput, PageRequest, Result, Session,
};

/// The tests of this file time CPU-bound renders: one at a time, so that they do not slow each
/// other down past their budgets.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A template that runs until the render budget stops it.
const ENDLESS: &str = "{% for i in range(100000) %}{% if (range(50000)|list|sort|length) > 0 %}{% endif %}{% endfor %}";

fn open(dir: &std::path::Path, config: Config) -> Result<Docmeta> {
    Docmeta::builder()
        .data_dir(dir)
        .worker(false)
        .config(Config {
            password_hash_memory_kib: 64,
            password_hash_iterations: 1,
            ..config
        })
        .open()
}

/// A loop taking about `target` to render here (put before what a template renders).
fn slow_loop(target: Duration) -> String {
    let engine = TemplateEngine::new();
    let probe = |n: u32| {
        let source = format!(
            "{{% for i in range({n}) %}}{{% if (range(50000)|list|sort|length) > 0 %}}{{% endif %}}{{% endfor %}}"
        );
        let started = Instant::now();
        let _ = engine.render(&source, docmeta_core::TemplateValue::UNDEFINED, 100);
        started.elapsed()
    };
    let _ = probe(2);
    let each = probe(10) / 10;
    let n = (target.as_secs_f64() / each.as_secs_f64().max(1e-6))
        .ceil()
        .max(1.0) as u32;
    format!(
        "{{% for i in range({n}) %}}{{% if (range(50000)|list|sort|length) > 0 %}}{{% endif %}}{{% endfor %}}"
    )
}

/// A document type whose required metadata types `link0..linkN` have chained defaults: `link0`
/// is `a`, each next one the value before with an `x` added, rendered by `slow(i)` (a template
/// prefix) first.
fn chain(
    admin: &Session,
    label: &str,
    links: usize,
    slow: impl Fn(usize) -> String,
) -> Result<(DocumentTypeId, Vec<MetadataTypeId>)> {
    let dt = admin.create_document_type(label)?.id;
    let mut types = Vec::new();
    for i in 0..links {
        let name = format!("{}_link{i}", label.to_lowercase());
        let default = if i == 0 {
            "a".to_owned()
        } else {
            format!(
                "{}{{{{ document.metadata_value_of.{}_link{} }}}}x",
                slow(i),
                label.to_lowercase(),
                i - 1
            )
        };
        let t = admin
            .create_metadata_type(
                MetadataTypeInput::new(name.as_str(), name.as_str()).default_value(default),
            )?
            .id;
        admin.associate(dt, t, true)?;
        types.push(t);
    }
    Ok((dt, types))
}

/// Another document with a `note`, for a writer to edit while something else renders.
fn note_document(admin: &Session) -> Result<(DocumentId, MetadataTypeId)> {
    let dt = admin.create_document_type("Other")?.id;
    let note = admin
        .create_metadata_type(MetadataTypeInput::new("note", "Note"))?
        .id;
    admin.associate(dt, note, false)?;
    let doc = admin.create_document(dt, "other", &[])?.document.id;
    admin.add_document_metadata(doc, note, "0")?;
    Ok((doc, note))
}

/// Edits the note in a loop until `stop`; the longest one edit took, and how many were made.
fn writer(
    admin: Session,
    doc: DocumentId,
    note: MetadataTypeId,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<Result<(Duration, usize)>> {
    std::thread::spawn(move || {
        let id = admin
            .document_metadata(doc, PageRequest::ALL)
            .map(|p| p.items.into_iter().map(|v| v.value).collect::<Vec<_>>())?
            .into_iter()
            .find(|m| m.metadata_type_id == note)
            .map(|m| m.id)
            .ok_or_else(|| Error::not_found("the note"))?;
        let (mut longest, mut edits) = (Duration::ZERO, 0);
        while !stop.load(Ordering::SeqCst) {
            let started = Instant::now();
            admin.edit_document_metadata(doc, id, &edits.to_string(), None)?;
            longest = longest.max(started.elapsed());
            edits += 1;
        }
        Ok((longest, edits))
    })
}

#[test]
fn a_chain_of_defaults_never_renders_under_the_write_lock() -> Result<()> {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().map_err(|e| Error::storage("tempdir", e))?;
    let db = open(dir.path(), Config::default())?;
    let admin = db.system();
    // Eleven links: the first four quick, the last seven about 150 ms each (1.05 s in all,
    // half the 2 s budget, so that a loaded machine's slower loops stay within it). The old
    // kernel rendered three links outside the lock and the rest, links 4 to 10, all the slow
    // ones, under it: an edit of another document waited over a second.
    let slow = slow_loop(Duration::from_millis(150));
    let (dt, types) = chain(&admin, "Chain", 11, |i| {
        if i >= 4 { slow.clone() } else { String::new() }
    })?;
    let (doc, note) = note_document(&admin)?;
    let stop = Arc::new(AtomicBool::new(false));
    let edits = writer(admin.clone(), doc, note, stop.clone());
    std::thread::sleep(Duration::from_millis(100));
    let created = admin.create_document(dt, "chained", &[]);
    stop.store(true, Ordering::SeqCst);
    let (longest, count) = edits.join().expect("writer")?;
    let created = created?;
    let last = admin
        .document_metadata(created.document.id, PageRequest::ALL)
        .map(|p| p.items.into_iter().map(|v| v.value).collect::<Vec<_>>())?
        .into_iter()
        .find(|m| m.metadata_type_id == types[10])
        .map(|m| m.value);
    assert_eq!(last.as_deref(), Some("axxxxxxxxxx"), "every link rendered");
    assert!(count > 0, "the writer made no edit");
    assert!(
        longest < Duration::from_millis(700),
        "an edit of another document waited {longest:?} behind the chain's renders"
    );
    Ok(())
}

#[test]
fn the_renders_of_one_change_share_one_budget() -> Result<()> {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().map_err(|e| Error::storage("tempdir", e))?;
    let db = open(dir.path(), Config::default())?;
    let admin = db.system();
    // Four links of about 700 ms each: each within the 2 s budget, together far beyond it.
    let slow = slow_loop(Duration::from_millis(700));
    let (dt, _) = chain(&admin, "Long", 5, |_| slow.clone())?;
    let started = Instant::now();
    let err = admin
        .create_document(dt, "too slow in all", &[])
        .expect_err("the renders together run past the budget");
    assert!(
        matches!(&err, Error::Validation { message, .. } if message.contains("render budget")),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(
        admin
            .documents(
                DocumentQuery {
                    document_type: Some(dt),
                    ..Default::default()
                },
                PageRequest::new(1, 10)
            )?
            .count
            == 0
    );
    Ok(())
}

#[test]
fn a_default_whose_input_keeps_changing_gives_up_clearly() -> Result<()> {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().map_err(|e| Error::storage("tempdir", e))?;
    let db = open(dir.path(), Config::default())?;
    let admin = db.system();
    let slow = slow_loop(Duration::from_millis(100));
    let dt = admin.create_document_type("Copy")?.id;
    let source = admin
        .create_metadata_type(MetadataTypeInput::new("source", "Source"))?
        .id;
    let copy = admin
        .create_metadata_type(
            MetadataTypeInput::new("copy", "Copy")
                .default_value(format!("{slow}{{{{ document.metadata_value_of.source }}}}")),
        )?
        .id;
    admin.associate(dt, source, false)?;
    admin.associate(dt, copy, false)?;
    let doc = admin.create_document(dt, "moving", &[])?.document.id;
    admin.add_document_metadata(doc, source, "0")?;
    // Another writer changes what the default reads faster than it renders.
    let stop = Arc::new(AtomicBool::new(false));
    let edits = writer(admin.clone(), doc, source, stop.clone());
    std::thread::sleep(Duration::from_millis(50));
    let outcome = admin.add_document_metadata(doc, copy, "");
    stop.store(true, Ordering::SeqCst);
    let (longest, _) = edits.join().expect("writer")?;
    let err = outcome.expect_err("the default's input never held still");
    assert!(err.is_busy(), "{err}");
    assert!(err.to_string().contains("kept changing"), "{err}");
    assert!(
        longest < Duration::from_secs(1),
        "the writer waited {longest:?}"
    );
    Ok(())
}

/// A document of a type whose `owner` lookup renders until its budget runs out, and two users
/// (superusers: they may read it all) to look it up.
fn slow_lookup(config: Config) -> Result<(tempfile::TempDir, Docmeta, DocumentId, MetadataTypeId)> {
    let dir = tempfile::tempdir().map_err(|e| Error::storage("tempdir", e))?;
    let db = open(dir.path(), config)?;
    let admin = db.system();
    let dt = admin.create_document_type("Invoice")?.id;
    let owner = admin
        .create_metadata_type(MetadataTypeInput::new("owner", "Owner").lookup(ENDLESS))?
        .id;
    admin.associate(dt, owner, false)?;
    let doc = admin.create_document(dt, "INV-1", &[])?.document.id;
    admin.create_user("ann", "a long password 1", true)?;
    admin.create_user("bob", "a long password 1", true)?;
    Ok((dir, db, doc, owner))
}

fn session_of(db: &Docmeta, name: &str) -> Result<Session> {
    let user = db
        .system()
        .users()?
        .into_iter()
        .find(|u| u.username == name)
        .ok_or_else(|| Error::not_found(name))?;
    Ok(db.session(user.id))
}

/// Starts a lookup as `session` on another thread (it renders for 2 s), and waits until it
/// must be rendering.
fn looking_up(
    session: Session,
    doc: DocumentId,
    owner: MetadataTypeId,
) -> std::thread::JoinHandle<Result<Option<Vec<String>>>> {
    let handle = std::thread::spawn(move || session.document_lookup_choices(doc, owner));
    std::thread::sleep(Duration::from_millis(400));
    handle
}

#[test]
fn renders_are_capped_per_user_and_in_all() -> Result<()> {
    let _serial = one_at_a_time();
    let (_dir, db, doc, owner) = slow_lookup(Config {
        renders_per_user: 1,
        renders_at_once: 8,
        ..Config::default()
    })?;
    let ann = session_of(&db, "ann")?;
    let first = looking_up(ann.clone(), doc, owner);
    let err = ann
        .document_lookup_choices(doc, owner)
        .expect_err("a second render of the same user at once");
    assert!(
        matches!(&err, Error::Throttled(m) if m.contains("renders_per_user")),
        "{err}"
    );
    // Another user is not held back by ann's renders; neither is docmeta itself.
    let bob = session_of(&db, "bob")?;
    let other = looking_up(bob, doc, owner);
    let system = looking_up(db.system(), doc, owner);
    for (who, outcome) in [("ann", first), ("bob", other), ("system", system)] {
        let outcome = outcome.join().expect("lookup thread");
        assert!(
            matches!(&outcome, Err(Error::Validation { message, .. }) if message.contains("render budget")),
            "{who}: {outcome:?}"
        );
    }

    let (_dir, db, doc, owner) = slow_lookup(Config {
        renders_per_user: 4,
        renders_at_once: 1,
        ..Config::default()
    })?;
    let first = looking_up(session_of(&db, "ann")?, doc, owner);
    let err = session_of(&db, "bob")?
        .document_lookup_choices(doc, owner)
        .expect_err("a render beyond renders_at_once");
    assert!(
        matches!(&err, Error::Throttled(m) if m.contains("renders_at_once")),
        "{err}"
    );
    let _ = first.join().expect("lookup thread");
    // Once it is done, there is room again.
    let again = session_of(&db, "bob")?.document_lookup_choices(doc, owner);
    assert!(matches!(again, Err(Error::Validation { .. })), "{again:?}");
    Ok(())
}
