//! Opens (or creates) a data directory, defines invoice metadata, adds values through the
//! pipeline of spec 2.10, shows an access rule, and prints the event log.
//!
//! ```text
//! cargo run -p docmeta-core --example quickstart -- ./data
//! ```

use docmeta_core::{
    Docmeta, DocumentQuery, Error, EventQuery, MetadataTypeInput, ObjectKind, ObjectRef,
    PageRequest, Permission,
};

fn main() -> Result<(), Error> {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "./docmeta-data".into());
    let db = Docmeta::open(&dir)?;
    let admin = db.system();
    println!("data directory: {dir} ({})", db.store().describe());

    let invoice = match admin
        .document_types()?
        .into_iter()
        .find(|t| t.label == "Invoice")
    {
        Some(t) => t,
        None => admin.create_document_type("Invoice")?,
    };
    let due = match admin.metadata_type_by_name("due_date") {
        Ok(t) => t,
        Err(_) => {
            let t = admin.create_metadata_type(
                MetadataTypeInput::new("due_date", "Due date")
                    .default_value(r#"{{ now|date:"d/m/Y" }}"#)
                    .validation("svc.apps.metadata.metadata_validators.DateValidator", "")
                    .parser("svc.apps.metadata.metadata_parsers.DateParser", ""),
            )?;
            admin.associate(invoice.id, t.id, true)?;
            t
        }
    };

    let count = admin
        .documents(
            DocumentQuery {
                document_type: Some(invoice.id),
                ..Default::default()
            },
            PageRequest::new(1, 1),
        )?
        .count;
    let doc = admin
        .create_document(
            invoice.id,
            &format!("Invoice {}", count + 1),
            &[(due.id, "31/12/2024")],
        )?
        .document;
    println!(
        "created {:?} with due_date = {:?}",
        doc.label,
        admin.metadata_value_of(doc.id, "due_date")?
    );

    let rejected = admin.create_document(invoice.id, "Bad invoice", &[(due.id, "31/02/2024")]);
    println!(
        "an impossible date is refused: {}",
        rejected.err().map(|e| e.to_string()).unwrap_or_default()
    );

    let defaulted = admin
        .create_document(invoice.id, "Invoice due today", &[])?
        .document;
    println!(
        "an empty required value takes the default: {:?}",
        admin.metadata_value_of(defaulted.id, "due_date")?
    );

    let username = format!("clerk{}", count + 1);
    let clerk = admin.create_user(&username, "correct horse battery", false)?;
    let role = admin
        .create_role(&format!("Invoice readers {}", count + 1))?
        .id;
    let group = admin.create_group(&format!("Accounting {}", count + 1))?.id;
    admin.set_group_member(group, clerk.id, true)?;
    admin.set_role_group(role, group, true)?;
    admin.grant(
        Permission::DocumentView,
        role,
        ObjectRef::new(ObjectKind::DOCUMENT_TYPE, invoice.id.0),
    )?;
    let why = db.explain(
        clerk.id,
        Permission::DocumentView,
        ObjectRef::new(ObjectKind::DOCUMENT, doc.id.0),
    );
    println!(
        "{username} may view {:?}: {}",
        doc.label,
        why.describe(&db.kinds())
    );

    println!("\nlatest events:");
    for e in db.events(&EventQuery {
        limit: Some(12),
        ..Default::default()
    })? {
        let action = e
            .action_object
            .map(|o| format!(" / {} {:?}", o.kind, o.label))
            .unwrap_or_default();
        println!(
            "  #{:<4} {:<45} {} {:?}{}",
            e.id, e.name, e.target.kind, e.target.label, action
        );
    }
    Ok(())
}
