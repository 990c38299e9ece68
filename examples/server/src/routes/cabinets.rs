//! Cabinets and their documents (api.md).

use std::collections::HashMap;

use crate::body::Json;
use axum::extract::{Query, State};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use docmeta_core::{CabinetId, DocumentId, UserId};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::body::JsonBody;
use crate::dto::*;
use crate::error::ApiResult;
use crate::page::ListQuery;
use crate::requests::{CabinetIn, CabinetPatchIn, DocumentIdIn};
use crate::state::{AppState, CurrentUser, Ids};

pub fn register(router: OpenApiRouter<AppState>) -> OpenApiRouter<AppState> {
    router
        .routes(routes!(list_cabinets, create_cabinet))
        .routes(routes!(get_cabinet, patch_cabinet, delete_cabinet))
        .routes(routes!(list_cabinet_documents))
        .routes(routes!(cabinet_add_document))
        .routes(routes!(cabinet_remove_document))
}

#[utoipa::path(get, path = "/api/v4/cabinets/", tag = "cabinets",
    params(crate::page::PageParams, ("ordering" = Option<String>, Query, description = "label or id")),
    responses((status = 200, body = PageOut)))]
async fn list_cabinets(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Query(q): Query<HashMap<String, String>>,
    uri: Uri,
) -> ApiResult<Response> {
    let q = ListQuery::parse(q)?;
    app.run(user, move |s| {
        q.respond(
            &uri,
            s.cabinets()?,
            &[
                ("label", |a, b| a.label.cmp(&b.label)),
                ("id", |a, b| a.id.cmp(&b.id)),
            ],
            |x| CabinetOut::from(&x),
        )
    })
    .await
    .map(IntoResponse::into_response)
}

#[utoipa::path(post, path = "/api/v4/cabinets/", tag = "cabinets", request_body = CabinetIn,
    responses((status = 201, body = CabinetOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn create_cabinet(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    JsonBody(body): JsonBody<CabinetIn>,
) -> ApiResult<(StatusCode, Json<CabinetOut>)> {
    let label = body.label;
    let parent = body.parent_id.map(|p| CabinetId(p.0));
    app.run(user, move |s| {
        Ok((
            StatusCode::CREATED,
            Json((&s.create_cabinet(&label, parent)?).into()),
        ))
    })
    .await
}

#[utoipa::path(get, path = "/api/v4/cabinets/{cabinet_id}/", tag = "cabinets",
    params(("cabinet_id" = i64, Path)), responses((status = 200, body = CabinetOut), (status = 404, body = ErrorOut)))]
async fn get_cabinet(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
) -> ApiResult<Json<CabinetOut>> {
    app.run(user, move |s| Ok(Json((&s.cabinet(CabinetId(id))?).into())))
        .await
}

#[utoipa::path(patch, path = "/api/v4/cabinets/{cabinet_id}/", tag = "cabinets", request_body = CabinetPatchIn,
    params(("cabinet_id" = i64, Path)), responses((status = 200, body = CabinetOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn patch_cabinet(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    JsonBody(CabinetPatchIn { label }): JsonBody<CabinetPatchIn>,
) -> ApiResult<Json<CabinetOut>> {
    app.run(user, move |s| {
        let c = match label {
            Some(label) => s.rename_cabinet(CabinetId(id), &label)?,
            None => s.cabinet(CabinetId(id))?,
        };
        Ok(Json((&c).into()))
    })
    .await
}

#[utoipa::path(delete, path = "/api/v4/cabinets/{cabinet_id}/", tag = "cabinets",
    params(("cabinet_id" = i64, Path)), responses((status = 204), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn delete_cabinet(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
) -> ApiResult<StatusCode> {
    app.run(user, move |s| {
        Ok(s.delete_cabinet(CabinetId(id))
            .map(|()| StatusCode::NO_CONTENT)?)
    })
    .await
}

#[utoipa::path(get, path = "/api/v4/cabinets/{cabinet_id}/documents/", tag = "cabinets",
    params(("cabinet_id" = i64, Path), crate::page::PageParams),
    responses((status = 200, body = PageOut), (status = 404, body = ErrorOut)))]
async fn list_cabinet_documents(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    Query(q): Query<HashMap<String, String>>,
    uri: Uri,
) -> ApiResult<Response> {
    let q = ListQuery::parse(q)?;
    app.run(user, move |s| {
        let page = s.cabinet_documents(CabinetId(id), q.request())?;
        Ok(q.page(&uri, page, |d| DocumentOut::from(&d))?
            .into_response())
    })
    .await
}

async fn cabinet_document(
    app: AppState,
    user: UserId,
    cabinet: i64,
    body: DocumentIdIn,
    member: bool,
) -> ApiResult<Json<CabinetOut>> {
    let document = body.document_id.0;
    app.run(user, move |s| {
        s.set_cabinet_document(CabinetId(cabinet), DocumentId(document), member)?;
        Ok(Json((&s.cabinet(CabinetId(cabinet))?).into()))
    })
    .await
}

#[utoipa::path(post, path = "/api/v4/cabinets/{cabinet_id}/documents/add/", tag = "cabinets", request_body = DocumentIdIn,
    params(("cabinet_id" = i64, Path)), responses((status = 200, body = CabinetOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn cabinet_add_document(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    JsonBody(body): JsonBody<DocumentIdIn>,
) -> ApiResult<Json<CabinetOut>> {
    cabinet_document(app, user, id, body, true).await
}

#[utoipa::path(post, path = "/api/v4/cabinets/{cabinet_id}/documents/remove/", tag = "cabinets", request_body = DocumentIdIn,
    params(("cabinet_id" = i64, Path)), responses((status = 200, body = CabinetOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn cabinet_remove_document(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    JsonBody(body): JsonBody<DocumentIdIn>,
) -> ApiResult<Json<CabinetOut>> {
    cabinet_document(app, user, id, body, false).await
}
