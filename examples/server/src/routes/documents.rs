//! Documents and their metadata (spec 4.2).

use std::collections::HashMap;
use std::time::Instant;

use crate::body::{Json, json_answer};
use axum::extract::multipart::Field;
use axum::extract::{FromRequest, Query, Request, State};
use axum::http::{StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use docmeta_core::{DocumentId, DocumentMetadataId, DocumentQuery, DocumentTypeId, MetadataTypeId};

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::body::{JsonBody, MAX_BODY};
use crate::dto::*;
use crate::error::{ApiError, ApiResult};
use crate::page::ListQuery;
use crate::requests::{
    DocumentBatchIn, DocumentIn, DocumentMetadataIn, DocumentMetadataPatchIn,
    DocumentMetadataPutIn, DocumentPatchIn, DocumentTypeChangeIn, INITIAL_VALUES, InitialValueIn,
    InitialValues,
};
use crate::routes::files::{FormGate, receive, within};
use crate::state::{AppState, CurrentUser, Ids};
use crate::streams::{StreamLimits, StreamPermit};

pub fn register(router: OpenApiRouter<AppState>) -> OpenApiRouter<AppState> {
    router
        .routes(routes!(list_documents, create_document))
        .routes(routes!(create_documents))
        .routes(routes!(get_document, patch_document, delete_document))
        .routes(routes!(change_document_type))
        .routes(routes!(list_document_metadata, add_document_metadata))
        .routes(routes!(document_metadata_history))
        .routes(routes!(
            get_document_metadata,
            patch_document_metadata,
            put_document_metadata,
            delete_document_metadata
        ))
        .routes(routes!(document_lookup))
}

#[utoipa::path(get, path = "/api/v4/documents/", tag = "documents",
    params(crate::page::PageParams, ("document_type_id" = Option<i64>, Query), DocumentOrdering),
    responses((status = 200, body = PageOut, description = "Documents the caller may view, by id"), (status = 400, body = ErrorOut)))]
async fn list_documents(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Query(q): Query<HashMap<String, String>>,
    uri: Uri,
) -> ApiResult<Response> {
    let q = ListQuery::parse(q)?;
    let of_type = match q.params.get("document_type_id") {
        Some(t) => Some(DocumentTypeId(t.parse().map_err(|_| {
            ApiError::field("document_type_id", "A valid integer is required.")
        })?)),
        None => None,
    };
    app.run(user, move |s| {
        // `id` and `-id` are the list's own orders; any other name is a metadata type's.
        let (newest_first, ordering) = match q.ordering.as_deref() {
            None | Some("id") => (false, None),
            Some("-id") => (true, None),
            Some(other) => (false, docmeta_core::OrderBy::parse(other)),
        };
        let sorted = ordering.is_some();
        let page = s
            .documents(
                DocumentQuery {
                    document_type: of_type,
                    newest_first,
                    ordering,
                    ..Default::default()
                },
                q.request(),
            )
            .map_err(|e| match e {
                docmeta_core::Error::InvalidInput(message) if sorted => {
                    ApiError::field("ordering", message)
                }
                e => e.into(),
            })?;
        Ok(q.page(&uri, page, |d| DocumentOut::from(&d))?
            .into_response())
    })
    .await
}

/// `ordering` of the document list (for the OpenAPI description).
struct DocumentOrdering;

impl utoipa::IntoParams for DocumentOrdering {
    fn into_params(
        _: impl Fn() -> Option<utoipa::openapi::path::ParameterIn>,
    ) -> Vec<utoipa::openapi::path::Parameter> {
        let mut ordering = crate::routes::search::ordering_param();
        ordering.description = Some(
            "`id` (the default) or `-id` (newest first); or a metadata type's name, `-` first \
             for descending: documents in the order of their values of that type (compared by \
             its value type; documents without a value, or whose value the caller may not view, \
             last), ties by id. An order by a metadata type reaches 10,000 documents deep."
                .to_owned(),
        );
        vec![ordering]
    }
}

#[utoipa::path(post, path = "/api/v4/documents/", tag = "documents",
    description = "Creates a document from JSON `{document_type_id, label, metadata}` or from a multipart form (`document_type_id`, `label`, `file`, and `metadata` as a JSON text). `metadata` lists initial values `{metadata_type_id, value}`; each runs through the value pipeline, and the document, its values and its file are created all or nothing. A required metadata type of the document type without a value and without a default refuses the document (`400` under `metadata`, naming the type). A `document_type_id` or `metadata_type_id` that does not exist, or that the caller may not see, is a `400` naming the field. A refused entry of `metadata` (its `metadata_type_id` or its `value`) is reported in that entry, as Django REST framework reports a nested list: `{\"metadata\": [{}, {\"value\": [\"...\"]}]}` when the second entry's value is refused (one object per entry up to the refused one; later entries are not checked). In a form, `document_type_id` must come before `file`: the permission is checked before the file is read (a file part first is `400` under `file`); the text fields hold at most 1 MiB together and at most 2 MiB of the form is read before the check (`413`).",
    request_body(content((DocumentIn = "application/json"), (DocumentForm = "multipart/form-data", encoding(("metadata" = (content_type = "application/json")))))),
    responses((status = 201, body = DocumentOut), (status = 400, body = DocumentErrorOut), (status = 403, body = ErrorOut),
        (status = 413, body = ErrorOut), (status = 507, body = ErrorOut)))]
async fn create_document(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    request: Request,
) -> ApiResult<(StatusCode, Json<DocumentOut>)> {
    let multipart = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("multipart/form-data"));
    if multipart {
        return create_document_from_form(app, user, request).await;
    }
    let JsonBody(body) = JsonBody::<DocumentIn>::from_request(request, &app).await?;
    let (document_type, label) = (body.document_type_id.0, body.label);
    let values = body.metadata.unwrap_or_default().0;
    app.run(user, move |s| {
        let values: Vec<(MetadataTypeId, &str)> =
            values.iter().map(|(t, v)| (*t, v.as_str())).collect();
        let d = s.create_document(DocumentTypeId(document_type), &label, &values)?;
        Ok((StatusCode::CREATED, Json(DocumentOut::from(&d))))
    })
    .await
}

#[utoipa::path(post, path = "/api/v4/documents/batch/", tag = "documents",
    description = "Creates many documents in one transaction, all or nothing: `{\"documents\": [{document_type_id, label, metadata}, ...]}`, each entry as `POST /api/v4/documents/` takes it (JSON), with the same permission checks, value pipeline, required defaults, events and workflows. At most 1000 entries (more is `400` under `documents`). A refused entry is reported in that entry, as Django REST framework reports a nested list: `{\"documents\": [{}, {\"metadata\": [{\"value\": [\"...\"]}]}]}` when the second document's first value is refused; then nothing is created. Answers the new documents in the order given.",
    request_body(content = DocumentBatchIn, content_type = "application/json"),
    responses((status = 201, body = DocumentBatchOut), (status = 400, body = DocumentBatchErrorOut), (status = 403, body = ErrorOut),
        (status = 413, body = ErrorOut), (status = 507, body = ErrorOut)))]
async fn create_documents(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    JsonBody(body): JsonBody<DocumentBatchIn>,
) -> ApiResult<(StatusCode, Json<DocumentBatchOut>)> {
    let entries: Vec<BatchEntry> = body
        .documents
        .0
        .into_iter()
        .map(|d| {
            let values = d.metadata.unwrap_or_default().0;
            (d.document_type_id.0, d.label, values)
        })
        .collect();
    app.run(user, move |s| {
        let values: Vec<Vec<(MetadataTypeId, &str)>> = entries
            .iter()
            .map(|e| e.2.iter().map(|(t, v)| (*t, v.as_str())).collect())
            .collect();
        let new: Vec<docmeta_core::NewDocument<'_>> = entries
            .iter()
            .zip(&values)
            .map(
                |((document_type, label, _), values)| docmeta_core::NewDocument {
                    document_type: DocumentTypeId(*document_type),
                    label,
                    values,
                },
            )
            .collect();
        let created = s.create_documents(&new)?;
        Ok((
            StatusCode::CREATED,
            Json(DocumentBatchOut {
                count: created.len(),
                results: created.iter().map(DocumentOut::from).collect(),
            }),
        ))
    })
    .await
}

/// A batch's document: (document type, label, initial values).
type BatchEntry = (i64, String, Vec<(MetadataTypeId, String)>);

/// The multipart form of a document creation, for the OpenAPI description
/// ([`create_document_from_form`] reads it part by part, with the rules of [`DocumentIn`]; other
/// parts are read and dropped, which `deny_unknown_fields` leaves out of the description).
#[derive(utoipa::ToSchema, serde::Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct DocumentForm {
    document_type_id: crate::body::fields::Id,
    #[schema(schema_with = crate::body::fields::label::<255>)]
    label: String,
    /// The document's first file (optional).
    #[schema(value_type = String, format = Binary)]
    #[serde(default)]
    file: Vec<u8>,
    /// Initial metadata values (optional): the JSON text of `[{"metadata_type_id", "value"}]`.
    #[serde(default)]
    metadata: InitialValues,
}

/// Reads a text field of a form, whose text fields together may hold at most [`MAX_BODY`]
/// bytes (`413` beyond, naming the field): `text` counts what the form's text fields read.
async fn bounded_text(
    field: &mut Field<'_>,
    name: &str,
    text: &mut usize,
    gate: &FormGate,
    limits: StreamLimits,
    deadline: Instant,
) -> ApiResult<Vec<u8>> {
    let mut bytes = Vec::new();
    while let Some(chunk) = within(limits, deadline, field.chunk())
        .await?
        .map_err(|e| gate.error(e))?
    {
        *text = text.saturating_add(chunk.len());
        if *text > MAX_BODY {
            return Err(ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                serde_json::json!({ name: [format!(
                    "The form's text fields are larger than {MAX_BODY} bytes together."
                )] }),
            ));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// Reads the multipart form of a document creation and creates it all at once. Nothing of it
/// costs more than its bytes before the caller's permission is checked: the text fields are
/// bounded (at most [`MAX_BODY`] together), the file part is read only after the caller was
/// found allowed to create the document with a file (so `document_type_id` must come before
/// it: a file part first is `400`), and `metadata` is parsed as JSON only once the caller may
/// create the document. The file is spooled as an upload is (`upload_max_bytes`, stream time
/// limits).
async fn create_document_from_form(
    app: AppState,
    user: docmeta_core::UserId,
    request: Request,
) -> ApiResult<(StatusCode, Json<DocumentOut>)> {
    let _permit: StreamPermit = app.streams.start(user)?;
    let limits = app.streams.limits();
    let deadline = limits.deadline();
    let gate = FormGate::new();
    let mut form = gate.form(request, &app, "non_field_errors").await?;
    let mut text: HashMap<String, Vec<u8>> = HashMap::new();
    let mut text_bytes = 0usize;
    let mut checked: Option<DocumentTypeId> = None;
    let mut file = None;
    while let Some(mut field) = within(limits, deadline, form.next_field())
        .await?
        .map_err(|e| gate.error(e))?
    {
        let name = field.name().unwrap_or_default().to_owned();
        if name != "file" {
            // Unknown fields are read (and dropped) under the same bound as the known ones.
            let value =
                bounded_text(&mut field, &name, &mut text_bytes, &gate, limits, deadline).await?;
            if matches!(name.as_str(), "document_type_id" | "label" | "metadata") {
                text.insert(name, value);
            }
            continue;
        }
        if file.is_some() {
            return Err(ApiError::field("file", "Send one file only."));
        }
        let Some(document_type) = text.get("document_type_id") else {
            return Err(ApiError::field(
                "file",
                "The file must come after document_type_id in the form: the permission to \
                 create the document is checked before the file is received.",
            ));
        };
        let document_type = document_type_id(document_type)?;
        // Checked before a byte of the file is read: a caller who may not create the document
        // (with a file) never makes the server receive or spool it.
        app.run(user, move |s| {
            Ok(s.check_create_document(document_type, true)?)
        })
        .await?;
        checked = Some(document_type);
        gate.open();
        let filename = field.file_name().unwrap_or("file").to_owned();
        let spooled = receive(&app.spool_dir, &mut field, limits, deadline).await?;
        file = Some((filename, spooled));
    }
    let document_type = match text.get("document_type_id") {
        None => {
            return Err(ApiError::field(
                "document_type_id",
                "This field is required.",
            ));
        }
        Some(t) => document_type_id(t)?,
    };
    if checked != Some(document_type) {
        app.run(user, move |s| {
            Ok(s.check_create_document(document_type, false)?)
        })
        .await?;
    }
    let label = text
        .remove("label")
        .ok_or_else(|| ApiError::field("label", "This field is required."))?;
    let label =
        String::from_utf8(label).map_err(|_| ApiError::field("label", "Not a valid string."))?;
    let values = match text.get("metadata") {
        None => Vec::new(),
        Some(m) => form_values(m)?,
    };
    app.run(user, move |s| {
        let values: Vec<(MetadataTypeId, &str)> =
            values.iter().map(|(t, v)| (*t, v.as_str())).collect();
        let d = match file {
            Some((filename, spooled)) => {
                let mut content = spooled.reader().map_err(|e| {
                    ApiError::from(docmeta_core::Error::storage("reading a spooled upload", e))
                })?;
                s.create_document_with_file(
                    document_type,
                    &label,
                    &values,
                    &filename,
                    &mut content,
                )?
                .0
            }
            None => s.create_document(document_type, &label, &values)?,
        };
        Ok((StatusCode::CREATED, Json(DocumentOut::from(&d))))
    })
    .await
}

/// A form's `document_type_id`.
fn document_type_id(text: &[u8]) -> ApiResult<DocumentTypeId> {
    std::str::from_utf8(text)
        .ok()
        .and_then(|t| t.trim().parse::<i64>().ok())
        .filter(|id| *id > 0)
        .map(DocumentTypeId)
        .ok_or_else(|| ApiError::field("document_type_id", "A valid integer is required."))
}

/// A form's `metadata`: the JSON text of `[{"metadata_type_id", "value"}]` (blank: none), read
/// as a JSON body's `metadata` is, directly into its entries: no JSON tree is built, so the
/// entries cost about what their text does.
fn form_values(text: &[u8]) -> ApiResult<Vec<(MetadataTypeId, String)>> {
    if text.iter().all(u8::is_ascii_whitespace) {
        return Ok(Vec::new());
    }
    let invalid = || ApiError::field("metadata", INITIAL_VALUES);
    if serde_json::from_slice::<serde::de::IgnoredAny>(text).is_err() {
        return Err(ApiError::field("metadata", "Not valid JSON."));
    }
    let entries: Vec<InitialValueIn> = serde_json::from_slice(text).map_err(|_| invalid())?;
    InitialValues::of(entries).map(|v| v.0).ok_or_else(invalid)
}

#[utoipa::path(get, path = "/api/v4/documents/{document_id}/", tag = "documents",
    params(("document_id" = i64, Path)), responses((status = 200, body = DocumentOut), (status = 404, body = ErrorOut)))]
async fn get_document(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
) -> ApiResult<Json<DocumentOut>> {
    app.run(user, move |s| {
        Ok(Json(DocumentOut::from(&s.document(DocumentId(id))?)))
    })
    .await
}

#[utoipa::path(patch, path = "/api/v4/documents/{document_id}/", tag = "documents", request_body = DocumentPatchIn,
    params(("document_id" = i64, Path)), responses((status = 200, body = DocumentOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn patch_document(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    JsonBody(DocumentPatchIn { label }): JsonBody<DocumentPatchIn>,
) -> ApiResult<Json<DocumentOut>> {
    app.run(user, move |s| {
        let d = match label {
            Some(label) => s.update_document(DocumentId(id), &label)?,
            None => s.document(DocumentId(id))?,
        };
        Ok(Json(DocumentOut::from(&d)))
    })
    .await
}

#[utoipa::path(delete, path = "/api/v4/documents/{document_id}/", tag = "documents",
    params(("document_id" = i64, Path)), responses((status = 204), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn delete_document(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
) -> ApiResult<StatusCode> {
    app.run(user, move |s| {
        Ok(s.delete_document(DocumentId(id))
            .map(|()| StatusCode::NO_CONTENT)?)
    })
    .await
}

#[utoipa::path(post, path = "/api/v4/documents/{document_id}/type/change/", tag = "documents", request_body = DocumentTypeChangeIn,
    params(("document_id" = i64, Path)), responses((status = 200, body = DocumentOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn change_document_type(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    JsonBody(body): JsonBody<DocumentTypeChangeIn>,
) -> ApiResult<Json<DocumentOut>> {
    let new_type = body.document_type_id.0;
    app.run(user, move |s| {
        let d = s.change_document_type(DocumentId(id), DocumentTypeId(new_type))?;
        Ok(Json(DocumentOut::from(&d)))
    })
    .await
}

// ----- document metadata (spec 4.2) ------------------------------------------------------

/// The past of a document's metadata (`at` on its list, and its history).
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // The OpenAPI description of what `ListQuery::params` reads.
struct AtParams {
    /// The values the document had at this time (RFC 3339, e.g. `2026-03-01T12:00:00Z`),
    /// from its history, instead of its values now: each item is then the metadata type with
    /// the value it had (`metadata_type`, `value`, `since`, `event_id`). Only the types whose
    /// values the caller may view now.
    #[param(format = DateTime)]
    at: Option<String>,
}

/// The filter of a document's value history.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // The OpenAPI description of what `ListQuery::params` reads.
struct HistoryParams {
    /// Only the changes of this metadata type's value.
    #[param(minimum = 1)]
    metadata_type_id: Option<i64>,
}

/// The time of `at`, when the request gives one.
fn at_param(q: &ListQuery) -> ApiResult<Option<chrono::DateTime<chrono::Utc>>> {
    q.params
        .get("at")
        .map(|at| {
            chrono::DateTime::parse_from_rfc3339(at)
                .map(|t| t.with_timezone(&chrono::Utc))
                .map_err(|_| {
                    ApiError::field(
                        "at",
                        "Datetime has wrong format. Use RFC 3339, e.g. 2026-03-01T12:00:00Z.",
                    )
                })
        })
        .transpose()
}

#[utoipa::path(get, path = "/api/v4/documents/{document_id}/metadata/", tag = "metadata",
    params(("document_id" = i64, Path), crate::page::PageParams, AtParams),
    responses((status = 200, body = PageOut, description = "The document's values now, or with `at` the values it had then (items of `PastValueOut`)"), (status = 400, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn list_document_metadata(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    Query(q): Query<HashMap<String, String>>,
    uri: Uri,
) -> ApiResult<Response> {
    let q = ListQuery::parse(q)?;
    if let Some(at) = at_param(&q)? {
        return app
            .run(user, move |s| {
                let values = s.metadata_at(DocumentId(id), at)?;
                q.page(
                    &uri,
                    docmeta_core::Page::of(values, q.request()),
                    PastValueOut::from,
                )
            })
            .await
            .map(IntoResponse::into_response);
    }
    // A document in the core's read cache is answered here, with no blocking thread: with
    // the bytes sent before for the same target and what the core says is the same page
    // (`answers`), or else made from the cached copy.
    let session = app.session(user);
    let target = uri.path_and_query().map_or(uri.path(), |p| p.as_str());
    if let Some(version) = session.document_metadata_version_if_cached(DocumentId(id))
        && let Some(bytes) = app.metadata_answers.get(&version?, target)
    {
        return Ok(json_answer(bytes));
    }
    if let Some(cached) = session.document_metadata_if_cached(DocumentId(id), q.request()) {
        let (version, page) = cached?;
        let bytes = Json(q.page(&uri, page, DocumentMetadataOut::from)?).to_bytes()?;
        app.metadata_answers.keep(version, target, bytes.clone());
        return Ok(json_answer(bytes));
    }
    app.run(user, move |s| {
        let page = s.document_metadata(DocumentId(id), q.request())?;
        q.page(&uri, page, DocumentMetadataOut::from)
    })
    .await
    .map(IntoResponse::into_response)
}

/// Every change of the document's values, newest first: who changed what, when, from what to
/// what. A change of a type whose values the caller may not view now has `before` and `after`
/// `null` and `hidden` set.
#[utoipa::path(get, path = "/api/v4/documents/{document_id}/metadata/history/", tag = "metadata",
    params(("document_id" = i64, Path), crate::page::PageParams, HistoryParams),
    responses((status = 200, body = ValueChangePageOut), (status = 400, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn document_metadata_history(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    Query(q): Query<HashMap<String, String>>,
    uri: Uri,
) -> ApiResult<crate::page::Page<ValueChangeOut>> {
    let q = ListQuery::parse(q)?;
    let metadata_type = q
        .params
        .get("metadata_type_id")
        .map(|t| {
            t.parse::<i64>()
                .ok()
                .filter(|t| *t >= 1)
                .map(MetadataTypeId)
                .ok_or_else(|| ApiError::field("metadata_type_id", "A valid integer is required."))
        })
        .transpose()?;
    app.run(user, move |s| {
        let page = s.history(DocumentId(id), metadata_type, q.request())?;
        q.page(&uri, page, ValueChangeOut::from)
    })
    .await
}

#[utoipa::path(post, path = "/api/v4/documents/{document_id}/metadata/", tag = "metadata", request_body = DocumentMetadataIn,
    params(("document_id" = i64, Path)), responses((status = 201, body = DocumentMetadataOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn add_document_metadata(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    JsonBody(body): JsonBody<DocumentMetadataIn>,
) -> ApiResult<(StatusCode, Json<DocumentMetadataOut>)> {
    let mt = body.metadata_type_id.0;
    let value = body.value.unwrap_or_default();
    app.run(user, move |s| {
        let v = s.add_document_metadata(DocumentId(id), MetadataTypeId(mt), &value)?;
        Ok((StatusCode::CREATED, Json(DocumentMetadataOut::from(&v))))
    })
    .await
}

#[utoipa::path(get, path = "/api/v4/documents/{document_id}/metadata/{metadata_id}/", tag = "metadata",
    params(("document_id" = i64, Path), ("metadata_id" = i64, Path)), responses((status = 200, body = DocumentMetadataOut), (status = 404, body = ErrorOut)))]
async fn get_document_metadata(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids((doc, id)): Ids<(i64, i64)>,
) -> ApiResult<Json<DocumentMetadataOut>> {
    app.run(user, move |s| {
        let v = s.metadata_value(DocumentId(doc), DocumentMetadataId(id))?;
        Ok(Json(DocumentMetadataOut::from(v)))
    })
    .await
}

/// Sets value `id` of document `doc`; a PUT names the value's `metadata_type`, which must be
/// its own.
async fn edit_value(
    app: AppState,
    user: docmeta_core::UserId,
    (doc, id): (i64, i64),
    value: String,
    metadata_type: Option<i64>,
) -> ApiResult<Json<DocumentMetadataOut>> {
    app.run(user, move |s| {
        // Only PUT names a type: core refuses another type than the value's.
        Ok(Json(DocumentMetadataOut::from(s.edit_document_metadata(
            DocumentId(doc),
            DocumentMetadataId(id),
            &value,
            metadata_type.map(MetadataTypeId),
        )?)))
    })
    .await
}

#[utoipa::path(patch, path = "/api/v4/documents/{document_id}/metadata/{metadata_id}/", tag = "metadata", request_body = DocumentMetadataPatchIn,
    params(("document_id" = i64, Path), ("metadata_id" = i64, Path)), responses((status = 200, body = DocumentMetadataOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn patch_document_metadata(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids((doc, id)): Ids<(i64, i64)>,
    JsonBody(body): JsonBody<DocumentMetadataPatchIn>,
) -> ApiResult<Json<DocumentMetadataOut>> {
    let value = body.value.unwrap_or_default();
    edit_value(app, user, (doc, id), value, None).await
}

#[utoipa::path(put, path = "/api/v4/documents/{document_id}/metadata/{metadata_id}/", tag = "metadata", request_body = DocumentMetadataPutIn,
    params(("document_id" = i64, Path), ("metadata_id" = i64, Path)), responses((status = 200, body = DocumentMetadataOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn put_document_metadata(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids((doc, id)): Ids<(i64, i64)>,
    JsonBody(body): JsonBody<DocumentMetadataPutIn>,
) -> ApiResult<Json<DocumentMetadataOut>> {
    let metadata_type = body.metadata_type_id.0;
    edit_value(app, user, (doc, id), body.value, Some(metadata_type)).await
}

#[utoipa::path(delete, path = "/api/v4/documents/{document_id}/metadata/{metadata_id}/", tag = "metadata",
    params(("document_id" = i64, Path), ("metadata_id" = i64, Path)), responses((status = 204), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn delete_document_metadata(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids((doc, id)): Ids<(i64, i64)>,
) -> ApiResult<StatusCode> {
    app.run(user, move |s| {
        Ok(
            s.remove_document_metadata(DocumentId(doc), DocumentMetadataId(id))
                .map(|()| StatusCode::NO_CONTENT)?,
        )
    })
    .await
}

/// The lookup choices of a metadata type for one document.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct LookupOut {
    pub document_id: i64,
    pub metadata_type_id: i64,
    /// The rendered choices, in order; `null` when the type has no lookup (any value goes).
    pub choices: Option<Vec<String>>,
}

#[utoipa::path(get, path = "/api/v4/documents/{document_id}/metadata/{metadata_type_id}/lookup/", tag = "documents",
    description = "The choices of the metadata type's lookup rendered for this document (spec 2.7), for a drop-down. The type must be associated with the document's type and visible to the caller.",
    params(("document_id" = i64, Path), ("metadata_type_id" = i64, Path)),
    responses((status = 200, body = LookupOut), (status = 404, body = ErrorOut)))]
async fn document_lookup(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids((doc, mt)): Ids<(i64, i64)>,
) -> ApiResult<Json<LookupOut>> {
    app.run(user, move |s| {
        let choices = s.document_lookup_choices(DocumentId(doc), MetadataTypeId(mt))?;
        Ok(Json(LookupOut {
            document_id: doc,
            metadata_type_id: mt,
            choices,
        }))
    })
    .await
}
