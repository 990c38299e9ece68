//! The invoice workflow of spec 4.5, end to end, driven only by metadata edits:
//! draft -> review -> approved, with a condition on each transition, triggers on metadata edits,
//! an edit action that stamps the approval and a grant action that lets the auditors see the
//! invoice. Run it: `cargo run -p docmeta-core --example invoice_workflow`.

use docmeta_core::ActionKind;
use docmeta_core::{Docmeta, MetadataTypeInput, PageRequest, Permission};

fn main() -> docmeta_core::Result<()> {
    let db = Docmeta::in_memory()?;
    let admin = db.system();
    let invoice = admin.create_document_type("Invoice")?.id;
    let amount = admin
        .create_metadata_type(MetadataTypeInput::new("amount", "Amount"))?
        .id;
    let status = admin
        .create_metadata_type(
            MetadataTypeInput::new("status", "Status")
                .default_value("draft")
                .lookup("draft,review,approved"),
        )?
        .id;
    let stamp = admin
        .create_metadata_type(MetadataTypeInput::new("approval", "Approval"))?
        .id;
    for (t, required) in [(amount, false), (status, true), (stamp, false)] {
        admin.associate(invoice, t, required)?;
    }

    let flow = admin.create_workflow("Invoice approval", &[invoice])?.id;
    let draft = admin.create_workflow_state(flow, "draft", true)?.id;
    let review = admin.create_workflow_state(flow, "review", false)?.id;
    let approved = admin.create_workflow_state(flow, "approved", false)?.id;
    let when_status = |s: &str| {
        format!(
            "{{% if workflow_instance.document.metadata_value_of.status == '{s}' %}}True{{% endif %}}"
        )
    };
    for (label, from, to, wanted) in [
        ("submit", draft, review, "review"),
        ("approve", review, approved, "approved"),
    ] {
        let t = admin.create_workflow_transition(flow, label, from, to, &when_status(wanted))?;
        admin.add_workflow_trigger(flow, t.id, "document_metadata_edited")?;
    }
    admin.create_workflow_action(
        flow,
        approved,
        "stamp the approval",
        true,
        false,
        ActionKind::EditMetadata {
            metadata_type_id: stamp,
            value: "approved {{ workflow_instance.document.metadata_value_of.amount }} EUR in '{{ workflow_instance.workflow.label }}'".into(),
        },
    )?;
    let auditors = admin.create_role("Auditors")?.id;
    admin.create_workflow_action(
        flow,
        approved,
        "show it to the auditors",
        true,
        false,
        ActionKind::GrantDocumentAccess {
            role_id: auditors,
            permission: Permission::DocumentView.key().to_owned(),
        },
    )?;
    let audrey = admin.create_user("audrey", "a long password", false)?.id;
    let group = admin.create_group("Audit")?.id;
    admin.set_group_member(group, audrey, true)?;
    admin.set_role_group(auditors, group, true)?;

    let doc = admin
        .create_document(invoice, "INV-2024-0042", &[(amount, "1250.00")])?
        .document;
    let state = |label: &str| -> docmeta_core::Result<()> {
        let instance = admin.workflow_instances(doc.id)?.remove(0);
        let states = admin.workflow_states(flow)?;
        let current = states
            .iter()
            .find(|s| Some(s.id) == instance.state_id)
            .map_or("-", |s| s.label.as_str());
        println!(
            "{label:<28} state: {current:<9} audrey sees it: {}",
            db.session(audrey).document(doc.id).is_ok()
        );
        Ok(())
    };
    state("created")?;
    let status_value = admin
        .document_metadata(doc.id, PageRequest::ALL)
        .map(|p| p.items.into_iter().map(|v| v.value).collect::<Vec<_>>())?
        .into_iter()
        .find(|m| m.metadata_type_id == status)
        .map(|m| m.id)
        .expect("a required status is added with its default");
    for next in ["review", "approved"] {
        admin.edit_document_metadata(doc.id, status_value, next, None)?;
        state(&format!("status edited to {next}"))?;
    }
    println!(
        "approval: {}",
        admin
            .metadata_value_of(doc.id, "approval")?
            .unwrap_or_default()
    );
    let instance = admin.workflow_instances(doc.id)?.remove(0);
    for entry in admin.workflow_log(doc.id, instance.id)? {
        println!("log: {}", entry.comment);
    }
    Ok(())
}
