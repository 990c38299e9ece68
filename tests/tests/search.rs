//! Search (spec 2.5): fields and aliases, partial values, ranges, boolean syntax, permission
//! filtering, malformed queries, and the index catching up with the event log.

use docmeta_core::{
    Config, Docmeta, DocumentId, Error, MetadataTypeInput, ObjectKind, ObjectRef, PageRequest,
    Permission, Result, Session,
};

const P: &str = "svc.apps.metadata.metadata_parsers.";

struct World {
    db: Docmeta,
    admin: Session,
    invoices: Vec<DocumentId>,
    contract: DocumentId,
}

fn world() -> Result<World> {
    let db = Docmeta::builder()
        .config(Config {
            password_hash_memory_kib: 64,
            password_hash_iterations: 1,
            ..Config::default()
        })
        .open()?;
    let admin = db.system();
    let invoice = admin.create_document_type("Invoice")?;
    let contract = admin.create_document_type("Contract")?;
    let number = admin.create_metadata_type(MetadataTypeInput::new("number", "Number"))?;
    let due = admin.create_metadata_type(
        MetadataTypeInput::new("due", "Due").parser(format!("{P}DateParser"), ""),
    )?;
    let amount = admin.create_metadata_type(MetadataTypeInput::new("amount", "Amount"))?;
    let party = admin.create_metadata_type(MetadataTypeInput::new("party", "Party"))?;
    for t in [number.id, due.id, amount.id] {
        admin.associate(invoice.id, t, false)?;
    }
    admin.associate(contract.id, party.id, false)?;
    let rows = [
        ("March invoice", "INV-2024-12345", "15/03/2024", "120.50"),
        ("Café order", "INV-2024-20001", "30/04/2024", "99"),
        ("Old invoice", "INV-2023-00007", "01/12/2023", "1000"),
    ];
    let mut invoices = Vec::new();
    for (label, n, d, a) in rows {
        invoices.push(
            admin
                .create_document(
                    invoice.id,
                    label,
                    &[(number.id, n), (due.id, d), (amount.id, a)],
                )?
                .document
                .id,
        );
    }
    let contract = admin
        .create_document(
            contract.id,
            "Supply contract",
            &[(party.id, "ACME Corporation")],
        )?
        .document
        .id;
    Ok(World {
        db,
        admin,
        invoices,
        contract,
    })
}

fn ids(s: &Session, q: &str) -> Result<Vec<DocumentId>> {
    let mut ids: Vec<DocumentId> = s
        .search_documents(q, PageRequest::new(1, 100))?
        .items
        .into_iter()
        .map(|d| d.document.id)
        .collect();
    ids.sort();
    Ok(ids)
}

#[test]
fn fields_aliases_partial_values_and_case() -> Result<()> {
    let w = world()?;
    let (a, b, c) = (w.invoices[0], w.invoices[1], w.invoices[2]);
    let s = &w.admin;
    assert_eq!(ids(s, "label:march")?, [a]);
    assert_eq!(ids(s, "label:MARCH")?, [a], "case folding");
    assert_eq!(ids(s, "label:café")?, [b], "unicode");
    assert_eq!(ids(s, "document_type__label:contract")?, [w.contract]);
    assert_eq!(ids(s, "document__document_type__label:invoice")?, [a, b, c]);
    assert_eq!(ids(s, "metadata__metadata_type__name:party")?, [w.contract]);
    assert_eq!(ids(s, "metadata_type__name:party")?, [w.contract], "alias");
    assert_eq!(ids(s, "metadata__value:acme")?, [w.contract], "whole word");
    assert_eq!(
        ids(s, "metadata_value:123")?,
        [a],
        "partial value: 123 finds INV-2024-12345"
    );
    assert_eq!(ids(s, "value:2024")?, [a, b]);
    assert_eq!(
        ids(s, "metadata_value:corp")?,
        [w.contract],
        "substring of a word"
    );
    assert_eq!(
        ids(s, "acme")?,
        [w.contract],
        "a bare word searches every field"
    );
    assert_eq!(ids(s, "invoice")?, [a, b, c]);
    Ok(())
}

#[test]
fn combined_terms_or_not_phrases_and_ranges() -> Result<()> {
    let w = world()?;
    let (a, b, c) = (w.invoices[0], w.invoices[1], w.invoices[2]);
    let s = &w.admin;
    assert_eq!(
        ids(s, "metadata_type__name:number metadata_value:12345")?,
        [a],
        "spec 2.5 combination"
    );
    assert_eq!(ids(s, "label:march OR label:old")?, [a, c]);
    assert_eq!(
        ids(s, "document_type__label:invoice NOT label:old")?,
        [a, b]
    );
    assert_eq!(ids(s, "document_type__label:invoice -label:old")?, [a, b]);
    assert_eq!(ids(s, "label:\"march invoice\"")?, [a]);
    assert!(
        ids(s, "label:\"invoice march\"")?.is_empty(),
        "a phrase keeps word order"
    );
    assert_eq!(
        ids(s, "metadata_value:[2024-01-01 TO 2024-03-31]")?,
        [a],
        "invoices due this quarter"
    );
    assert_eq!(ids(s, "metadata_value:>=2024-01-01")?, [a, b]);
    assert_eq!(ids(s, "metadata_value:<2024-01-01")?, [c]);
    assert_eq!(
        ids(s, "metadata_type__name:amount metadata_value:[100 TO 500]")?,
        [a]
    );
    assert_eq!(
        ids(s, "metadata_value:{99 TO 1000}")?,
        [a],
        "exclusive bounds"
    );
    Ok(())
}

#[test]
fn metadata_records_are_searchable_on_their_own() -> Result<()> {
    let w = world()?;
    let page = w.admin.search_metadata(
        "metadata_type__name:due value:[2024-01-01 TO 2024-12-31]",
        PageRequest::new(1, 10),
    )?;
    assert_eq!(page.count, 2);
    assert!(
        page.items
            .iter()
            .all(|m| m.value.value.starts_with("2024-"))
    );
    let page = w.admin.search_metadata(
        "document__document_type__label:contract",
        PageRequest::new(1, 10),
    )?;
    assert_eq!(
        page.items
            .iter()
            .map(|m| m.value.value.as_str())
            .collect::<Vec<_>>(),
        ["ACME Corporation"]
    );
    Ok(())
}

#[test]
fn results_are_filtered_by_permission_and_paged() -> Result<()> {
    let w = world()?;
    let user = w.admin.create_user("ann", "a long password", false)?.id;
    let group = w.admin.create_group("G")?.id;
    let role = w.admin.create_role("R")?.id;
    w.admin.set_group_member(group, user, true)?;
    w.admin.set_role_group(role, group, true)?;
    w.admin.grant(
        Permission::DocumentView,
        role,
        ObjectRef::new(ObjectKind::DOCUMENT, w.invoices[1].0),
    )?;
    let s = w.db.session(user);
    let page = s.search_documents("invoice", PageRequest::new(1, 10))?;
    assert_eq!(
        (
            page.count,
            page.items.iter().map(|d| d.document.id).collect::<Vec<_>>()
        ),
        (1, vec![w.invoices[1]]),
        "hidden documents never appear, counts exclude them"
    );
    assert!(
        s.search_metadata("acme", PageRequest::new(1, 10))?
            .items
            .is_empty()
    );
    // Through a document-type ACL, and the counts agree with the evaluator document by document.
    let contract_type = w.admin.document(w.contract)?.document.document_type_id;
    w.admin.grant(
        Permission::DocumentView,
        role,
        ObjectRef::new(ObjectKind::DOCUMENT_TYPE, contract_type.0),
    )?;
    let page = s.search_documents(
        "document_type__label:contract OR label:café",
        PageRequest::new(1, 10),
    )?;
    assert_eq!(page.count, 2);
    let every = w.admin.search_documents(
        "document_type__label:contract OR document_type__label:invoice",
        PageRequest::new(1, 100),
    )?;
    let visible = every
        .items
        .iter()
        .filter(|d| {
            w.db.check(
                user,
                Permission::DocumentView,
                ObjectRef::new(ObjectKind::DOCUMENT, d.document.id.0),
            )
        })
        .count();
    assert_eq!(
        s.search_documents(
            "document_type__label:contract OR document_type__label:invoice",
            PageRequest::new(1, 100)
        )?
        .count,
        visible
    );
    let all = w
        .admin
        .search_documents("invoice", PageRequest::new(1, 2))?;
    assert_eq!((all.count, all.items.len()), (3, 2));
    assert_eq!(
        w.admin
            .search_documents("invoice", PageRequest::new(2, 2))?
            .items
            .len(),
        1
    );
    Ok(())
}

#[test]
fn users_with_different_visibility_share_one_index_without_leaks() -> Result<()> {
    let w = world()?;
    let mut sessions = Vec::new();
    for (name, document) in [("ann", w.invoices[0]), ("bob", w.invoices[2])] {
        let user = w.admin.create_user(name, "a long password", false)?.id;
        let group = w.admin.create_group(name)?.id;
        let role = w.admin.create_role(name)?.id;
        w.admin.set_group_member(group, user, true)?;
        w.admin.set_role_group(role, group, true)?;
        w.admin.grant(
            Permission::DocumentView,
            role,
            ObjectRef::new(ObjectKind::DOCUMENT, document.0),
        )?;
        sessions.push((w.db.session(user), document));
    }
    // Alternating users over the same segments: each sees exactly its own document, every time
    // (the per-segment visibility bitsets are cached by what is visible, never by who asks).
    for _ in 0..3 {
        for (session, document) in &sessions {
            assert_eq!(
                ids(session, "document_type__label:invoice")?,
                vec![*document]
            );
        }
    }
    Ok(())
}

#[test]
fn malformed_queries_are_invalid_input() -> Result<()> {
    let w = world()?;
    for q in [
        "nope:x",
        "no-pe:x",
        "has:no-pe",
        "has:nope",
        "label:\"open",
        "(label:x",
        "value:[1 TO",
        "OR x",
        "",
        "label:x)",
        "metadata_value:[a TO b]",
    ] {
        let e = w
            .admin
            .search_documents(q, PageRequest::new(1, 10))
            .expect_err(q);
        assert!(matches!(e, Error::InvalidInput(_)), "{q}: {e}");
    }
    Ok(())
}

#[test]
fn the_index_catch_up_returns_while_another_thread_keeps_writing() -> Result<()> {
    let db = Docmeta::builder().worker(false).open()?;
    let s = db.system();
    let t = s.create_document_type("Memo")?;
    let d = s.create_document(t.id, "memo 0", &[])?.document;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (db, stop) = (db.clone(), stop.clone());
        std::thread::spawn(move || -> Result<()> {
            let s = db.system();
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                n += 1;
                s.update_document(d.id, &format!("memo {n}"))?;
            }
            Ok(())
        })
    };
    // Each round of the catch-up finds new events: it must still end.
    let (done, answer) = std::sync::mpsc::channel();
    let catching_up = {
        let db = db.clone();
        std::thread::spawn(move || done.send(db.wait_for_index()))
    };
    let outcome = answer.recv_timeout(std::time::Duration::from_secs(60));
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    writer.join().expect("the writer thread")?;
    catching_up.join().expect("the catch-up thread").ok();
    let applied = outcome.expect("the catch-up returned while the writer kept writing")?;
    assert!(applied >= 1, "it applied the events before it");
    Ok(())
}

#[test]
fn the_index_follows_changes_and_catches_up_after_a_crash() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let doc = {
        let db = Docmeta::builder()
            .data_dir(dir.path())
            .worker(false)
            .open()?;
        let s = db.system();
        let t = s.create_document_type("Memo")?;
        let d = s.create_document(t.id, "first memo", &[])?.document;
        assert_eq!(ids(&s, "memo")?, [d.id]);
        s.update_document(d.id, "renamed note")?;
        assert_eq!(
            ids(&s, "label:renamed")?,
            [d.id],
            "an edit is searchable at once"
        );
        // Changes made after the last search are in the log but not in the index: a crash here
        // leaves the cursor behind.
        s.update_document(d.id, "final paper")?;
        d.id
    };
    let db = Docmeta::builder()
        .data_dir(dir.path())
        .worker(false)
        .open()?;
    assert!(
        db.search_status()?.events_behind >= 1,
        "the cursor is behind the log"
    );
    assert!(db.wait_for_index()? >= 1);
    let s = db.system();
    assert_eq!(ids(&s, "label:paper")?, [doc]);
    assert!(ids(&s, "label:renamed")?.is_empty());
    s.delete_document(doc)?;
    assert!(
        ids(&s, "paper")?.is_empty(),
        "deleted documents leave the index"
    );
    Ok(())
}

#[test]
fn reindex_rebuilds_everything_with_progress() -> Result<()> {
    let w = world()?;
    let mut seen = Vec::new();
    let total =
        w.db.search_reindex(|done, total| seen.push((done, total)))?;
    assert_eq!(total, 4);
    assert_eq!(seen.last(), Some(&(4, 4)));
    let status = w.db.search_status()?;
    assert_eq!(
        (
            status.documents,
            status.metadata_values,
            status.events_behind
        ),
        (4, 10, 0)
    );
    assert!(status.schema_current);
    assert_eq!(ids(&w.admin, "acme")?, [w.contract]);
    Ok(())
}

#[test]
fn searches_keep_answering_during_a_rebuild() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Docmeta::builder()
        .data_dir(dir.path())
        .worker(false)
        .open()?;
    let s = db.system();
    let t = s.create_document_type("Memo")?;
    for i in 0..3000 {
        s.create_document(t.id, &format!("memo {i}"), &[])?;
    }
    db.wait_for_index()?;
    let stop = std::sync::atomic::AtomicBool::new(false);
    let done = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| -> Result<()> {
        let searcher = scope.spawn(|| -> Result<usize> {
            let mut searches = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                assert_eq!(
                    db.system()
                        .search_documents("memo", PageRequest::new(1, 1))?
                        .count,
                    3000,
                    "never a partial index"
                );
                searches += 1;
                done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
            Ok(searches)
        });
        // Searches run while the rebuild goes on (they do not wait for it).
        std::thread::sleep(std::time::Duration::from_millis(50));
        let before = std::time::Instant::now();
        let searched_before = done.load(std::sync::atomic::Ordering::SeqCst);
        db.search_reindex(|_, _| {})?;
        let during = done.load(std::sync::atomic::Ordering::SeqCst) - searched_before;
        let rebuild = before.elapsed();
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let searches = searcher.join().expect("searcher")?;
        assert!(
            searches > 0 && during > 0,
            "{during} searches answered during a rebuild of {rebuild:?}"
        );
        Ok(())
    })?;
    let current = std::fs::read_to_string(dir.path().join("search/CURRENT")).expect("CURRENT");
    assert!(current.contains("generation 2"), "{current}");
    assert!(
        !dir.path().join("search/1").exists(),
        "the old index is removed"
    );
    Ok(())
}

#[test]
fn initialize_upgrade_and_index_objects() -> Result<()> {
    let w = world()?;
    w.db.search_initialize()?;
    assert_eq!(
        w.db.search_status()?.documents,
        0,
        "initialize leaves an empty index"
    );
    assert!(ids(&w.admin, "acme")?.is_empty());
    assert_eq!(
        w.db.search_index_objects("documents.document", Some(&[w.contract.0]), |_, _| {})?,
        1
    );
    assert_eq!(ids(&w.admin, "acme")?, [w.contract]);
    assert_eq!(
        w.db.search_index_objects("metadata.documentmetadata", None, |_, _| {})?,
        4
    );
    assert_eq!(w.db.search_status()?.documents, 4);
    assert!(
        !w.db.search_upgrade(|_, _| {})?,
        "a current index needs no upgrade"
    );
    assert!(matches!(
        w.db.search_index_objects("tags.tag", None, |_, _| {}),
        Err(Error::InvalidInput(_))
    ));
    Ok(())
}

#[test]
fn an_index_from_an_older_schema_is_upgraded() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let db = Docmeta::builder()
            .data_dir(dir.path())
            .worker(false)
            .open()?;
        let s = db.system();
        let t = s.create_document_type("Memo")?;
        s.create_document(t.id, "old memo", &[])?;
        db.wait_for_index()?;
    }
    // Pretend an older docmeta built the index.
    let current = dir.path().join("search/CURRENT");
    let text = std::fs::read_to_string(&current).expect("CURRENT");
    std::fs::write(
        &current,
        text.replace(
            &format!("schema {}", docmeta_core::INDEX_SCHEMA_VERSION),
            "schema 1",
        ),
    )
    .expect("write");
    let db = Docmeta::builder()
        .data_dir(dir.path())
        .worker(false)
        .open()?;
    let status = db.search_status()?;
    assert!(
        !status.schema_current && status.schema_version == 1,
        "{status:?}"
    );
    assert!(db.search_upgrade(|_, _| {})?, "rebuilt");
    assert!(db.search_status()?.schema_current);
    assert_eq!(
        db.system()
            .search_documents("memo", PageRequest::new(1, 10))?
            .count,
        1
    );
    Ok(())
}

#[test]
fn documents_and_their_types_keep_their_own_links() -> Result<()> {
    let w = world()?;
    let doc = ObjectRef::new(ObjectKind::DOCUMENT, w.contract.0);
    let other = ObjectRef::new(ObjectKind::DOCUMENT_TYPE, 1);
    assert!(matches!(
        w.db.set_object_parents(doc, &[other]),
        Err(Error::InvalidInput(_))
    ));
    Ok(())
}

#[test]
fn absurd_pages_are_refused_not_a_crash() -> Result<()> {
    let w = world()?;
    assert!(matches!(
        w.admin
            .search_documents("invoice", PageRequest::new(usize::MAX, 500)),
        Err(Error::InvalidInput(_))
    ));
    assert!(
        w.admin
            .search_documents("invoice", PageRequest::new(20, 500))
            .is_ok(),
        "the first 10,000 results page fine"
    );
    assert!(
        w.admin
            .search_metadata("invoice", PageRequest::new(usize::MAX, 500))?
            .items
            .is_empty()
    );
    Ok(())
}

#[test]
fn a_filtered_search_returns_exactly_the_visible_documents_across_pages() -> Result<()> {
    let w = world()?;
    let (ann, role) = user_with_role(&w, "ann")?;
    let shown = w.admin.create_document_type("Shown")?.id;
    let hidden = w.admin.create_document_type("Hidden")?.id;
    w.admin.grant(
        Permission::DocumentView,
        role,
        ObjectRef::new(ObjectKind::DOCUMENT_TYPE, shown.0),
    )?;
    for i in 0..15 {
        let t = if i % 3 == 0 { shown } else { hidden };
        let d = w
            .admin
            .create_document(t, &format!("Bench {i}"), &[])?
            .document;
        if i % 5 == 1 {
            w.admin.grant(
                Permission::DocumentView,
                role,
                ObjectRef::new(ObjectKind::DOCUMENT, d.id.0),
            )?;
        }
    }
    // The evaluator's answer, one document at a time: 5 of the shown type (one of them with an
    // ACL of its own too), 2 hidden ones with an ACL of their own.
    let mut expected = ann.document_ids(Some(shown))?;
    expected.extend(ann.document_ids(Some(hidden))?);
    expected.sort();
    assert_eq!(expected.len(), 7);
    for size in 1..=5 {
        let mut seen = Vec::new();
        for page in 1..=(expected.len() / size + 1) {
            let found = ann.search_documents("label:bench", PageRequest::new(page, size))?;
            assert_eq!(found.count, expected.len(), "pages of {size}");
            seen.extend(found.items.iter().map(|d| d.document.id));
        }
        let distinct: std::collections::BTreeSet<_> = seen.iter().copied().collect();
        assert_eq!(
            distinct.len(),
            seen.len(),
            "no document on two pages of {size}"
        );
        seen.sort();
        assert_eq!(seen, expected, "pages of {size}");
    }
    Ok(())
}

#[test]
fn a_repeated_search_answers_every_change_to_the_index_or_to_the_callers_rights() -> Result<()> {
    let w = world()?;
    let (ann, role) = user_with_role(&w, "ann")?;
    let invoice = w.admin.document(w.invoices[0])?.document.document_type_id;
    assert_eq!(
        ann.search_documents("invoice", PageRequest::new(1, 10))?
            .count,
        0
    );
    w.admin.grant(
        Permission::DocumentView,
        role,
        ObjectRef::new(ObjectKind::DOCUMENT_TYPE, invoice.0),
    )?;
    assert_eq!(
        ann.search_documents("invoice", PageRequest::new(1, 10))?
            .count,
        3,
        "a new grant"
    );
    let added = w
        .admin
        .create_document(invoice, "Another invoice", &[])?
        .document;
    let again = ann.search_documents("invoice", PageRequest::new(1, 10))?;
    assert_eq!(again.count, 4, "a new document");
    assert!(again.items.iter().any(|d| d.document.id == added.id));
    w.admin.delete_document(added.id)?;
    assert_eq!(
        ann.search_documents("invoice", PageRequest::new(1, 10))?
            .count,
        3,
        "a deletion"
    );
    w.admin.revoke(
        Permission::DocumentView,
        role,
        ObjectRef::new(ObjectKind::DOCUMENT_TYPE, invoice.0),
    )?;
    assert_eq!(
        ann.search_documents("invoice", PageRequest::new(1, 10))?
            .count,
        0,
        "a revoked grant"
    );
    Ok(())
}

/// A user with a group and a role of their own; returns the user's session and the role.
fn user_with_role(w: &World, name: &str) -> Result<(Session, docmeta_core::RoleId)> {
    let user = w.admin.create_user(name, "a long password", false)?.id;
    let group = w.admin.create_group(name)?.id;
    let role = w.admin.create_role(name)?.id;
    w.admin.set_group_member(group, user, true)?;
    w.admin.set_role_group(role, group, true)?;
    Ok((w.db.session(user), role))
}

fn type_ref(w: &World, document: DocumentId) -> Result<ObjectRef> {
    Ok(ObjectRef::new(
        ObjectKind::DOCUMENT_TYPE,
        w.admin.document(document)?.document.document_type_id.0,
    ))
}

fn metadata_type_ref(w: &World, name: &str) -> Result<ObjectRef> {
    Ok(ObjectRef::new(
        ObjectKind::METADATA_TYPE,
        w.admin.metadata_type_by_name(name)?.id.0,
    ))
}

/// Everything a caller learns from one query: the count and the ordered results of both
/// searches.
type Answer = (
    usize,
    Vec<DocumentId>,
    usize,
    Vec<docmeta_core::DocumentMetadataId>,
);

fn answer(s: &Session, q: &str) -> Result<Answer> {
    let documents = s.search_documents(q, PageRequest::new(1, 100))?;
    let values = s.search_metadata(q, PageRequest::new(1, 100))?;
    Ok((
        documents.count,
        documents.items.iter().map(|d| d.document.id).collect(),
        values.count,
        values.items.iter().map(|m| m.value.id).collect(),
    ))
}

/// Queries that touch the hidden values (numbers and dates for ranges, words, type names).
const PROBES: [&str; 20] = [
    "metadata_value:>=100",
    "metadata_value:>=1000",
    "value:[* TO 500]",
    "value:{99 TO 1000}",
    "metadata_value:>=2024-01-01",
    "metadata_type__name:amount",
    "metadata_type__name:amount value:>=0",
    "amount",
    "due",
    "value:120",
    "value:\"120.50\"",
    "value:777",
    "invoice",
    "invoice OR value:>=100",
    "label:invoice OR value:1000",
    "NOT value:>=100",
    "document_type__label:invoice -value:>=500",
    "inv",
    "value:2024",
    "march OR value:777 OR value:>=0",
];

/// Hidden values leak nothing: a user who may view the invoices and their `number` values, but not
/// the `amount` or `due` values, gets exactly the same answers (results, counts, order, on both
/// searches) whatever those hidden values are: the range binary search learns nothing.
#[test]
fn hidden_values_change_no_answer_of_either_search() -> Result<()> {
    let w = world()?;
    let (eve, role) = user_with_role(&w, "eve")?;
    let invoice = type_ref(&w, w.invoices[0])?;
    w.admin.grant(Permission::DocumentView, role, invoice)?;
    w.admin
        .grant(Permission::DocumentMetadataView, role, invoice)?;
    w.admin.grant(
        Permission::DocumentMetadataView,
        role,
        metadata_type_ref(&w, "number")?,
    )?;
    let before: Vec<Answer> = PROBES
        .iter()
        .map(|q| answer(&eve, q))
        .collect::<Result<_>>()?;
    let admin_before: Vec<Answer> = PROBES
        .iter()
        .map(|q| answer(&w.admin, q))
        .collect::<Result<_>>()?;
    // The attack: binary search for the amount of the March invoice (120.50).
    let amount_ranges: Vec<Answer> = [0, 50, 100, 120, 121, 500, 1000, 1_000_000]
        .iter()
        .map(|n| answer(&eve, &format!("metadata_value:>={n}")))
        .collect::<Result<_>>()?;
    assert!(
        amount_ranges.iter().all(|a| *a == (0, vec![], 0, vec![])),
        "no bound tells anything: {amount_ranges:?}"
    );
    // The hidden values change completely: edited, removed, and new ones of a new type whose
    // words match the probes (a new type is hidden until granted).
    let amount = w.admin.metadata_type_by_name("amount")?.id;
    let due = w.admin.metadata_type_by_name("due")?.id;
    let secret = w
        .admin
        .create_metadata_type(MetadataTypeInput::new("secret", "Secret"))?;
    w.admin.associate(
        w.admin.document(w.invoices[0])?.document.document_type_id,
        secret.id,
        false,
    )?;
    for (i, d) in w.invoices.iter().enumerate() {
        for m in w
            .admin
            .document_metadata(*d, PageRequest::ALL)
            .map(|p| p.items.into_iter().map(|v| v.value).collect::<Vec<_>>())?
        {
            if m.metadata_type_id == amount && i == 2 {
                w.admin.remove_document_metadata(*d, m.id)?;
            } else if m.metadata_type_id == amount {
                w.admin
                    .edit_document_metadata(*d, m.id, &format!("{}", 777 * (i + 1)), None)?;
            } else if m.metadata_type_id == due {
                w.admin
                    .edit_document_metadata(*d, m.id, "01/01/2030", None)?;
            }
        }
        w.admin.add_document_metadata(
            *d,
            secret.id,
            &format!("invoice 777 march {i} 2024-02-02"),
        )?;
    }
    let after: Vec<Answer> = PROBES
        .iter()
        .map(|q| answer(&eve, q))
        .collect::<Result<_>>()?;
    for ((q, b), a) in PROBES.iter().zip(&before).zip(&after) {
        assert_eq!(b, a, "{q}: a hidden value changed what the caller sees");
    }
    let admin_after: Vec<Answer> = PROBES
        .iter()
        .map(|q| answer(&w.admin, q))
        .collect::<Result<_>>()?;
    let changed = admin_before
        .iter()
        .zip(&admin_after)
        .filter(|(b, a)| b != a)
        .count();
    assert!(
        changed >= 10,
        "the probes do reach the changed values ({changed} answers changed for the admin)"
    );
    // What eve may view still matches: her numbers, and the invoices through their labels.
    assert_eq!(ids(&eve, "metadata_value:12345")?, [w.invoices[0]]);
    assert_eq!(
        eve.search_metadata("value:2024", PageRequest::new(1, 10))?
            .count,
        2
    );
    assert_eq!(ids(&eve, "invoice")?, w.invoices);
    Ok(())
}

/// A metadata term matches a document exactly when the caller may view a
/// value of that document that matches (the rule of `document_metadata`), on both
/// searches, whichever way each permission is held (document-type ACL, document ACL, metadata
/// type ACL, global).
#[test]
fn metadata_terms_follow_the_value_view_rule() -> Result<()> {
    let w = world()?;
    let invoice = type_ref(&w, w.invoices[0])?;
    let contract = type_ref(&w, w.contract)?;
    let first = ObjectRef::new(ObjectKind::DOCUMENT, w.invoices[0].0);
    let mut users = Vec::new();
    // Numbers of every invoice (document-type ACLs, metadata-type ACL).
    let (s, r) = user_with_role(&w, "u1")?;
    w.admin.grant(Permission::DocumentView, r, invoice)?;
    w.admin
        .grant(Permission::DocumentMetadataView, r, invoice)?;
    w.admin.grant(
        Permission::DocumentMetadataView,
        r,
        metadata_type_ref(&w, "number")?,
    )?;
    users.push(s);
    // Due dates and amounts of one invoice (document ACL, metadata-type ACLs).
    let (s, r) = user_with_role(&w, "u2")?;
    w.admin.grant(Permission::DocumentView, r, invoice)?;
    w.admin.grant(Permission::DocumentMetadataView, r, first)?;
    w.admin.grant(
        Permission::DocumentMetadataView,
        r,
        metadata_type_ref(&w, "due")?,
    )?;
    w.admin.grant(
        Permission::DocumentMetadataView,
        r,
        metadata_type_ref(&w, "amount")?,
    )?;
    users.push(s);
    // Amounts of every document (global document view, document-type ACLs).
    let (s, r) = user_with_role(&w, "u3")?;
    w.admin.grant_global(Permission::DocumentView, r)?;
    w.admin
        .grant(Permission::DocumentMetadataView, r, invoice)?;
    w.admin
        .grant(Permission::DocumentMetadataView, r, contract)?;
    w.admin.grant(
        Permission::DocumentMetadataView,
        r,
        metadata_type_ref(&w, "amount")?,
    )?;
    users.push(s);
    // The documents, but no metadata at all.
    let (s, r) = user_with_role(&w, "u4")?;
    w.admin.grant(Permission::DocumentView, r, invoice)?;
    w.admin.grant(Permission::DocumentView, r, contract)?;
    w.admin.grant(
        Permission::DocumentMetadataView,
        r,
        metadata_type_ref(&w, "party")?,
    )?;
    users.push(s);
    // Metadata view everywhere, but only the contract is visible.
    let (s, r) = user_with_role(&w, "u5")?;
    w.admin.grant(Permission::DocumentView, r, contract)?;
    w.admin.grant_global(Permission::DocumentMetadataView, r)?;
    users.push(s);
    let names = ["number", "due", "amount", "party"];
    let all_documents: Vec<DocumentId> = w.invoices.iter().copied().chain([w.contract]).collect();
    for s in &users {
        // What the session may view, value by value, through the ordinary API.
        let mut visible = Vec::new();
        for d in &all_documents {
            if let Ok(values) = s
                .document_metadata(*d, PageRequest::ALL)
                .map(|p| p.items.into_iter().map(|v| v.value).collect::<Vec<_>>())
            {
                visible.extend(values);
            }
        }
        for name in names {
            let t = w.admin.metadata_type_by_name(name)?.id;
            let q = format!("metadata_type__name:{name}");
            let mut expected_documents: Vec<DocumentId> = visible
                .iter()
                .filter(|m| m.metadata_type_id == t)
                .map(|m| m.document_id)
                .collect();
            expected_documents.sort();
            let page = s.search_documents(&q, PageRequest::new(1, 100))?;
            assert_eq!(page.count, expected_documents.len(), "{:?} {q}", s.actor());
            assert_eq!(ids(s, &q)?, expected_documents, "{:?} {q}", s.actor());
            let mut expected_values: Vec<_> = visible
                .iter()
                .filter(|m| m.metadata_type_id == t)
                .map(|m| m.id)
                .collect();
            expected_values.sort();
            let page = s.search_metadata(&q, PageRequest::new(1, 100))?;
            let mut got: Vec<_> = page.items.iter().map(|m| m.value.id).collect();
            got.sort();
            assert_eq!(
                (page.count, got),
                (expected_values.len(), expected_values),
                "{:?} {q}",
                s.actor()
            );
        }
        // Every value, searched by its own words: found exactly when visible.
        for d in &all_documents {
            for m in w
                .admin
                .document_metadata(*d, PageRequest::ALL)
                .map(|p| p.items.into_iter().map(|v| v.value).collect::<Vec<_>>())?
            {
                let q = format!("metadata_value:\"{}\"", m.value);
                let seen = visible.iter().any(|v| v.id == m.id);
                assert_eq!(
                    ids(s, &q)?.contains(d),
                    seen,
                    "{:?} {q} on document {d:?}",
                    s.actor()
                );
                assert_eq!(
                    s.search_metadata(&q, PageRequest::new(1, 100))?
                        .items
                        .iter()
                        .any(|v| v.value.id == m.id),
                    seen,
                    "{:?} {q}",
                    s.actor()
                );
            }
        }
    }
    Ok(())
}

/// One query must not take the server down: nesting of any kind is bounded (a query of 500 `NOT`s
/// used to overflow the stack and abort the process), ranges without bounds are refused before
/// tantivy sees them (`[* TO *]` panicked inside it), and every other range shape is answered.
#[test]
fn hostile_queries_are_refused_or_answered_never_a_crash() -> Result<()> {
    let w = world()?;
    let deep = [
        format!("{}invoice", "NOT ".repeat(498)),
        format!("{}invoice{}", "(".repeat(995), ")".repeat(995)),
        format!("{}invoice{}", "(NOT ".repeat(330), ")".repeat(330)),
        format!("{}-invoice{}", "NOT (".repeat(300), ")".repeat(300)),
        format!("{}label:x", "NOT ".repeat(33)),
        format!("{}-label:x", "NOT ".repeat(32)),
    ];
    for q in &deep {
        assert!(q.len() <= 2_000, "within the length limit");
        let e = w
            .admin
            .search_documents(q, PageRequest::new(1, 10))
            .expect_err(q);
        assert!(e.to_string().contains("nested too deep"), "{e}");
    }
    let open = [
        "value:[* TO *]".to_owned(),
        "metadata_value:{* TO *}".to_owned(),
        "value:[* TO *} label:x".to_owned(),
        "NOT value:[ * TO * ]".to_owned(),
        "value:[ TO 5]".to_owned(),
        "value:[5 TO ]".to_owned(),
    ];
    for q in deep.iter().chain(&open) {
        for search in [
            |s: &Session, q: &str| {
                s.search_documents(q, PageRequest::new(1, 10))
                    .map(|p| p.count)
            },
            |s: &Session, q: &str| {
                s.search_metadata(q, PageRequest::new(1, 10))
                    .map(|p| p.count)
            },
        ] {
            let e = search(&w.admin, q).expect_err(q);
            assert!(matches!(e, Error::InvalidInput(_)), "{q}: {e}");
        }
    }
    // At the limit, nesting is fine.
    let limit = docmeta_core::MAX_QUERY_DEPTH;
    assert_eq!(
        ids(
            &w.admin,
            &format!("{}label:old", "NOT NOT ".repeat(limit / 2))
        )?,
        [w.invoices[2]]
    );
    assert_eq!(
        ids(
            &w.admin,
            &format!("{}label:old{}", "(".repeat(limit), ")".repeat(limit))
        )?,
        [w.invoices[2]]
    );
    // Every other range reaches the index and is answered (empty ranges match nothing).
    for (q, expected) in [
        ("value:[1000 TO 99]", 0),
        ("value:{99 TO 99}", 0),
        ("value:[99 TO 99]", 1),
        ("value:[-0 TO 0]", 0),
        ("value:{1.7976931348623157e308 TO *]", 0),
        ("value:[* TO -1.7976931348623157e308}", 0),
        ("value:>1.7976931348623157e308", 0),
        ("value:<-1.7976931348623157e308", 0),
        ("value:[1e400 TO *]", -1),
        ("value:[NaN TO 5]", -1),
        ("value:>=inf", -1),
        ("value:{+262142-12-31 TO *}", -1),
        ("value:>9999-12-31", 0),
        ("value:<0001-01-01", 0),
        ("value:{2024-03-15 TO 2024-03-15]", 0),
        ("value:[00:00 TO 23:59:59]", 0),
        ("value:[2024-04-30 TO 2023-12-01]", 0),
        ("value:[2023-12-01 TO 2024-04-30]", 3),
        ("value:[* TO 2024-01-01]", 1),
        ("value:[1 TO 2024-01-01]", -1),
        ("value:[1 TO 2 TO 3]", -1),
    ] {
        for s in [
            w.admin
                .search_documents(q, PageRequest::new(1, 10))
                .map(|p| p.count),
            w.admin
                .search_metadata(q, PageRequest::new(1, 10))
                .map(|p| p.count),
        ] {
            match (s, expected) {
                (Err(Error::InvalidInput(_)), -1) => {}
                (Ok(n), e) if e >= 0 => assert_eq!(n as i64, e, "{q}"),
                (other, e) => panic!("{q}: {other:?}, expected {e}"),
            }
        }
    }
    Ok(())
}
