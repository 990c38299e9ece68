//! What schema migration 10 gives the events written before it, on either store: they read as
//! changing nothing recorded (`changes` empty), while the events written after it carry their
//! changes. Staged on a current database, which is then taken back to schema 9 (the column of
//! migration 10 dropped) and opened again, as an installation of the previous version would be.

use docmeta_core::{Docmeta, DocumentId, Event, EventChange, EventQuery, Result};

/// Takes a database of this version back to schema 9 (the same SQL on SQLite and PostgreSQL).
pub const BACK_TO_SCHEMA_9: &str = "ALTER TABLE metadata_types DROP COLUMN value_type; DROP TABLE audit_checkpoints; DROP INDEX events_history; DROP INDEX events_unsealed; ALTER TABLE events DROP COLUMN hash; ALTER TABLE events DROP COLUMN seq; DROP TABLE device_creates; DROP INDEX cabinet_documents_by_document; DROP TABLE device_documents; DROP TABLE devices; DROP TABLE webhook_deliveries; DROP TABLE webhook_events; DROP TABLE webhooks; \
     ALTER TABLE events DROP COLUMN changes; \
     DELETE FROM schema_version WHERE version > 9;";

/// What [`stage`] made.
pub struct Staged {
    document: DocumentId,
    before: Vec<Event>,
}

/// A document created and renamed: events with changes, which the downgrade then drops.
pub fn stage(db: &Docmeta) -> Result<Staged> {
    let system = db.system();
    let t = system.create_document_type("Letter")?.id;
    let document = system.create_document(t, "Draft", &[])?.document.id;
    system.update_document(document, "Final")?;
    let before = db.events(&EventQuery {
        limit: Some(1000),
        ..Default::default()
    })?;
    assert!(
        before.iter().all(|e| !e.changes.is_empty()),
        "staged with changes: {before:#?}"
    );
    Ok(Staged { document, before })
}

/// After the upgrade: every older event reads as it was, without changes; a new one has them.
pub fn check(db: &Docmeta, staged: &Staged) -> Result<()> {
    let all = db.events(&EventQuery {
        limit: Some(1000),
        ..Default::default()
    })?;
    assert_eq!(all.len(), staged.before.len());
    for (old, new) in staged.before.iter().zip(&all) {
        assert!(new.changes.is_empty(), "{new:?}");
        assert_eq!(
            Event {
                changes: Vec::new(),
                ..old.clone()
            },
            *new
        );
    }
    db.system().update_document(staged.document, "Sent")?;
    let newest = db.events(&EventQuery {
        limit: Some(1),
        ..Default::default()
    })?;
    assert_eq!(
        newest[0].changes,
        [EventChange::new(
            "label",
            Some("Final".into()),
            Some("Sent".into())
        )]
    );
    Ok(())
}
