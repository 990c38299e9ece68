//! The test suite every [`Store`] implementation must pass (enable the `conformance` feature).
//!
//! Each check takes a factory that returns a fresh, migrated, empty store. Use
//! [`store_conformance_tests!`](crate::store_conformance_tests) to turn the suite into `#[test]`
//! functions for a store:
//!
//! ```text
//! docmeta_core::store_conformance_tests!(sqlite_memory, || Box::new(SqliteStore::in_memory().unwrap()));
//! ```
//!
//! Part of `store` (layer 3): imports only `error`, `model`, `config`, `events` and its siblings.

use chrono::Utc;

use super::{Mode, Param, Store, Tx};
use crate::error::{Error, Result};
use crate::events::{EventObject, EventQuery};
use crate::model::*;

/// Makes a fresh store.
pub type Factory<'a> = &'a dyn Fn() -> Box<dyn Store>;

fn write<T>(store: &dyn Store, f: impl FnOnce(&mut Tx<'_>) -> Result<T>) -> Result<T> {
    let mut tx = Tx::new(store.begin(Mode::Write)?);
    let out = f(&mut tx)?;
    tx.commit()?;
    Ok(out)
}

fn read<T>(store: &dyn Store, f: impl FnOnce(&mut Tx<'_>) -> Result<T>) -> Result<T> {
    let mut tx = Tx::new(store.begin(Mode::Read)?);
    f(&mut tx)
}

fn ensure(condition: bool, what: &str) -> Result<()> {
    if condition {
        Ok(())
    } else {
        Err(Error::InvalidInput(format!(
            "conformance check failed: {what}"
        )))
    }
}

/// Migrating twice applies nothing the second time; the version is current.
pub fn migrations_are_recorded(make: Factory<'_>) -> Result<()> {
    let store = make();
    ensure(
        store.migrate()?.is_empty(),
        "a second migrate applies nothing",
    )?;
    let (current, newest) = store.schema_version()?;
    ensure(
        current == newest && current >= 1,
        "schema version is current",
    )
}

/// Every record kind round-trips through insert, read, update and delete.
pub fn records_round_trip(make: Factory<'_>) -> Result<()> {
    let store = make();
    let s = store.as_ref();
    let input = MetadataTypeInput::new("due", "Due date")
        .default_value("{{ now|date('Y') }}")
        .parser("p", "a: 1");
    let mt = write(s, |tx| tx.insert_metadata_type(&input))?;
    ensure(
        mt.name == "due" && mt.default == input.default && mt.parser_arguments == "a: 1",
        "metadata type fields",
    )?;
    let dt = write(s, |tx| tx.insert_document_type("Invoice"))?;
    let created = Utc::now();
    let doc = write(s, |tx| tx.insert_document("INV-1", dt.id, created))?;
    let a = write(s, |tx| tx.insert_association(dt.id, mt.id, true))?;
    let m = write(s, |tx| {
        tx.insert_document_metadata(doc.id, mt.id, "2024-01-01")
    })?;
    read(s, |tx| {
        ensure(
            tx.metadata_type(mt.id)? == Some(mt.clone()),
            "read metadata type",
        )?;
        ensure(
            tx.metadata_type_by_name("due")?.map(|t| t.id) == Some(mt.id),
            "by name",
        )?;
        ensure(
            tx.document(doc.id)?
                .is_some_and(|d| d.label == "INV-1" && d.document_type_id == dt.id),
            "read document",
        )?;
        ensure(
            tx.document(doc.id)?
                .is_some_and(|d| (d.created - created).num_microseconds() == Some(0)),
            "created time",
        )?;
        ensure(
            tx.association_of(dt.id, mt.id)? == Some(a),
            "read association",
        )?;
        ensure(
            tx.metadata_of_document(doc.id)? == vec![m.clone()],
            "read values",
        )?;
        ensure(
            tx.documents_missing_metadata(dt.id, mt.id, 10)?.is_empty(),
            "no document misses the value",
        )
    })?;
    write(s, |tx| {
        let mut t = mt.clone();
        t.label = "Due".into();
        tx.update_metadata_type(&t)?;
        tx.update_document_metadata(m.id, "2025-01-01")?;
        tx.update_association(&DocumentTypeMetadataType {
            required: false,
            ..a
        })?;
        tx.update_document_type(&DocumentType {
            id: dt.id,
            label: "Bill".into(),
        })
    })?;
    read(s, |tx| {
        ensure(
            tx.metadata_type(mt.id)?.is_some_and(|t| t.label == "Due"),
            "update metadata type",
        )?;
        ensure(
            tx.document_metadata(m.id)?
                .is_some_and(|m| m.value == "2025-01-01"),
            "update value",
        )?;
        ensure(
            tx.association(a.id)?.is_some_and(|a| !a.required),
            "update association",
        )?;
        ensure(
            tx.document_type(dt.id)?.is_some_and(|t| t.label == "Bill"),
            "update document type",
        )
    })?;
    write(s, |tx| {
        tx.delete_document_metadata(m.id)?;
        tx.delete_association(a.id)?;
        tx.delete_document(doc.id)?;
        tx.delete_document_type(dt.id)?;
        tx.delete_metadata_type(mt.id)
    })?;
    read(s, |tx| {
        ensure(
            tx.metadata_types()?.is_empty() && tx.document_types()?.is_empty(),
            "deleted",
        )
    })
}

/// Documents named by a list of ids, read in one statement whatever the list: the existing
/// ones, each with its type's label and its values in value order; the missing ones left out.
pub fn documents_are_read_by_lists_of_ids(make: Factory<'_>) -> Result<()> {
    let store = make();
    let s = store.as_ref();
    let (dt, first, second, bare, values) = write(s, |tx| {
        let dt = tx.insert_document_type("Invoice")?;
        let note = tx.insert_metadata_type(&MetadataTypeInput::new("note", "Note"))?;
        let due = tx.insert_metadata_type(&MetadataTypeInput::new("due", "Due"))?;
        let first = tx.insert_document("INV-1", dt.id, Utc::now())?;
        let second = tx.insert_document("INV-2", dt.id, Utc::now())?;
        let bare = tx.insert_document("INV-3", dt.id, Utc::now())?;
        let values = vec![
            tx.insert_document_metadata(first.id, due.id, "a")?,
            tx.insert_document_metadata(first.id, note.id, "b")?,
            tx.insert_document_metadata(second.id, note.id, "c")?,
        ];
        Ok((dt, first, second, bare, values))
    })?;
    let missing = DocumentId(bare.id.0 + 1000);
    read(s, |tx| {
        let mut found: Vec<i64> = tx
            .documents_by_id(&[missing.0, second.id.0, first.id.0])?
            .iter()
            .map(|d| d.id.0)
            .collect();
        found.sort_unstable();
        ensure(found == vec![first.id.0, second.id.0], "documents by id")?;
        ensure(tx.documents_by_id(&[])?.is_empty(), "no ids, no documents")?;
        let indexed = tx.documents_for_index(&[second.id, missing, bare.id, first.id])?;
        ensure(indexed.len() == 3, "the missing document is left out")?;
        ensure(
            indexed
                .iter()
                .any(|(d, _, values)| d.id == bare.id && values.is_empty()),
            "a document without values is read, with none",
        )?;
        for (doc, type_label, indexed_values) in &indexed {
            ensure(
                type_label == "Invoice" && doc.document_type_id == dt.id,
                "type label",
            )?;
            let expected: Vec<(DocumentMetadataId, MetadataTypeId, &str)> = values
                .iter()
                .filter(|m| m.document_id == doc.id)
                .map(|m| (m.id, m.metadata_type_id, m.value.as_str()))
                .collect();
            let got: Vec<(DocumentMetadataId, MetadataTypeId, &str)> = indexed_values
                .iter()
                .map(|v| (v.id, v.metadata_type_id, v.value.as_str()))
                .collect();
            ensure(got == expected, "each document's values, in order")?;
            ensure(
                indexed_values
                    .iter()
                    .all(|v| (v.metadata_type_name == "due") == (v.value == "a")),
                "value type names",
            )?;
        }
        Ok(())
    })
}

/// Uniqueness rules are constraints: a second name, label, association or value conflicts.
pub fn uniqueness_is_enforced(make: Factory<'_>) -> Result<()> {
    let store = make();
    let s = store.as_ref();
    let (mt, dt, doc) = write(s, |tx| {
        let mt = tx.insert_metadata_type(&MetadataTypeInput::new("n", "N"))?;
        let dt = tx.insert_document_type("T")?;
        let doc = tx.insert_document("d", dt.id, Utc::now())?;
        tx.insert_association(dt.id, mt.id, false)?;
        tx.insert_document_metadata(doc.id, mt.id, "1")?;
        Ok((mt, dt, doc))
    })?;
    let conflict =
        |r: Result<()>, what: &str| ensure(matches!(r, Err(Error::Conflict { .. })), what);
    conflict(
        write(s, |tx| {
            tx.insert_metadata_type(&MetadataTypeInput::new("n", "Other"))
                .map(drop)
        }),
        "metadata type name",
    )?;
    conflict(
        write(s, |tx| tx.insert_document_type("T").map(drop)),
        "document type label",
    )?;
    conflict(
        write(s, |tx| tx.insert_association(dt.id, mt.id, true).map(drop)),
        "association pair",
    )?;
    conflict(
        write(s, |tx| {
            tx.insert_document_metadata(doc.id, mt.id, "2").map(drop)
        }),
        "value per document and type",
    )?;
    let again = write(s, |tx| {
        tx.insert_document_metadata_if_absent(doc.id, mt.id, "3")
    })?;
    ensure(again.is_none(), "insert-if-absent keeps the existing value")?;
    conflict(
        write(s, |tx| {
            tx.insert_user("u", "h", false)
                .and_then(|_| tx.insert_user("u", "h", false))
                .map(drop)
        }),
        "username",
    )?;
    read(s, |tx| {
        ensure(
            tx.metadata_of_document(doc.id)?.len() == 1,
            "one value remains",
        )
    })
}

/// A transaction dropped without commit leaves nothing behind.
pub fn rollback_on_drop(make: Factory<'_>) -> Result<()> {
    let store = make();
    {
        let mut tx = Tx::new(store.begin(Mode::Write)?);
        tx.insert_document_type("gone")?;
    }
    read(store.as_ref(), |tx| {
        ensure(tx.document_types()?.is_empty(), "rolled back")
    })
}

/// A foreign key to a missing record is refused.
pub fn foreign_keys_are_enforced(make: Factory<'_>) -> Result<()> {
    let store = make();
    let r = write(store.as_ref(), |tx| {
        tx.insert_document("d", DocumentTypeId(999), Utc::now())
            .map(drop)
    });
    ensure(r.is_err(), "document of a missing type refused")
}

/// Events are appended with increasing ids and queried newest first, by object, and paged.
pub fn event_log(make: Factory<'_>) -> Result<()> {
    let store = make();
    let s = store.as_ref();
    let doc = |id| EventObject {
        kind: "documents.document".into(),
        id,
        label: format!("d{id}"),
    };
    let mt = EventObject {
        kind: "metadata.metadatatype".into(),
        id: 7,
        label: "t".into(),
    };
    // What an event changed is kept as given: absent values, quotes, backslashes, newlines
    // and text beyond ASCII.
    let changes = vec![
        EventChange::new("value", None, Some("\"quoted\" \\ back\nslash, été".into())),
        EventChange::new("label", Some("old".into()), None),
        EventChange::new("empty", Some(String::new()), Some(String::new())),
    ];
    write(s, |tx| {
        tx.append_event("a", Some(UserId(1)), &doc(1), Some(&mt), changes.clone())?;
        tx.append_event("b", None, &doc(2), None, Vec::new())?;
        tx.append_event("c", None, &doc(1), None, Vec::new())
            .map(drop)
    })?;
    read(s, |tx| {
        let all = tx.events(&EventQuery::default())?;
        ensure(
            all.iter().map(|e| e.name.as_str()).collect::<Vec<_>>() == ["c", "b", "a"],
            "newest first",
        )?;
        ensure(
            all[2].action_object.as_ref() == Some(&mt) && all[2].actor == Some(UserId(1)),
            "fields kept",
        )?;
        ensure(
            all[2].changes == changes && all[0].changes.is_empty(),
            "changes kept",
        )?;
        let of_doc1 = tx.events(&EventQuery {
            object: Some(("documents.document".into(), 1)),
            ..Default::default()
        })?;
        ensure(of_doc1.len() == 2, "by target")?;
        let of_mt = tx.events(&EventQuery {
            object: Some(("metadata.metadatatype".into(), 7)),
            ..Default::default()
        })?;
        ensure(of_mt.len() == 1, "by action object")?;
        let page = tx.events(&EventQuery {
            before: Some(all[0].id),
            limit: Some(1),
            ..Default::default()
        })?;
        ensure(page.len() == 1 && page[0].name == "b", "paging")?;
        Ok(())
    })?;
    let first = read(s, |tx| tx.events(&EventQuery::default()))?
        .last()
        .map(|e| e.id);
    // A follower reads an event once every older transaction has finished (on PostgreSQL,
    // those of every client of the cluster): it may lag, never skip or reorder.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let after = read(s, |tx| {
            tx.events(&EventQuery {
                after: first,
                oldest_first: true,
                ..Default::default()
            })
        })?;
        let names: Vec<&str> = after.iter().map(|e| e.name.as_str()).collect();
        ensure(["b", "c"].starts_with(&names), "following the log in order")?;
        if names.len() == 2 {
            return Ok(());
        }
        ensure(
            std::time::Instant::now() < until,
            "following the log reaches the last event",
        )?;
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Tasks are claimed oldest first, once, and can be failed, retried and requeued.
pub fn task_queue(make: Factory<'_>) -> Result<()> {
    let store = make();
    let s = store.as_ref();
    let (a, b) = write(s, |tx| {
        Ok((
            tx.enqueue_task("x", "{}")?,
            tx.enqueue_task("y", "{\"k\":1}")?,
        ))
    })?;
    let first = write(s, |tx| tx.claim_task_skipping(Utc::now(), &[], None))?;
    ensure(
        first
            .as_ref()
            .is_some_and(|t| t.id == a && t.attempts == 1 && t.state == "running"),
        "oldest first",
    )?;
    let second = write(s, |tx| tx.claim_task_skipping(Utc::now(), &[], None))?;
    ensure(
        second
            .as_ref()
            .is_some_and(|t| t.id == b && t.payload == "{\"k\":1}"),
        "then the next",
    )?;
    ensure(
        write(s, |tx| tx.claim_task_skipping(Utc::now(), &[], None))?.is_none(),
        "nothing left",
    )?;
    write(s, |tx| {
        tx.set_task_state(a, "done", "", Utc::now())?;
        tx.set_task_state(
            b,
            "pending",
            "boom",
            Utc::now() + chrono::Duration::hours(1),
        )
    })?;
    ensure(
        write(s, |tx| tx.claim_task_skipping(Utc::now(), &[], None))?.is_none(),
        "back-off respected",
    )?;
    let open = read(s, |tx| tx.open_tasks(10))?;
    ensure(
        open.len() == 1 && open[0].error == "boom",
        "open tasks with error",
    )?;
    write(s, |tx| tx.set_task_state(b, "running", "", Utc::now()))?;
    ensure(
        write(s, |tx| tx.requeue_running_tasks("index-a"))? == 1,
        "crashed tasks requeued",
    )?;
    ensure(
        write(s, |tx| tx.delete_done_tasks())? == 1,
        "done tasks removed",
    )
}

/// A task naming a target (a search index) is claimed only by a runner for that target; tasks
/// naming none, as before the target existed, by any runner; names a runner skips, by none.
pub fn targeted_tasks_are_claimed_by_their_target(make: Factory<'_>) -> Result<()> {
    let store = make();
    let s = store.as_ref();
    let (for_a, for_b, untargeted, other) = write(s, |tx| {
        Ok((
            tx.enqueue_targeted_task("search", "{\"n\":1}", "index-a")?,
            tx.enqueue_targeted_task("search", "{\"n\":2}", "index-b")?,
            tx.enqueue_task("search", "{\"n\":3}")?,
            tx.enqueue_task("lifecycle", "{}")?,
        ))
    })?;
    let claim = |skip: &'static [&'static str], target: Option<&'static str>| {
        write(s, move |tx| {
            tx.claim_task_skipping(Utc::now(), skip, target)
        })
        .map(|t| t.map(|t| (t.id, t.target)))
    };
    ensure(
        claim(&["search"], Some("index-a"))? == Some((other, None)),
        "a skipped name is left even for its target",
    )?;
    ensure(
        claim(&[], None)? == Some((untargeted, None)),
        "a runner without a target takes only untargeted tasks",
    )?;
    ensure(claim(&[], None)?.is_none(), "targeted tasks left")?;
    ensure(
        claim(&[], Some("index-b"))? == Some((for_b, Some("index-b".to_owned()))),
        "index-b's runner takes index-b's task, not index-a's older one",
    )?;
    ensure(
        claim(&[], Some("index-b"))?.is_none(),
        "nothing else for index-b",
    )?;
    ensure(
        claim(&[], Some("index-a"))? == Some((for_a, Some("index-a".to_owned()))),
        "index-a's runner takes its own",
    )
}

/// A process putting back the tasks crashed processes left running puts back those of its own
/// index and the untargeted ones, never another index's (its process may be running it).
pub fn requeue_leaves_other_targets_running(make: Factory<'_>) -> Result<()> {
    let store = make();
    let s = store.as_ref();
    let (for_a, for_b, untargeted) = write(s, |tx| {
        let ids = (
            tx.enqueue_targeted_task("search", "{}", "index-a")?,
            tx.enqueue_targeted_task("search", "{}", "index-b")?,
            tx.enqueue_task("lifecycle", "{}")?,
        );
        for id in [ids.0, ids.1, ids.2] {
            tx.set_task_state(id, "running", "", Utc::now())?;
        }
        Ok(ids)
    })?;
    ensure(
        write(s, |tx| tx.requeue_running_tasks("index-a"))? == 2,
        "two requeued",
    )?;
    let state = |id| read(s, |tx| tx.task(id)).map(|t| t.map(|t| t.state));
    ensure(
        state(for_a)?.as_deref() == Some("pending")
            && state(untargeted)?.as_deref() == Some("pending")
            && state(for_b)?.as_deref() == Some("running"),
        "index-a's and the untargeted task requeued, index-b's left running",
    )
}

/// Retargeting (a restore) names the new index in every unfinished targeted task and leaves
/// untargeted and finished ones alone.
pub fn retargeting_moves_only_open_targeted_tasks(make: Factory<'_>) -> Result<()> {
    let store = make();
    let s = store.as_ref();
    let (open, done, untargeted) = write(s, |tx| {
        let ids = (
            tx.enqueue_targeted_task("search", "{}", "index-a")?,
            tx.enqueue_targeted_task("search", "{}", "index-b")?,
            tx.enqueue_task("lifecycle", "{}")?,
        );
        tx.set_task_state(ids.1, "done", "", Utc::now())?;
        Ok(ids)
    })?;
    ensure(
        write(s, |tx| tx.retarget_open_tasks("index-c"))? == 1,
        "one retargeted",
    )?;
    let target = |id| read(s, |tx| tx.task(id)).map(|t| t.and_then(|t| t.target));
    ensure(
        target(open)?.as_deref() == Some("index-c")
            && target(done)?.as_deref() == Some("index-b")
            && target(untargeted)?.is_none(),
        "the open targeted task names index-c; the others are unchanged",
    )
}

/// Principals, roles, ACLs, cabinets, object links and settings.
pub fn access_records(make: Factory<'_>) -> Result<()> {
    let store = make();
    let s = store.as_ref();
    let (u, g, r, acl) = write(s, |tx| {
        let u = tx.insert_user("ann", "hash", false)?;
        let g = tx.insert_group("G")?;
        let r = tx.insert_role("R")?;
        ensure(tx.set_group_member(g, u.id, true)?, "member added")?;
        ensure(!tx.set_group_member(g, u.id, true)?, "idempotent add")?;
        ensure(tx.set_role_group(r, g, true)?, "role assigned")?;
        ensure(
            tx.set_role_permission(r, "documents.document_view", true)?,
            "global permission",
        )?;
        let acl = tx.insert_acl("documents.document", 5, r)?;
        Ok((u, g, r, acl))
    })?;
    // A failed statement may end its transaction (PostgreSQL): this one is refused in its own.
    ensure(
        matches!(
            write(s, |tx| tx.insert_acl("documents.document", 5, r)),
            Err(Error::Conflict { .. })
        ),
        "one ACL per role and object",
    )?;
    write(s, |tx| {
        tx.set_acl_permission(acl, "documents.document_edit", true)?;
        let row = tx.acl_for("documents.document", 5, r)?;
        ensure(
            row.is_some_and(|a| a.permissions == ["documents.document_edit"]),
            "ACL permissions",
        )?;
        let root = tx.insert_cabinet("root", None)?;
        let child = tx.insert_cabinet("child", Some(root.id))?;
        ensure(
            tx.child_cabinets(root.id)? == vec![child.clone()],
            "cabinet tree",
        )?;
        tx.set_object_parents("tags.tag", 1, &[("documents.document".into(), 5)])?;
        tx.set_setting("k", "v1")?;
        tx.set_setting("k", "v2")?;
        ensure(tx.setting("k")?.as_deref() == Some("v2"), "settings upsert")?;
        tx.delete_acl(acl)?;
        tx.delete_role(r)?;
        tx.delete_group(g)?;
        tx.delete_user(u.id)?;
        ensure(
            tx.users()?.is_empty() && tx.roles()?.is_empty() && tx.groups()?.is_empty(),
            "principals deleted",
        )
    })
}

/// A parameter of every kind binds and reads back.
pub fn parameters_bind(make: Factory<'_>) -> Result<()> {
    let store = make();
    read(store.as_ref(), |tx| {
        let row = tx.optional(
            "SELECT ?1, ?2, ?3",
            &[Param::Int(-5), Param::Text("é ✓"), Param::Null],
            |r| Ok((r.int(0)?, r.text(1)?, r.opt_int(2)?)),
        )?;
        ensure(row == Some((-5, "é ✓".to_owned(), None)), "int, text, null")
    })
}

/// Generates one `#[test]` per conformance check for a store factory expression.
#[macro_export]
macro_rules! store_conformance_tests {
    ($prefix:ident, $factory:expr) => {
        mod $prefix {
            #[allow(unused_imports)]
            use super::*;
            $crate::store_conformance_tests!(@each $factory;
                migrations_are_recorded, records_round_trip, uniqueness_is_enforced, rollback_on_drop,
                foreign_keys_are_enforced, event_log, task_queue, targeted_tasks_are_claimed_by_their_target,
                requeue_leaves_other_targets_running, retargeting_moves_only_open_targeted_tasks,
                access_records, parameters_bind, documents_are_read_by_lists_of_ids);
        }
    };
    (@each $factory:expr; $($check:ident),*) => {$(
        #[test]
        fn $check() -> $crate::Result<()> {
            let make = $factory;
            $crate::store::conformance::$check(&make)
        }
    )*};
}
