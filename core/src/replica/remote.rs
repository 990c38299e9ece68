//! How a replica reaches its server: signing a device in, and pulling batches. Over HTTP
//! ([`HttpServer`], the server's `POST /api/v4/devices/` and `GET /api/v4/sync/`), or in the
//! same process ([`InProcessServer`], a [`Docmeta`] handle: tests, and an application that
//! keeps a replica of a database it opens itself).

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::kernel::Docmeta;
use crate::model::*;

/// A server a replica syncs with.
pub trait SyncServer: Send + Sync {
    /// Which server this is, as a replica remembers it (so that a directory is never the
    /// replica of two servers): the URL of an HTTP server.
    fn address(&self) -> String;

    /// Exchanges a username and password for a device token (`None`: wrong credentials).
    fn sign_in(
        &self,
        username: &str,
        password: &str,
        device_name: &str,
    ) -> Result<Option<SignedIn>>;

    /// The next batch of changes for the device after `cursor` (see
    /// [`Session::sync_changes`](crate::Session::sync_changes)).
    fn pull(&self, device: &SignedIn, cursor: Option<&SyncCursor>, limit: u32) -> Result<Pulled>;

    /// Applies writes the replica made offline (see
    /// [`Session::sync_push`](crate::Session::sync_push)); `None` when the server no longer
    /// accepts the device.
    fn push(&self, device: &SignedIn, writes: &[PushedWrite]) -> Result<Option<Vec<PushOutcome>>>;

    /// The content of a document file (`None` when the server no longer accepts the device).
    fn download(&self, device: &SignedIn, file: &DocumentFile) -> Result<Option<Vec<u8>>>;

    /// Sends a file the replica added offline (`write` is its
    /// [`PushedChange::AddFile`]) with its `content` (see
    /// [`Session::sync_push_file`](crate::Session::sync_push_file)); `None` when the server no
    /// longer accepts the device. The default refuses: a transport that cannot carry files.
    fn push_file(
        &self,
        device: &SignedIn,
        write: &PushedWrite,
        content: &mut dyn std::io::Read,
    ) -> Result<Option<PushOutcome>> {
        let _ = (device, write, content);
        Err(Error::InvalidInput(
            "this server does not take the files a replica adds offline".into(),
        ))
    }

    /// Returns when an event the device's user may see is committed after `after`, or when
    /// `wait` has passed (whichever comes first; a refused device returns at once: the next
    /// pull says so). The default waits the whole time: a transport without a live feed makes
    /// a replica poll.
    fn wait_for_change(
        &self,
        device: &SignedIn,
        after: Option<EventId>,
        wait: Duration,
    ) -> Result<()> {
        let _ = (device, after);
        std::thread::sleep(wait);
        Ok(())
    }
}

/// The name of the file a [`PushedChange::AddFile`] write adds.
fn file_name(write: &PushedWrite) -> Result<&str> {
    match &write.change {
        PushedChange::AddFile { filename, .. } => Ok(filename),
        _ => Err(Error::InvalidInput("not a file's write".into())),
    }
}

/// A server in this process: a handle on its database.
#[derive(Clone)]
pub struct InProcessServer {
    db: Docmeta,
}

impl InProcessServer {
    /// The server whose database `db` is open.
    pub fn new(db: Docmeta) -> InProcessServer {
        InProcessServer { db }
    }
}

impl InProcessServer {
    /// A session of the device's user; `None` when the device's token is refused.
    fn session_of(&self, device: &SignedIn) -> Result<Option<crate::session::Session>> {
        let user = self.db.authenticate_device(&device.token)?;
        Ok(user.map(|u| self.db.session(u.id)))
    }
}

impl SyncServer for InProcessServer {
    fn address(&self) -> String {
        "in-process".to_owned()
    }

    fn sign_in(
        &self,
        username: &str,
        password: &str,
        device_name: &str,
    ) -> Result<Option<SignedIn>> {
        Ok(self
            .db
            .sign_in_device(username, password, device_name, None)?
            .map(|n| SignedIn {
                device: n.device.id,
                token: n.token,
            }))
    }

    fn pull(&self, device: &SignedIn, cursor: Option<&SyncCursor>, limit: u32) -> Result<Pulled> {
        let Some(session) = self.session_of(device)? else {
            return Ok(Pulled::Refused);
        };
        Ok(Pulled::Batch(Box::new(session.sync_changes(
            device.device,
            cursor,
            limit,
        )?)))
    }

    fn download(&self, device: &SignedIn, file: &DocumentFile) -> Result<Option<Vec<u8>>> {
        self.session_of(device)?
            .map(|s| s.read_file(file.id))
            .transpose()
    }

    fn push(&self, device: &SignedIn, writes: &[PushedWrite]) -> Result<Option<Vec<PushOutcome>>> {
        self.session_of(device)?
            .map(|s| s.sync_push(device.device, writes))
            .transpose()
    }

    fn push_file(
        &self,
        device: &SignedIn,
        write: &PushedWrite,
        content: &mut dyn std::io::Read,
    ) -> Result<Option<PushOutcome>> {
        let filename = file_name(write)?;
        self.session_of(device)?
            .map(|s| s.sync_push_file(device.device, &write.key, write.document, filename, content))
            .transpose()
    }

    fn wait_for_change(
        &self,
        device: &SignedIn,
        after: Option<EventId>,
        wait: Duration,
    ) -> Result<()> {
        if let Some(session) = self.session_of(device)? {
            let wait = wait.min(crate::session::MAX_EVENT_WAIT);
            session.events_after(after, wait, 1)?;
        }
        Ok(())
    }
}

/// A docmeta server reached over HTTP (`docmeta serve`).
pub struct HttpServer {
    base: String,
    agent: ureq::Agent,
}

impl HttpServer {
    /// The server at `url` (`http://host:port` or `https://...`, without `/api/...`).
    pub fn new(url: &str) -> Result<HttpServer> {
        let base = url.trim().trim_end_matches('/').to_owned();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(Error::validation(
                "url",
                "Enter the server's address as http://host:port or https://host.",
            ));
        }
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(120)))
            .build()
            .into();
        Ok(HttpServer { base, agent })
    }

    fn unreachable(&self, e: impl std::error::Error + Send + Sync + 'static) -> Error {
        Error::Storage {
            operation: format!("reaching the server {}", self.base),
            source: Box::new(e),
        }
    }

    /// The answer's status and JSON body (`Null` when it has none).
    fn answer(&self, response: ureq::http::Response<ureq::Body>) -> Result<(u16, Value)> {
        let status = response.status().as_u16();
        let mut body = response.into_body();
        let text = body
            .with_config()
            .limit(256 * 1024 * 1024)
            .read_to_string()
            .map_err(|e| self.unreachable(e))?;
        Ok((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
    }

    /// The error an answer other than the expected one stands for.
    fn refusal(&self, status: u16, body: &Value) -> Error {
        let detail = body["detail"].as_str().map(str::to_owned);
        // Not a route of this server (`{"detail": "No such endpoint."}` from docmeta, anything
        // else from another server): not one a replica can sync with.
        let no_route =
            status == 404 && (body.is_null() || detail.as_deref() == Some("No such endpoint."));
        if no_route || status == 405 {
            return Error::InvalidInput(format!(
                "{} does not offer sync: it is not a docmeta server, or one from before sync",
                self.base
            ));
        }
        match status {
            400 => {
                // `{"field": ["message", ...]}`: the first field named.
                let named = body.as_object().and_then(|o| {
                    o.iter().find_map(|(field, messages)| {
                        let message = messages.get(0)?.as_str()?;
                        Some(Error::validation(field.clone(), message))
                    })
                });
                named.unwrap_or_else(|| Error::InvalidInput(body.to_string()))
            }
            403 => Error::PermissionDenied(detail.unwrap_or_default()),
            404 => Error::not_found(detail.unwrap_or_else(|| "the device".into())),
            429 => Error::Throttled(detail.unwrap_or_default()),
            _ => Error::Storage {
                operation: format!("syncing with {}", self.base),
                source: format!("the server answered {status}: {body}").into(),
            },
        }
    }
}

impl SyncServer for HttpServer {
    fn address(&self) -> String {
        self.base.clone()
    }

    fn sign_in(
        &self,
        username: &str,
        password: &str,
        device_name: &str,
    ) -> Result<Option<SignedIn>> {
        let body = serde_json::json!({
            "username": username, "password": password, "name": device_name,
        });
        let response = self
            .agent
            .post(&format!("{}/api/v4/devices/", self.base))
            .send_json(&body)
            .map_err(|e| self.unreachable(e))?;
        match self.answer(response)? {
            (201, d) => {
                let bad = || Error::InvalidInput(format!("not a device from the server: {d}"));
                Ok(Some(SignedIn {
                    device: DeviceId(d["id"].as_i64().ok_or_else(bad)?),
                    token: d["token"].as_str().ok_or_else(bad)?.to_owned(),
                }))
            }
            (401, _) => Ok(None),
            (status, body) => Err(self.refusal(status, &body)),
        }
    }

    fn pull(&self, device: &SignedIn, cursor: Option<&SyncCursor>, limit: u32) -> Result<Pulled> {
        let cursor = cursor.map(SyncCursor::token).unwrap_or_default();
        let response = self
            .agent
            .get(&format!(
                "{}/api/v4/sync/?device={}&cursor={cursor}&limit={limit}",
                self.base, device.device
            ))
            .header("Authorization", &format!("Bearer {}", device.token))
            .call()
            .map_err(|e| self.unreachable(e))?;
        match self.answer(response)? {
            (200, batch) => Ok(Pulled::Batch(Box::new(parse_batch(&batch).map_err(
                |what| Error::InvalidInput(format!("not a sync batch from the server: {what}")),
            )?))),
            (401, _) => Ok(Pulled::Refused),
            (status, body) => Err(self.refusal(status, &body)),
        }
    }

    fn push(&self, device: &SignedIn, writes: &[PushedWrite]) -> Result<Option<Vec<PushOutcome>>> {
        let writes: Vec<Value> = writes
            .iter()
            .map(|w| {
                let (key, document) = (&w.key, w.document.0);
                match &w.change {
                    PushedChange::Set {
                        metadata_type,
                        value,
                        base,
                    } => serde_json::json!({
                        "key": key, "action": "set", "document_id": document,
                        "metadata_type_id": metadata_type.0, "value": value, "base": base,
                    }),
                    PushedChange::Remove {
                        metadata_type,
                        base,
                    } => serde_json::json!({
                        "key": key, "action": "remove", "document_id": document,
                        "metadata_type_id": metadata_type.0, "base": base,
                    }),
                    PushedChange::Create {
                        document_type,
                        label,
                        values,
                    } => serde_json::json!({
                        "key": key, "action": "create", "document_id": document,
                        "document_type_id": document_type.0, "label": label,
                        "metadata": values
                            .iter()
                            .map(|(mt, v)| serde_json::json!({"metadata_type_id": mt.0, "value": v}))
                            .collect::<Vec<_>>(),
                    }),
                    PushedChange::Transition {
                        instance,
                        transition,
                        comment,
                        base,
                    } => serde_json::json!({
                        "key": key, "action": "transition", "document_id": document,
                        "workflow_instance_id": instance.0, "transition_id": transition.0,
                        "comment": comment, "base_state_id": base.map(|s| s.0),
                    }),
                    // Never in a push (its bytes go with `push_file`): named so that the
                    // server refuses it.
                    PushedChange::AddFile { .. } => serde_json::json!({
                        "key": key, "action": "file", "document_id": document,
                    }),
                }
            })
            .collect();
        let body = serde_json::json!({"device": device.device.0, "writes": writes});
        let response = self
            .agent
            .post(&format!("{}/api/v4/sync/push/", self.base))
            .header("Authorization", &format!("Bearer {}", device.token))
            .send_json(&body)
            .map_err(|e| self.unreachable(e))?;
        match self.answer(response)? {
            (200, answer) => Ok(Some(parse_outcomes(&answer).map_err(|what| {
                Error::InvalidInput(format!("not the results of a push from the server: {what}"))
            })?)),
            (401, _) => Ok(None),
            (status, body) => Err(self.refusal(status, &body)),
        }
    }

    fn push_file(
        &self,
        device: &SignedIn,
        write: &PushedWrite,
        content: &mut dyn std::io::Read,
    ) -> Result<Option<PushOutcome>> {
        use std::io::Read as _;
        let filename = file_name(write)?;
        // One multipart part named `file`, streamed: head, the bytes, tail.
        let boundary = format!("docmeta-file-{}", query_text(&write.key));
        let name: String = filename
            .chars()
            .map(|c| {
                if matches!(c, '"' | '\\' | '\r' | '\n') {
                    '_'
                } else {
                    c
                }
            })
            .collect();
        let head = format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; \
             filename=\"{name}\"\r\nContent-Type: application/octet-stream\r\n\r\n"
        );
        let tail = format!("\r\n--{boundary}--\r\n");
        let mut body = std::io::Cursor::new(head.into_bytes())
            .chain(content)
            .chain(std::io::Cursor::new(tail.into_bytes()));
        let url = format!(
            "{}/api/v4/sync/push/file/?device={}&key={}&document_id={}",
            self.base,
            device.device.0,
            query_text(&write.key),
            write.document.0
        );
        // Expect: 100-continue: a refusal (or a file pushed before) is answered before the
        // bytes are sent.
        let response = self
            .agent
            .post(&url)
            .header("Authorization", &format!("Bearer {}", device.token))
            .header(
                "Content-Type",
                &format!("multipart/form-data; boundary={boundary}"),
            )
            .header("Expect", "100-continue")
            .send(ureq::SendBody::from_reader(&mut body))
            .map_err(|e| self.unreachable(e))?;
        match self.answer(response)? {
            (200, answer) => {
                let mut outcomes = parse_outcomes(&answer).map_err(|what| {
                    Error::InvalidInput(format!("not the result of a pushed file: {what}"))
                })?;
                match outcomes.pop() {
                    Some(o) if outcomes.is_empty() => Ok(Some(o)),
                    _ => Err(Error::InvalidInput(
                        "the server answered a pushed file with other than one result".into(),
                    )),
                }
            }
            (401, _) => Ok(None),
            (status, body) => Err(self.refusal(status, &body)),
        }
    }

    fn download(&self, device: &SignedIn, file: &DocumentFile) -> Result<Option<Vec<u8>>> {
        let response = self
            .agent
            .get(&format!(
                "{}/api/v4/documents/{}/files/{}/download/",
                self.base, file.document_id, file.id
            ))
            .header("Authorization", &format!("Bearer {}", device.token))
            .call()
            .map_err(|e| self.unreachable(e))?;
        let status = response.status().as_u16();
        if status == 401 {
            return Ok(None);
        }
        let mut body = response.into_body();
        let limit = file.size.saturating_add(1);
        let bytes = body
            .with_config()
            .limit(limit)
            .read_to_vec()
            .map_err(|e| self.unreachable(e))?;
        if status != 200 {
            let answer = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            return Err(self.refusal(status, &answer));
        }
        Ok(Some(bytes))
    }

    /// A long poll of the event log (`GET /api/v4/events/?after=&wait=`), which the server
    /// answers as soon as an event the user may see is committed, by any of its processes.
    fn wait_for_change(
        &self,
        device: &SignedIn,
        after: Option<EventId>,
        wait: Duration,
    ) -> Result<()> {
        let seconds = wait.min(crate::session::MAX_EVENT_WAIT).as_secs().max(1);
        let after = after.map(|e| format!("&after={e}")).unwrap_or_default();
        let response = self
            .agent
            .get(&format!(
                "{}/api/v4/events/?wait={seconds}&page_size=1{after}",
                self.base
            ))
            .header("Authorization", &format!("Bearer {}", device.token))
            .call()
            .map_err(|e| self.unreachable(e))?;
        match self.answer(response)? {
            // Refused: the next pull says so.
            (200 | 401, _) => Ok(()),
            (status, body) => Err(self.refusal(status, &body)),
        }
    }
}

// ----- the JSON of `GET /api/v4/sync/` ---------------------------------------------------------

type Parsed<T> = std::result::Result<T, String>;

/// `text` as a query parameter's value (percent-encoded but for unreserved characters).
fn query_text(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn int(v: &Value, key: &str) -> Parsed<i64> {
    v[key].as_i64().ok_or_else(|| format!("`{key}` in {v}"))
}

fn text(v: &Value, key: &str) -> Parsed<String> {
    v[key]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("`{key}` in {v}"))
}

fn time(v: &Value, key: &str) -> Parsed<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(&text(v, key)?)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|_| format!("`{key}` in {v}"))
}

fn list<'a>(v: &'a Value, key: &str) -> Parsed<&'a Vec<Value>> {
    v[key].as_array().ok_or_else(|| format!("`{key}` in {v}"))
}

/// A list that a server older than workflows on replicas does not send: empty then.
fn optional_list<'a>(v: &'a Value, key: &str) -> Parsed<&'a [Value]> {
    match &v[key] {
        Value::Null => Ok(&[]),
        l => l
            .as_array()
            .map(Vec::as_slice)
            .ok_or_else(|| format!("`{key}` in {v}")),
    }
}

fn optional_int(v: &Value, key: &str) -> Parsed<Option<i64>> {
    match &v[key] {
        Value::Null => Ok(None),
        n => n
            .as_i64()
            .map(Some)
            .ok_or_else(|| format!("`{key}` in {v}")),
    }
}

fn synced_instance(v: &Value) -> Parsed<SyncedInstance> {
    let i = &v["instance"];
    let instance = WorkflowInstance {
        id: WorkflowInstanceId(int(i, "id")?),
        workflow_id: WorkflowId(int(i, "workflow_id")?),
        document_id: DocumentId(int(i, "document_id")?),
        state_id: optional_int(i, "current_state_id")?.map(WorkflowStateId),
        context: i["context"].clone(),
    };
    let log = list(v, "log")?
        .iter()
        .map(|e| {
            Ok(WorkflowLogEntry {
                id: WorkflowLogEntryId(int(e, "id")?),
                instance_id: instance.id,
                transition_id: optional_int(e, "transition_id")?.map(WorkflowTransitionId),
                user_id: optional_int(e, "user_id")?.map(UserId),
                comment: text(e, "comment")?,
                error: e["error"]
                    .as_bool()
                    .ok_or_else(|| format!("`error` in {e}"))?,
                created: time(e, "datetime_created")?,
            })
        })
        .collect::<Parsed<Vec<_>>>()?;
    Ok(SyncedInstance { instance, log })
}

fn synced_workflow(v: &Value) -> Parsed<SyncedWorkflow> {
    let w = &v["workflow"];
    let id = WorkflowId(int(w, "id")?);
    let ids = |l: &[Value], key: &str| -> Parsed<Vec<i64>> {
        l.iter()
            .map(|t| t.as_i64().ok_or_else(|| format!("`{key}` in {w}")))
            .collect()
    };
    let workflow = Workflow {
        id,
        label: text(w, "label")?,
        document_type_ids: ids(list(w, "document_type_ids")?, "document_type_ids")?
            .into_iter()
            .map(DocumentTypeId)
            .collect(),
    };
    let states = list(v, "states")?
        .iter()
        .map(|s| {
            Ok(WorkflowState {
                id: WorkflowStateId(int(s, "id")?),
                workflow_id: id,
                label: text(s, "label")?,
                initial: s["initial"]
                    .as_bool()
                    .ok_or_else(|| format!("`initial` in {s}"))?,
            })
        })
        .collect::<Parsed<Vec<_>>>()?;
    let transitions = list(v, "transitions")?
        .iter()
        .map(|t| {
            Ok(WorkflowTransition {
                id: WorkflowTransitionId(int(t, "id")?),
                workflow_id: id,
                label: text(t, "label")?,
                origin_state_id: WorkflowStateId(int(t, "origin_state_id")?),
                destination_state_id: WorkflowStateId(int(t, "destination_state_id")?),
                condition: text(t, "condition")?,
                triggers: list(t, "triggers")?
                    .iter()
                    .map(|e| {
                        e.as_str()
                            .map(str::to_owned)
                            .ok_or_else(|| format!("`triggers` in {t}"))
                    })
                    .collect::<Parsed<Vec<_>>>()?,
            })
        })
        .collect::<Parsed<Vec<_>>>()?;
    Ok(SyncedWorkflow {
        workflow,
        states,
        transitions,
    })
}

fn document_type(v: &Value) -> Parsed<DocumentType> {
    Ok(DocumentType {
        id: DocumentTypeId(int(v, "id")?),
        label: text(v, "label")?,
    })
}

fn metadata_type(v: &Value) -> Parsed<MetadataType> {
    Ok(MetadataType {
        id: MetadataTypeId(int(v, "id")?),
        name: text(v, "name")?,
        label: text(v, "label")?,
        default: text(v, "default")?,
        lookup: text(v, "lookup")?,
        validation: text(v, "validation")?,
        validation_arguments: text(v, "validation_arguments")?,
        parser: text(v, "parser")?,
        parser_arguments: text(v, "parser_arguments")?,
        // A server older than typed metadata types sends none: its types are text.
        value_type: match v.get("value_type").and_then(Value::as_str) {
            None => ValueType::Text,
            Some(name) => name
                .parse()
                .map_err(|e: String| format!("value_type: {e}"))?,
        },
    })
}

fn synced_document(v: &Value) -> Parsed<SyncedDocument> {
    let d = &v["document"];
    let document_type = document_type(&d["document_type"])?;
    let document = Document {
        id: DocumentId(int(d, "id")?),
        label: text(d, "label")?,
        document_type_id: document_type.id,
        created: time(d, "datetime_created")?,
    };
    let values = list(v, "metadata")?
        .iter()
        .map(|m| {
            Ok(MetadataValueView {
                value: DocumentMetadata {
                    id: DocumentMetadataId(int(m, "id")?),
                    document_id: document.id,
                    metadata_type_id: MetadataTypeId(int(m, "metadata_type_id")?),
                    value: text(m, "value")?,
                },
                document: document.clone(),
                metadata_type: match &m["metadata_type"] {
                    Value::Null => None,
                    t => Some(metadata_type(t)?),
                },
            })
        })
        .collect::<Parsed<Vec<_>>>()?;
    let files = list(v, "files")?
        .iter()
        .map(|f| {
            Ok(DocumentFile {
                id: DocumentFileId(int(f, "id")?),
                document_id: document.id,
                filename: text(f, "filename")?,
                size: u64::try_from(int(f, "size")?).map_err(|_| format!("`size` in {f}"))?,
                checksum: text(f, "checksum")?,
                mimetype: text(f, "mimetype")?,
                created: time(f, "timestamp")?,
            })
        })
        .collect::<Parsed<Vec<_>>>()?;
    let cabinets = list(v, "cabinet_ids")?
        .iter()
        .map(|c| {
            c.as_i64()
                .map(CabinetId)
                .ok_or_else(|| format!("`cabinet_ids` in {v}"))
        })
        .collect::<Parsed<Vec<_>>>()?;
    Ok(SyncedDocument {
        document: DocumentView {
            document,
            document_type,
        },
        values,
        files,
        cabinets,
        workflows: optional_list(v, "workflows")?
            .iter()
            .map(synced_instance)
            .collect::<Parsed<Vec<_>>>()?,
    })
}

fn schema(v: &Value) -> Parsed<SyncSchema> {
    let document_types = list(v, "document_types")?
        .iter()
        .map(document_type)
        .collect::<Parsed<Vec<_>>>()?;
    let metadata_types = list(v, "metadata_types")?
        .iter()
        .map(metadata_type)
        .collect::<Parsed<Vec<_>>>()?;
    let associations = association_views(list(v, "associations")?)?;
    let write_associations = association_views(list(v, "write_associations")?)?;
    let cabinets = list(v, "cabinets")?
        .iter()
        .map(|c| {
            Ok(Cabinet {
                id: CabinetId(int(c, "id")?),
                label: text(c, "label")?,
                parent_id: c["parent_id"].as_i64().map(CabinetId),
            })
        })
        .collect::<Parsed<Vec<_>>>()?;
    Ok(SyncSchema {
        document_types,
        metadata_types,
        associations,
        cabinets,
        write_associations,
        workflows: optional_list(v, "workflows")?
            .iter()
            .map(synced_workflow)
            .collect::<Parsed<Vec<_>>>()?,
        files_encrypted: v["files_encrypted"].as_bool().unwrap_or(false),
    })
}

fn association_views(list: &[Value]) -> Parsed<Vec<AssociationView>> {
    list.iter()
        .map(|a| {
            let (d, m) = (
                document_type(&a["document_type"])?,
                metadata_type(&a["metadata_type"])?,
            );
            Ok(AssociationView {
                association: DocumentTypeMetadataType {
                    id: AssociationId(int(a, "id")?),
                    document_type_id: d.id,
                    metadata_type_id: m.id,
                    required: a["required"]
                        .as_bool()
                        .ok_or_else(|| format!("`required` in {a}"))?,
                },
                document_type: d,
                metadata_type: m,
            })
        })
        .collect()
}

fn parse_outcomes(v: &Value) -> Parsed<Vec<PushOutcome>> {
    list(v, "results")?
        .iter()
        .map(|r| {
            let result = match text(r, "status")?.as_str() {
                "applied" => PushResult::Applied,
                "conflict" => PushResult::Conflict {
                    server: r["server_value"].as_str().map(str::to_owned),
                },
                "refused" => {
                    let e = &r["error"];
                    PushResult::Refused {
                        kind: crate::error::ErrorKind::from_name(&text(e, "kind")?)
                            .ok_or_else(|| format!("`kind` in {e}"))?,
                        field: e["field"].as_str().map(str::to_owned),
                        message: text(e, "message")?,
                    }
                }
                _ => return Err(format!("`status` in {r}")),
            };
            Ok(PushOutcome {
                key: text(r, "key")?,
                result,
                document: match &r["document"] {
                    Value::Null => None,
                    d => Some(synced_document(d)?),
                },
            })
        })
        .collect()
}

fn parse_batch(v: &Value) -> Parsed<SyncBatch> {
    Ok(SyncBatch {
        documents: list(v, "documents")?
            .iter()
            .map(synced_document)
            .collect::<Parsed<Vec<_>>>()?,
        removed: list(v, "removed")?
            .iter()
            .map(|id| {
                id.as_i64()
                    .map(DocumentId)
                    .ok_or_else(|| format!("`removed` in {v}"))
            })
            .collect::<Parsed<Vec<_>>>()?,
        schema: match &v["schema"] {
            Value::Null => None,
            s => Some(schema(s)?),
        },
        cursor: SyncCursor::parse(&text(v, "cursor")?).map_err(|e| e.to_string())?,
        more: v["more"]
            .as_bool()
            .ok_or_else(|| format!("`more` in {v}"))?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_is_read_from_the_server_s_json() {
        let json = serde_json::json!({
            "documents": [{
                "document": {"id": 9, "label": "Note", "url": "/api/v4/documents/9/",
                    "datetime_created": "2026-11-27T08:00:00.000001Z",
                    "document_type": {"id": 2, "label": "Memo", "url": "x"}},
                "metadata": [{"id": 4, "document": {"id": 9, "label": "Note", "url": "x"},
                    "metadata_type": null, "metadata_type_id": 3, "value": "12", "url": "x"}],
                "files": [{"id": 5, "document_id": 9, "filename": "a.pdf", "size": 10,
                    "checksum": "ab", "mimetype": "application/pdf",
                    "timestamp": "2026-11-27T08:00:00Z", "download_url": "x", "url": "x"}],
                "cabinet_ids": [3],
                "workflows": [{
                    "instance": {"id": 6, "workflow_id": 1, "document_id": 9,
                        "current_state_id": 2, "context": {}, "url": "x"},
                    "log": [{"id": 8, "transition_id": null, "user_id": 4, "comment": "",
                        "error": false, "datetime_created": "2026-11-27T08:00:00Z"}]
                }]
            }],
            "removed": [7],
            "schema": null,
            "cursor": "s1.-.c.-.1",
            "more": false
        });
        let batch = parse_batch(&json).expect("a batch");
        let d = &batch.documents[0];
        assert_eq!(d.document.document.id, DocumentId(9));
        assert_eq!(d.document.document_type.label, "Memo");
        assert_eq!(d.values[0].value.value, "12");
        assert!(d.values[0].metadata_type.is_none());
        assert_eq!(d.files[0].size, 10);
        assert_eq!(d.cabinets, vec![CabinetId(3)]);
        assert_eq!(d.workflows[0].instance.state_id, Some(WorkflowStateId(2)));
        assert_eq!(d.workflows[0].log[0].user_id, Some(UserId(4)));
        assert_eq!(batch.removed, vec![DocumentId(7)]);
        assert!(!batch.more);
        let broken = serde_json::json!({"documents": [{"document": {}}]});
        assert!(parse_batch(&broken).is_err());
    }
}
