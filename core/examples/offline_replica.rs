//! A replica on a device, end to end: it signs in once, holds what its user may see, works
//! offline (a value edited through the same pipeline, a workflow transition, a photo attached,
//! a document created) and sends it all at the next sync, where the server decides again.
//! The server here is a database in the same process; over HTTP, open the replica with
//! `Replica::open(dir, &Remote { url, username, password })` instead.
//! Run it: `cargo run -p docmeta-core --example offline_replica`.

use docmeta_core::{
    Docmeta, InProcessServer, MetadataTypeInput, ObjectKind, ObjectRef, PageRequest, Permission,
    Replica, VALIDATOR_PREFIX,
};

fn main() -> docmeta_core::Result<()> {
    // The server: an inspection type with a numeric reading, a review workflow, and ann, who
    // may work on inspections.
    let server = Docmeta::in_memory()?;
    let admin = server.system();
    let inspection = admin.create_document_type("Inspection")?.id;
    let reading = admin
        .create_metadata_type(MetadataTypeInput::new("reading", "Reading").validation(
            format!("{VALIDATOR_PREFIX}RegularExpressionValidator"),
            "pattern: '[0-9]+'",
        ))?
        .id;
    admin.associate(inspection, reading, false)?;
    let flow = admin
        .create_workflow("Inspection review", &[inspection])?
        .id;
    let open = admin.create_workflow_state(flow, "open", true)?.id;
    let done = admin.create_workflow_state(flow, "done", false)?.id;
    let close = admin
        .create_workflow_transition(flow, "close", open, done, "")?
        .id;
    let ann = admin.create_user("ann", "a long password", false)?.id;
    let role = admin.create_role("Inspector")?.id;
    let group = admin.create_group("Inspectors")?.id;
    admin.set_group_member(group, ann, true)?;
    admin.set_role_group(role, group, true)?;
    let on_type = ObjectRef::new(ObjectKind::DOCUMENT_TYPE, inspection.0);
    for p in [
        Permission::DocumentView,
        Permission::DocumentTypeView,
        Permission::DocumentCreate,
        Permission::DocumentMetadataView,
        Permission::DocumentMetadataAdd,
        Permission::DocumentMetadataEdit,
        Permission::DocumentFileNew,
    ] {
        admin.grant(p, role, on_type)?;
    }
    let on_reading = ObjectRef::new(ObjectKind::METADATA_TYPE, reading.0);
    for p in [
        Permission::MetadataTypeView,
        Permission::DocumentMetadataView,
        Permission::DocumentMetadataAdd,
        Permission::DocumentMetadataEdit,
    ] {
        admin.grant(p, role, on_reading)?;
    }
    let on_flow = ObjectRef::new(ObjectKind::WORKFLOW, flow.0);
    admin.grant(Permission::WorkflowTemplateView, role, on_flow)?;
    admin.grant(Permission::WorkflowInstanceTransition, role, on_flow)?;
    let pump = admin
        .create_document(inspection, "Pump 7", &[(reading, "40")])?
        .document
        .id;

    // The device: signed in once (a device token is kept, never the password), then synced.
    let dir = tempfile::tempdir().map_err(|e| docmeta_core::Error::storage("a directory", e))?;
    let replica = Replica::open_with(
        dir.path(),
        InProcessServer::new(server.clone()),
        "ann",
        "a long password",
    )?;
    let first = replica.sync()?;
    println!("synced: {} document(s)", first.received);

    // Offline: the same pipeline as the server (a reading that is not a number is refused
    // here, as there), a transition, a photo, a new document.
    let refused = replica.set_value(pump, reading, "about forty");
    println!("refused offline: {}", refused.is_err());
    replica.set_value(pump, reading, "42")?;
    let instance = replica.session().workflow_instances(pump)?[0].id;
    replica.transition_workflow(pump, instance, close, "checked on site")?;
    replica.add_file(pump, "pump-7.jpg", &mut &b"a photograph"[..])?;
    let valve = replica.create_document(inspection, "Valve 3", &[(reading, "7")])?;
    println!(
        "offline: {} pending, valve under a local id: {}",
        replica.pending()?.len(),
        valve.document.id.0 >= docmeta_core::LOCAL_IDS
    );

    // Back online: pushed through ann's session on the server, then what the server holds.
    let done_sync = replica.sync()?;
    println!(
        "pushed {} writes, {} rejected",
        done_sync.pushed, done_sync.rejected
    );
    let on_server = admin.document_metadata(pump, PageRequest::ALL)?.items;
    let state = admin.workflow_instance(pump, instance)?.state_id;
    println!(
        "server: reading {}, closed: {}, files: {}",
        on_server[0].value.value,
        state == Some(done),
        admin.files(pump)?.len()
    );
    Ok(())
}
