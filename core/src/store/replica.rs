//! Statements of a replica (see `replica`): the server's records stored under the server's ids,
//! as a batch of sync hands them over, and the replica's own state by key.
//!
//! Part of `store` (layer 3): imports only `error`, `model`, `config`, `events` and its siblings.

use super::Tx;
use super::records::to_micros;
use crate::error::{Error, Result};
use crate::model::*;

/// The storage name of a file whose bytes a replica has not fetched: `remote-<id>`.
pub(crate) const REMOTE: &str = "remote-";

/// A label no user can give (labels are trimmed, and this one starts with a control
/// character): where a type's label waits while labels move between types.
fn parked(id: i64) -> String {
    format!("\u{1}parked {id}")
}

impl Tx<'_> {
    /// Stores document types under their ids, labels as given (two types that swapped labels
    /// included).
    pub(crate) fn mirror_document_types(&mut self, types: &[DocumentType]) -> Result<()> {
        for t in types {
            // Whichever type holds the label now lets go of it.
            self.execute(
                "UPDATE document_types SET label = ?1 WHERE label = ?2 AND id <> ?3",
                &[
                    parked(t.id.0).as_str().into(),
                    t.label.as_str().into(),
                    t.id.0.into(),
                ],
            )?;
            self.execute(
                "INSERT INTO document_types (id, label) VALUES (?1, ?2) \
                 ON CONFLICT (id) DO UPDATE SET label = excluded.label",
                &[t.id.0.into(), t.label.as_str().into()],
            )?;
        }
        Ok(())
    }

    /// Holds document types known by id only (their labels are not the user's to read): each
    /// one not held yet is stored with a parked label; one held keeps its label.
    pub(crate) fn mirror_document_type_ids(&mut self, ids: &[DocumentTypeId]) -> Result<()> {
        for id in ids {
            self.execute(
                "INSERT INTO document_types (id, label) VALUES (?1, ?2) \
                 ON CONFLICT (id) DO NOTHING",
                &[id.0.into(), parked(id.0).as_str().into()],
            )?;
        }
        Ok(())
    }

    /// Stores metadata types under their ids, every field as given, their default and lookup
    /// shaped by `shaper` (templates render locally with no more than the replica's user).
    pub(crate) fn mirror_metadata_types(
        &mut self,
        types: &[MetadataType],
        shaper: &str,
    ) -> Result<()> {
        for t in types {
            self.execute(
                "UPDATE metadata_types SET name = ?1 WHERE name = ?2 AND id <> ?3",
                &[
                    parked(t.id.0).as_str().into(),
                    t.name.as_str().into(),
                    t.id.0.into(),
                ],
            )?;
            let shaped = |template: &str| {
                if template.trim().is_empty() {
                    ""
                } else {
                    shaper
                }
            };
            self.execute(
                "INSERT INTO metadata_types (id, name, label, default_value, lookup, validation, \
                     validation_arguments, parser, parser_arguments, default_shapers, \
                     lookup_shapers, value_type) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) \
                 ON CONFLICT (id) DO UPDATE SET name = excluded.name, label = excluded.label, \
                     default_value = excluded.default_value, lookup = excluded.lookup, \
                     validation = excluded.validation, \
                     validation_arguments = excluded.validation_arguments, \
                     parser = excluded.parser, parser_arguments = excluded.parser_arguments, \
                     default_shapers = excluded.default_shapers, \
                     lookup_shapers = excluded.lookup_shapers, \
                     value_type = excluded.value_type",
                &[
                    t.id.0.into(),
                    t.name.as_str().into(),
                    t.label.as_str().into(),
                    t.default.as_str().into(),
                    t.lookup.as_str().into(),
                    t.validation.as_str().into(),
                    t.validation_arguments.as_str().into(),
                    t.parser.as_str().into(),
                    t.parser_arguments.as_str().into(),
                    shaped(&t.default).into(),
                    shaped(&t.lookup).into(),
                    t.value_type.as_str().into(),
                ],
            )?;
        }
        Ok(())
    }

    /// Replaces every association with `associations` (their types stored before).
    pub(crate) fn mirror_associations(
        &mut self,
        associations: &[DocumentTypeMetadataType],
    ) -> Result<()> {
        self.execute("DELETE FROM document_type_metadata_types", &[])?;
        for a in associations {
            self.execute(
                "INSERT INTO document_type_metadata_types \
                     (id, document_type_id, metadata_type_id, required) \
                 VALUES (?1, ?2, ?3, ?4)",
                &[
                    a.id.0.into(),
                    a.document_type_id.0.into(),
                    a.metadata_type_id.0.into(),
                    i64::from(a.required).into(),
                ],
            )?;
        }
        Ok(())
    }

    /// Stores a document under its id with exactly `values` and `files` (file records: their
    /// bytes are the server's, named `remote-<id>` until fetched; a file fetched before keeps
    /// its bytes while its checksum is the same). Answers the storage names of fetched bytes no
    /// longer needed (files gone or changed), to unlink once this commits.
    pub(crate) fn mirror_document(
        &mut self,
        d: &Document,
        values: &[DocumentMetadata],
        files: &[DocumentFile],
        cabinets: &[CabinetId],
        workflows: &[SyncedInstance],
    ) -> Result<Vec<String>> {
        self.execute(
            "INSERT INTO documents (id, label, document_type_id, created) \
             VALUES (?1, ?2, ?3, ?4) \
             ON CONFLICT (id) DO UPDATE SET label = excluded.label, \
                 document_type_id = excluded.document_type_id, created = excluded.created",
            &[
                d.id.0.into(),
                d.label.as_str().into(),
                d.document_type_id.0.into(),
                to_micros(d.created).into(),
            ],
        )?;
        self.execute(
            "DELETE FROM document_metadata WHERE document_id = ?1",
            &[d.id.0.into()],
        )?;
        // Its cabinets the replica holds (one made since the replica's cabinets were sent
        // comes with them, and the document is sent again).
        self.execute(
            "DELETE FROM cabinet_documents WHERE document_id = ?1",
            &[d.id.0.into()],
        )?;
        for c in cabinets {
            self.execute(
                "INSERT INTO cabinet_documents (cabinet_id, document_id) \
                 SELECT id, ?2 FROM cabinets WHERE id = ?1 \
                 ON CONFLICT DO NOTHING",
                &[c.0.into(), d.id.0.into()],
            )?;
        }
        for v in values {
            self.execute(
                "INSERT INTO document_metadata (id, document_id, metadata_type_id, value) \
                 VALUES (?1, ?2, ?3, ?4)",
                &[
                    v.id.0.into(),
                    d.id.0.into(),
                    v.metadata_type_id.0.into(),
                    v.value.as_str().into(),
                ],
            )?;
        }
        self.mirror_instances(d.id, workflows)?;
        // What is held now: (id, checksum, storage name).
        let held = self.rows(
            "SELECT id, checksum, storage_name FROM document_files WHERE document_id = ?1",
            &[d.id.0.into()],
            |r| Ok((r.int(0)?, r.text(1)?, r.text(2)?)),
        )?;
        let mut unlink = Vec::new();
        for (id, checksum, name) in held {
            let kept = files.iter().any(|f| f.id.0 == id && f.checksum == checksum);
            if !kept {
                self.execute("DELETE FROM document_files WHERE id = ?1", &[id.into()])?;
                if !name.starts_with(REMOTE) {
                    unlink.push(name);
                }
            }
        }
        for f in files {
            self.execute(
                "INSERT INTO document_files (id, document_id, filename, size, checksum, \
                     mimetype, created, storage_name, encrypted) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 0) \
                 ON CONFLICT (id) DO UPDATE SET filename = excluded.filename, \
                     mimetype = excluded.mimetype, created = excluded.created",
                &[
                    f.id.0.into(),
                    d.id.0.into(),
                    f.filename.as_str().into(),
                    i64::try_from(f.size).unwrap_or(i64::MAX).into(),
                    f.checksum.as_str().into(),
                    f.mimetype.as_str().into(),
                    to_micros(f.created).into(),
                    format!("{REMOTE}{}", f.id.0).as_str().into(),
                ],
            )?;
        }
        Ok(unlink)
    }

    /// Deletes a document the replica held, with its values and file records; answers the
    /// storage names of its fetched file bytes, to unlink once this commits.
    pub(crate) fn mirror_remove_document(&mut self, id: DocumentId) -> Result<Vec<String>> {
        let names = self.rows(
            "SELECT storage_name FROM document_files WHERE document_id = ?1",
            &[id.0.into()],
            |r| r.text(0),
        )?;
        self.execute(
            "DELETE FROM document_files WHERE document_id = ?1",
            &[id.0.into()],
        )?;
        self.delete_workflow_instances_of(id)?;
        self.delete_document(id)?;
        Ok(names
            .into_iter()
            .filter(|n| !n.starts_with(REMOTE))
            .collect())
    }

    /// The files whose bytes the replica has not fetched yet, by id.
    pub(crate) fn mirror_unfetched_files(&mut self) -> Result<Vec<DocumentFileId>> {
        self.rows(
            "SELECT id FROM document_files WHERE storage_name LIKE 'remote-%' ORDER BY id",
            &[],
            |r| r.int(0).map(DocumentFileId),
        )
    }

    /// The storage name of a file the replica holds (`remote-<id>`: not fetched yet) and its
    /// record.
    pub(crate) fn mirror_file(&mut self, id: DocumentFileId) -> Result<Option<(String, String)>> {
        self.optional(
            "SELECT storage_name, checksum FROM document_files WHERE id = ?1",
            &[id.0.into()],
            |r| Ok((r.text(0)?, r.text(1)?)),
        )
    }

    /// Records that a file's bytes, with `checksum`, are stored under `name` (`encrypted`:
    /// sealed by the replica's encrypted storage); `false` when the record changed meanwhile
    /// (the bytes are then not needed).
    pub(crate) fn mirror_file_fetched(
        &mut self,
        id: DocumentFileId,
        checksum: &str,
        name: &str,
        encrypted: bool,
    ) -> Result<bool> {
        Ok(self.execute(
            "UPDATE document_files SET storage_name = ?1, encrypted = ?5 \
             WHERE id = ?2 AND checksum = ?3 AND storage_name = ?4",
            &[
                name.into(),
                id.0.into(),
                checksum.into(),
                format!("{REMOTE}{}", id.0).as_str().into(),
                encrypted.into(),
            ],
        )? == 1)
    }

    /// Holds exactly `instances` (with their logs) as the workflow instances of `document`: an
    /// instance of a workflow the replica does not hold is left out, a state or a transition
    /// it does not hold is named by nothing.
    fn mirror_instances(
        &mut self,
        document: DocumentId,
        instances: &[SyncedInstance],
    ) -> Result<()> {
        let held = self.rows(
            "SELECT id FROM workflow_instances WHERE document_id = ?1",
            &[document.0.into()],
            |r| r.int(0),
        )?;
        for id in held {
            if !instances.iter().any(|i| i.instance.id.0 == id) {
                self.execute(
                    "DELETE FROM workflow_instance_log WHERE instance_id = ?1",
                    &[id.into()],
                )?;
                self.execute("DELETE FROM workflow_instances WHERE id = ?1", &[id.into()])?;
            }
        }
        for SyncedInstance { instance: i, log } in instances {
            let held = self.execute(
                "INSERT INTO workflow_instances (id, workflow_id, document_id, state_id, context) \
                 SELECT ?1, w.id, ?3, (SELECT s.id FROM workflow_states s \
                                       WHERE s.id = ?4 AND s.workflow_id = w.id), ?5 \
                 FROM workflows w WHERE w.id = ?2 \
                 ON CONFLICT (id) DO UPDATE SET state_id = excluded.state_id, \
                     context = excluded.context",
                &[
                    i.id.0.into(),
                    i.workflow_id.0.into(),
                    document.0.into(),
                    i.state_id.map(|s| s.0).into(),
                    i.context.to_string().as_str().into(),
                ],
            )?;
            self.execute(
                "DELETE FROM workflow_instance_log WHERE instance_id = ?1",
                &[i.id.0.into()],
            )?;
            if held == 0 {
                continue;
            }
            for e in log {
                self.execute(
                    "INSERT INTO workflow_instance_log \
                         (id, instance_id, transition_id, user_id, comment, error, created) \
                     VALUES (?1, ?2, (SELECT id FROM workflow_transitions WHERE id = ?3), ?4, \
                         ?5, ?6, ?7)",
                    &[
                        e.id.0.into(),
                        i.id.0.into(),
                        e.transition_id.map(|t| t.0).into(),
                        e.user_id.map(|u| u.0).into(),
                        e.comment.as_str().into(),
                        i64::from(e.error).into(),
                        to_micros(e.created).into(),
                    ],
                )?;
            }
        }
        Ok(())
    }

    /// Holds exactly `workflows` (their states, transitions with conditions and triggers, and
    /// bindings to the document types the replica holds), their conditions shaped by `shaper`
    /// (they render locally with no more than the replica's user); deletes every other
    /// workflow with its instances. Answers the workflows deleted.
    pub(crate) fn mirror_workflows(
        &mut self,
        workflows: &[SyncedWorkflow],
        shaper: &str,
    ) -> Result<Vec<WorkflowId>> {
        let gone: Vec<WorkflowId> = self
            .workflow_ids()?
            .into_iter()
            .filter(|id| !workflows.iter().any(|w| w.workflow.id == *id))
            .collect();
        for id in &gone {
            self.execute(
                "UPDATE workflow_instance_log SET transition_id = NULL WHERE transition_id IN \
                     (SELECT id FROM workflow_transitions WHERE workflow_id = ?1)",
                &[id.0.into()],
            )?;
            self.delete_workflow_rows(*id)?;
        }
        for SyncedWorkflow {
            workflow: w,
            states,
            transitions,
        } in workflows
        {
            self.execute(
                "UPDATE workflows SET label = ?1 WHERE label = ?2 AND id <> ?3",
                &[
                    parked(w.id.0).as_str().into(),
                    w.label.as_str().into(),
                    w.id.0.into(),
                ],
            )?;
            self.execute(
                "INSERT INTO workflows (id, label) VALUES (?1, ?2) \
                 ON CONFLICT (id) DO UPDATE SET label = excluded.label",
                &[w.id.0.into(), w.label.as_str().into()],
            )?;
            self.execute(
                "DELETE FROM workflow_document_types WHERE workflow_id = ?1",
                &[w.id.0.into()],
            )?;
            for t in &w.document_type_ids {
                self.execute(
                    "INSERT INTO workflow_document_types (workflow_id, document_type_id) \
                     SELECT ?1, id FROM document_types WHERE id = ?2",
                    &[w.id.0.into(), t.0.into()],
                )?;
            }
            // Labels are unique in a workflow: each one's parked while they move.
            for table in ["workflow_states", "workflow_transitions"] {
                self.execute(
                    &format!(
                        "UPDATE {table} SET label = '\u{1}parked ' || CAST(id AS TEXT) \
                         WHERE workflow_id = ?1"
                    ),
                    &[w.id.0.into()],
                )?;
            }
            for st in states {
                self.execute(
                    "INSERT INTO workflow_states (id, workflow_id, label, initial) \
                     VALUES (?1, ?2, ?3, ?4) \
                     ON CONFLICT (id) DO UPDATE SET label = excluded.label, \
                         initial = excluded.initial",
                    &[
                        st.id.0.into(),
                        w.id.0.into(),
                        st.label.as_str().into(),
                        st.initial.into(),
                    ],
                )?;
            }
            self.execute(
                "DELETE FROM workflow_transition_triggers WHERE transition_id IN \
                     (SELECT id FROM workflow_transitions WHERE workflow_id = ?1)",
                &[w.id.0.into()],
            )?;
            for t in transitions {
                let shapers = if t.condition.trim().is_empty() {
                    ""
                } else {
                    shaper
                };
                self.execute(
                    "INSERT INTO workflow_transitions (id, workflow_id, label, origin_state_id, \
                         destination_state_id, condition, condition_shapers) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) \
                     ON CONFLICT (id) DO UPDATE SET label = excluded.label, \
                         origin_state_id = excluded.origin_state_id, \
                         destination_state_id = excluded.destination_state_id, \
                         condition = excluded.condition, \
                         condition_shapers = excluded.condition_shapers",
                    &[
                        t.id.0.into(),
                        w.id.0.into(),
                        t.label.as_str().into(),
                        t.origin_state_id.0.into(),
                        t.destination_state_id.0.into(),
                        t.condition.as_str().into(),
                        shapers.into(),
                    ],
                )?;
                for event in &t.triggers {
                    self.execute(
                        "INSERT INTO workflow_transition_triggers (transition_id, event_name) \
                         VALUES (?1, ?2) ON CONFLICT DO NOTHING",
                        &[t.id.0.into(), event.as_str().into()],
                    )?;
                }
            }
            let old_transitions = self.rows(
                "SELECT id FROM workflow_transitions WHERE workflow_id = ?1",
                &[w.id.0.into()],
                |r| r.int(0),
            )?;
            for id in old_transitions {
                if !transitions.iter().any(|t| t.id.0 == id) {
                    self.execute(
                        "UPDATE workflow_instance_log SET transition_id = NULL \
                         WHERE transition_id = ?1",
                        &[id.into()],
                    )?;
                    self.execute(
                        "DELETE FROM workflow_transitions WHERE id = ?1",
                        &[id.into()],
                    )?;
                }
            }
            let old_states = self.rows(
                "SELECT id FROM workflow_states WHERE workflow_id = ?1",
                &[w.id.0.into()],
                |r| r.int(0),
            )?;
            for id in old_states {
                if !states.iter().any(|s| s.id.0 == id) {
                    self.execute(
                        "UPDATE workflow_instances SET state_id = NULL WHERE state_id = ?1",
                        &[id.into()],
                    )?;
                    self.execute(
                        "DELETE FROM workflow_state_actions WHERE state_id = ?1",
                        &[id.into()],
                    )?;
                    self.execute("DELETE FROM workflow_states WHERE id = ?1", &[id.into()])?;
                }
            }
        }
        Ok(gone)
    }

    /// Makes the replica's cabinets `visible` (labels and parents as sent), with a row without
    /// a label for each ancestor of one of them that is not among them (a parent the user may
    /// not view: its id is shown, as online, and nothing else); deletes every other cabinet
    /// with its documents' links. Answers the cabinets deleted and the ancestors kept without
    /// a label.
    pub(crate) fn mirror_cabinets(
        &mut self,
        visible: &[Cabinet],
    ) -> Result<(Vec<CabinetId>, Vec<CabinetId>)> {
        use std::collections::BTreeSet;
        let shown: BTreeSet<CabinetId> = visible.iter().map(|c| c.id).collect();
        let hidden: BTreeSet<CabinetId> = visible
            .iter()
            .filter_map(|c| c.parent_id)
            .filter(|p| !shown.contains(p))
            .collect();
        // Rows first, without parents (any order), then the parents.
        for (id, label) in visible
            .iter()
            .map(|c| (c.id, c.label.as_str()))
            .chain(hidden.iter().map(|id| (*id, "")))
        {
            self.execute(
                "INSERT INTO cabinets (id, label, parent_id) VALUES (?1, ?2, NULL) \
                 ON CONFLICT (id) DO UPDATE SET label = excluded.label",
                &[id.0.into(), label.into()],
            )?;
        }
        // A hidden ancestor's own parent is not known: it is a root here.
        for (id, parent) in visible
            .iter()
            .map(|c| (c.id, c.parent_id))
            .chain(hidden.iter().map(|id| (*id, None)))
        {
            self.execute(
                "UPDATE cabinets SET parent_id = ?2 WHERE id = ?1",
                &[id.0.into(), parent.map(|p| p.0).into()],
            )?;
        }
        let gone: Vec<CabinetId> = self
            .rows("SELECT id FROM cabinets ORDER BY id", &[], |r| {
                r.int(0).map(CabinetId)
            })?
            .into_iter()
            .filter(|id| !shown.contains(id) && !hidden.contains(id))
            .collect();
        for id in &gone {
            self.execute(
                "UPDATE cabinets SET parent_id = NULL WHERE id = ?1",
                &[id.0.into()],
            )?;
        }
        for id in &gone {
            self.delete_cabinet(*id)?;
        }
        // A hidden ancestor holds no document the replica shows.
        for id in &hidden {
            self.execute(
                "DELETE FROM cabinet_documents WHERE cabinet_id = ?1",
                &[id.0.into()],
            )?;
        }
        Ok((gone, hidden.into_iter().collect()))
    }

    /// Deletes the document types and metadata types that are neither in `keep` nor used by
    /// a document, a value or an association the replica holds; answers those deleted.
    pub(crate) fn mirror_drop_unused_types(
        &mut self,
        keep_document_types: &[DocumentTypeId],
        keep_metadata_types: &[MetadataTypeId],
    ) -> Result<(Vec<DocumentTypeId>, Vec<MetadataTypeId>)> {
        let mut dropped = (Vec::new(), Vec::new());
        let document_types = self.rows(
            "SELECT t.id FROM document_types t WHERE NOT EXISTS \
                 (SELECT 1 FROM documents d WHERE d.document_type_id = t.id) \
             AND NOT EXISTS \
                 (SELECT 1 FROM document_type_metadata_types a WHERE a.document_type_id = t.id)",
            &[],
            |r| r.int(0).map(DocumentTypeId),
        )?;
        for t in document_types {
            if !keep_document_types.contains(&t) {
                self.unbind_workflows_from(t)?;
                self.execute("DELETE FROM document_types WHERE id = ?1", &[t.0.into()])?;
                dropped.0.push(t);
            }
        }
        let metadata_types = self.rows(
            "SELECT t.id FROM metadata_types t WHERE NOT EXISTS \
                 (SELECT 1 FROM document_metadata m WHERE m.metadata_type_id = t.id) \
             AND NOT EXISTS \
                 (SELECT 1 FROM document_type_metadata_types a WHERE a.metadata_type_id = t.id)",
            &[],
            |r| r.int(0).map(MetadataTypeId),
        )?;
        for t in metadata_types {
            if !keep_metadata_types.contains(&t) {
                self.execute("DELETE FROM metadata_types WHERE id = ?1", &[t.0.into()])?;
                dropped.1.push(t);
            }
        }
        Ok(dropped)
    }

    /// Makes the ids SQLite gives new rows of `table` (`documents` or `document_metadata`) of
    /// this database start at `from` (it goes on from the largest id given), so that what a
    /// replica makes offline never takes the id of a record the server holds. Nothing on
    /// PostgreSQL (a replica is a SQLite directory).
    pub(crate) fn reserve_local_ids(&mut self, table: &str, from: i64) -> Result<()> {
        if self.dialect() != super::Dialect::Sqlite {
            return Ok(());
        }
        let table = match table {
            "documents" => "documents",
            "document_metadata" => "document_metadata",
            "document_files" => "document_files",
            "workflow_instances" => "workflow_instances",
            "workflow_instance_log" => "workflow_instance_log",
            other => {
                return Err(Error::InvalidInput(format!(
                    "no local ids are reserved in {other}"
                )));
            }
        };
        self.execute(
            "INSERT INTO sqlite_sequence (name, seq) SELECT ?2, ?1 \
             WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = ?2)",
            &[from.into(), table.into()],
        )?;
        self.execute(
            "UPDATE sqlite_sequence SET seq = ?1 WHERE name = ?2 AND seq < ?1",
            &[from.into(), table.into()],
        )
        .map(drop)
    }

    /// Deletes a setting.
    pub(crate) fn delete_setting(&mut self, key: &str) -> Result<()> {
        self.execute("DELETE FROM settings WHERE key = ?1", &[key.into()])
            .map(drop)
    }
}
