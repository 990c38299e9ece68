//! Offline sync: the next batch of changes for a device's replica (see
//! `Session::sync_changes`).

use std::collections::HashMap;

use crate::body::Json;
use axum::extract::{Query, State};
use docmeta_core::{
    DeviceId, DocumentId, PushOutcome, PushResult, PushedWrite, SyncBatch, SyncCursor, SyncSchema,
    SyncedDocument, SyncedInstance, SyncedWorkflow,
};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::body::JsonBody;
use crate::dto::*;
use crate::error::{ApiError, ApiResult};
use crate::requests::SyncPushIn;
use crate::routes::workflows::{InstanceOut, LogEntryOut, StateOut, TransitionOut, WorkflowOut};
use crate::state::{AppState, CurrentUser};

pub fn register(router: OpenApiRouter<AppState>) -> OpenApiRouter<AppState> {
    router
        .routes(routes!(sync))
        .routes(routes!(push))
        .routes(routes!(push_file))
}

/// The query parameters of a sync, for the OpenAPI document.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // Describes the parameters; never constructed.
struct SyncParams {
    /// The device whose replica asks (one of the caller's: `POST /api/v4/devices/`).
    device: i64,
    /// The `cursor` of the last batch the replica applied; absent: a replica that holds
    /// nothing.
    cursor: Option<String>,
    /// The most documents the batch sends (1 to 500; default 100).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<u32>,
}

/// The query parameters of a pushed file, for the OpenAPI document.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // Describes the parameters; never constructed.
struct PushFileParams {
    /// The device whose replica added the file (one of the caller's).
    device: i64,
    /// The replica's name for the write (1 to 64 characters): a file pushed again under the
    /// same key is added once.
    #[param(min_length = 1, max_length = 64)]
    key: String,
    /// The document the file is added to.
    document_id: i64,
}

/// A document as a replica keeps it.
#[derive(Debug, Serialize, ToSchema)]
pub struct SyncedDocumentOut {
    pub document: DocumentOut,
    /// Its values the caller may view.
    pub metadata: Vec<DocumentMetadataOut>,
    /// Its files' records (the bytes: `download_url`).
    pub files: Vec<DocumentFileOut>,
    /// The ids of the cabinets it is in that the caller may view.
    pub cabinet_ids: Vec<i64>,
    /// Its instances of the workflows the caller may view, each with its log.
    pub workflows: Vec<SyncedInstanceOut>,
}

/// A document's workflow instance as a replica keeps it.
#[derive(Debug, Serialize, ToSchema)]
pub struct SyncedInstanceOut {
    pub instance: InstanceOut,
    /// Its log, oldest first (a user the caller may not view is `null`).
    pub log: Vec<LogEntryOut>,
}

impl From<SyncedInstance> for SyncedInstanceOut {
    fn from(i: SyncedInstance) -> Self {
        SyncedInstanceOut {
            instance: (&i.instance).into(),
            log: i.log.iter().map(Into::into).collect(),
        }
    }
}

/// A workflow as a replica keeps it: its states and transitions (not its actions).
#[derive(Debug, Serialize, ToSchema)]
pub struct SyncedWorkflowOut {
    pub workflow: WorkflowOut,
    pub states: Vec<StateOut>,
    /// With their conditions and triggers.
    pub transitions: Vec<TransitionOut>,
}

impl From<SyncedWorkflow> for SyncedWorkflowOut {
    fn from(w: SyncedWorkflow) -> Self {
        SyncedWorkflowOut {
            workflow: (&w.workflow).into(),
            states: w.states.iter().map(Into::into).collect(),
            transitions: w.transitions.iter().map(Into::into).collect(),
        }
    }
}

impl From<SyncedDocument> for SyncedDocumentOut {
    fn from(d: SyncedDocument) -> Self {
        SyncedDocumentOut {
            document: (&d.document).into(),
            metadata: d.values.into_iter().map(Into::into).collect(),
            files: d.files.iter().map(Into::into).collect(),
            cabinet_ids: d.cabinets.iter().map(|c| c.0).collect(),
            workflows: d.workflows.into_iter().map(Into::into).collect(),
        }
    }
}

/// The types and cabinets the caller may view.
#[derive(Debug, Serialize, ToSchema)]
pub struct SyncSchemaOut {
    pub document_types: Vec<DocumentTypeOut>,
    pub metadata_types: Vec<MetadataTypeOut>,
    pub associations: Vec<AssociationOut>,
    /// The cabinets the caller may view (a parent it may not view is named by id only).
    pub cabinets: Vec<CabinetOut>,
    /// The associations of the document types the caller may create documents of or add
    /// values to without viewing them as types (for metadata types whose values it may view):
    /// what a replica checks its writes against. Not types to list.
    pub write_associations: Vec<AssociationOut>,
    /// The workflows the caller may view, with their states and transitions.
    pub workflows: Vec<SyncedWorkflowOut>,
    /// Whether the server keeps its files encrypted (a replica then keeps the bytes it
    /// fetches only in an encrypted storage of its own).
    pub files_encrypted: bool,
}

impl From<SyncSchema> for SyncSchemaOut {
    fn from(s: SyncSchema) -> Self {
        SyncSchemaOut {
            document_types: s.document_types.iter().map(Into::into).collect(),
            metadata_types: s.metadata_types.into_iter().map(Into::into).collect(),
            associations: s.associations.iter().map(Into::into).collect(),
            cabinets: s.cabinets.iter().map(Into::into).collect(),
            write_associations: s.write_associations.iter().map(Into::into).collect(),
            workflows: s.workflows.into_iter().map(Into::into).collect(),
            files_encrypted: s.files_encrypted,
        }
    }
}

/// One batch of changes: store `documents` (each replaces the replica's copy), delete
/// `removed`, keep `cursor`, and ask again at once while `more`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SyncBatchOut {
    pub documents: Vec<SyncedDocumentOut>,
    /// Ids of documents sent to this device before that the caller may no longer view, or
    /// that are gone.
    pub removed: Vec<i64>,
    /// The types, when they may have changed (and with the first batch of every full pass).
    pub schema: Option<SyncSchemaOut>,
    /// Where the replica stands once it applied this batch: the next request's `cursor`.
    pub cursor: String,
    /// Whether more changes are ready now.
    pub more: bool,
}

impl From<SyncBatch> for SyncBatchOut {
    fn from(b: SyncBatch) -> Self {
        SyncBatchOut {
            documents: b.documents.into_iter().map(Into::into).collect(),
            removed: b.removed.iter().map(|d| d.0).collect(),
            schema: b.schema.map(Into::into),
            cursor: b.cursor.token(),
            more: b.more,
        }
    }
}

#[utoipa::path(get, path = "/api/v4/sync/", tag = "sync",
    description = "The next batch of changes for the replica of one of the caller's devices: first every document the caller may view, in pages, then the documents events name since the cursor; a document sent to this device before that the caller may no longer view is in `removed`. Applying a batch twice, or asking again with the same cursor after a lost answer, leaves the same replica.",
    params(SyncParams),
    responses((status = 200, body = SyncBatchOut), (status = 400, body = ErrorOut),
        (status = 404, body = ErrorOut)))]
async fn sync(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<SyncBatchOut>> {
    let device = match q.get("device") {
        None => return Err(ApiError::field("device", "This field is required.")),
        Some(d) => DeviceId(
            d.parse()
                .map_err(|_| ApiError::field("device", "A valid integer is required."))?,
        ),
    };
    let cursor = match q.get("cursor").filter(|c| !c.is_empty()) {
        None => None,
        Some(c) => Some(SyncCursor::parse(c)?),
    };
    let limit = match q.get("limit") {
        None => 100,
        Some(l) => l
            .parse()
            .map_err(|_| ApiError::field("limit", "A valid integer is required."))?,
    };
    app.run(user, move |s| {
        Ok(Json(s.sync_changes(device, cursor.as_ref(), limit)?.into()))
    })
    .await
}

/// What became of one pushed write.
#[derive(Debug, Serialize, ToSchema)]
pub struct PushResultOut {
    /// The write's key.
    pub key: String,
    /// `applied`, `conflict` (the server's value stands: `server_value`) or `refused` (as the
    /// same write online would be: `error`).
    pub status: String,
    /// In a conflict: the server's value now (`null`: none, or one the caller may not view);
    /// for a transition, the id of the instance's state now.
    pub server_value: Option<String>,
    /// When refused: the error's kind (`validation`, `permission_denied`, `not_found`, ...),
    /// the field a validation error names, and the message.
    pub error: Option<PushErrorOut>,
    /// The document as the caller may see it now, whatever became of the write (`null`: not
    /// visible, or gone; for a create, the document created, under the server's id): a replica
    /// stores it at once.
    pub document: Option<SyncedDocumentOut>,
}

/// Why a pushed write was refused.
#[derive(Debug, Serialize, ToSchema)]
pub struct PushErrorOut {
    pub kind: String,
    pub field: Option<String>,
    pub message: String,
}

/// The results of a push, one per write, in order.
#[derive(Debug, Serialize, ToSchema)]
pub struct SyncPushOut {
    pub results: Vec<PushResultOut>,
}

impl From<PushOutcome> for PushResultOut {
    fn from(o: PushOutcome) -> Self {
        let (status, server_value, error) = match o.result {
            PushResult::Applied => ("applied", None, None),
            PushResult::Conflict { server } => ("conflict", server, None),
            PushResult::Refused {
                kind,
                field,
                message,
            } => (
                "refused",
                None,
                Some(PushErrorOut {
                    kind: kind.name().to_owned(),
                    field,
                    message,
                }),
            ),
        };
        PushResultOut {
            key: o.key,
            status: status.to_owned(),
            server_value,
            error,
            document: o.document.map(Into::into),
        }
    }
}

#[utoipa::path(post, path = "/api/v4/sync/push/", tag = "sync", request_body = SyncPushIn,
    description = "Applies the writes one of the caller's devices' replica made offline, in order, each as the same write online would be (the pipeline, permission checks, workflow triggers): values set and removed, documents created, workflow transitions taken. A write based on a value the server no longer holds is a conflict: the server's value stands (a transition: based on a state the instance has left, unless it is in the transition's destination). A push retried after a lost answer applies once (a create pushed again under its key answers the document made the first time).",
    responses((status = 200, body = SyncPushOut), (status = 400, body = ErrorOut),
        (status = 404, body = ErrorOut)))]
async fn push(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    JsonBody(body): JsonBody<SyncPushIn>,
) -> ApiResult<Json<SyncPushOut>> {
    let device = DeviceId(body.device);
    let writes: Vec<PushedWrite> = body.writes.into_iter().map(|w| w.0).collect();
    app.run(user, move |s| {
        let results = s.sync_push(device, &writes)?;
        Ok(Json(SyncPushOut {
            results: results.into_iter().map(Into::into).collect(),
        }))
    })
    .await
}

#[utoipa::path(post, path = "/api/v4/sync/push/file/", tag = "sync",
    params(PushFileParams),
    request_body(content = crate::routes::files::UploadForm, content_type = "multipart/form-data"),
    description = "Adds a file one of the caller's devices' replica added offline to a document, as `POST /api/v4/documents/{document_id}/files/` adds it (`documents.document_file_new` checked before a byte is received). The answer is the write's result, as a push answers it: a refusal is `refused` with the online error; a file pushed again under the same `key` is added once (its bytes are not read again). Send `Expect: 100-continue` to be answered before sending the bytes.",
    responses((status = 200, body = SyncPushOut), (status = 400, body = ErrorOut),
        (status = 404, body = ErrorOut), (status = 413, body = ErrorOut),
        (status = 507, body = ErrorOut)))]
async fn push_file(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Query(q): Query<HashMap<String, String>>,
    request: axum::extract::Request,
) -> ApiResult<Json<SyncPushOut>> {
    let _permit = app.streams.start(user)?;
    let limits = app.streams.limits();
    let deadline = limits.deadline();
    let number = |name: &str| -> ApiResult<i64> {
        q.get(name)
            .ok_or_else(|| ApiError::field(name, "This field is required."))?
            .parse()
            .map_err(|_| ApiError::field(name, "A valid integer is required."))
    };
    let device = DeviceId(number("device")?);
    let document = DocumentId(number("document_id")?);
    let key = q.get("key").cloned().unwrap_or_default();
    let answer = |outcome: PushOutcome| {
        Json(SyncPushOut {
            results: vec![outcome.into()],
        })
    };
    // Answered before a byte is received when the bytes are not needed (pushed before, or
    // refused as the core would refuse after).
    let ready = {
        let key = key.clone();
        app.run(user, move |s| {
            Ok(s.sync_push_file_ready(device, &key, document)?)
        })
        .await?
    };
    if let Some(outcome) = ready {
        return Ok(answer(outcome));
    }
    let (filename, spooled) =
        crate::routes::files::receive_upload(request, &app, limits, deadline).await?;
    let outcome = app
        .run(user, move |s| {
            let mut content = spooled.reader().map_err(|e| {
                ApiError::from(docmeta_core::Error::storage("reading a spooled upload", e))
            })?;
            Ok(s.sync_push_file(device, &key, document, &filename, &mut content)?)
        })
        .await?;
    Ok(answer(outcome))
}
