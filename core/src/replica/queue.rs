//! The replica's queues, kept as JSON in its settings: the writes made offline and not pushed
//! yet, those the server did not apply (with its answer), and where the bytes of the files added
//! offline wait for their push.
//!
//! Part of `replica` (layer 9 of `scripts/check-structure`): it may import only what `replica`
//! may (see `replica`'s module documentation).

use crate::error::{Error, Result};
use crate::model::*;

/// Where the bytes of a file added offline wait for their push (see [`FILES`](super::FILES)).
#[derive(Debug, Clone)]
pub(super) struct HeldFile {
    pub(super) name: String,
    pub(super) checksum: String,
    pub(super) size: u64,
    pub(super) encrypted: bool,
}

pub(super) fn held_files(
    text: Option<String>,
) -> Result<std::collections::BTreeMap<String, HeldFile>> {
    let Some(text) = text else {
        return Ok(Default::default());
    };
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|_| corrupt("files added offline"))?;
    let entries = v
        .as_object()
        .ok_or_else(|| corrupt("files added offline"))?;
    entries
        .iter()
        .map(|(key, e)| {
            Some((
                key.clone(),
                HeldFile {
                    name: e["name"].as_str()?.to_owned(),
                    checksum: e["checksum"].as_str()?.to_owned(),
                    size: e["size"].as_u64()?,
                    encrypted: e["encrypted"].as_bool()?,
                },
            ))
        })
        .collect::<Option<_>>()
        .ok_or_else(|| corrupt("files added offline"))
}

pub(super) fn held_files_text(files: &std::collections::BTreeMap<String, HeldFile>) -> String {
    serde_json::Value::Object(
        files
            .iter()
            .map(|(k, h)| {
                (
                    k.clone(),
                    serde_json::json!({
                        "name": h.name, "checksum": h.checksum, "size": h.size,
                        "encrypted": h.encrypted,
                    }),
                )
            })
            .collect(),
    )
    .to_string()
}

fn write_json(w: &PushedWrite) -> serde_json::Value {
    let (key, document) = (&w.key, w.document.0);
    match &w.change {
        PushedChange::Set {
            metadata_type,
            value,
            base,
        } => serde_json::json!({
            "key": key, "document": document, "action": "set",
            "metadata_type": metadata_type.0, "value": value, "base": base,
        }),
        PushedChange::Remove {
            metadata_type,
            base,
        } => serde_json::json!({
            "key": key, "document": document, "action": "remove",
            "metadata_type": metadata_type.0, "base": base,
        }),
        PushedChange::Create {
            document_type,
            label,
            values,
        } => serde_json::json!({
            "key": key, "document": document, "action": "create",
            "document_type": document_type.0, "label": label,
            "values": values.iter().map(|(mt, v)| serde_json::json!([mt.0, v])).collect::<Vec<_>>(),
        }),
        PushedChange::AddFile { file, filename } => serde_json::json!({
            "key": key, "document": document, "action": "file", "file": file.0,
            "filename": filename,
        }),
        PushedChange::Transition {
            instance,
            transition,
            comment,
            base,
        } => serde_json::json!({
            "key": key, "document": document, "action": "transition",
            "instance": instance.0, "transition": transition.0, "comment": comment,
            "base": base.map(|s| s.0),
        }),
    }
}

fn write_from(v: &serde_json::Value) -> Option<PushedWrite> {
    let text = |k: &str| v[k].as_str().map(str::to_owned);
    let base = text("base");
    let metadata_type = || v["metadata_type"].as_i64().map(MetadataTypeId);
    Some(PushedWrite {
        key: text("key")?,
        document: DocumentId(v["document"].as_i64()?),
        change: match v["action"].as_str()? {
            "set" => PushedChange::Set {
                metadata_type: metadata_type()?,
                value: text("value")?,
                base,
            },
            "remove" => PushedChange::Remove {
                metadata_type: metadata_type()?,
                base,
            },
            "create" => PushedChange::Create {
                document_type: DocumentTypeId(v["document_type"].as_i64()?),
                label: text("label")?,
                values: v["values"]
                    .as_array()?
                    .iter()
                    .map(|e| Some((MetadataTypeId(e[0].as_i64()?), e[1].as_str()?.to_owned())))
                    .collect::<Option<Vec<_>>>()?,
            },
            "file" => PushedChange::AddFile {
                file: DocumentFileId(v["file"].as_i64()?),
                filename: text("filename")?,
            },
            "transition" => PushedChange::Transition {
                instance: WorkflowInstanceId(v["instance"].as_i64()?),
                transition: WorkflowTransitionId(v["transition"].as_i64()?),
                comment: text("comment")?,
                base: match &v["base"] {
                    serde_json::Value::Null => None,
                    b => Some(WorkflowStateId(b.as_i64()?)),
                },
            },
            _ => return None,
        },
    })
}

fn result_json(r: &PushResult) -> serde_json::Value {
    match r {
        PushResult::Applied => serde_json::json!({"status": "applied"}),
        PushResult::Conflict { server } => {
            serde_json::json!({"status": "conflict", "server": server})
        }
        PushResult::Refused {
            kind,
            field,
            message,
        } => serde_json::json!({
            "status": "refused", "kind": kind.name(), "field": field, "message": message,
        }),
    }
}

fn result_from(v: &serde_json::Value) -> Option<PushResult> {
    let text = |k: &str| v[k].as_str().map(str::to_owned);
    Some(match v["status"].as_str()? {
        "applied" => PushResult::Applied,
        "conflict" => PushResult::Conflict {
            server: text("server"),
        },
        "refused" => PushResult::Refused {
            kind: crate::error::ErrorKind::from_name(v["kind"].as_str()?)?,
            field: text("field"),
            message: text("message")?,
        },
        _ => return None,
    })
}

pub(super) fn corrupt(what: &str) -> Error {
    Error::InvalidInput(format!(
        "the replica's {what} cannot be read: its database was altered outside docmeta"
    ))
}

/// The entries of a queue kept as a JSON array, each read by `entry`.
fn queue<T>(
    text: Option<String>,
    what: &str,
    entry: impl Fn(&serde_json::Value) -> Option<T>,
) -> Result<Vec<T>> {
    let Some(text) = text else {
        return Ok(Vec::new());
    };
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|_| corrupt(what))?;
    v.as_array()
        .ok_or_else(|| corrupt(what))?
        .iter()
        .map(|e| entry(e).ok_or_else(|| corrupt(what)))
        .collect()
}

pub(super) fn writes(text: Option<String>) -> Result<Vec<PushedWrite>> {
    queue(text, "pending writes", write_from)
}

pub(super) fn writes_text(writes: &[PushedWrite]) -> String {
    serde_json::Value::Array(writes.iter().map(write_json).collect()).to_string()
}

pub(super) fn rejected_writes(text: Option<String>) -> Result<Vec<RejectedWrite>> {
    queue(text, "rejected writes", |r| {
        Some(RejectedWrite {
            write: write_from(&r["write"])?,
            result: result_from(&r["result"])?,
        })
    })
}

pub(super) fn rejected_text(rejected: &[RejectedWrite]) -> String {
    serde_json::Value::Array(
        rejected
            .iter()
            .map(|r| serde_json::json!({"write": write_json(&r.write), "result": result_json(&r.result)}))
            .collect(),
    )
    .to_string()
}
