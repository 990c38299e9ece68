//! Search (spec 2.5): fields and aliases, partial values, ranges, boolean syntax, permission
//! filtering, malformed queries, and the index catching up with the event log.

use docmeta_core::{
    Config, Docmeta, DocumentId, Error, MetadataTypeInput, ObjectKind, ObjectRef, Permission,
    Result, Session,
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
                .id,
        );
    }
    let contract = admin
        .create_document(
            contract.id,
            "Supply contract",
            &[(party.id, "ACME Corporation")],
        )?
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
        .search_documents(q, 1, 100)?
        .results
        .into_iter()
        .map(|d| d.id)
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
        1,
        10,
    )?;
    assert_eq!(page.count, 2);
    assert!(page.results.iter().all(|m| m.value.starts_with("2024-")));
    let page = w
        .admin
        .search_metadata("document__document_type__label:contract", 1, 10)?;
    assert_eq!(
        page.results
            .iter()
            .map(|m| m.value.as_str())
            .collect::<Vec<_>>(),
        ["ACME Corporation"]
    );
    Ok(())
}

#[test]
fn results_are_filtered_by_permission_and_paged() -> Result<()> {
    let w = world()?;
    let user = w.admin.create_user("ann", "a long password", false)?.id;
    let group = w.admin.create_group("G")?;
    let role = w.admin.create_role("R")?;
    w.admin.set_group_member(group, user, true)?;
    w.admin.set_role_group(role, group, true)?;
    w.admin.grant(
        Permission::DocumentView,
        role,
        ObjectRef::new(ObjectKind::DOCUMENT, w.invoices[1].0),
    )?;
    let s = w.db.session(user);
    let page = s.search_documents("invoice", 1, 10)?;
    assert_eq!(
        (
            page.count,
            page.results.iter().map(|d| d.id).collect::<Vec<_>>()
        ),
        (1, vec![w.invoices[1]]),
        "hidden documents never appear, counts exclude them"
    );
    assert!(s.search_metadata("acme", 1, 10)?.results.is_empty());
    // Through a document-type ACL, and the counts agree with the evaluator document by document.
    let contract_type = w.admin.document(w.contract)?.document_type_id;
    w.admin.grant(
        Permission::DocumentView,
        role,
        ObjectRef::new(ObjectKind::DOCUMENT_TYPE, contract_type.0),
    )?;
    let page = s.search_documents("document_type__label:contract OR label:café", 1, 10)?;
    assert_eq!(page.count, 2);
    let every = w.admin.search_documents(
        "document_type__label:contract OR document_type__label:invoice",
        1,
        100,
    )?;
    let visible = every
        .results
        .iter()
        .filter(|d| {
            w.db.check(
                user,
                Permission::DocumentView,
                ObjectRef::new(ObjectKind::DOCUMENT, d.id.0),
            )
        })
        .count();
    assert_eq!(
        s.search_documents(
            "document_type__label:contract OR document_type__label:invoice",
            1,
            100
        )?
        .count,
        visible
    );
    let all = w.admin.search_documents("invoice", 1, 2)?;
    assert_eq!((all.count, all.results.len()), (3, 2));
    assert_eq!(w.admin.search_documents("invoice", 2, 2)?.results.len(), 1);
    Ok(())
}

#[test]
fn users_with_different_visibility_share_one_index_without_leaks() -> Result<()> {
    let w = world()?;
    let mut sessions = Vec::new();
    for (name, document) in [("ann", w.invoices[0]), ("bob", w.invoices[2])] {
        let user = w.admin.create_user(name, "a long password", false)?.id;
        let group = w.admin.create_group(name)?;
        let role = w.admin.create_role(name)?;
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
        "label:\"open",
        "(label:x",
        "value:[1 TO",
        "OR x",
        "",
        "label:x)",
        "metadata_value:[a TO b]",
    ] {
        let e = w.admin.search_documents(q, 1, 10).expect_err(q);
        assert!(matches!(e, Error::InvalidInput(_)), "{q}: {e}");
    }
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
        let d = s.create_document(t.id, "first memo", &[])?;
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
                    db.system().search_documents("memo", 1, 1)?.count,
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
            &format!(
                "schema {}",
                docmeta_core::search::index::INDEX_SCHEMA_VERSION
            ),
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
    assert_eq!(db.system().search_documents("memo", 1, 10)?.count, 1);
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
        w.admin.search_documents("invoice", usize::MAX, 500),
        Err(Error::InvalidInput(_))
    ));
    assert!(
        w.admin.search_documents("invoice", 20, 500).is_ok(),
        "the first 10,000 results page fine"
    );
    assert!(
        w.admin
            .search_metadata("invoice", usize::MAX, 500)?
            .results
            .is_empty()
    );
    Ok(())
}
