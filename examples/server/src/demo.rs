//! `docmeta demo`: invoices and contracts with every validator and parser, a lookup, users,
//! groups, roles and ACLs, so a newcomer sees something at once.

use docmeta_core::{
    Docmeta, DocumentTypeId, MetadataTypeId, MetadataTypeInput, ObjectKind, ObjectRef,
    Permission as P, RoleId, ValueType,
};

const V: &str = "svc.apps.metadata.metadata_validators.";
const PA: &str = "svc.apps.metadata.metadata_parsers.";
/// The password of the demo users.
pub const DEMO_PASSWORD: &str = "demo-password";

pub fn load(db: &Docmeta) -> docmeta_core::Result<()> {
    let s = db.system();
    if s.document_types()?.iter().any(|t| t.label == "Invoice") {
        println!("the demo is already loaded");
        return Ok(());
    }
    let invoice = s.create_document_type("Invoice")?;
    let contract = s.create_document_type("Contract")?;
    let mt = |input: MetadataTypeInput| s.create_metadata_type(input).map(|t| t.id);
    let number = mt(MetadataTypeInput::new("invoice_number", "Invoice number")
        .validation(
            format!("{V}RegularExpressionValidator"),
            "pattern: 'INV-? ?[0-9]{4,}'",
        )
        .parser(
            format!("{PA}RegularExpressionParser"),
            "pattern: '[ -]'\nreplacement: ''",
        ))?;
    let due = mt(MetadataTypeInput::new("due_date", "Due date")
        .default_value(r#"{{ now|date:"d/m/Y" }}"#)
        .validation(format!("{V}DateValidator"), "")
        .parser(format!("{PA}DateParser"), "")
        .value_type(ValueType::Date))?;
    let issued = mt(MetadataTypeInput::new("issued_at", "Issued at")
        .validation(format!("{V}DateAndTimeValidator"), "")
        .parser(format!("{PA}DateAndTimeParser"), "")
        .value_type(ValueType::DateTime))?;
    let delivery = mt(MetadataTypeInput::new("delivery_time", "Delivery time")
        .validation(format!("{V}TimeValidator"), "")
        .parser(format!("{PA}TimeParser"), "")
        .value_type(ValueType::Time))?;
    let status = mt(MetadataTypeInput::new("status", "Status")
        .default_value("draft")
        .lookup("draft, review, approved, paid"))?;
    let owner = mt(MetadataTypeInput::new("owner", "Owner")
        .lookup("{% for u in users %}{{ u.username }},{% endfor %}"))?;
    let party = mt(MetadataTypeInput::new("party", "Counterparty"))?;
    let signed = mt(MetadataTypeInput::new("signed_on", "Signed on")
        .parser(format!("{PA}DateParser"), "")
        .value_type(ValueType::Date))?;
    for (dt, types) in [
        (
            invoice.id,
            vec![
                (number, true),
                (due, true),
                (status, true),
                (issued, false),
                (delivery, false),
                (owner, false),
            ],
        ),
        (
            contract.id,
            vec![
                (party, true),
                (signed, false),
                (status, true),
                (owner, false),
            ],
        ),
    ] {
        for (t, required) in types {
            s.associate(dt, t, required)?;
        }
    }

    let alice = s.create_user("alice", DEMO_PASSWORD, false)?.id;
    let bob = s.create_user("bob", DEMO_PASSWORD, false)?.id;
    let carol = s.create_user("carol", DEMO_PASSWORD, false)?.id;
    let accounting = s.create_group("Accounting")?.id;
    let legal = s.create_group("Legal")?.id;
    let auditors = s.create_group("Auditors")?.id;
    s.set_group_member(accounting, alice, true)?;
    s.set_group_member(legal, bob, true)?;
    s.set_group_member(auditors, carol, true)?;
    let accountant = s.create_role("Accountant")?.id;
    let lawyer = s.create_role("Lawyer")?.id;
    let auditor = s.create_role("Auditor")?.id;
    s.set_role_group(accountant, accounting, true)?;
    s.set_role_group(lawyer, legal, true)?;
    s.set_role_group(auditor, auditors, true)?;
    let editor = [
        P::DocumentView,
        P::DocumentEdit,
        P::DocumentCreate,
        P::DocumentMetadataView,
        P::DocumentMetadataAdd,
        P::DocumentMetadataEdit,
        P::DocumentMetadataRemove,
    ];
    let grant_type = |role: RoleId, dt: DocumentTypeId, perms: &[P]| -> docmeta_core::Result<()> {
        for p in perms {
            s.grant(*p, role, ObjectRef::new(ObjectKind::DOCUMENT_TYPE, dt.0))?;
        }
        Ok(())
    };
    let grant_types =
        |role: RoleId, types: &[MetadataTypeId], perms: &[P]| -> docmeta_core::Result<()> {
            for t in types {
                for p in perms {
                    s.grant(*p, role, ObjectRef::new(ObjectKind::METADATA_TYPE, t.0))?;
                }
            }
            Ok(())
        };
    let value_perms = [
        P::MetadataTypeView,
        P::DocumentMetadataView,
        P::DocumentMetadataAdd,
        P::DocumentMetadataEdit,
        P::DocumentMetadataRemove,
    ];
    grant_type(accountant, invoice.id, &editor)?;
    grant_types(
        accountant,
        &[number, due, status, issued, delivery, owner],
        &value_perms,
    )?;
    grant_type(lawyer, contract.id, &editor)?;
    grant_types(lawyer, &[party, signed, status, owner], &value_perms)?;
    // Auditors read everything, globally.
    for p in [
        P::DocumentView,
        P::DocumentTypeView,
        P::DocumentMetadataView,
        P::MetadataTypeView,
        P::CabinetView,
    ] {
        s.grant_global(p, auditor)?;
    }

    let year = s.create_cabinet("2024", None)?;
    let q1 = s.create_cabinet("Q1", Some(year.id))?;
    for (i, (num, due_on, state)) in [
        ("INV-1001", "31/01/2024", "paid"),
        ("INV 1002", "2024-02-29", "approved"),
        ("INV-1003", "15/03/2024", "review"),
        ("INV-1004", "", "draft"),
        ("INV-1005", "30/06/2024", "draft"),
    ]
    .iter()
    .enumerate()
    {
        let mut values = vec![
            (number, *num),
            (status, *state),
            (owner, "alice"),
            (delivery, "09:30"),
            (issued, "2024-01-02 10:15"),
        ];
        if !due_on.is_empty() {
            values.push((due, *due_on));
        }
        let d = s
            .create_document(invoice.id, &format!("Invoice {}", i + 1), &values)?
            .document;
        let scan = format!("Invoice {}\n{values:?}\n", i + 1);
        s.add_file(
            d.id,
            &format!("invoice-{}.txt", i + 1),
            &mut scan.as_bytes(),
        )?;
        if i < 3 {
            s.set_cabinet_document(q1.id, d.id, true)?;
        }
    }
    for (i, who) in ["ACME Corp", "Globex", "Initech"].iter().enumerate() {
        s.create_document(
            contract.id,
            &format!("Contract with {who}"),
            &[
                (party, *who),
                (signed, "01/03/2024"),
                (status, "approved"),
                (owner, "bob"),
            ],
        )?;
        let _ = i;
    }
    s.grant(
        P::CabinetView,
        accountant,
        ObjectRef::new(ObjectKind::CABINET, year.id.0),
    )?;
    // The invoice workflow (spec 4.5), for invoices created from now on: editing the status
    // moves an invoice draft -> review -> approved -> paid through triggers and conditions;
    // entering `approved` lets the lawyers see it.
    let flow = s.create_workflow("Invoice approval", &[invoice.id])?.id;
    let mut states = Vec::new();
    for (label, initial) in [
        ("draft", true),
        ("review", false),
        ("approved", false),
        ("paid", false),
    ] {
        states.push(s.create_workflow_state(flow, label, initial)?.id);
    }
    for (i, (label, wanted)) in [
        ("submit", "review"),
        ("approve", "approved"),
        ("pay", "paid"),
    ]
    .iter()
    .enumerate()
    {
        let condition = format!(
            "{{% if workflow_instance.document.metadata_value_of.status == '{wanted}' %}}True{{% endif %}}"
        );
        let t = s.create_workflow_transition(flow, label, states[i], states[i + 1], &condition)?;
        s.add_workflow_trigger(flow, t.id, "document_metadata_edited")?;
    }
    s.create_workflow_action(
        flow,
        states[2],
        "let the lawyers see it",
        true,
        false,
        docmeta_core::ActionKind::GrantDocumentAccess {
            role_id: lawyer,
            permission: P::DocumentView.key().to_owned(),
        },
    )?;
    println!(
        "demo loaded: 2 document types, 8 metadata types, 8 documents, cabinets 2024/Q1, workflow 'Invoice approval' for new invoices"
    );
    println!(
        "users alice (Accounting: invoices), bob (Legal: contracts), carol (Auditors: read-only, global) with password '{DEMO_PASSWORD}'"
    );
    Ok(())
}

/// `docmeta bench-data` (hidden; `benches/http/load.sh`): adds `documents` documents to the demo,
/// alternately invoices (which alice may view) and contracts (which she may not), each with
/// five values through the pipeline, so the benchmark's lists and searches filter a real mix.
pub fn bench_data(db: &Docmeta, documents: usize) -> docmeta_core::Result<()> {
    let s = db.system();
    let types = s.document_types()?;
    let find = |label: &str| {
        types
            .iter()
            .find(|t| t.label == label)
            .map(|t| t.id)
            .ok_or_else(|| docmeta_core::Error::not_found(format!("the demo's {label} type")))
    };
    let (invoice, contract) = (find("Invoice")?, find("Contract")?);
    let id = |name: &str| s.metadata_type_by_name(name).map(|t| t.id);
    let (number, due, status, issued, delivery) = (
        id("invoice_number")?,
        id("due_date")?,
        id("status")?,
        id("issued_at")?,
        id("delivery_time")?,
    );
    let (party, signed, owner) = (id("party")?, id("signed_on")?, id("owner")?);
    const PARTIES: [&str; 4] = ["ACME Corp", "Globex", "Initech", "Umbrella"];
    // Each document's label and values, owned, for the batch that borrows them.
    struct Owned {
        document_type: docmeta_core::DocumentTypeId,
        label: String,
        values: Vec<(docmeta_core::MetadataTypeId, String)>,
    }
    let generate = |i: usize| {
        let day = i % 28 + 1;
        let month = i % 12 + 1;
        if i.is_multiple_of(2) {
            Owned {
                document_type: invoice,
                label: format!("Bench invoice {i}"),
                values: vec![
                    (number, format!("INV-{:06}", 100_000 + i)),
                    (due, format!("{day:02}/{month:02}/2025")),
                    (status, "draft".to_owned()),
                    (issued, format!("2025-{month:02}-{day:02} 10:15")),
                    (delivery, "09:30".to_owned()),
                ],
            }
        } else {
            Owned {
                document_type: contract,
                label: format!("Bench contract {i}"),
                values: vec![
                    (party, PARTIES[i % PARTIES.len()].to_owned()),
                    (signed, format!("{day:02}/{month:02}/2025")),
                    (status, "approved".to_owned()),
                    (owner, "bob".to_owned()),
                ],
            }
        }
    };
    let started = std::time::Instant::now();
    let mut done = 0;
    while done < documents {
        let batch: Vec<Owned> = (done..documents.min(done + docmeta_core::MAX_DOCUMENT_BATCH))
            .map(generate)
            .collect();
        let values: Vec<Vec<(docmeta_core::MetadataTypeId, &str)>> = batch
            .iter()
            .map(|d| d.values.iter().map(|(t, v)| (*t, v.as_str())).collect())
            .collect();
        let new: Vec<docmeta_core::NewDocument<'_>> = batch
            .iter()
            .zip(&values)
            .map(|(d, v)| docmeta_core::NewDocument {
                document_type: d.document_type,
                label: &d.label,
                values: v,
            })
            .collect();
        s.create_documents(&new)?;
        done += new.len();
        let seconds = started.elapsed().as_secs_f64();
        eprintln!(
            "bench-data: {done} of {documents} documents ({:.0}/s, {seconds:.0} s)",
            done as f64 / seconds.max(1e-9)
        );
    }
    Ok(())
}

/// The search index catch-up after `bench-data`, timed: the generated documents become
/// searchable before the benchmark's server starts (one rebuild, far cheaper than applying the
/// events one document at a time).
pub fn bench_index(db: &Docmeta) -> docmeta_core::Result<()> {
    let started = std::time::Instant::now();
    let mut shown = 0;
    let indexed = db.search_reindex(|done, total| {
        if done >= shown + 50_000 || done == total {
            shown = done;
            eprintln!("bench-data: indexed {done} of {total} documents");
        }
    })?;
    db.wait_for_index()?;
    eprintln!(
        "bench-data: search index caught up ({indexed} documents) in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
