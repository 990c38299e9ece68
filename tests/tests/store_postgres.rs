//! The store conformance suite on PostgreSQL, each check on a fresh database.
//!
//! Needs `DOCMETA_TEST_POSTGRES_URL` (e.g. `postgres://postgres@127.0.0.1:54329/postgres`, a
//! role that may create databases); `.ci/run` starts a throwaway cluster and sets it. Without
//! it every check says why it is skipped and passes vacuously.

#[path = "support/archive.rs"]
mod archive;

use std::sync::atomic::{AtomicU32, Ordering};

use docmeta_core::store::{PostgresStore, Store};
use docmeta_core::{DocumentQuery, Error, PageRequest};

static NEXT: AtomicU32 = AtomicU32::new(0);

fn base_url() -> Option<String> {
    let url = std::env::var("DOCMETA_TEST_POSTGRES_URL")
        .ok()
        .filter(|u| !u.is_empty());
    if url.is_none() && std::env::var("DOCMETA_REQUIRE_POSTGRES").is_ok_and(|v| v == "1") {
        panic!("DOCMETA_REQUIRE_POSTGRES=1 but DOCMETA_TEST_POSTGRES_URL is not set");
    }
    url
}

/// The URL of a new, empty database.
fn fresh_url() -> String {
    let base = base_url().expect("DOCMETA_TEST_POSTGRES_URL");
    let name = format!(
        "docmeta_test_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    );
    let mut admin = postgres::Client::connect(&base, postgres::NoTls).expect("connect");
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

/// A store on a new, empty database.
fn fresh() -> Box<dyn Store> {
    let store = PostgresStore::open(&fresh_url()).expect("open");
    store.migrate().expect("migrate");
    Box::new(store)
}

macro_rules! on_postgres {
    ($($check:ident),*) => {$(
        #[test]
        fn $check() -> docmeta_core::Result<()> {
            if base_url().is_none() {
                eprintln!(
                    "skipped: DOCMETA_TEST_POSTGRES_URL is not set (no PostgreSQL to test against; .ci/run starts one)"
                );
                return Ok(());
            }
            docmeta_core::store::conformance::$check(&fresh)
        }
    )*};
}

on_postgres!(
    migrations_are_recorded,
    records_round_trip,
    uniqueness_is_enforced,
    rollback_on_drop,
    foreign_keys_are_enforced,
    event_log,
    task_queue,
    targeted_tasks_are_claimed_by_their_target,
    requeue_leaves_other_targets_running,
    retargeting_moves_only_open_targeted_tasks,
    access_records,
    parameters_bind,
    documents_are_read_by_lists_of_ids
);

#[test]
fn docmeta_runs_on_postgres_end_to_end() -> docmeta_core::Result<()> {
    if base_url().is_none() {
        eprintln!("skipped: DOCMETA_TEST_POSTGRES_URL is not set");
        return Ok(());
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let db = docmeta_core::Docmeta::builder()
        .data_dir(dir.path())
        .store(fresh_store())
        .open()?;
    let admin = db.system();
    let t = admin.create_document_type("Invoice")?;
    let due = admin.create_metadata_type(
        docmeta_core::MetadataTypeInput::new("due", "Due")
            .parser("svc.apps.metadata.metadata_parsers.DateParser", ""),
    )?;
    admin.associate(t.id, due.id, true)?;
    let doc = admin
        .create_document(t.id, "INV-1", &[(due.id, "31/12/2024")])?
        .document;
    assert_eq!(
        admin.metadata_value_of(doc.id, "due")?.as_deref(),
        Some("2024-12-31")
    );
    assert!(matches!(
        admin.create_document_type("Invoice"),
        Err(docmeta_core::Error::Conflict { .. })
    ));
    let file = admin.add_file(doc.id, "a.txt", &mut &b"abc"[..])?;
    assert_eq!(admin.read_file(file.id)?, b"abc");
    assert_eq!(
        admin
            .search_documents("invoice", PageRequest::new(1, 10))?
            .count,
        1
    );
    Ok(())
}

#[test]
fn a_batch_and_a_filtered_documents_page_run_on_postgres() -> docmeta_core::Result<()> {
    use docmeta_core::{
        DocumentQuery, NewDocument, ObjectKind, ObjectRef, PageRequest, Permission,
    };
    if base_url().is_none() {
        eprintln!("skipped: DOCMETA_TEST_POSTGRES_URL is not set");
        return Ok(());
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let db = docmeta_core::Docmeta::builder()
        .data_dir(dir.path())
        .store(fresh_store())
        .open()?;
    let admin = db.system();
    let shown = admin.create_document_type("Shown")?.id;
    let hidden = admin.create_document_type("Hidden")?.id;
    let new: Vec<NewDocument<'_>> = (0..12)
        .map(|i| NewDocument {
            document_type: if i % 3 == 0 { shown } else { hidden },
            label: "batch",
            values: &[],
        })
        .collect();
    let created = admin.create_documents(&new)?;
    let user = admin.create_user("ann", "a long password", false)?.id;
    let group = admin.create_group("G")?.id;
    let role = admin.create_role("R")?.id;
    admin.set_group_member(group, user, true)?;
    admin.set_role_group(role, group, true)?;
    admin.grant(
        Permission::DocumentView,
        role,
        ObjectRef::new(ObjectKind::DOCUMENT_TYPE, shown.0),
    )?;
    admin.grant(
        Permission::DocumentView,
        role,
        ObjectRef::new(ObjectKind::DOCUMENT, created[4].document.id.0),
    )?;
    let ann = db.session(user);
    let expected = ann.document_ids(None)?;
    assert_eq!(expected.len(), 5);
    for size in 1..=6 {
        let mut ids = Vec::new();
        for number in 1..=(expected.len() / size + 1) {
            let page = ann.documents(
                DocumentQuery {
                    newest_first: size % 2 == 0,
                    ..Default::default()
                },
                PageRequest::new(number, size),
            )?;
            assert_eq!(page.count, expected.len());
            ids.extend(page.items.iter().map(|v| v.document.id));
        }
        if size % 2 == 0 {
            ids.reverse();
        }
        assert_eq!(ids, expected, "pages of {size}");
    }
    Ok(())
}

fn fresh_store() -> PostgresStore {
    PostgresStore::open(&fresh_url()).expect("open")
}

#[test]
fn backup_and_restore_a_postgres_installation() -> docmeta_core::Result<()> {
    if base_url().is_none() {
        eprintln!("skipped: DOCMETA_TEST_POSTGRES_URL is not set");
        return Ok(());
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let source = fresh_url();
    let db = docmeta_core::Docmeta::builder()
        .data_dir(dir.path().join("a"))
        .postgres(&source)
        .open()?;
    let admin = db.system();
    let t = admin.create_document_type("Invoice")?;
    let doc = admin.create_document(t.id, "INV-8", &[])?.document;
    admin.update_document(doc.id, "INV-9")?;
    let file = admin.add_file(doc.id, "scan.txt", &mut &b"scanned"[..])?;
    let all = docmeta_core::EventQuery {
        limit: Some(1000),
        ..Default::default()
    };
    let events = db.events(&all)?;
    assert!(
        events.iter().any(|e| e.changes
            == [docmeta_core::EventChange::new(
                "label",
                Some("INV-8".into()),
                Some("INV-9".into())
            )]),
        "{events:#?}"
    );
    let archive = dir.path().join("pg.tar.zst");
    db.backup(&archive, None, |_, _| {})?;
    drop(admin);
    drop(db);
    let manifest = docmeta_core::verify_backup(&archive)?;
    assert!(
        manifest.files.iter().any(|f| f.path == "db.pgdump"),
        "{manifest:?}"
    );
    // Without a database URL the restore is refused before anything is touched.
    let target = dir.path().join("b");
    assert!(matches!(
        docmeta_core::restore(std::slice::from_ref(&archive), &target, None),
        Err(docmeta_core::Error::InvalidInput(_))
    ));
    assert!(!target.join("document_file_storage").exists());
    let restored_url = fresh_url();
    let report = docmeta_core::restore_to(&[archive], &target, None, Some(&restored_url))?;
    assert_eq!((report.documents, report.search_answers), (1, true));
    assert!(report.file_checked.is_some());
    let db = docmeta_core::Docmeta::builder()
        .data_dir(&target)
        .postgres(&restored_url)
        .open()?;
    assert_eq!(db.system().document(doc.id)?.document.label, "INV-9");
    assert_eq!(db.system().read_file(file.id)?, b"scanned");
    assert_eq!(db.events(&all)?, events, "every event with its changes");
    Ok(())
}

/// Two processes' handles on one database, each with its own data directory.
fn two_processes() -> docmeta_core::Result<(
    docmeta_core::Docmeta,
    docmeta_core::Docmeta,
    [tempfile::TempDir; 2],
)> {
    two_processes_on(&fresh_url())
}

/// [`two_processes`] on the database at `url`.
fn two_processes_on(
    url: &str,
) -> docmeta_core::Result<(
    docmeta_core::Docmeta,
    docmeta_core::Docmeta,
    [tempfile::TempDir; 2],
)> {
    let config = docmeta_core::Config {
        password_hash_memory_kib: 64,
        password_hash_iterations: 1,
        ..Default::default()
    };
    let dirs = [
        tempfile::tempdir().expect("tempdir"),
        tempfile::tempdir().expect("tempdir"),
    ];
    let open = |dir: &tempfile::TempDir| {
        docmeta_core::Docmeta::builder()
            .data_dir(dir.path())
            .config(config.clone())
            .worker(false)
            .store(PostgresStore::open(url).expect("open"))
            .open()
    };
    let a = open(&dirs[0])?;
    let b = open(&dirs[1])?;
    Ok((a, b, dirs))
}

#[test]
fn a_password_changed_in_another_process_moves_the_credentials_epoch() -> docmeta_core::Result<()> {
    if base_url().is_none() {
        eprintln!("skipped: DOCMETA_TEST_POSTGRES_URL is not set");
        return Ok(());
    }
    let (a, b, _dirs) = two_processes()?;
    let ann = a.system().create_user("ann", "first password", false)?.id;
    b.follow_access()?;
    let before = b.credentials_epoch();
    a.system().set_password(ann, "second password")?;
    // Followed once every transaction older than the change has finished (other tests' too).
    assert!(
        eventually(|| {
            b.follow_access().expect("follow");
            b.credentials_epoch() != before
        }),
        "a login cache in the other process must stop trusting the old password"
    );
    Ok(())
}

#[test]
fn a_nul_character_is_a_validation_error_on_postgres() -> docmeta_core::Result<()> {
    if base_url().is_none() {
        eprintln!("skipped: DOCMETA_TEST_POSTGRES_URL is not set");
        return Ok(());
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let db = docmeta_core::Docmeta::builder()
        .data_dir(dir.path())
        .store(fresh_store())
        .open()?;
    let admin = db.system();
    let t = admin.create_document_type("Invoice")?;
    let number =
        admin.create_metadata_type(docmeta_core::MetadataTypeInput::new("number", "Number"))?;
    admin.associate(t.id, number.id, false)?;
    let doc = admin.create_document(t.id, "INV-1", &[])?.document;
    let refused = admin.add_document_metadata(doc.id, number.id, "12\u{0}3");
    assert!(
        matches!(&refused, Err(docmeta_core::Error::Validation { field, .. }) if field == "value"),
        "{refused:?}"
    );
    let refused = admin.create_cabinet("Shared\u{0}", None);
    assert!(
        matches!(&refused, Err(docmeta_core::Error::Validation { field, .. }) if field == "label"),
        "{refused:?}"
    );
    Ok(())
}

/// Rewrites the `db.pgdump` entry of a backup archive with `edit`, keeping `contents.json` and
/// the manifest consistent with it (a well-formed archive around a bad dump).
fn rewrite_dump(
    src: &std::path::Path,
    dst: &std::path::Path,
    edit: impl FnOnce(Vec<u8>) -> Vec<u8>,
) {
    let mut entries = archive::read_entries(src);
    let i = entries
        .iter()
        .position(|(p, _)| p == "db.pgdump")
        .expect("dump");
    entries[i].1 = edit(std::mem::take(&mut entries[i].1));
    let (size, sha) = docmeta_core::sha256(&mut &entries[i].1[..]).expect("hash");
    for (p, bytes) in entries.iter_mut() {
        if p != "contents.json" && p != "manifest.json" {
            continue;
        }
        let mut json: serde_json::Value = serde_json::from_slice(bytes).expect("json");
        for list in ["files", "entries"] {
            for item in json[list].as_array_mut().into_iter().flatten() {
                if item["path"] == "db.pgdump" {
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

#[test]
fn an_unusable_postgres_backup_leaves_the_database_and_the_directory_as_they_were()
-> docmeta_core::Result<()> {
    if base_url().is_none() {
        eprintln!("skipped: DOCMETA_TEST_POSTGRES_URL is not set");
        return Ok(());
    }
    let dir = tempfile::tempdir().expect("tempdir");
    // The installation a restore must not damage.
    let live_url = fresh_url();
    let live_dir = dir.path().join("live");
    let open_live = || {
        docmeta_core::Docmeta::builder()
            .data_dir(&live_dir)
            .postgres(&live_url)
            .open()
    };
    let live = open_live()?;
    let t = live.system().create_document_type("Live")?;
    live.system().create_document(t.id, "Still here", &[])?;
    drop(live);
    // A backup whose database says it comes from a newer docmeta.
    let source = fresh_url();
    let db = docmeta_core::Docmeta::builder()
        .data_dir(dir.path().join("source"))
        .postgres(&source)
        .open()?;
    db.system().create_document_type("From the backup")?;
    let mut client = postgres::Client::connect(&source, postgres::NoTls).expect("connect");
    client
        .batch_execute("INSERT INTO schema_version (version) VALUES (99)")
        .expect("bump");
    let newer = dir.path().join("newer.tar.zst");
    db.backup(&newer, None, |_, _| {})?;
    drop(db);
    // And one whose dump is cut in half (consistent checksums: the archive is well formed).
    let truncated = dir.path().join("truncated.tar.zst");
    rewrite_dump(&newer, &truncated, |mut d| {
        d.truncate(d.len() / 2);
        d
    });
    docmeta_core::verify_backup(&truncated)?;
    for (archive, says) in [(newer, "schema version 99"), (truncated, "cannot be read")] {
        let err = docmeta_core::restore_to(&[archive], &live_dir, None, Some(&live_url))
            .expect_err("refused");
        assert!(
            matches!(err, docmeta_core::Error::InvalidInput(_)) && err.to_string().contains(says),
            "{err}"
        );
        let live = open_live()?;
        let docs = live
            .system()
            .documents(DocumentQuery::default(), PageRequest::new(1, 10))?
            .items;
        assert_eq!(docs.len(), 1);
        assert_eq!(docs[0].document.label, "Still here");
    }
    Ok(())
}

/// The SQLite migrations as PostgreSQL ran them before it had its own (docmeta up to schema
/// version 4): a literal snapshot of how databases already in use were created.
const SQLITE_MIGRATIONS: [&str; 4] = [
    include_str!("../../core/src/store/migrations/sqlite/0001_initial.sql"),
    include_str!("../../core/src/store/migrations/sqlite/0002_document_files.sql"),
    include_str!("../../core/src/store/migrations/sqlite/0003_workflows.sql"),
    include_str!("../../core/src/store/migrations/sqlite/0004_template_authors.sql"),
];

fn translated_as_before(sql: &str) -> String {
    sql.replace(
        "INTEGER PRIMARY KEY AUTOINCREMENT",
        "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY",
    )
    .replace("INTEGER", "BIGINT")
}

/// A database made the old way up to `version`, as an installation of an older docmeta left it.
fn migrated_as_before(version: usize) -> String {
    let url = fresh_url();
    // Creates `schema_version` exactly as the store does.
    PostgresStore::open(&url)
        .expect("open")
        .schema_version()
        .expect("schema version");
    let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    for (i, sql) in SQLITE_MIGRATIONS[..version].iter().enumerate() {
        client
            .batch_execute(&translated_as_before(sql))
            .expect("old migration");
        client
            .execute(
                "INSERT INTO schema_version (version) VALUES ($1)",
                &[&(i as i64 + 1)],
            )
            .expect("record version");
    }
    url
}

/// Every column (type, nullability, default, identity), index and constraint of `url`'s public
/// schema, one line each, sorted.
fn schema_of(url: &str) -> Vec<String> {
    let mut client = postgres::Client::connect(url, postgres::NoTls).expect("connect");
    let mut lines = Vec::new();
    for row in client
        .query(
            "SELECT table_name::text, column_name::text, ordinal_position::int8, data_type::text, \
                    is_nullable::text, coalesce(column_default::text, ''), is_identity::text, \
                    coalesce(identity_generation::text, '') \
             FROM information_schema.columns WHERE table_schema = 'public'",
            &[],
        )
        .expect("columns")
    {
        lines.push(format!(
            "column {}.{} #{} {} nullable={} default={} identity={} {}",
            row.get::<_, String>(0),
            row.get::<_, String>(1),
            row.get::<_, i64>(2),
            row.get::<_, String>(3),
            row.get::<_, String>(4),
            row.get::<_, String>(5),
            row.get::<_, String>(6),
            row.get::<_, String>(7),
        ));
    }
    for row in client
        .query(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = 'public'",
            &[],
        )
        .expect("indexes")
    {
        lines.push(format!("index {}", row.get::<_, String>(0)));
    }
    for row in client
        .query(
            "SELECT conrelid::regclass::text, conname::text, pg_get_constraintdef(oid) \
             FROM pg_constraint WHERE connamespace = 'public'::regnamespace",
            &[],
        )
        .expect("constraints")
    {
        lines.push(format!(
            "constraint {} {} {}",
            row.get::<_, String>(0),
            row.get::<_, String>(1),
            row.get::<_, String>(2),
        ));
    }
    lines.sort();
    lines
}

/// Asserts two schemas are the same, naming only the lines that differ.
fn assert_same_schema(got: &[String], expected: &[String]) {
    assert!(expected.len() > 100, "the schema was read: {expected:?}");
    let missing: Vec<_> = expected.iter().filter(|l| !got.contains(l)).collect();
    let extra: Vec<_> = got.iter().filter(|l| !expected.contains(l)).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "missing: {missing:#?}\nextra: {extra:#?}"
    );
}

#[test]
fn a_new_database_has_the_schema_older_versions_made() -> docmeta_core::Result<()> {
    if base_url().is_none() {
        eprintln!("skipped: DOCMETA_TEST_POSTGRES_URL is not set");
        return Ok(());
    }
    // Made the old way up to version 4, then PostgreSQL's own migrations from there.
    let before = migrated_as_before(SQLITE_MIGRATIONS.len());
    let now = fresh_url();
    // Every version a new database gets (not every number is one).
    let all = PostgresStore::open(&now)?.migrate()?;
    assert_eq!(
        PostgresStore::open(&before)?.migrate()?,
        all.into_iter().filter(|v| *v >= 5).collect::<Vec<_>>()
    );
    assert_same_schema(&schema_of(&now), &schema_of(&before));
    Ok(())
}

#[test]
fn an_older_database_migrates_to_the_schema_of_a_new_one() -> docmeta_core::Result<()> {
    if base_url().is_none() {
        eprintln!("skipped: DOCMETA_TEST_POSTGRES_URL is not set");
        return Ok(());
    }
    let old = migrated_as_before(2);
    let fresh = fresh_url();
    let all = PostgresStore::open(&fresh)?.migrate()?;
    let store = PostgresStore::open(&old)?;
    assert_eq!(
        store.migrate()?,
        all.into_iter().filter(|v| *v >= 3).collect::<Vec<_>>()
    );
    assert_same_schema(&schema_of(&old), &schema_of(&fresh));
    Ok(())
}

#[path = "upgrade/template_shapers.rs"]
mod template_shapers;

#[test]
fn templates_stored_before_shapers_were_recorded_get_every_author_of_their_type()
-> docmeta_core::Result<()> {
    if base_url().is_none() {
        eprintln!("skipped: DOCMETA_TEST_POSTGRES_URL is not set");
        return Ok(());
    }
    let url = fresh_url();
    let dir = tempfile::tempdir().expect("dir");
    let open = || -> docmeta_core::Result<docmeta_core::Docmeta> {
        docmeta_core::Docmeta::builder()
            .data_dir(dir.path())
            .store(PostgresStore::open(&url)?)
            .worker(false)
            .open()
    };
    let staged = template_shapers::stage(&open()?)?;
    let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    client
        .batch_execute(template_shapers::BACK_TO_SCHEMA_6)
        .expect("back to schema 6");
    drop(client);
    template_shapers::check(&open()?, &staged)
}

#[path = "upgrade/event_changes.rs"]
mod event_changes;

#[test]
fn events_written_before_changes_were_recorded_read_as_changing_nothing_on_postgres()
-> docmeta_core::Result<()> {
    if base_url().is_none() {
        eprintln!("skipped: DOCMETA_TEST_POSTGRES_URL is not set");
        return Ok(());
    }
    let url = fresh_url();
    let dir = tempfile::tempdir().expect("dir");
    let open = || -> docmeta_core::Result<docmeta_core::Docmeta> {
        docmeta_core::Docmeta::builder()
            .data_dir(dir.path())
            .store(PostgresStore::open(&url)?)
            .worker(false)
            .open()
    };
    let staged = event_changes::stage(&open()?)?;
    let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    client
        .batch_execute(event_changes::BACK_TO_SCHEMA_9)
        .expect("back to schema 9");
    drop(client);
    event_changes::check(&open()?, &staged)
}

/// Opens the data directory `dir` on the database `url` without a worker (tasks run only when
/// told), taking its index writer as a server would.
fn index_writer_on(
    dir: &std::path::Path,
    url: &str,
) -> docmeta_core::Result<docmeta_core::Docmeta> {
    let db = docmeta_core::Docmeta::builder()
        .data_dir(dir)
        .store(PostgresStore::open(url)?)
        .open()?;
    assert!(
        db.writes_search_index()?,
        "{dir:?}: nobody else holds the writer"
    );
    Ok(db)
}

#[test]
fn search_work_is_left_to_the_writer_of_the_index_it_names() -> docmeta_core::Result<()> {
    use docmeta_core::{SearchWork, SearchWorkRun, SearchWorkState};
    if base_url().is_none() {
        eprintln!("skipped: DOCMETA_TEST_POSTGRES_URL is not set");
        return Ok(());
    }
    let url = fresh_url();
    let (a_dir, b_dir) = (
        tempfile::tempdir().expect("a"),
        tempfile::tempdir().expect("b"),
    );
    // Two data directories on one database, each with its writer: two servers' indexes.
    let a = index_writer_on(a_dir.path(), &url)?;
    let b = index_writer_on(b_dir.path(), &url)?;
    let s = a.system();
    let t = s.create_document_type("Memo")?;
    s.create_document(t.id, "kept in both indexes", &[])?;
    a.wait_for_index()?;
    b.wait_for_index()?;
    // A command beside A's server hands `initialize` to A's writer.
    let command = docmeta_core::Docmeta::builder()
        .data_dir(a_dir.path())
        .store(PostgresStore::open(&url)?)
        .open()?;
    let SearchWorkRun::HandedOff(ticket) =
        command.search_work(&SearchWork::Initialize, |_, _| {})?
    else {
        panic!("A's writer is held: the work is handed to it");
    };
    assert_eq!(b.run_pending_tasks()?, 0, "B's writer leaves A's work");
    assert!(matches!(
        command.search_work_state(&ticket)?,
        SearchWorkState::Pending { attempts: 0, .. }
    ));
    assert_eq!(a.run_pending_tasks()?, 1, "A's writer runs it");
    assert_eq!(
        command.search_work_state(&ticket)?,
        SearchWorkState::Done(Some(0))
    );
    assert_eq!(a.search_status()?.documents, 0, "A's index was initialized");
    assert_eq!(b.search_status()?.documents, 1, "B's index was not");
    Ok(())
}

#[test]
fn handed_off_work_on_two_indexes_reports_each_its_own_count() -> docmeta_core::Result<()> {
    use docmeta_core::{SearchWork, SearchWorkRun, SearchWorkState};
    if base_url().is_none() {
        eprintln!("skipped: DOCMETA_TEST_POSTGRES_URL is not set");
        return Ok(());
    }
    let url = fresh_url();
    let (a_dir, b_dir) = (
        tempfile::tempdir().expect("a"),
        tempfile::tempdir().expect("b"),
    );
    let a = index_writer_on(a_dir.path(), &url)?;
    let b = index_writer_on(b_dir.path(), &url)?;
    let s = a.system();
    let t = s.create_document_type("Memo")?;
    s.create_document(t.id, "one", &[])?;
    s.create_document(t.id, "two", &[])?;
    let hand_off = |dir: &std::path::Path, work: SearchWork| {
        let command = docmeta_core::Docmeta::builder()
            .data_dir(dir)
            .store(PostgresStore::open(&url)?)
            .open()?;
        match command.search_work(&work, |_, _| {})? {
            SearchWorkRun::HandedOff(ticket) => Ok((command, ticket)),
            SearchWorkRun::Done(_) => panic!("the writer is held: handed off"),
        }
    };
    let (on_a, reindex) = hand_off(a_dir.path(), SearchWork::Reindex)?;
    let (on_b, initialize) = hand_off(b_dir.path(), SearchWork::Initialize)?;
    assert_eq!(a.run_pending_tasks()?, 1);
    // B's work runs after A's: it must not overwrite the count A's command reports.
    assert_eq!(b.run_pending_tasks()?, 1);
    assert_eq!(
        on_a.search_work_state(&reindex)?,
        SearchWorkState::Done(Some(2))
    );
    assert_eq!(
        on_b.search_work_state(&initialize)?,
        SearchWorkState::Done(Some(0))
    );
    Ok(())
}

/// A PostgreSQL store shared with the test, so that its round trips can be read while a
/// `Docmeta` uses it.
struct Counted(std::sync::Arc<PostgresStore>);

impl Store for Counted {
    fn begin(
        &self,
        mode: docmeta_core::store::Mode,
    ) -> docmeta_core::Result<Box<dyn docmeta_core::store::Transaction + '_>> {
        self.0.begin(mode)
    }
    fn begin_statement(
        &self,
    ) -> docmeta_core::Result<Box<dyn docmeta_core::store::Transaction + '_>> {
        self.0.begin_statement()
    }
    fn dialect(&self) -> docmeta_core::store::Dialect {
        self.0.dialect()
    }
    fn migrate(&self) -> docmeta_core::Result<Vec<u32>> {
        self.0.migrate()
    }
    fn schema_version(&self) -> docmeta_core::Result<(u32, u32)> {
        self.0.schema_version()
    }
    fn describe(&self) -> String {
        self.0.describe()
    }
}

/// The round trips of `f` on `store`, and the `INSERT`, `UPDATE` and `DELETE` statements it
/// ran.
fn round_trips_of(store: &PostgresStore, f: impl FnOnce()) -> (u64, u64) {
    let (trips, data) = (store.round_trips(), store.data_statements());
    f();
    (store.round_trips() - trips, store.data_statements() - data)
}

/// A fresh database behind a store that counts its round trips, opened with no worker (so the
/// counts hold only what a test does), and the data directory it uses.
fn counted_instance() -> docmeta_core::Result<(
    tempfile::TempDir,
    std::sync::Arc<PostgresStore>,
    docmeta_core::Docmeta,
)> {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = std::sync::Arc::new(fresh_store());
    let db = docmeta_core::Docmeta::builder()
        .data_dir(dir.path())
        .worker(false)
        .store(Counted(store.clone()))
        .open()?;
    Ok((dir, store, db))
}

#[test]
fn a_metadata_write_takes_a_bounded_number_of_round_trips() -> docmeta_core::Result<()> {
    if base_url().is_none() {
        eprintln!("skipped: DOCMETA_TEST_POSTGRES_URL is not set");
        return Ok(());
    }
    let (_dir, store, db) = counted_instance()?;
    let admin = db.system();
    let t = admin.create_document_type("Invoice")?;
    let due = admin.create_metadata_type(
        docmeta_core::MetadataTypeInput::new("due", "Due")
            .parser("svc.apps.metadata.metadata_parsers.DateParser", ""),
    )?;
    let note = admin.create_metadata_type(docmeta_core::MetadataTypeInput::new("note", "Note"))?;
    admin.associate(t.id, due.id, true)?;
    admin.associate(t.id, note.id, false)?;
    // Warm: every statement below prepared once on the pooled connection, as in a server.
    let warm = admin.create_document(t.id, "INV-0", &[(due.id, "01/01/2024")])?;
    let m = admin
        .add_document_metadata(warm.document.id, note.id, "n")?
        .value;
    admin.edit_document_metadata(warm.document.id, m.id, "m", None)?;
    let doc = admin
        .create_document(t.id, "INV-1", &[(due.id, "31/12/2024")])?
        .document;
    let due_value = admin
        .document_metadata(doc.id, PageRequest::ALL)
        .map(|p| p.items.into_iter().map(|v| v.value).collect::<Vec<_>>())?
        .into_iter()
        .find(|m| m.metadata_type_id == due.id)
        .expect("the due date");

    let add = round_trips_of(&store, || {
        admin
            .add_document_metadata(doc.id, note.id, "a note")
            .expect("add");
    });
    let edit = round_trips_of(&store, || {
        admin
            .edit_document_metadata(doc.id, due_value.id, "01/02/2025", None)
            .expect("edit");
    });
    let create = round_trips_of(&store, || {
        admin
            .create_document(
                t.id,
                "INV-2",
                &[(due.id, "31/12/2024"), (note.id, "another note")],
            )
            .expect("create");
    });
    for (what, (trips, _)) in [
        ("add a value", add),
        ("edit a value through the date parser", edit),
        ("create a document with two values", create),
    ] {
        eprintln!("round trips to PostgreSQL, {what}: {trips}");
    }
    // The figures measured, with room for one more round trip each. Before writers ran
    // concurrently (a savepoint per statement, one statement per round trip): 11, 12 and 25. Then,
    // statement by statement: 7, 6 and 13. Then `BEGIN` travelled with the first statement and the
    // edit's UPDATE with its event: 6, 4 and 12. Now each call first reads what other
    // processes committed (one statement, no transaction): 7, 5 and 13. Now a write also reads,
    // in its own transaction, the value type of each metadata type it writes values of (once per
    // type per call, so that another process's change of it cannot be missed): 8, 6 and 16.
    assert!(add.0 <= 9, "add a value: {add:?}");
    assert!(edit.0 <= 7, "edit a value: {edit:?}");
    assert!(create.0 <= 17, "create a document: {create:?}");
    Ok(())
}

#[test]
fn an_edit_that_triggers_a_workflow_check_takes_a_bounded_number_of_round_trips()
-> docmeta_core::Result<()> {
    if base_url().is_none() {
        eprintln!("skipped: DOCMETA_TEST_POSTGRES_URL is not set");
        return Ok(());
    }
    let (_dir, store, db) = counted_instance()?;
    let admin = db.system();
    let t = admin.create_document_type("Invoice")?;
    let status =
        admin.create_metadata_type(docmeta_core::MetadataTypeInput::new("status", "Status"))?;
    admin.associate(t.id, status.id, true)?;
    // The demo's invoice workflow: editing the status moves an invoice on when it says so.
    let flow = admin.create_workflow("Approval", &[t.id])?.id;
    let draft = admin.create_workflow_state(flow, "draft", true)?.id;
    let review = admin.create_workflow_state(flow, "review", false)?.id;
    let submit = admin.create_workflow_transition(
        flow,
        "submit",
        draft,
        review,
        "{% if workflow_instance.document.metadata_value_of.status == 'review' %}True{% endif %}",
    )?;
    admin.add_workflow_trigger(flow, submit.id, "document_metadata_edited")?;
    db.run_pending_tasks()?; // the association's lifecycle task (no worker here)
    let value_of = |doc| {
        admin
            .document_metadata(doc, PageRequest::ALL)
            .map(|p| p.items.into_iter().map(|v| v.value).collect::<Vec<_>>())
            .expect("values")
            .into_iter()
            .find(|m| m.metadata_type_id == status.id)
            .expect("the status")
    };
    // Warm: every statement below prepared once on the pooled connection, as in a server.
    let warm = admin.create_document(t.id, "INV-0", &[(status.id, "draft")])?;
    admin.edit_document_metadata(
        warm.document.id,
        value_of(warm.document.id).id,
        "drafted",
        None,
    )?;
    let doc = admin
        .create_document(t.id, "INV-1", &[(status.id, "draft")])?
        .document;
    let value = value_of(doc.id);

    let (trips, _) = round_trips_of(&store, || {
        admin
            .edit_document_metadata(doc.id, value.id, "still a draft", None)
            .expect("edit");
    });
    eprintln!("round trips to PostgreSQL, an edit whose trigger's condition says no: {trips}");
    // The trigger ran, found nothing to do and left no task behind.
    assert!(db.open_tasks()?.is_empty(), "{:?}", db.open_tasks()?);
    let instance = &admin.workflow_instances(doc.id)?[0];
    assert_eq!(instance.state_id, Some(draft));
    // Before: the edit enqueued a trigger task, which was then claimed, read, run and marked
    // done in four transactions of their own (31 round trips); then the trigger ran in the
    // edit's transaction (7: the document with its values and labels read with the triggered
    // transitions); then `BEGIN` and the UPDATE travelled with the next statement (5); now the
    // call first reads what other processes committed (6).
    assert!(trips <= 7, "an edit with its trigger: {trips} round trips");
    Ok(())
}

#[test]
fn the_index_catches_up_on_many_edits_of_one_document_in_one_batch() -> docmeta_core::Result<()> {
    if base_url().is_none() {
        eprintln!("skipped: DOCMETA_TEST_POSTGRES_URL is not set");
        return Ok(());
    }
    let (_dir, store, db) = counted_instance()?;
    let admin = db.system();
    let t = admin.create_document_type("Invoice")?;
    let note = admin.create_metadata_type(docmeta_core::MetadataTypeInput::new("note", "Note"))?;
    admin.associate(t.id, note.id, false)?;
    let doc = admin.create_document(t.id, "INV-1", &[])?.document;
    let value = admin.add_document_metadata(doc.id, note.id, "0")?.value;
    db.wait_for_index()?;
    // Three pages of events (1,000 each), all about one document.
    for i in 1..=3000 {
        admin.edit_document_metadata(doc.id, value.id, &i.to_string(), None)?;
    }
    let mut applied = 0;
    let (trips, writes) =
        round_trips_of(&store, || applied = db.wait_for_index().expect("catch up"));
    assert_eq!(applied, 3000);
    assert_eq!(db.search_status()?.events_behind, 0);
    // One index update (and so one write of the index's cursor) for the three pages, not one
    // per page: each update commits the index (fsyncs, new segments).
    assert_eq!(writes, 1, "cursor writes: {writes} ({trips} round trips)");
    Ok(())
}

#[test]
fn a_transaction_whose_statement_failed_refuses_to_commit() -> docmeta_core::Result<()> {
    if base_url().is_none() {
        eprintln!("skipped: DOCMETA_TEST_POSTGRES_URL is not set");
        return Ok(());
    }
    use docmeta_core::store::Mode;
    let store = fresh();
    let mut tx = store.begin(Mode::Write)?;
    let insert = "INSERT INTO document_types (label) VALUES (?1)";
    tx.execute(insert, &[docmeta_core::store::Param::Text("kept?")])?;
    let refused = tx.execute(insert, &[docmeta_core::store::Param::Text("kept?")]);
    assert!(
        matches!(refused, Err(docmeta_core::Error::Conflict { .. })),
        "{refused:?}"
    );
    // The caller went on regardless: the commit must not pretend the first insert is stored.
    let commit = tx.commit();
    assert!(
        matches!(commit, Err(docmeta_core::Error::Conflict { .. })),
        "{commit:?}"
    );
    assert_eq!(
        document_type_count(&*store)?,
        0,
        "nothing of the failed transaction was stored"
    );
    Ok(())
}

/// The document types stored, read in a transaction of their own.
fn document_type_count(store: &dyn Store) -> docmeta_core::Result<i64> {
    let mut tx = store.begin(docmeta_core::store::Mode::Read)?;
    let mut count = 0;
    tx.query("SELECT count(*) FROM document_types", &[], &mut |r| {
        count = r.int(0)?;
        Ok(())
    })?;
    Ok(count)
}

/// A write transaction on `store` that holds back two inserts of the same label: the second
/// one fails (a unique label) once it is sent.
fn holding_back_a_duplicate(
    store: &dyn Store,
) -> docmeta_core::Result<Box<dyn docmeta_core::store::Transaction + '_>> {
    use docmeta_core::store::{Mode, Param};
    let mut tx = store.begin(Mode::Write)?;
    let insert = "INSERT INTO document_types (label) VALUES (?1)";
    tx.execute_later(insert, &[Param::Text("kept?")])?;
    tx.execute_later(insert, &[Param::Text("kept?")])?;
    Ok(tx)
}

#[test]
fn a_held_back_write_that_fails_fails_the_next_statement_and_the_commit() -> docmeta_core::Result<()>
{
    if base_url().is_none() {
        eprintln!("skipped: DOCMETA_TEST_POSTGRES_URL is not set");
        return Ok(());
    }
    let store = fresh();
    let mut tx = holding_back_a_duplicate(&*store)?;
    // The duplicate is only sent with this query, whose answer is then its error.
    let refused = tx.query("SELECT 1", &[], &mut |_| Ok(()));
    assert!(
        matches!(refused, Err(docmeta_core::Error::Conflict { .. })),
        "{refused:?}"
    );
    let commit = tx.commit();
    assert!(
        matches!(commit, Err(docmeta_core::Error::Conflict { .. })),
        "{commit:?}"
    );
    assert_eq!(document_type_count(&*store)?, 0, "nothing was stored");
    Ok(())
}

#[test]
fn a_held_back_write_that_fails_with_the_commit_fails_the_commit() -> docmeta_core::Result<()> {
    if base_url().is_none() {
        eprintln!("skipped: DOCMETA_TEST_POSTGRES_URL is not set");
        return Ok(());
    }
    let store = fresh();
    let tx = holding_back_a_duplicate(&*store)?;
    // PostgreSQL answers the COMMIT of an aborted transaction with a ROLLBACK, not an error:
    // the held-back statement's own error must come back.
    let commit = tx.commit();
    assert!(
        matches!(commit, Err(docmeta_core::Error::Conflict { .. })),
        "{commit:?}"
    );
    assert_eq!(document_type_count(&*store)?, 0, "nothing was stored");
    Ok(())
}

#[test]
fn a_statement_that_cannot_be_prepared_fails_the_commit() -> docmeta_core::Result<()> {
    if base_url().is_none() {
        eprintln!("skipped: DOCMETA_TEST_POSTGRES_URL is not set");
        return Ok(());
    }
    use docmeta_core::store::{Mode, Param};
    let store = fresh();
    let mut tx = store.begin(Mode::Write)?;
    tx.execute(
        "INSERT INTO document_types (label) VALUES (?1)",
        &[Param::Text("kept?")],
    )?;
    // Its Parse fails inside the transaction, which PostgreSQL then aborts.
    let refused = tx.query("SELECT * FROM no_such_table", &[], &mut |_| Ok(()));
    assert!(refused.is_err());
    let commit = tx.commit();
    assert!(commit.is_err(), "{commit:?}");
    assert_eq!(document_type_count(&*store)?, 0, "nothing was stored");
    Ok(())
}

#[test]
fn a_held_back_write_that_cannot_be_sent_keeps_the_commit_behind_it_unsent()
-> docmeta_core::Result<()> {
    if base_url().is_none() {
        eprintln!("skipped: DOCMETA_TEST_POSTGRES_URL is not set");
        return Ok(());
    }
    use docmeta_core::store::{Mode, Param};
    let store = fresh();
    let mut tx = store.begin(Mode::Write)?;
    tx.execute(
        "INSERT INTO document_types (label) VALUES (?1)",
        &[Param::Text("kept?")],
    )?;
    // Two placeholders and one value: the driver refuses to encode it, so it is never sent.
    tx.execute_later(
        "INSERT INTO document_types (label) VALUES (?1 || ?2)",
        &[Param::Text("a")],
    )?;
    let commit = tx.commit();
    assert!(commit.is_err(), "{commit:?}");
    // The COMMIT behind it was not sent either: the first insert is not stored.
    assert_eq!(document_type_count(&*store)?, 0, "nothing was stored");
    Ok(())
}

#[test]
fn store_calls_from_async_code_on_a_runtime_worker_run_instead_of_panicking()
-> docmeta_core::Result<()> {
    if base_url().is_none() {
        eprintln!("skipped: DOCMETA_TEST_POSTGRES_URL is not set");
        return Ok(());
    }
    use docmeta_core::store::Mode;
    let url = fresh_url();
    let store = std::sync::Arc::new(PostgresStore::open_with_pool(&url, 2)?);
    store.migrate()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .expect("runtime");
    let on_worker = store.clone();
    // Called straight from a task (not through spawn_blocking), as an application might: two
    // transactions at once (the second opens a connection there), then a connection the server
    // closed, dropped and replaced there.
    let outcome = runtime.block_on(runtime.spawn(async move {
        let first = on_worker.begin(Mode::Read)?;
        let second = document_type_count(&*on_worker)?;
        drop(first);
        let pid = backend_of(&on_worker)?;
        // (The synchronous `postgres` crate of the test itself needs block_in_place here.)
        tokio::task::block_in_place(|| {
            let mut admin = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
            admin
                .execute(
                    "SELECT pg_terminate_backend($1::int4, 5000)",
                    &[&i32::try_from(pid).expect("pid")],
                )
                .expect("terminate");
        });
        let replaced = backend_of(&on_worker)?;
        docmeta_core::Result::Ok((second, pid != replaced))
    }));
    let (count, replaced) = outcome.expect("the task did not panic")?;
    assert_eq!(count, 0);
    assert!(replaced);
    Ok(())
}

#[test]
fn a_list_of_ids_is_prepared_once_whatever_its_ids() -> docmeta_core::Result<()> {
    if base_url().is_none() {
        eprintln!("skipped: DOCMETA_TEST_POSTGRES_URL is not set");
        return Ok(());
    }
    let (_dir, store, db) = counted_instance()?;
    let admin = db.system();
    let t = admin.create_document_type("Invoice")?;
    let cabinet = admin.create_cabinet("Inbox", None)?;
    for i in 0..3 {
        let doc = admin
            .create_document(t.id, &format!("INV-{i}"), &[])?
            .document;
        admin.set_cabinet_document(cabinet.id, doc.id, true)?;
    }
    // Each page of one reads the documents of another list of ids.
    let page = |number| {
        round_trips_of(&store, || {
            admin
                .cabinet_documents(cabinet.id, PageRequest::new(number, 1))
                .expect("page");
        })
        .0
    };
    page(1);
    let new_list = page(2);
    let same_list = page(2);
    // Were the ids written into the statement, a new list would be a new statement to prepare:
    // one more round trip than the same list again.
    assert_eq!(new_list, same_list);
    assert_eq!(page(3), same_list);
    Ok(())
}

#[test]
fn held_back_writes_commit_with_the_commit_in_one_round_trip() -> docmeta_core::Result<()> {
    if base_url().is_none() {
        eprintln!("skipped: DOCMETA_TEST_POSTGRES_URL is not set");
        return Ok(());
    }
    use docmeta_core::store::{Mode, Param};
    let store = fresh_store();
    store.migrate()?;
    let insert = "INSERT INTO document_types (label) VALUES (?1)";
    // Prepared once on the connection, as in a running server.
    let mut tx = store.begin(Mode::Write)?;
    tx.execute(insert, &[Param::Text("warm")])?;
    tx.commit()?;
    let before = store.round_trips();
    let mut tx = store.begin(Mode::Write)?;
    tx.execute_later(insert, &[Param::Text("a")])?;
    tx.execute_later(insert, &[Param::Text("b")])?;
    tx.commit()?;
    assert_eq!(
        store.round_trips() - before,
        1,
        "BEGIN, both inserts and COMMIT"
    );
    assert_eq!(document_type_count(&store)?, 3);
    Ok(())
}

#[test]
fn a_transaction_that_runs_no_statement_sends_nothing() -> docmeta_core::Result<()> {
    if base_url().is_none() {
        eprintln!("skipped: DOCMETA_TEST_POSTGRES_URL is not set");
        return Ok(());
    }
    use docmeta_core::store::Mode;
    let store = fresh_store();
    let before = store.round_trips();
    store.begin(Mode::Write)?.commit()?;
    drop(store.begin(Mode::Read)?);
    assert_eq!(store.round_trips(), before);
    Ok(())
}

/// The server process behind a store's only connection, read in a transaction of its own.
fn backend_of(store: &PostgresStore) -> docmeta_core::Result<i64> {
    let mut tx = store.begin(docmeta_core::store::Mode::Read)?;
    let mut pid = 0;
    tx.query("SELECT pg_backend_pid()", &[], &mut |r| {
        pid = r.int(0)?;
        Ok(())
    })?;
    Ok(pid)
}

#[test]
fn a_pooled_connection_the_server_closed_is_replaced_before_a_transaction_uses_it()
-> docmeta_core::Result<()> {
    let Some(_) = base_url() else {
        eprintln!("skipped: DOCMETA_TEST_POSTGRES_URL is not set");
        return Ok(());
    };
    let url = fresh_url();
    let store = std::sync::Arc::new(PostgresStore::open_with_pool(&url, 1)?);
    let first = backend_of(&store)?;
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    // As a restart of the server does: the backend ends (waiting up to 5 s for it to).
    let ended: bool = admin
        .query_one(
            "SELECT pg_terminate_backend($1::int4, 5000)",
            &[&i32::try_from(first).expect("pid")],
        )
        .expect("terminate")
        .get(0);
    assert!(ended);
    // Neither a hang, nor a panic, nor a failed transaction: the closed connection is noticed
    // when it leaves the pool, and a new one is opened.
    let (sent, answer) = std::sync::mpsc::channel();
    let user = store.clone();
    std::thread::spawn(move || {
        let _ = sent.send(backend_of(&user).map_err(|e| e.to_string()));
    });
    let second = answer
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("the transaction returned")
        .expect("the transaction ran on a new connection");
    assert_ne!(second, first);
    Ok(())
}

/// A writer's transaction left open on `url` after it wrote an event with the next id (so every
/// later writer's events have larger ids but commit first). With `user`, it also creates a
/// superuser of that name and logs the change as a user edit.
fn open_writer(url: &str, user: Option<&str>) -> (postgres::Client, i64) {
    let mut client = postgres::Client::connect(url, postgres::NoTls).expect("connect");
    client.batch_execute("BEGIN").expect("begin");
    let mut target = 0_i64;
    if let Some(name) = user {
        target = client
            .query_one(
                "INSERT INTO users (username, password_hash, is_superuser, is_active, created) VALUES ($1, 'x', 1, 1, 0) RETURNING id",
                &[&name],
            )
            .expect("insert a user")
            .get(0);
    }
    let id: i64 = client
        .query_one(
            "INSERT INTO events (timestamp, name, target_kind, target_id, target_label, follow) VALUES (0, $1, 'auth.user', $2, 'slow', 1) RETURNING id",
            &[&docmeta_core::Event::USER_EDITED, &target],
        )
        .expect("insert an event")
        .get(0);
    (client, id)
}

/// Whether `done` becomes true within 10 s. Followers on PostgreSQL read an event once every
/// transaction older than its own has finished, which in a test run includes other tests'.
fn eventually(mut done: impl FnMut() -> bool) -> bool {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::time::Instant::now() < until {
        if done() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    false
}

/// A handle on the database at `url` with no worker (so only the test follows the log), and
/// its data directory (kept while the handle is used).
fn follower_on(url: &str) -> docmeta_core::Result<(docmeta_core::Docmeta, tempfile::TempDir)> {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = docmeta_core::Docmeta::builder()
        .data_dir(dir.path())
        .worker(false)
        .store(PostgresStore::open(url).expect("open"))
        .open()?;
    Ok((db, dir))
}

fn ids_after(db: &docmeta_core::Docmeta, after: i64) -> Vec<i64> {
    db.events(&docmeta_core::EventQuery {
        after: Some(docmeta_core::EventId(after)),
        oldest_first: true,
        limit: Some(1000),
        ..Default::default()
    })
    .expect("events")
    .iter()
    .map(|e| e.id.0)
    .collect()
}

#[test]
fn a_follower_never_reads_past_an_event_whose_transaction_is_still_open() -> docmeta_core::Result<()>
{
    if base_url().is_none() {
        eprintln!("skipped: DOCMETA_TEST_POSTGRES_URL is not set");
        return Ok(());
    }
    let url = fresh_url();
    let (db, _dir) = follower_on(&url)?;
    let cursor = ids_after(&db, 0).last().copied().unwrap_or(0);
    let (mut slow, slow_id) = open_writer(&url, None);
    // Another writer commits an event with a larger id while the slow one is still open.
    db.system().create_document_type("Invoice")?;
    let fast_id = db
        .events(&docmeta_core::EventQuery::default())?
        .first()
        .map(|e| e.id.0)
        .expect("the committed event");
    assert!(fast_id > slow_id, "{fast_id} > {slow_id}");
    assert_eq!(
        ids_after(&db, cursor),
        Vec::<i64>::new(),
        "reading the committed {fast_id} now would make the follower skip {slow_id}"
    );
    slow.batch_execute("COMMIT").expect("commit");
    assert!(
        eventually(|| ids_after(&db, cursor) == [slow_id, fast_id]),
        "{:?}",
        ids_after(&db, cursor)
    );
    Ok(())
}

#[test]
fn a_follower_passing_the_last_event_it_read_reads_each_event_once() -> docmeta_core::Result<()> {
    if base_url().is_none() {
        eprintln!("skipped: DOCMETA_TEST_POSTGRES_URL is not set");
        return Ok(());
    }
    let url = fresh_url();
    let (db, _dir) = follower_on(&url)?;
    let start = ids_after(&db, 0).last().copied().unwrap_or(0);
    // Commit order differs from id order: the slow writer's smaller id commits last.
    let (mut slow, slow_id) = open_writer(&url, None);
    db.system().create_document_type("Invoice")?;
    slow.batch_execute("COMMIT").expect("commit");
    db.system().create_document_type("Contract")?;
    let mut seen = Vec::new();
    let mut cursor = start;
    assert!(eventually(|| ids_after(&db, start).len() == 3));
    loop {
        let page = db.events(&docmeta_core::EventQuery {
            after: Some(docmeta_core::EventId(cursor)),
            oldest_first: true,
            limit: Some(1),
            ..Default::default()
        })?;
        let Some(last) = page.last() else { break };
        cursor = last.id.0;
        seen.push(cursor);
    }
    let mut sorted = seen.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert_eq!(sorted.len(), 3, "no event twice: {seen:?}");
    assert!(seen.contains(&slow_id), "{seen:?}");
    Ok(())
}

#[test]
fn another_process_access_change_committed_after_a_later_one_is_still_followed()
-> docmeta_core::Result<()> {
    if base_url().is_none() {
        eprintln!("skipped: DOCMETA_TEST_POSTGRES_URL is not set");
        return Ok(());
    }
    let url = fresh_url();
    let (a, b, _dirs) = two_processes_on(&url)?;
    let (mut slow, _) = open_writer(&url, Some("late"));
    // A later access change commits first, and the follower reads it.
    // A later access change commits first, and the follower follows the log.
    a.system().create_user("early", "a password", true)?;
    b.follow_access()?;
    slow.batch_execute("COMMIT").expect("commit");
    let late = b
        .system()
        .users()?
        .into_iter()
        .find(|u| u.username == "late")
        .expect("the late user")
        .id;
    let early = b
        .system()
        .users()?
        .into_iter()
        .find(|u| u.username == "early")
        .expect("the early user")
        .id;
    let sees = |user| {
        b.check(
            user,
            docmeta_core::Permission::DocumentTypeCreate,
            docmeta_core::ObjectRef::new(docmeta_core::ObjectKind::DOCUMENT_TYPE, 1),
        )
    };
    assert!(
        eventually(|| {
            b.follow_access().expect("follow");
            sees(early) && sees(late)
        }),
        "the follower skipped the superuser whose change committed after a later one"
    );
    Ok(())
}

#[test]
fn history_restored_from_a_cluster_further_ahead_is_followed_before_new_events()
-> docmeta_core::Result<()> {
    if base_url().is_none() {
        eprintln!("skipped: DOCMETA_TEST_POSTGRES_URL is not set");
        return Ok(());
    }
    let url = fresh_url();
    let (db, _dir) = follower_on(&url)?;
    db.system().create_document_type("Invoice")?;
    drop(db);
    // As if dumped from a cluster whose transaction ids are far ahead of this one's.
    let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    client
        .batch_execute("UPDATE events SET tx = 9000000000000")
        .expect("age the history");
    let (db, _dir) = follower_on(&url)?;
    let old = ids_after(&db, 0);
    assert!(!old.is_empty());
    db.system().create_document_type("Contract")?;
    assert!(
        eventually(|| ids_after(&db, *old.last().expect("an old event")).len() == 1),
        "the new event comes after the restored history: {:?}",
        ids_after(&db, 0)
    );
    Ok(())
}

/// Every process answers from the same truth: after a revoke through one process, another process
/// on the same database served the document for up to 1.16 s (50 of 50 tries), and after a grant
/// answered 404 for up to 1.35 s. Every call of a session now applies what any process
/// committed before it started: no follower runs here (no worker, no `follow_access`).
#[test]
fn a_grant_and_a_revoke_through_one_process_are_honoured_by_another_at_once()
-> docmeta_core::Result<()> {
    if base_url().is_none() {
        eprintln!("skipped: DOCMETA_TEST_POSTGRES_URL is not set");
        return Ok(());
    }
    use docmeta_core::{ObjectKind, ObjectRef, Permission};
    let (a, b, _dirs) = two_processes()?;
    let admin = a.system();
    let t = admin.create_document_type("Secret")?;
    let doc = admin.create_document(t.id, "payroll", &[])?.document;
    let eve = admin.create_user("eve", "eve's password", false)?;
    let group = admin.create_group("Staff")?.id;
    let role = admin.create_role("Readers")?.id;
    admin.set_group_member(group, eve.id, true)?;
    admin.set_role_group(role, group, true)?;
    let on_doc = ObjectRef::new(ObjectKind::DOCUMENT, doc.id.0);
    let reader = b.session(eve.id);
    for round in 0..50 {
        admin.grant(Permission::DocumentView, role, on_doc)?;
        assert_eq!(
            reader.document(doc.id)?.document.label,
            "payroll",
            "round {round}: a grant committed through A is seen through B"
        );
        admin.revoke(Permission::DocumentView, role, on_doc)?;
        assert!(
            matches!(reader.document(doc.id), Err(Error::NotFound(_))),
            "round {round}: a revoke committed through A is honoured through B"
        );
        assert!(!b.check(eve.id, Permission::DocumentView, on_doc));
    }
    Ok(())
}

/// The same truth under load: process B answered 404 for documents created through A in the
/// second after. A document created, moved to another type or deleted through one process is
/// known to the other at its next call, read document by document (no reload of the whole
/// snapshot).
#[test]
fn documents_created_moved_and_deleted_through_one_process_are_known_to_another_at_once()
-> docmeta_core::Result<()> {
    if base_url().is_none() {
        eprintln!("skipped: DOCMETA_TEST_POSTGRES_URL is not set");
        return Ok(());
    }
    use docmeta_core::{ObjectKind, ObjectRef, Permission};
    let (a, b, _dirs) = two_processes()?;
    let admin = a.system();
    let open = admin.create_document_type("Open")?;
    let closed = admin.create_document_type("Closed")?;
    let eve = admin.create_user("eve", "eve's password", false)?;
    let group = admin.create_group("Staff")?.id;
    let role = admin.create_role("Readers")?.id;
    admin.set_group_member(group, eve.id, true)?;
    admin.set_role_group(role, group, true)?;
    admin.grant(
        Permission::DocumentView,
        role,
        ObjectRef::new(ObjectKind::DOCUMENT_TYPE, open.id.0),
    )?;
    let reader = b.session(eve.id);
    for n in 0..20 {
        let doc = admin
            .create_document(open.id, &format!("note {n}"), &[])?
            .document;
        assert_eq!(reader.document(doc.id)?.document.label, format!("note {n}"));
        let page = reader.documents(
            DocumentQuery {
                newest_first: true,
                ..Default::default()
            },
            PageRequest::new(1, 20),
        )?;
        assert_eq!(page.count, n + 1, "the count of B knows the new document");
        admin.change_document_type(doc.id, closed.id)?;
        assert!(matches!(reader.document(doc.id), Err(Error::NotFound(_))));
        admin.change_document_type(doc.id, open.id)?;
        assert!(reader.document(doc.id).is_ok());
    }
    let last = admin.create_document(open.id, "to delete", &[])?.document;
    assert!(reader.document(last.id).is_ok());
    admin.delete_document(last.id)?;
    assert!(matches!(reader.document(last.id), Err(Error::NotFound(_))));
    Ok(())
}

/// A user deactivated, or whose password changed, through one process: the other stops
/// trusting its cached login at once (the credentials epoch moves at its next catch-up), and
/// the user's sessions there are refused.
#[test]
fn a_user_deactivated_through_one_process_is_refused_by_another_at_once() -> docmeta_core::Result<()>
{
    if base_url().is_none() {
        eprintln!("skipped: DOCMETA_TEST_POSTGRES_URL is not set");
        return Ok(());
    }
    let (a, b, _dirs) = two_processes()?;
    let admin = a.system();
    let t = admin.create_document_type("Memo")?;
    let eve = admin.create_user("eve", "eve's password", true)?;
    let reader = b.session(eve.id);
    assert!(reader.document_type(t.id).is_ok());
    let before = {
        b.catch_up()?;
        b.credentials_epoch()
    };
    admin.update_user(
        eve.id,
        docmeta_core::UserUpdate {
            is_active: Some(false),
            ..Default::default()
        },
    )?;
    b.catch_up()?;
    assert_ne!(
        b.credentials_epoch(),
        before,
        "a login cache must verify again"
    );
    assert!(
        reader.document_type(t.id).is_err(),
        "an inactive user is refused"
    );
    Ok(())
}

/// A validator set through one process applies to the other's next write, with no follower
/// running.
#[test]
fn a_validator_set_through_one_process_applies_to_the_next_write_of_another()
-> docmeta_core::Result<()> {
    if base_url().is_none() {
        eprintln!("skipped: DOCMETA_TEST_POSTGRES_URL is not set");
        return Ok(());
    }
    let (a, b, _dirs) = two_processes()?;
    let memo = a.system().create_document_type("Memo")?;
    let code = a
        .system()
        .create_metadata_type(docmeta_core::MetadataTypeInput::new("code", "Code"))?;
    a.system().associate(memo.id, code.id, false)?;
    // Compiled (and cached) by B without a validator.
    b.system()
        .create_document(memo.id, "first", &[(code.id, "anything")])?;
    a.system().update_metadata_type(
        code.id,
        docmeta_core::MetadataTypeInput::new("code", "Code").validation(
            "svc.apps.metadata.metadata_validators.RegularExpressionValidator",
            "pattern: '^[0-9]+$'",
        ),
    )?;
    assert!(matches!(
        b.system()
            .create_document(memo.id, "second", &[(code.id, "letters")]),
        Err(Error::Validation { .. })
    ));
    Ok(())
}

/// When nothing changed, a catch-up is one statement that reads no event: what every call of a
/// session costs on PostgreSQL for the guarantee above.
#[test]
fn a_catch_up_with_nothing_new_is_one_round_trip() -> docmeta_core::Result<()> {
    if base_url().is_none() {
        eprintln!("skipped: DOCMETA_TEST_POSTGRES_URL is not set");
        return Ok(());
    }
    let (_dir, store, db) = counted_instance()?;
    db.system().create_document_type("Memo")?;
    db.catch_up()?;
    let (trips, _) = round_trips_of(&store, || db.catch_up().expect("catch up"));
    assert_eq!(trips, 1);
    Ok(())
}

/// A replica of a user's view of a PostgreSQL installation: the server's half of sync (the
/// log position a pass starts from, what was sent to the device, a sweep after a revoke) and of
/// push (a write applied, a conflict) on PostgreSQL.
#[test]
fn a_replica_syncs_and_pushes_against_a_postgres_server() -> docmeta_core::Result<()> {
    use docmeta_core::{
        InProcessServer, ObjectKind, ObjectRef, Permission as P, PushResult, Replica,
    };
    if base_url().is_none() {
        eprintln!("skipped: DOCMETA_TEST_POSTGRES_URL is not set");
        return Ok(());
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let db = docmeta_core::Docmeta::builder()
        .data_dir(dir.path())
        .config(docmeta_core::Config {
            password_hash_memory_kib: 64,
            password_hash_iterations: 1,
            ..Default::default()
        })
        .store(fresh_store())
        .open()?;
    let admin = db.system();
    let ann = admin.create_user("ann", "a long password", false)?.id;
    let group = admin.create_group("readers")?.id;
    let role = admin.create_role("reader")?.id;
    admin.set_group_member(group, ann, true)?;
    admin.set_role_group(role, group, true)?;
    let memo = admin.create_document_type("Memo")?;
    let note = admin.create_metadata_type(docmeta_core::MetadataTypeInput::new("note", "Note"))?;
    admin.associate(memo.id, note.id, false)?;
    let on_memo = ObjectRef::new(ObjectKind::DOCUMENT_TYPE, memo.id.0);
    let on_note = ObjectRef::new(ObjectKind::METADATA_TYPE, note.id.0);
    admin.grant(P::DocumentView, role, on_memo)?;
    // Ann may create memos without viewing their type as a type: her replica is sent the
    // type's associations (to the metadata types she may view) to check its writes against.
    admin.grant(P::DocumentCreate, role, on_memo)?;
    admin.grant(P::MetadataTypeView, role, on_note)?;
    for p in [
        P::DocumentMetadataView,
        P::DocumentMetadataEdit,
        P::DocumentMetadataAdd,
    ] {
        admin.grant(p, role, on_memo)?;
        admin.grant(p, role, on_note)?;
    }
    let doc = admin
        .create_document(memo.id, "Minutes", &[(note.id, "draft")])?
        .document;
    let local = tempfile::tempdir().expect("tempdir");
    let replica = Replica::open_with(
        local.path(),
        InProcessServer::new(db.clone()),
        "ann",
        "a long password",
    )?;
    replica.sync()?;
    let held = |r: &Replica| -> docmeta_core::Result<Vec<i64>> {
        Ok(r.session()
            .documents(DocumentQuery::default(), PageRequest::ALL)?
            .items
            .iter()
            .map(|d| d.document.id.0)
            .collect())
    };
    assert_eq!(held(&replica)?, [doc.id.0]);
    // Offline: a write applied; then one in conflict with a change on the server.
    replica.set_value(doc.id, note.id, "final")?;
    assert_eq!(replica.sync()?.pushed, 1);
    assert_eq!(
        admin.metadata_value_of(doc.id, "note")?.as_deref(),
        Some("final")
    );
    replica.set_value(doc.id, note.id, "mine")?;
    let value = admin.document_metadata(doc.id, PageRequest::ALL)?.items[0]
        .value
        .clone();
    admin.edit_document_metadata(doc.id, value.id, "theirs", None)?;
    assert_eq!(replica.sync()?.rejected, 1);
    assert!(matches!(
        &replica.rejected()?[0].result,
        PushResult::Conflict { server } if server.as_deref() == Some("theirs")
    ));
    // A revoke: the document leaves the replica at the next sync.
    // A document created offline: created once on the server (the device's key is recorded
    // in PostgreSQL), and the replica holds the server's document in its place.
    let made = replica.create_document(memo.id, "Made offline", &[(note.id, "x")])?;
    assert!(made.document.id.0 >= docmeta_core::LOCAL_IDS);
    assert_eq!(replica.sync()?.pushed, 1);
    let on_server = admin.document_ids(Some(memo.id))?;
    assert_eq!(on_server.len(), 2);
    assert!(
        held(&replica)?
            .iter()
            .all(|id| on_server.contains(&docmeta_core::DocumentId(*id)))
    );
    // The revoke's event is followed once every older transaction of the cluster has finished
    // (docs/postgresql.md, "The event log no follower can skip"): other tests share the
    // cluster, so sync until it is (bounded).
    admin.revoke(P::DocumentView, role, on_memo)?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        replica.sync()?;
        if held(&replica)?.is_empty() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the revoked document is still held after 30 s of syncs"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Ok(())
}
