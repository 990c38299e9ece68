//! The Rust side of the Python overhead comparison (`benches/python/compare.py` runs this and
//! the same workload through the Python bindings): a metadata value add with a date parser and
//! validator, one transaction each, and an access check, on an in-memory instance. Prints
//! `add_ns=<n> check_ns=<n>`.

use std::time::Instant;

use docmeta_core::{Docmeta, MetadataTypeInput, ObjectKind, ObjectRef, Permission};

const P: &str = "svc.apps.metadata.metadata_parsers.";
const V: &str = "svc.apps.metadata.metadata_validators.";

fn main() -> docmeta_core::Result<()> {
    if std::env::args().any(|a| a == "--list") {
        return Ok(());
    }
    let n: i64 = std::env::var("DOCUMENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let db = Docmeta::in_memory()?;
    let admin = db.system();
    let t = admin.create_document_type("Invoice")?.id;
    let due = admin
        .create_metadata_type(
            MetadataTypeInput::new("due", "Due")
                .parser(format!("{P}DateParser"), "")
                .validation(format!("{V}DateValidator"), ""),
        )?
        .id;
    admin.associate(t, due, false)?;
    let docs: Vec<_> = (0..n)
        .map(|i| {
            admin
                .create_document(t, &format!("doc {i}"), &[])
                .map(|d| d.document.id)
        })
        .collect::<Result<_, _>>()?;
    let started = Instant::now();
    for d in &docs {
        admin.add_document_metadata(*d, due, "31/12/2024")?;
    }
    let add_ns = started.elapsed().as_nanos() as f64 / n as f64;
    let user = admin.create_user("ann", "a long password", false)?.id;
    let group = admin.create_group("g")?.id;
    let role = admin.create_role("r")?.id;
    admin.set_group_member(group, user, true)?;
    admin.set_role_group(role, group, true)?;
    admin.grant(
        Permission::DocumentView,
        role,
        ObjectRef::new(ObjectKind::DOCUMENT_TYPE, t.0),
    )?;
    let checks = 1_000_000usize;
    let started = Instant::now();
    let mut allowed = 0usize;
    for i in 0..checks {
        let d = docs[i % docs.len()];
        allowed += usize::from(db.check(
            user,
            Permission::DocumentView,
            ObjectRef::new(ObjectKind::DOCUMENT, d.0),
        ));
    }
    let check_ns = started.elapsed().as_nanos() as f64 / checks as f64;
    assert_eq!(allowed, checks);
    println!("add_ns={add_ns:.0} check_ns={check_ns:.0}");
    Ok(())
}
