//! Typed metadata types and search by field: the value pipeline's type check, a change of value
//! type checked against every stored value, field-bound terms for each operator and type,
//! `has:`, hidden types matching nothing, and documents sorted by a typed value in searches and
//! lists.

use docmeta_core::{
    Config, Docmeta, DocumentId, DocumentQuery, Error, MetadataTypeId, MetadataTypeInput,
    ObjectKind, ObjectRef, OrderBy, PageRequest, Permission, Result, SearchQuery, Session,
    ValueType,
};

const P: &str = "svc.apps.metadata.metadata_parsers.";

struct World {
    db: Docmeta,
    admin: Session,
    /// d1..d5: four documents with values, the fifth with none.
    docs: Vec<DocumentId>,
    types: Vec<(&'static str, MetadataTypeId)>,
}

impl World {
    fn t(&self, name: &str) -> MetadataTypeId {
        self.types.iter().find(|(n, _)| *n == name).expect(name).1
    }
}

const TYPES: [(&str, ValueType); 8] = [
    ("amount", ValueType::Decimal),
    ("quantity", ValueType::Integer),
    ("due", ValueType::Date),
    ("sent", ValueType::DateTime),
    ("at", ValueType::Time),
    ("paid", ValueType::Boolean),
    ("party", ValueType::Text),
    ("po_number", ValueType::Text),
];

fn world() -> Result<World> {
    let db = Docmeta::builder()
        .config(Config {
            password_hash_memory_kib: 64,
            password_hash_iterations: 1,
            ..Config::default()
        })
        .worker(false)
        .open()?;
    let admin = db.system();
    let invoice = admin.create_document_type("Invoice")?;
    let mut types = Vec::new();
    for (name, value_type) in TYPES {
        let mut input = MetadataTypeInput::new(name, name).value_type(value_type);
        if name == "due" {
            // What users type becomes an ISO date before the type is checked.
            input = input.parser(format!("{P}DateParser"), "");
        }
        let t = admin.create_metadata_type(input)?;
        admin.associate(invoice.id, t.id, false)?;
        types.push((name, t.id));
    }
    let rows: [[&str; 8]; 5] = [
        [
            "95.50",
            "3",
            "15/03/2024",
            "2024-03-15T09:00:00",
            "09:30",
            "true",
            "ACME Corporation",
            "PO-1",
        ],
        [
            "1200",
            "12",
            "2024-01-31",
            "2024-01-31T17:45:10",
            "17:45",
            "false",
            "Globex",
            "",
        ],
        [
            "-5",
            "-1",
            "2023-12-01",
            "2023-12-01T00:00:00",
            "00:00:01",
            "false",
            "Initech",
            "PO-3",
        ],
        [
            "1000.00",
            "100",
            "2024-03-15",
            "2024-03-16T00:00:00",
            "23:59",
            "true",
            "acme inc",
            "",
        ],
        ["", "", "", "", "", "", "", ""],
    ];
    let mut docs = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        let values: Vec<(MetadataTypeId, &str)> =
            types.iter().zip(row).map(|((_, t), v)| (*t, *v)).collect();
        let label = format!("invoice {}", i + 1);
        docs.push(
            admin
                .create_document(invoice.id, &label, &values)?
                .document
                .id,
        );
    }
    Ok(World {
        db,
        admin,
        docs,
        types,
    })
}

/// The id of `doc`'s value of type `t` (every document has one of each, some empty).
fn value_of(
    s: &Session,
    doc: DocumentId,
    t: MetadataTypeId,
) -> Result<docmeta_core::DocumentMetadata> {
    Ok(s.document_metadata(doc, PageRequest::new(1, 100))?
        .items
        .into_iter()
        .find(|v| v.value.metadata_type_id == t)
        .expect("a value of the type")
        .value)
}

/// The documents `q` finds, as d1..d5 (1-based) in id order.
fn found(w: &World, s: &Session, q: &str) -> Result<Vec<usize>> {
    let mut ids: Vec<usize> = s
        .search_documents(q, PageRequest::new(1, 100))?
        .items
        .iter()
        .map(|d| index_of(w, d.document.id))
        .collect();
    ids.sort_unstable();
    Ok(ids)
}

fn index_of(w: &World, id: DocumentId) -> usize {
    w.docs
        .iter()
        .position(|d| *d == id)
        .expect("a document of the world")
        + 1
}

/// The documents of `q` in `ordering`'s order, as d1..d5.
fn sorted(w: &World, s: &Session, q: &str, ordering: &str) -> Result<Vec<usize>> {
    let query = SearchQuery::new(q).ordered_by(OrderBy::parse(ordering).expect("an order"));
    Ok(s.search_documents(query, PageRequest::new(1, 100))?
        .items
        .iter()
        .map(|d| index_of(w, d.document.id))
        .collect())
}

#[test]
fn a_value_must_be_of_its_type_after_the_pipeline() -> Result<()> {
    let w = world()?;
    let s = &w.admin;
    let doc = w.docs[4];
    let cases: [(&str, &[&str], &[&str]); 7] = [
        (
            "amount",
            &["12.50", "-3", "0"],
            &["12,50", "1e3", "twelve", "1.2.3"],
        ),
        (
            "quantity",
            &["7", "-7"],
            &["7.0", "+7", "99999999999999999999"],
        ),
        (
            "due",
            &["2024-02-29", "29/02/2024"],
            &["2023-02-29", "tomorrow"],
        ),
        (
            "sent",
            &["2024-02-29T23:59:59"],
            &["2024-02-29 23:59:59", "2024-02-29"],
        ),
        ("at", &["07:05", "07:05:09"], &["7:05", "25:00", "07h05"]),
        ("paid", &["true", "false"], &["yes", "TRUE", "1"]),
        ("party", &["anything at all", "12"], &[]),
    ];
    for (name, good, bad) in cases {
        let t = w.t(name);
        let id = value_of(s, doc, t)?.id;
        for value in good {
            s.edit_document_metadata(doc, id, value, None)?;
        }
        s.edit_document_metadata(doc, id, "", None)?;
        for value in bad {
            match s.edit_document_metadata(doc, id, value, None) {
                Err(Error::Validation { field, message }) => {
                    assert_eq!(field, "value", "{name} {value}: {message}");
                    assert!(message.contains("is not"), "{message}");
                }
                other => panic!("{name} {value}: {other:?}"),
            }
        }
    }
    // The parser's output is what is checked: the date parser made an ISO date of d1's value.
    assert_eq!(value_of(s, w.docs[0], w.t("due"))?.value, "2024-03-15");
    Ok(())
}

#[test]
fn field_bound_terms_compare_by_type() -> Result<()> {
    let w = world()?;
    let s = &w.admin;
    let cases: &[(&str, &[usize])] = &[
        // Numbers as numbers (as text, "95.50" > "100" and "1000.00" < "12").
        ("amount:>100", &[2, 4]),
        ("amount:>=1000", &[2, 4]),
        ("amount:<95.5", &[3]),
        ("amount:<=95.5", &[1, 3]),
        ("amount:1000", &[4]),
        ("amount:[0 TO 1000]", &[1, 4]),
        ("amount:{95.5 TO 1200}", &[4]),
        ("amount:[* TO 0]", &[3]),
        ("quantity:[3 TO 12]", &[1, 2]),
        ("quantity:>12", &[4]),
        ("quantity:-1", &[3]),
        // Dates, dates and times, times in time.
        ("due:2024-03-15", &[1, 4]),
        ("due:<2024-01-01", &[3]),
        ("due:[2024-01-01 TO 2024-03-14]", &[2]),
        ("sent:>=2024-03-15", &[1, 4]),
        ("sent:>2024-03-15T09:00:00", &[4]),
        ("sent:[2024-01-31T17:45:10 TO 2024-01-31T17:45:10]", &[2]),
        // A date alone, on a date and time, stands for its whole day.
        ("sent:2024-03-15", &[1]),
        ("sent:<=2024-03-15", &[1, 2, 3]),
        ("sent:<2024-03-15", &[2, 3]),
        ("sent:>2024-03-15", &[4]),
        ("sent:>=2024-03-16", &[4]),
        ("sent:[2024-01-31 TO 2024-03-15]", &[1, 2]),
        ("sent:{2024-01-31 TO 2024-03-16}", &[1]),
        ("at:<09:30", &[3]),
        ("at:>=09:30:00", &[1, 2, 4]),
        ("at:[12:00 TO *]", &[2, 4]),
        // Booleans.
        ("paid:true", &[1, 4]),
        ("paid:false", &[2, 3]),
        ("paid:tru", &[]),
        // A word that does not read as the type matches the values' text (a partial date).
        ("due:2024", &[1, 2, 4]),
        ("due:03", &[1, 4]),
        // Text as values always matched: words, substrings, phrases.
        ("party:acme", &[1, 4]),
        ("party:glob", &[2]),
        ("party:\"acme corporation\"", &[1]),
        ("po_number:PO-3", &[3]),
        // The value of another type never matches a bound term.
        ("quantity:12", &[2]),
        ("amount:12", &[]),
    ];
    for (q, expected) in cases {
        assert_eq!(found(&w, s, q)?, *expected, "{q}");
    }
    Ok(())
}

#[test]
fn has_and_combinations() -> Result<()> {
    let w = world()?;
    let s = &w.admin;
    let cases: &[(&str, &[usize])] = &[
        ("has:po_number", &[1, 3]),
        ("NOT has:po_number", &[2, 4, 5]),
        ("-has:po_number", &[2, 4, 5]),
        ("has:amount", &[1, 2, 3, 4]),
        ("NOT has:amount", &[5]),
        ("(amount:>100 OR paid:true) AND NOT has:po_number", &[2, 4]),
        ("amount:>100 paid:true", &[4]),
        ("label:invoice amount:<0", &[3]),
        ("amount:>100 OR party:initech", &[2, 3, 4]),
        ("NOT (due:2024-03-15 OR paid:false)", &[5]),
        // The spec's terms keep their meaning beside them.
        ("metadata_type__name:party metadata_value:globex", &[2]),
        ("value:[1000 TO 1200]", &[2, 4]),
    ];
    for (q, expected) in cases {
        assert_eq!(found(&w, s, q)?, *expected, "{q}");
    }
    for q in [
        // No such type: an unknown field, as the spec's grammar says.
        "nosuch:1",
        "has:nosuch",
        "NOT has:nosuch",
        "amount:[a TO b]",
        "amount:>many",
        "due:[2024-01-01 TO soon]",
        "paid:[yes TO no]",
        "at:>noon",
    ] {
        match s.search_documents(q, PageRequest::new(1, 10)) {
            Err(Error::InvalidInput(message)) => assert!(message.contains("query"), "{message}"),
            other => panic!("{q}: {other:?}"),
        }
    }
    // Metadata search: the value records of the type alone.
    let values = s.search_metadata("amount:>=1000", PageRequest::new(1, 10))?;
    let mut got: Vec<&str> = values
        .items
        .iter()
        .map(|v| v.value.value.as_str())
        .collect();
    got.sort_unstable();
    assert_eq!(got, ["1000.00", "1200"]);
    Ok(())
}

#[test]
fn documents_sort_by_a_typed_value_missing_last() -> Result<()> {
    let w = world()?;
    let s = &w.admin;
    let all = "label:invoice";
    let cases: &[(&str, &[usize])] = &[
        ("amount", &[3, 1, 4, 2, 5]),
        ("-amount", &[2, 4, 1, 3, 5]),
        ("quantity", &[3, 1, 2, 4, 5]),
        // Ties (two documents due the same day) by document id, in either direction.
        ("due", &[3, 2, 1, 4, 5]),
        ("-due", &[1, 4, 2, 3, 5]),
        ("sent", &[3, 2, 1, 4, 5]),
        ("at", &[3, 1, 2, 4, 5]),
        ("-at", &[4, 2, 1, 3, 5]),
        ("paid", &[2, 3, 1, 4, 5]),
        ("-paid", &[1, 4, 2, 3, 5]),
        // Text by code points; empty values are no value.
        ("party", &[1, 2, 3, 4, 5]),
        ("-party", &[4, 3, 2, 1, 5]),
        ("po_number", &[1, 3, 2, 4, 5]),
        ("-po_number", &[3, 1, 2, 4, 5]),
        // No such type: as if no document had a value.
        ("nosuch", &[1, 2, 3, 4, 5]),
        ("-nosuch", &[1, 2, 3, 4, 5]),
    ];
    for (ordering, expected) in cases {
        // In a search, an order by no type keeps relevance (checked below).
        if ordering.contains("nosuch") {
            continue;
        }
        assert_eq!(sorted(&w, s, all, ordering)?, *expected, "{ordering}");
    }
    // An order by a name that is no type the caller may read: a search keeps its relevance
    // order, a list its order by id; `-id` is the list's newest first.
    let relevance = |q: &str| -> Result<Vec<usize>> {
        Ok(s.search_documents(q, PageRequest::new(1, 100))?
            .items
            .iter()
            .map(|d| index_of(&w, d.document.id))
            .collect())
    };
    assert_eq!(
        sorted(&w, s, "party:acme OR party:globex", "nosuch")?,
        relevance("party:acme OR party:globex")?
    );
    let newest = s.documents(
        DocumentQuery {
            ordering: OrderBy::parse("-id"),
            ..Default::default()
        },
        PageRequest::new(1, 10),
    )?;
    let newest: Vec<usize> = newest
        .items
        .iter()
        .map(|d| index_of(&w, d.document.id))
        .collect();
    assert_eq!(newest, [5, 4, 3, 2, 1]);
    // A narrower query, sorted.
    assert_eq!(sorted(&w, s, "amount:>0", "-due")?, [1, 4, 2]);
    // Paging through a sorted result gives the same order, page by page.
    let mut paged = Vec::new();
    for page in 1..=3 {
        let query = SearchQuery::new(all).ordered_by(OrderBy::descending("amount"));
        let p = s.search_documents(query, PageRequest::new(page, 2))?;
        assert_eq!(p.count, 5);
        paged.extend(p.items.iter().map(|d| index_of(&w, d.document.id)));
    }
    assert_eq!(paged, [2, 4, 1, 3, 5]);
    // Document lists take the same order (and a document type).
    let list = |ordering: &str, page: usize, size: usize| -> Result<Vec<usize>> {
        let query = DocumentQuery {
            ordering: OrderBy::parse(ordering),
            ..Default::default()
        };
        Ok(s.documents(query, PageRequest::new(page, size))?
            .items
            .iter()
            .map(|d| index_of(&w, d.document.id))
            .collect())
    };
    assert_eq!(list("-amount", 1, 10)?, [2, 4, 1, 3, 5]);
    assert_eq!(list("due", 2, 2)?, [1, 4]);
    let of_type = DocumentQuery {
        document_type: Some(w.admin.document(w.docs[0])?.document.document_type_id),
        ordering: Some(OrderBy::ascending("at")),
        ..Default::default()
    };
    let page = s.documents(of_type, PageRequest::new(1, 10))?;
    assert_eq!(page.count, 5);
    // A list reflects a write at once (the index catches up before it answers).
    let amount = value_of(s, w.docs[4], w.t("amount"))?.id;
    s.edit_document_metadata(w.docs[4], amount, "-100", None)?;
    assert_eq!(list("amount", 1, 10)?, [5, 3, 1, 4, 2]);
    Ok(())
}

/// The clerk's role (see [`narrow_user`]).
fn clerk_role(w: &World) -> Result<docmeta_core::RoleId> {
    Ok(w.admin
        .roles()?
        .into_iter()
        .find(|r| r.label == "clerks")
        .expect("the clerks' role")
        .id)
}

/// A user who may view every document, the values of all of them, and the values of every
/// type but `amount`; and on d2 alone no values at all.
fn narrow_user(w: &World) -> Result<Session> {
    let user = w.admin.create_user("clerk", "a long password", false)?.id;
    let group = w.admin.create_group("clerks")?.id;
    let role = w.admin.create_role("clerks")?.id;
    w.admin.set_group_member(group, user, true)?;
    w.admin.set_role_group(role, group, true)?;
    w.admin.grant_global(Permission::DocumentView, role)?;
    for (i, d) in w.docs.iter().enumerate() {
        if i != 1 {
            w.admin.grant(
                Permission::DocumentMetadataView,
                role,
                ObjectRef::new(ObjectKind::DOCUMENT, d.0),
            )?;
        }
    }
    for (name, t) in &w.types {
        if *name != "amount" {
            w.admin.grant(
                Permission::DocumentMetadataView,
                role,
                ObjectRef::new(ObjectKind::METADATA_TYPE, t.0),
            )?;
        }
    }
    Ok(w.db.session(user))
}

#[test]
fn a_hidden_type_matches_nothing_and_sorts_as_absent() -> Result<()> {
    let w = world()?;
    let clerk = narrow_user(&w)?;
    // `amount` is unknown to the clerk (neither it nor its values may be viewed): exactly as a
    // type that does not exist, an unknown field, worded alike.
    for (hidden, absent) in [
        ("amount:>0", "nosuch:>0"),
        ("amount:1200", "nosuch:1200"),
        ("has:amount", "has:nosuch"),
        ("NOT has:amount", "NOT has:nosuch"),
        ("amount:[* TO *}", "nosuch:[* TO *}"),
        ("label:invoice -amount:<0", "label:invoice -nosuch:<0"),
    ] {
        let (h, a) = (
            clerk.search_documents(hidden, PageRequest::new(1, 10)),
            clerk.search_documents(absent, PageRequest::new(1, 10)),
        );
        match (h, a) {
            (Ok(h), Ok(a)) => {
                assert_eq!(h.count, a.count, "{hidden}");
                let ids = |p: &docmeta_core::Page<docmeta_core::DocumentView>| {
                    p.items.iter().map(|d| d.document.id).collect::<Vec<_>>()
                };
                assert_eq!(ids(&h), ids(&a), "{hidden}");
            }
            (Err(h), Err(a)) => {
                assert_eq!(h.kind(), docmeta_core::ErrorKind::InvalidInput, "{hidden}");
                assert_eq!(
                    h.to_string().replace("amount", "nosuch"),
                    a.to_string(),
                    "{hidden}"
                );
            }
            (h, a) => panic!("{hidden}: {h:?} / {absent}: {a:?}"),
        }
    }
    // Once the clerk may view the type (not its values), it knows it: its terms match nothing.
    w.admin.grant(
        Permission::MetadataTypeView,
        clerk_role(&w)?,
        ObjectRef::new(ObjectKind::METADATA_TYPE, w.t("amount").0),
    )?;
    assert_eq!(found(&w, &clerk, "has:amount")?, Vec::<usize>::new());
    assert_eq!(found(&w, &clerk, "amount:>0")?, Vec::<usize>::new());
    assert_eq!(found(&w, &clerk, "NOT has:amount")?, [1, 2, 3, 4, 5]);
    assert_eq!(
        sorted(&w, &clerk, "label:invoice", "-amount")?,
        sorted(&w, &clerk, "label:invoice", "-nosuch")?
    );
    // d2's values are hidden from the clerk: it matches no term on them, and sorts last.
    assert_eq!(found(&w, &clerk, "party:globex")?, Vec::<usize>::new());
    assert_eq!(found(&w, &clerk, "paid:false")?, [3]);
    assert_eq!(found(&w, &clerk, "NOT has:party")?, [2, 5]);
    assert_eq!(
        sorted(&w, &clerk, "label:invoice", "quantity")?,
        [3, 1, 4, 2, 5]
    );
    assert_eq!(
        sorted(&w, &clerk, "label:invoice", "-quantity")?,
        [4, 1, 3, 2, 5]
    );
    let list = clerk.documents(
        DocumentQuery {
            ordering: Some(OrderBy::descending("amount")),
            ..Default::default()
        },
        PageRequest::new(1, 10),
    )?;
    let order: Vec<usize> = list
        .items
        .iter()
        .map(|d| index_of(&w, d.document.id))
        .collect();
    assert_eq!(
        order,
        [1, 2, 3, 4, 5],
        "a hidden type orders as no value at all"
    );
    Ok(())
}

#[test]
fn a_change_of_value_type_checks_every_stored_value() -> Result<()> {
    let w = world()?;
    let s = &w.admin;
    // `po_number` is text with "PO-1" and "PO-3": not integers.
    let po = s.metadata_type(w.t("po_number"))?;
    let check = s.check_value_type(po.id, ValueType::Integer)?;
    assert_eq!((check.checked, check.count), (2, 2));
    let mut values: Vec<&str> = check.misfits.iter().map(|m| m.value.as_str()).collect();
    values.sort_unstable();
    assert_eq!(values, ["PO-1", "PO-3"]);
    assert!(!check.fits());
    assert!(s.check_value_type(po.id, ValueType::Text)?.fits());
    let to_integer = MetadataTypeInput::from(&po).value_type(ValueType::Integer);
    match s.update_metadata_type(po.id, to_integer.clone()) {
        Err(Error::Validation { field, message }) => {
            assert_eq!(field, "value_type");
            assert!(message.contains("2 of 2 values"), "{message}");
            assert!(message.contains("PO-1"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        s.metadata_type(po.id)?.value_type,
        ValueType::Text,
        "nothing changed"
    );
    // Once every value fits, the change is made, and search compares by the new type.
    for (d, number) in [(w.docs[0], "9"), (w.docs[2], "10")] {
        let v = value_of(s, d, po.id)?;
        s.edit_document_metadata(d, v.id, number, None)?;
    }
    assert!(s.check_value_type(po.id, ValueType::Integer)?.fits());
    let changed = s.update_metadata_type(po.id, to_integer)?;
    assert_eq!(changed.value_type, ValueType::Integer);
    assert_eq!(found(&w, s, "po_number:>9")?, [3], "10 > 9 as numbers");
    assert_eq!(sorted(&w, s, "has:po_number", "-po_number")?, [3, 1]);
    // And a value of the old kind is refused from now on.
    let empty = value_of(s, w.docs[1], po.id)?.id;
    assert!(matches!(
        s.edit_document_metadata(w.docs[1], empty, "PO-2", None),
        Err(Error::Validation { .. })
    ));
    Ok(())
}

#[test]
fn the_check_names_only_values_the_caller_may_view() -> Result<()> {
    let w = world()?;
    let editor = w.admin.create_user("editor", "a long password", false)?.id;
    let group = w.admin.create_group("editors")?.id;
    let role = w.admin.create_role("editors")?.id;
    w.admin.set_group_member(group, editor, true)?;
    w.admin.set_role_group(role, group, true)?;
    let party = w.t("party");
    w.admin.grant(
        Permission::MetadataTypeEdit,
        role,
        ObjectRef::new(ObjectKind::METADATA_TYPE, party.0),
    )?;
    let editor = w.db.session(editor);
    // The editor shapes the type but sees no document: nothing is counted or shown of the
    // values, only that some it may not view do not fit (so the change would be refused)...
    let check = editor.check_value_type(party, ValueType::Integer)?;
    assert_eq!((check.checked, check.count), (0, 0));
    assert!(check.misfits.is_empty() && check.hidden_misfits && !check.fits());
    // ...and the same answer whatever the hidden values are: one that fits text fits.
    let text = editor.check_value_type(party, ValueType::Text)?;
    assert_eq!(
        (text.checked, text.count, text.hidden_misfits),
        (0, 0, false)
    );
    match editor.update_metadata_type(
        party,
        MetadataTypeInput::from(&w.admin.metadata_type(party)?).value_type(ValueType::Integer),
    ) {
        Err(Error::Validation { field, message }) => {
            assert_eq!(field, "value_type");
            for secret in ["ACME", "Globex", "Initech", "acme"] {
                assert!(!message.contains(secret), "{message}");
            }
            assert!(
                message.starts_with("values you may not view"),
                "no count: {message}"
            );
        }
        other => panic!("{other:?}"),
    }
    // Without the edit permission, no check.
    let clerk = narrow_user(&w)?;
    assert!(clerk.check_value_type(party, ValueType::Integer).is_err());
    Ok(())
}

#[test]
fn a_value_written_through_a_stale_cache_is_checked_against_the_stored_type() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let open = || Docmeta::builder().data_dir(dir.path()).worker(false).open();
    let (one, two) = (open()?, open()?);
    let s1 = one.system();
    let invoice = s1.create_document_type("Invoice")?;
    let count = s1.create_metadata_type(MetadataTypeInput::new("count", "Count"))?;
    s1.associate(invoice.id, count.id, false)?;
    let doc = s1
        .create_document(invoice.id, "one", &[(count.id, "1")])?
        .document
        .id;
    let value = value_of(&s1, doc, count.id)?.id;
    // The first handle has compiled the type (text) and keeps it cached.
    s1.edit_document_metadata(doc, value, "2", None)?;
    // The second makes it an integer type.
    let s2 = two.system();
    s2.update_metadata_type(
        count.id,
        MetadataTypeInput::from(&count).value_type(ValueType::Integer),
    )?;
    // A write through the first handle's cached (text) form is still checked as an integer.
    match s1.edit_document_metadata(doc, value, "two", None) {
        Err(Error::Validation { field, .. }) => assert_eq!(field, "value"),
        other => panic!("{other:?}"),
    }
    assert_eq!(value_of(&s2, doc, count.id)?.value, "2");
    Ok(())
}

#[test]
fn the_schema_file_carries_the_value_type() -> Result<()> {
    let w = world()?;
    let schema = docmeta_core::export_schema(&w.db)?;
    let yaml = schema.to_yaml()?;
    assert!(yaml.contains("value_type: decimal"), "{yaml}");
    assert!(
        !yaml.contains("value_type: text"),
        "text is the default: {yaml}"
    );
    // Applied elsewhere, the types come out typed.
    let other = Docmeta::in_memory()?;
    docmeta_core::apply_schema(&other, &docmeta_core::Schema::from_yaml(&yaml)?, false)?;
    let amount = other.system().metadata_type_by_name("amount")?;
    assert_eq!(amount.value_type, ValueType::Decimal);
    // An unknown value type is refused with its name.
    let bad = yaml.replace("value_type: decimal", "value_type: money");
    let e = docmeta_core::Schema::from_yaml(&bad).expect_err("an unknown value type");
    assert!(e.to_string().contains("money"), "{e}");
    Ok(())
}
