//! Several processes on one data directory: one of them writes the search index; every other
//! opener reads it, writes the database freely, and hands index work to the writer.

use std::path::Path;
use std::time::{Duration, Instant};

use docmeta_core::{DATA_DIRECTORY_IN_USE, Docmeta, Error, PageRequest, Result};
use docmeta_core::{SearchTicket, SearchWork, SearchWorkRun, SearchWorkState};

/// Opens `dir` as a server would (its worker takes the index writer at once).
fn server(dir: &Path) -> Result<Docmeta> {
    Docmeta::builder().data_dir(dir).worker(true).open()
}

/// Opens `dir` as a command would (no worker).
fn command(dir: &Path) -> Result<Docmeta> {
    Docmeta::builder().data_dir(dir).worker(false).open()
}

/// Opens `dir` holding the index writer but without a worker: tasks run only when told.
fn writer_without_worker(dir: &Path) -> Result<Docmeta> {
    let db = command(dir)?;
    assert!(db.writes_search_index()?, "nobody else holds the writer");
    Ok(db)
}

fn wait_until_done(db: &Docmeta, ticket: &SearchTicket) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match db.search_work_state(ticket)? {
            SearchWorkState::Done(_) => return Ok(()),
            SearchWorkState::Failed(e) => panic!("{ticket:?} failed: {e}"),
            _ if Instant::now() > deadline => panic!("{ticket:?} did not finish"),
            _ => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

#[test]
fn a_second_opener_does_not_need_the_index_writer() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let _server = server(dir.path())?;
    let other = command(dir.path())?;
    assert!(!other.writes_search_index()?, "the server holds the writer");
    assert_eq!(other.search_status()?.documents, 0);
    Ok(())
}

#[test]
fn a_process_without_the_writer_writes_the_database() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let _server = writer_without_worker(dir.path())?;
    let other = command(dir.path())?;
    let s = other.system();
    let t = s.create_document_type("Memo")?;
    let d = s
        .create_document(t.id, "written beside the writer", &[])?
        .document;
    assert_eq!(
        s.document(d.id)?.document.label,
        "written beside the writer"
    );
    assert_eq!(other.wait_for_index()?, 0, "the holder applies the events");
    Ok(())
}

#[test]
fn a_reader_sees_what_the_writer_indexed() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let writer = writer_without_worker(dir.path())?;
    let reader = command(dir.path())?;
    assert!(!reader.writes_search_index()?);
    let s = reader.system();
    let t = s.create_document_type("Memo")?;
    let d = s.create_document(t.id, "quarterly figures", &[])?.document;
    writer.wait_for_index()?;
    let found = s.search_documents("quarterly", PageRequest::new(1, 10))?;
    assert_eq!(
        found
            .items
            .iter()
            .map(|d| d.document.id)
            .collect::<Vec<_>>(),
        [d.id]
    );
    assert_eq!(reader.search_status()?.events_behind, 0);
    Ok(())
}

#[test]
fn search_work_runs_here_when_no_process_holds_the_writer() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = command(dir.path())?;
    let s = db.system();
    let t = s.create_document_type("Memo")?;
    s.create_document(t.id, "one", &[])?;
    assert_eq!(
        db.search_work(&SearchWork::Reindex, |_, _| {})?,
        SearchWorkRun::Done(1)
    );
    Ok(())
}

#[test]
fn search_work_is_handed_to_the_holder_and_run_by_its_worker() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let _server = server(dir.path())?;
    let cli = command(dir.path())?;
    let s = cli.system();
    let t = s.create_document_type("Memo")?;
    for i in 0..3 {
        s.create_document(t.id, &format!("memo {i}"), &[])?;
    }
    let SearchWorkRun::HandedOff(ticket) = cli.search_work(&SearchWork::Reindex, |_, _| {})? else {
        panic!("the server holds the writer: the work is its");
    };
    wait_until_done(&cli, &ticket)?;
    assert_eq!(cli.search_status()?.documents, 3);
    assert_eq!(
        cli.search_work_state(&ticket)?,
        SearchWorkState::Done(Some(3)),
        "the count the waiting command reports"
    );
    Ok(())
}

#[test]
fn a_process_without_the_writer_leaves_search_tasks_to_the_holder() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let holder = writer_without_worker(dir.path())?;
    let cli = command(dir.path())?;
    let SearchWorkRun::HandedOff(ticket) = cli.search_work(&SearchWork::Initialize, |_, _| {})?
    else {
        panic!("handed off");
    };
    assert_eq!(cli.run_pending_tasks()?, 0);
    assert!(matches!(
        cli.search_work_state(&ticket)?,
        SearchWorkState::Pending { .. }
    ));
    assert_eq!(holder.run_pending_tasks()?, 1);
    assert_eq!(
        cli.search_work_state(&ticket)?,
        SearchWorkState::Done(Some(0))
    );
    Ok(())
}

#[test]
fn index_writing_calls_without_the_writer_are_refused_not_run() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let _holder = writer_without_worker(dir.path())?;
    let cli = command(dir.path())?;
    assert!(matches!(
        cli.search_reindex(|_, _| {}),
        Err(Error::Conflict { .. })
    ));
    Ok(())
}

#[test]
fn the_writer_passes_to_another_process_when_its_holder_closes() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let holder = writer_without_worker(dir.path())?;
    let other = command(dir.path())?;
    assert!(!other.writes_search_index()?);
    drop(holder);
    assert!(other.writes_search_index()?);
    Ok(())
}

#[test]
fn exclusive_use_is_refused_naming_the_process_holding_the_directory() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let _server = server(dir.path())?;
    match Docmeta::builder()
        .data_dir(dir.path())
        .exclusive(true)
        .open()
    {
        Err(Error::Conflict { field, message }) => {
            assert_eq!(field, DATA_DIRECTORY_IN_USE);
            assert_eq!(
                message,
                format!(
                    "the data directory is in use by process {}; stop it first",
                    std::process::id()
                )
            );
        }
        other => panic!("expected the directory in use, got {other:?}"),
    }
    Ok(())
}

#[test]
fn a_writer_lock_file_left_by_a_crash_does_not_hold_the_directory() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    drop(server(dir.path())?);
    // A crashed holder leaves its file and id; the operating system released its lock.
    std::fs::write(dir.path().join("search/WRITER"), "4194301\n").expect("write");
    let db = Docmeta::builder()
        .data_dir(dir.path())
        .exclusive(true)
        .open()?;
    assert!(db.writes_search_index()?);
    Ok(())
}

#[test]
fn a_password_changed_by_another_process_on_the_same_sqlite_file_is_followed() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = writer_without_worker(dir.path())?;
    let user = server
        .system()
        .create_user("alice", "first password", false)?;
    let before = server.credentials_epoch();
    let cli = command(dir.path())?;
    cli.system().update_user(
        user.id,
        docmeta_core::UserUpdate {
            password: Some("second password".into()),
            ..Default::default()
        },
    )?;
    server.follow_access()?;
    assert_ne!(server.credentials_epoch(), before);
    Ok(())
}

#[test]
fn a_grant_made_by_another_process_on_the_same_sqlite_file_is_followed() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = writer_without_worker(dir.path())?;
    let admin = server.system();
    let user = admin.create_user("bob", "bob's password", false)?;
    let cli = command(dir.path())?;
    let cli_admin = cli.system();
    let role = cli_admin.create_role("Readers")?.id;
    let group = cli_admin.create_group("Staff")?.id;
    cli_admin.set_group_member(group, user.id, true)?;
    cli_admin.set_role_group(role, group, true)?;
    cli_admin.grant_global(docmeta_core::Permission::DocumentTypeView, role)?;
    assert!(server.follow_access()?, "reloaded");
    assert!(
        server
            .session(user.id)
            .can_globally(docmeta_core::Permission::DocumentTypeView)
    );
    Ok(())
}

/// Every process answers from the same truth, on SQLite: a command beside a server (another
/// process on the same file) grants and revokes; the server's sessions honour each at their
/// next call, with no follower running (no worker, no `follow_access`).
#[test]
fn a_grant_and_a_revoke_by_another_process_on_the_same_sqlite_file_are_honoured_at_once()
-> Result<()> {
    use docmeta_core::Permission;
    use docmeta_core::{ObjectKind, ObjectRef};
    let dir = tempfile::tempdir().expect("tempdir");
    let server = writer_without_worker(dir.path())?;
    let admin = server.system();
    let t = admin.create_document_type("Secret")?;
    let doc = admin.create_document(t.id, "payroll", &[])?.document;
    let user = admin.create_user("eve", "eve's password", false)?;
    let group = admin.create_group("Staff")?.id;
    let role = admin.create_role("Readers")?.id;
    admin.set_group_member(group, user.id, true)?;
    admin.set_role_group(role, group, true)?;
    let reader = server.session(user.id);
    let cli = command(dir.path())?;
    let on_doc = ObjectRef::new(ObjectKind::DOCUMENT, doc.id.0);
    for round in 0..20 {
        cli.system().grant(Permission::DocumentView, role, on_doc)?;
        assert!(reader.document(doc.id).is_ok(), "round {round}: granted");
        cli.system()
            .revoke(Permission::DocumentView, role, on_doc)?;
        assert!(
            matches!(reader.document(doc.id), Err(Error::NotFound(_))),
            "round {round}: revoked"
        );
    }
    let other = cli.system().create_document(t.id, "another", &[])?.document;
    cli.system().grant(
        Permission::DocumentView,
        role,
        ObjectRef::new(ObjectKind::DOCUMENT_TYPE, t.id.0),
    )?;
    assert!(
        reader.document(other.id).is_ok(),
        "a document the command created"
    );
    Ok(())
}

/// Parent links an application records through one process are followed by the others at
/// their next call (they used to write no event and were never followed).
#[test]
fn parent_links_set_by_another_process_are_followed_at_once() -> Result<()> {
    use docmeta_core::Permission;
    use docmeta_core::{ObjectKind, ObjectRef};
    let dir = tempfile::tempdir().expect("tempdir");
    let server = writer_without_worker(dir.path())?;
    let admin = server.system();
    let t = admin.create_document_type("Memo")?;
    let doc = admin.create_document(t.id, "minutes", &[])?.document;
    let user = admin.create_user("eve", "eve's password", false)?;
    let group = admin.create_group("Staff")?.id;
    let role = admin.create_role("Readers")?.id;
    admin.set_group_member(group, user.id, true)?;
    admin.set_role_group(role, group, true)?;
    let on_doc = ObjectRef::new(ObjectKind::DOCUMENT, doc.id.0);
    admin.grant(Permission::DocumentCommentView, role, on_doc)?;
    let comment = ObjectRef::new(ObjectKind::DOCUMENT_COMMENT, 5);
    assert!(!server.check(user.id, Permission::DocumentCommentView, comment));
    command(dir.path())?.set_object_parents(comment, &[on_doc])?;
    assert!(
        server.check(user.id, Permission::DocumentCommentView, comment),
        "the comment inherits from its document in this process too"
    );
    Ok(())
}

#[test]
fn a_validator_set_by_another_process_on_the_same_sqlite_file_is_followed() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = writer_without_worker(dir.path())?;
    let admin = server.system();
    let memo = admin.create_document_type("Memo")?;
    let code = admin.create_metadata_type(docmeta_core::MetadataTypeInput::new("code", "Code"))?;
    admin.associate(memo.id, code.id, false)?;
    // Compiled (and cached) by the server without a validator.
    admin.create_document(memo.id, "first", &[(code.id, "anything")])?;
    let cli = command(dir.path())?;
    cli.system().update_metadata_type(
        code.id,
        docmeta_core::MetadataTypeInput::new("code", "Code").validation(
            "svc.apps.metadata.metadata_validators.RegularExpressionValidator",
            "pattern: '^[0-9]+$'",
        ),
    )?;
    server.follow_access()?;
    assert!(matches!(
        admin.create_document(memo.id, "second", &[(code.id, "letters")]),
        Err(Error::Validation { .. })
    ));
    Ok(())
}

#[test]
fn handed_off_work_is_left_to_a_live_holder() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let _holder = writer_without_worker(dir.path())?;
    let cli = command(dir.path())?;
    let SearchWorkRun::HandedOff(ticket) = cli.search_work(&SearchWork::Reindex, |_, _| {})? else {
        panic!("handed off");
    };
    assert_eq!(cli.adopt_search_work(&ticket, |_, _| {})?, None);
    Ok(())
}

#[test]
fn handed_off_work_runs_in_the_waiting_process_when_the_holder_has_gone() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let holder = writer_without_worker(dir.path())?;
    let cli = command(dir.path())?;
    let s = cli.system();
    let t = s.create_document_type("Memo")?;
    s.create_document(t.id, "one", &[])?;
    s.create_document(t.id, "two", &[])?;
    let SearchWorkRun::HandedOff(ticket) = cli.search_work(&SearchWork::Reindex, |_, _| {})? else {
        panic!("handed off");
    };
    drop(holder);
    assert_eq!(cli.adopt_search_work(&ticket, |_, _| {})?, Some(2));
    assert!(matches!(
        cli.search_work_state(&ticket)?,
        SearchWorkState::Done(_)
    ));
    assert_eq!(cli.search_status()?.documents, 2);
    Ok(())
}

#[test]
fn search_work_queued_before_the_index_directory_was_deleted_runs_on_the_new_index() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let holder = writer_without_worker(dir.path())?;
    let cli = command(dir.path())?;
    let SearchWorkRun::HandedOff(ticket) = cli.search_work(&SearchWork::Reindex, |_, _| {})? else {
        panic!("handed off");
    };
    drop((holder, cli));
    // An operator removes the index to have it rebuilt: the next index has a new id.
    std::fs::remove_dir_all(dir.path().join("search")).expect("remove the index");
    let next = writer_without_worker(dir.path())?;
    assert_eq!(
        next.run_pending_tasks()?,
        1,
        "the queued work is the new index's"
    );
    assert!(matches!(
        next.search_work_state(&ticket)?,
        SearchWorkState::Done(_)
    ));
    Ok(())
}
