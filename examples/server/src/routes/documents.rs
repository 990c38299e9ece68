//! Documents, their metadata (spec 4.2) and events.

use std::collections::HashMap;

use axum::Json;
use axum::extract::{Query, State};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use docmeta_core::{
    Docmeta, Document, DocumentId, DocumentMetadataId, DocumentTypeId, Event, EventQuery,
    MetadataTypeId, Session,
};

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::CurrentUser;
use crate::body::Body;
use crate::dto::*;
use crate::error::{ApiError, ApiResult};
use crate::page::ListQuery;
use crate::state::{AppState, Ids};

pub fn register(router: OpenApiRouter<AppState>) -> OpenApiRouter<AppState> {
    router
        .routes(routes!(list_documents, create_document))
        .routes(routes!(get_document, patch_document, delete_document))
        .routes(routes!(change_document_type))
        .routes(routes!(list_document_metadata, add_document_metadata))
        .routes(routes!(
            get_document_metadata,
            patch_document_metadata,
            put_document_metadata,
            delete_document_metadata
        ))
        .routes(routes!(list_events))
        .routes(routes!(list_document_events))
}

fn document_out(s: &Session, d: &Document) -> ApiResult<DocumentOut> {
    // The document type of a visible document is shown even without document_type_view.
    let t = s.docmeta().system().document_type(d.document_type_id)?;
    Ok(DocumentOut::new(d, &t))
}

#[utoipa::path(get, path = "/api/v4/documents/", tag = "documents",
    params(("page" = Option<usize>, Query), ("page_size" = Option<usize>, Query), ("document_type_id" = Option<i64>, Query)),
    responses((status = 200, body = PageOut, description = "Documents the caller may view, by id")))]
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
    app.run(move |db| {
        let s = db.session(user);
        let mut ids = s.document_ids(of_type)?;
        if q.ordering.as_deref() == Some("-id") {
            ids.reverse();
        }
        let range = q.range(ids.len())?;
        let mut results = Vec::new();
        for id in &ids[range] {
            // A document deleted since the ids were read is left out, not a 404 of the page.
            if let Some(d) = crate::error::unless_gone(s.document(*id))? {
                results.push(document_out(&s, &d)?);
            }
        }
        Ok(q.body(&uri, ids.len(), results).into_response())
    })
    .await
}

#[utoipa::path(post, path = "/api/v4/documents/", tag = "documents", request_body = DocumentIn,
    responses((status = 201, body = DocumentOut), (status = 400, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn create_document(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    body: Body,
) -> ApiResult<(StatusCode, Json<DocumentOut>)> {
    let document_type = body.id("document_type_id")?;
    let label = body.str("label")?;
    app.run(move |db| {
        let s = db.session(user);
        let d = s.create_document(DocumentTypeId(document_type), &label, &[])?;
        Ok((StatusCode::CREATED, Json(document_out(&s, &d)?)))
    })
    .await
}

#[utoipa::path(get, path = "/api/v4/documents/{document_id}/", tag = "documents",
    params(("document_id" = i64, Path)), responses((status = 200, body = DocumentOut), (status = 404, body = ErrorOut)))]
async fn get_document(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
) -> ApiResult<Json<DocumentOut>> {
    app.run(move |db| {
        let s = db.session(user);
        Ok(Json(document_out(&s, &s.document(DocumentId(id))?)?))
    })
    .await
}

#[utoipa::path(patch, path = "/api/v4/documents/{document_id}/", tag = "documents", request_body = LabelIn,
    params(("document_id" = i64, Path)), responses((status = 200, body = DocumentOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn patch_document(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    body: Body,
) -> ApiResult<Json<DocumentOut>> {
    let label = body.opt_str("label")?;
    app.run(move |db| {
        let s = db.session(user);
        let d = match label {
            Some(label) => s.update_document(DocumentId(id), &label)?,
            None => s.document(DocumentId(id))?,
        };
        Ok(Json(document_out(&s, &d)?))
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
    app.run(move |db| {
        Ok(db
            .session(user)
            .delete_document(DocumentId(id))
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
    body: Body,
) -> ApiResult<Json<DocumentOut>> {
    let new_type = body.id("document_type_id")?;
    app.run(move |db| {
        let s = db.session(user);
        let d = s.change_document_type(DocumentId(id), DocumentTypeId(new_type))?;
        Ok(Json(document_out(&s, &d)?))
    })
    .await
}

// ----- document metadata (spec 4.2) ------------------------------------------------------

/// The document's value `id` with its type, as shown.
fn value_out(
    s: &Session,
    document: DocumentId,
    id: DocumentMetadataId,
) -> ApiResult<DocumentMetadataOut> {
    let (doc, values) = s.document_metadata_details(document)?;
    let (m, t) = values
        .iter()
        .find(|(m, _)| m.id == id)
        .ok_or_else(ApiError::not_found)?;
    Ok(DocumentMetadataOut::new(m, &doc, t))
}

#[utoipa::path(get, path = "/api/v4/documents/{document_id}/metadata/", tag = "metadata",
    params(("document_id" = i64, Path), ("page" = Option<usize>, Query), ("page_size" = Option<usize>, Query)),
    responses((status = 200, body = PageOut), (status = 404, body = ErrorOut)))]
async fn list_document_metadata(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    Query(q): Query<HashMap<String, String>>,
    uri: Uri,
) -> ApiResult<Response> {
    let q = ListQuery::parse(q)?;
    app.run(move |db| {
        let (doc, values) = db.session(user).document_metadata_details(DocumentId(id))?;
        q.respond(&uri, values, &[], |(m, t)| {
            DocumentMetadataOut::new(m, &doc, t)
        })
    })
    .await
    .map(IntoResponse::into_response)
}

#[utoipa::path(post, path = "/api/v4/documents/{document_id}/metadata/", tag = "metadata", request_body = DocumentMetadataIn,
    params(("document_id" = i64, Path)), responses((status = 201, body = DocumentMetadataOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn add_document_metadata(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    body: Body,
) -> ApiResult<(StatusCode, Json<DocumentMetadataOut>)> {
    let mt = body.id("metadata_type_id")?;
    let value = body.opt_str("value")?.unwrap_or_default();
    app.run(move |db| {
        let s = db.session(user);
        let m = s.add_document_metadata(DocumentId(id), MetadataTypeId(mt), &value)?;
        // The caller may add values without viewing them: the stored value is still theirs to
        // see in the answer.
        Ok((
            StatusCode::CREATED,
            Json(value_out(&db.system(), m.document_id, m.id)?),
        ))
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
    app.run(move |db| {
        Ok(Json(value_out(
            &db.session(user),
            DocumentId(doc),
            DocumentMetadataId(id),
        )?))
    })
    .await
}

async fn edit_value(
    app: AppState,
    user: docmeta_core::UserId,
    doc: i64,
    id: i64,
    body: Body,
    put: bool,
) -> ApiResult<Json<DocumentMetadataOut>> {
    let value = if put {
        body.str("value")?
    } else {
        body.opt_str("value")?.unwrap_or_default()
    };
    let metadata_type = if put {
        Some(body.id("metadata_type_id")?)
    } else {
        None
    };
    app.run(move |db| {
        let s = db.session(user);
        let (doc, id) = (DocumentId(doc), DocumentMetadataId(id));
        let m = s.document_metadata(doc, id)?;
        if metadata_type.is_some_and(|t| t != m.metadata_type_id.0) {
            return Err(ApiError::field(
                "metadata_type_id",
                "The metadata type of a value cannot be changed; remove it and add another.",
            ));
        }
        s.edit_document_metadata(doc, id, &value)?;
        Ok(Json(value_out(&s, doc, id)?))
    })
    .await
}

#[utoipa::path(patch, path = "/api/v4/documents/{document_id}/metadata/{metadata_id}/", tag = "metadata", request_body = DocumentMetadataIn,
    params(("document_id" = i64, Path), ("metadata_id" = i64, Path)), responses((status = 200, body = DocumentMetadataOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn patch_document_metadata(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids((doc, id)): Ids<(i64, i64)>,
    body: Body,
) -> ApiResult<Json<DocumentMetadataOut>> {
    edit_value(app, user, doc, id, body, false).await
}

#[utoipa::path(put, path = "/api/v4/documents/{document_id}/metadata/{metadata_id}/", tag = "metadata", request_body = DocumentMetadataIn,
    params(("document_id" = i64, Path), ("metadata_id" = i64, Path)), responses((status = 200, body = DocumentMetadataOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn put_document_metadata(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids((doc, id)): Ids<(i64, i64)>,
    body: Body,
) -> ApiResult<Json<DocumentMetadataOut>> {
    edit_value(app, user, doc, id, body, true).await
}

#[utoipa::path(delete, path = "/api/v4/documents/{document_id}/metadata/{metadata_id}/", tag = "metadata",
    params(("document_id" = i64, Path), ("metadata_id" = i64, Path)), responses((status = 204), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn delete_document_metadata(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids((doc, id)): Ids<(i64, i64)>,
) -> ApiResult<StatusCode> {
    app.run(move |db| {
        Ok(db
            .session(user)
            .remove_document_metadata(DocumentId(doc), DocumentMetadataId(id))
            .map(|()| StatusCode::NO_CONTENT)?)
    })
    .await
}

// ----- events ------------------------------------------------------------------------------

/// Events listed per request, newest first (older ones are reached with `before`).
const EVENT_WINDOW: u32 = 1000;

fn events_page(
    db: &Docmeta,
    s: &Session,
    mut query: EventQuery,
    q: &ListQuery,
    uri: &Uri,
) -> ApiResult<crate::page::Page<EventOut>> {
    if let Some(before) = q.params.get("before") {
        query.before =
            Some(docmeta_core::EventId(before.parse().map_err(|_| {
                ApiError::field("before", "A valid integer is required.")
            })?));
    }
    query.limit = Some(EVENT_WINDOW);
    let events: Vec<Event> = s.events(&query)?;
    let mut names: HashMap<i64, Option<String>> = HashMap::new();
    q.respond(uri, events, &[], |e| {
        let actor = e.actor.and_then(|a| {
            let name = names
                .entry(a.0)
                .or_insert_with(|| db.username(a).ok().flatten())
                .clone()?;
            Some(ActorOut {
                id: a.0,
                username: name,
            })
        });
        EventOut::new(e, actor)
    })
}

#[utoipa::path(get, path = "/api/v4/events/", tag = "events",
    params(("page" = Option<usize>, Query), ("page_size" = Option<usize>, Query), ("before" = Option<i64>, Query, description = "Only events older than this id")),
    responses((status = 200, body = PageOut, description = "Events whose target the caller may view, newest first (1,000 per window)")))]
async fn list_events(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Query(q): Query<HashMap<String, String>>,
    uri: Uri,
) -> ApiResult<Response> {
    let q = ListQuery::parse(q)?;
    app.run(move |db| events_page(db, &db.session(user), EventQuery::default(), &q, &uri))
        .await
        .map(IntoResponse::into_response)
}

#[utoipa::path(get, path = "/api/v4/documents/{document_id}/events/", tag = "events",
    params(("document_id" = i64, Path), ("page" = Option<usize>, Query), ("page_size" = Option<usize>, Query)),
    responses((status = 200, body = PageOut), (status = 404, body = ErrorOut)))]
async fn list_document_events(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    Query(q): Query<HashMap<String, String>>,
    uri: Uri,
) -> ApiResult<Response> {
    let q = ListQuery::parse(q)?;
    app.run(move |db| {
        let s = db.session(user);
        s.document(DocumentId(id))?;
        let query = EventQuery {
            object: Some(("documents.document".into(), id)),
            ..Default::default()
        };
        events_page(db, &s, query, &q, &uri)
    })
    .await
    .map(IntoResponse::into_response)
}
