//! The read cache of documents with their metadata (`Config::read_cache_documents`): what it
//! answers from memory is never older than an acknowledged write of this process, never shows
//! a caller what the access snapshot now refuses, and never serves a copy that another
//! process's write made old (each read first catches up with what was committed).

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use docmeta_core::{
    Config, Docmeta, DocumentId, DocumentMetadataId, MetadataPageVersion, MetadataTypeInput,
    ObjectKind, ObjectRef, PageRequest, Permission as P, Result, Session, UserId,
};

/// Cheap password hashing: these tests are about reads, not Argon2 cost.
fn config(read_cache_documents: Option<usize>) -> Config {
    Config {
        password_hash_memory_kib: 64,
        password_hash_iterations: 1,
        read_cache_documents,
        ..Default::default()
    }
}

/// A document of type `Invoice` with one `note` value, and `ann`, who may view invoices and
/// their metadata through the role `Clerk`.
struct World {
    db: Docmeta,
    admin: Session,
    ann: UserId,
    role: docmeta_core::RoleId,
    invoices: ObjectRef,
    doc: DocumentId,
    note: DocumentMetadataId,
}

fn world_on(db: Docmeta) -> Result<World> {
    let admin = db.system();
    let invoice = admin.create_document_type("Invoice")?;
    let note = admin.create_metadata_type(MetadataTypeInput::new("note", "Note"))?;
    admin.associate(invoice.id, note.id, false)?;
    let doc = admin
        .create_document(invoice.id, "INV-1", &[(note.id, "first")])?
        .document;
    let ann = admin.create_user("ann", "a long password", false)?.id;
    let group = admin.create_group("Clerks")?.id;
    let role = admin.create_role("Clerk")?.id;
    admin.set_group_member(group, ann, true)?;
    admin.set_role_group(role, group, true)?;
    let invoices = ObjectRef::new(ObjectKind::DOCUMENT_TYPE, invoice.id.0);
    for p in [P::DocumentView, P::DocumentMetadataView] {
        admin.grant(p, role, invoices)?;
    }
    admin.grant(
        P::DocumentMetadataView,
        role,
        ObjectRef::new(ObjectKind::METADATA_TYPE, note.id.0),
    )?;
    let note = admin
        .document_metadata(doc.id, PageRequest::ALL)
        .map(|p| p.items.into_iter().map(|v| v.value).collect::<Vec<_>>())?[0]
        .id;
    Ok(World {
        db,
        admin,
        ann,
        role,
        invoices,
        doc: doc.id,
        note,
    })
}

/// A handle on the data directory `dir`, as a server (`worker`) or a command beside it.
fn open_dir(dir: &std::path::Path, read_cache: Option<usize>, worker: bool) -> Result<Docmeta> {
    Docmeta::builder()
        .data_dir(dir)
        .config(config(read_cache))
        .worker(worker)
        .open()
}

fn world() -> Result<World> {
    world_on(Docmeta::builder().config(config(None)).open()?)
}

/// The `note` value `session` is shown, or `None` when it is shown no value.
fn note_of(session: &Session, doc: DocumentId) -> Result<Option<String>> {
    Ok(session
        .document_metadata(doc, PageRequest::ALL)
        .map(|p| p.items.into_iter().map(|v| v.value).collect::<Vec<_>>())?
        .into_iter()
        .next()
        .map(|m| m.value))
}

#[test]
fn a_document_read_once_is_answered_from_memory() -> Result<()> {
    let w = world()?;
    let ann = w.db.session(w.ann);
    // Any write empties the cache.
    w.admin
        .edit_document_metadata(w.doc, w.note, "first", None)?;
    assert!(
        ann.document_metadata_if_cached(w.doc, PageRequest::new(1, 20))
            .is_none()
    );
    ann.document_metadata(w.doc, PageRequest::new(1, 20))?;
    let (_, cached) = ann
        .document_metadata_if_cached(w.doc, PageRequest::new(1, 20))
        .expect("read once, the document is in the cache")?;
    assert_eq!(cached.items.len(), 1);
    assert_eq!(cached.items[0].value.value, "first");
    Ok(())
}

#[test]
fn a_cached_read_shows_a_value_edited_after_it() -> Result<()> {
    let w = world()?;
    let ann = w.db.session(w.ann);
    assert_eq!(note_of(&ann, w.doc)?.as_deref(), Some("first"));
    w.admin
        .edit_document_metadata(w.doc, w.note, "second", None)?;
    assert!(
        ann.document_metadata_if_cached(w.doc, PageRequest::new(1, 20))
            .is_none(),
        "the edit emptied the cache"
    );
    assert_eq!(note_of(&ann, w.doc)?.as_deref(), Some("second"));
    Ok(())
}

#[test]
fn a_cached_document_is_refused_at_once_after_its_view_is_revoked() -> Result<()> {
    let w = world()?;
    let ann = w.db.session(w.ann);
    note_of(&ann, w.doc)?;
    w.admin.revoke(P::DocumentView, w.role, w.invoices)?;
    // Revoking emptied the cache too; read it back in as the administrator, so that the
    // refusal below comes from the check on a cached copy.
    w.admin
        .document_metadata(w.doc, PageRequest::ALL)
        .map(|p| p.items.into_iter().map(|v| v.value).collect::<Vec<_>>())?;
    let cached = ann
        .document_metadata_if_cached(w.doc, PageRequest::new(1, 20))
        .expect("the administrator's read cached the document");
    assert!(cached.is_err(), "ann may no longer view the document");
    assert!(
        ann.document_metadata(w.doc, PageRequest::ALL)
            .map(|p| p.items.into_iter().map(|v| v.value).collect::<Vec<_>>())
            .is_err()
    );
    Ok(())
}

#[test]
fn a_cached_document_hides_the_values_of_a_type_its_caller_may_not_view() -> Result<()> {
    let w = world()?;
    let admin_reads = w
        .admin
        .document_metadata(w.doc, PageRequest::ALL)
        .map(|p| p.items.into_iter().map(|v| v.value).collect::<Vec<_>>())?;
    assert_eq!(admin_reads.len(), 1);
    let note_type = admin_reads[0].metadata_type_id;
    w.admin.revoke(
        P::DocumentMetadataView,
        w.role,
        ObjectRef::new(ObjectKind::METADATA_TYPE, note_type.0),
    )?;
    w.admin
        .document_metadata(w.doc, PageRequest::ALL)
        .map(|p| p.items.into_iter().map(|v| v.value).collect::<Vec<_>>())?;
    let ann = w.db.session(w.ann);
    let (_, cached) = ann
        .document_metadata_if_cached(w.doc, PageRequest::new(1, 20))
        .expect("the administrator's read cached the document")?;
    assert!(cached.items.is_empty());
    assert_eq!(cached.count, 0);
    Ok(())
}

/// The version of what `session` is shown of the document, which must be cached.
fn version_of(session: &Session, doc: DocumentId) -> Result<MetadataPageVersion> {
    session
        .document_metadata_version_if_cached(doc)
        .expect("the document is cached")
}

#[test]
fn a_page_comes_with_the_version_of_what_it_shows() -> Result<()> {
    let w = world()?;
    let ann = w.db.session(w.ann);
    note_of(&ann, w.doc)?;
    let (version, _) = ann
        .document_metadata_if_cached(w.doc, PageRequest::new(1, 20))
        .expect("cached")?;
    assert_eq!(version, version_of(&ann, w.doc)?);
    Ok(())
}

#[test]
fn two_callers_shown_the_same_values_get_the_same_version() -> Result<()> {
    let w = world()?;
    note_of(&w.admin, w.doc)?;
    assert_eq!(
        version_of(&w.admin, w.doc)?,
        version_of(&w.db.session(w.ann), w.doc)?
    );
    Ok(())
}

#[test]
fn a_caller_shown_fewer_values_gets_another_version() -> Result<()> {
    let w = world()?;
    let note_type = w
        .admin
        .document_metadata(w.doc, PageRequest::ALL)
        .map(|p| p.items.into_iter().map(|v| v.value).collect::<Vec<_>>())?[0]
        .metadata_type_id;
    w.admin.revoke(
        P::DocumentMetadataView,
        w.role,
        ObjectRef::new(ObjectKind::METADATA_TYPE, note_type.0),
    )?;
    note_of(&w.admin, w.doc)?;
    assert_ne!(
        version_of(&w.admin, w.doc)?,
        version_of(&w.db.session(w.ann), w.doc)?
    );
    Ok(())
}

#[test]
fn the_version_changes_with_an_edit() -> Result<()> {
    let w = world()?;
    let ann = w.db.session(w.ann);
    note_of(&ann, w.doc)?;
    let before = version_of(&ann, w.doc)?;
    w.admin
        .edit_document_metadata(w.doc, w.note, "second", None)?;
    note_of(&ann, w.doc)?;
    assert_ne!(before, version_of(&ann, w.doc)?);
    Ok(())
}

#[test]
fn a_caller_who_may_not_view_the_document_gets_no_version() -> Result<()> {
    let w = world()?;
    w.admin.revoke(P::DocumentView, w.role, w.invoices)?;
    note_of(&w.admin, w.doc)?;
    let version =
        w.db.session(w.ann)
            .document_metadata_version_if_cached(w.doc)
            .expect("cached");
    assert!(version.is_err());
    Ok(())
}

#[test]
fn an_unknown_document_is_not_found_and_not_cached() -> Result<()> {
    let w = world()?;
    let ann = w.db.session(w.ann);
    assert!(
        ann.document_metadata(DocumentId(9_999), PageRequest::ALL)
            .map(|p| p.items.into_iter().map(|v| v.value).collect::<Vec<_>>())
            .is_err()
    );
    assert!(
        ann.document_metadata_if_cached(DocumentId(9_999), PageRequest::new(1, 20))
            .is_none()
    );
    Ok(())
}

#[test]
fn a_read_cache_of_zero_documents_caches_nothing() -> Result<()> {
    let w = world_on(Docmeta::builder().config(config(Some(0))).open()?)?;
    let ann = w.db.session(w.ann);
    note_of(&ann, w.doc)?;
    assert!(
        ann.document_metadata_if_cached(w.doc, PageRequest::new(1, 20))
            .is_none()
    );
    Ok(())
}

/// Two handles on one data directory, as a command beside a server: the server's cached copy
/// gives way to the command's edit at the server's next read, with nothing following the log
/// (security review, round two: every process answers from the same truth).
#[test]
fn another_process_edit_reaches_a_cached_read_at_the_next_read() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let open = |cache| open_dir(dir.path(), cache, false);
    let server = open(Some(100))?;
    let w = world_on(server.clone())?;
    let command = open(None)?;
    let ann = server.session(w.ann);
    for n in 0..20 {
        assert!(note_of(&ann, w.doc)?.is_some());
        assert!(
            ann.document_metadata_version_if_cached(w.doc).is_some(),
            "cached"
        );
        let value = format!("from the command, {n}");
        command
            .system()
            .edit_document_metadata(w.doc, w.note, &value, None)?;
        assert!(
            ann.document_metadata_version_if_cached(w.doc).is_none(),
            "the cached copy is not served after another process's edit"
        );
        assert_eq!(note_of(&ann, w.doc)?.as_deref(), Some(value.as_str()));
    }
    Ok(())
}

#[test]
fn a_data_directory_opened_without_the_worker_has_a_read_cache_by_default_too() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = open_dir(dir.path(), None, false)?;
    let w = world_on(db)?;
    let ann = w.db.session(w.ann);
    note_of(&ann, w.doc)?;
    assert!(ann.document_metadata_version_if_cached(w.doc).is_some());
    Ok(())
}

#[test]
fn a_data_directory_opened_with_the_worker_has_a_read_cache_by_default() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = open_dir(dir.path(), None, true)?;
    let w = world_on(db)?;
    let ann = w.db.session(w.ann);
    // The worker following the set-up's events empties the cache once: read until it holds.
    for _ in 0..100 {
        note_of(&ann, w.doc)?;
        if ann.document_metadata_version_if_cached(w.doc).is_some() {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("the document never stayed in the read cache");
}

#[test]
fn without_the_read_cache_another_process_edit_is_read_at_once() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let open = |cache| open_dir(dir.path(), cache, false);
    let server = open(Some(0))?;
    let w = world_on(server.clone())?;
    let command = open(Some(0))?;
    let ann = server.session(w.ann);
    assert_eq!(note_of(&ann, w.doc)?.as_deref(), Some("first"));
    command
        .system()
        .edit_document_metadata(w.doc, w.note, "from the command", None)?;
    assert_eq!(note_of(&ann, w.doc)?.as_deref(), Some("from the command"));
    Ok(())
}

/// One thread edits a value again and again, publishing each edit's number once it is
/// acknowledged; readers on other threads must never be shown an older number than the last
/// one published before their read began (a copy read while an edit committed must not be
/// served after it).
#[test]
fn a_read_never_shows_a_value_older_than_an_acknowledged_edit() -> Result<()> {
    let w = world()?;
    let acknowledged = Arc::new(AtomicI64::new(0));
    w.admin.edit_document_metadata(w.doc, w.note, "0", None)?;
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let ann = w.db.session(w.ann);
            let acknowledged = acknowledged.clone();
            let doc = w.doc;
            std::thread::spawn(move || -> Result<()> {
                loop {
                    let floor = acknowledged.load(Ordering::SeqCst);
                    let shown: i64 = note_of(&ann, doc)?
                        .expect("ann sees the note")
                        .parse()
                        .expect("a number");
                    assert!(
                        shown >= floor,
                        "shown {shown} after edit {floor} was acknowledged"
                    );
                    if floor >= 300 {
                        return Ok(());
                    }
                }
            })
        })
        .collect();
    for i in 1..=300 {
        w.admin
            .edit_document_metadata(w.doc, w.note, &i.to_string(), None)?;
        acknowledged.store(i, Ordering::SeqCst);
    }
    for r in readers {
        r.join().expect("a reader panicked")?;
    }
    Ok(())
}
