//! Object ACLs (spec 4.4) and the permissions an ACL on a kind of object may hold.

use std::collections::HashMap;

use crate::body::Json;
use axum::extract::{Query, State};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use docmeta_core::{AclId, ObjectRef, RoleId, UserId};
use serde_json::json;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::body::LaterBody;
use crate::body::fields::PermissionKey;
use crate::dto::*;
use crate::error::{ApiError, ApiResult};
use crate::page::ListQuery;
use crate::requests::{AclIn, PermissionIn};
use crate::state::{AppState, CurrentUser, Ids};

pub fn register(router: OpenApiRouter<AppState>) -> OpenApiRouter<AppState> {
    router
        .routes(routes!(list_acls, create_acl))
        .routes(routes!(get_acl, delete_acl))
        .routes(routes!(acl_add_permission))
        .routes(routes!(acl_remove_permission))
        .routes(routes!(grantable_permissions))
        .routes(routes!(explain))
}

/// The object an ACL path names; an unknown kind is a `404`.
fn object(
    app: &AppState,
    user: UserId,
    app_label: &str,
    model_name: &str,
    id: i64,
) -> ApiResult<ObjectRef> {
    Ok(app.session(user).object_ref(app_label, model_name, id)?)
}

#[utoipa::path(get, path = "/api/v5/objects/{app_label}/{model_name}/{object_id}/acls/", tag = "acls",
    params(("app_label" = String, Path), ("model_name" = String, Path), ("object_id" = i64, Path), crate::page::PageParams),
    responses((status = 200, body = PageOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn list_acls(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids((a, m, id)): Ids<(String, String, i64)>,
    Query(q): Query<HashMap<String, String>>,
    uri: Uri,
) -> ApiResult<Response> {
    let q = ListQuery::parse(q)?;
    let obj = object(&app, user, &a, &m, id)?;
    app.run(user, move |s| {
        let page = s.acls(obj, q.request())?;
        Ok(q.page(&uri, page, |v| AclOut::new(&v, &a, &m))?
            .into_response())
    })
    .await
}

#[utoipa::path(post, path = "/api/v5/objects/{app_label}/{model_name}/{object_id}/acls/", tag = "acls", request_body = AclIn,
    params(("app_label" = String, Path), ("model_name" = String, Path), ("object_id" = i64, Path)),
    responses((status = 201, body = AclOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn create_acl(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids((a, m, id)): Ids<(String, String, i64)>,
    body: LaterBody<AclIn>,
) -> ApiResult<(StatusCode, Json<AclOut>)> {
    let obj = object(&app, user, &a, &m, id)?;
    let role = body.read()?.role_id.0;
    app.run(user, move |s| {
        let v = s.create_acl(obj, RoleId(role))?;
        Ok((StatusCode::CREATED, Json(AclOut::new(&v, &a, &m))))
    })
    .await
}

#[utoipa::path(get, path = "/api/v5/objects/{app_label}/{model_name}/{object_id}/acls/{acl_id}/", tag = "acls",
    params(("app_label" = String, Path), ("model_name" = String, Path), ("object_id" = i64, Path), ("acl_id" = i64, Path)),
    responses((status = 200, body = AclOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn get_acl(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids((a, m, id, acl)): Ids<(String, String, i64, i64)>,
) -> ApiResult<Json<AclOut>> {
    let obj = object(&app, user, &a, &m, id)?;
    app.run(user, move |s| {
        let v = s.acl(obj, AclId(acl))?;
        Ok(Json(AclOut::new(&v, &a, &m)))
    })
    .await
}

#[utoipa::path(delete, path = "/api/v5/objects/{app_label}/{model_name}/{object_id}/acls/{acl_id}/", tag = "acls",
    params(("app_label" = String, Path), ("model_name" = String, Path), ("object_id" = i64, Path), ("acl_id" = i64, Path)),
    responses((status = 204), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn delete_acl(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids((a, m, id, acl)): Ids<(String, String, i64, i64)>,
) -> ApiResult<StatusCode> {
    let obj = object(&app, user, &a, &m, id)?;
    app.run(user, move |s| {
        Ok(s.delete_acl(obj, AclId(acl))
            .map(|()| StatusCode::NO_CONTENT)?)
    })
    .await
}

#[utoipa::path(post, path = "/api/v5/objects/{app_label}/{model_name}/{object_id}/acls/{acl_id}/permissions/add/", tag = "acls", request_body = PermissionIn,
    params(("app_label" = String, Path), ("model_name" = String, Path), ("object_id" = i64, Path), ("acl_id" = i64, Path)),
    responses((status = 200, body = AclOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn acl_add_permission(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids((a, m, id, acl)): Ids<(String, String, i64, i64)>,
    body: LaterBody<PermissionIn>,
) -> ApiResult<Json<AclOut>> {
    let obj = object(&app, user, &a, &m, id)?;
    let PermissionKey(permission) = body.read()?.permission;
    app.run(user, move |s| {
        let v = s.acl_add_permission(obj, AclId(acl), permission)?;
        Ok(Json(AclOut::new(&v, &a, &m)))
    })
    .await
}

#[utoipa::path(post, path = "/api/v5/objects/{app_label}/{model_name}/{object_id}/acls/{acl_id}/permissions/remove/", tag = "acls", request_body = PermissionIn,
    params(("app_label" = String, Path), ("model_name" = String, Path), ("object_id" = i64, Path), ("acl_id" = i64, Path)),
    responses((status = 200, body = AclOut, description = "The updated ACL, or {\"deleted\": true} when its last permission was removed"), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn acl_remove_permission(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids((a, m, id, acl)): Ids<(String, String, i64, i64)>,
    body: LaterBody<PermissionIn>,
) -> ApiResult<Response> {
    let obj = object(&app, user, &a, &m, id)?;
    let PermissionKey(permission) = body.read()?.permission;
    app.run(user, move |s| {
        match s.acl_remove_permission(obj, AclId(acl), permission)? {
            Some(v) => Ok(Json(AclOut::new(&v, &a, &m)).into_response()),
            None => Ok(Json(json!({ "deleted": true })).into_response()),
        }
    })
    .await
}

#[utoipa::path(get, path = "/api/v5/objects/{app_label}/{model_name}/permissions/", tag = "acls",
    params(crate::page::PageParams, ("app_label" = String, Path), ("model_name" = String, Path)),
    responses((status = 200, body = PageOut, description = "The permissions an ACL on this kind of object may hold"), (status = 404, body = ErrorOut)))]
async fn grantable_permissions(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids((a, m)): Ids<(String, String)>,
    Query(q): Query<HashMap<String, String>>,
    uri: Uri,
) -> ApiResult<crate::page::Page<PermissionOut>> {
    let q = ListQuery::parse(q)?;
    let s = app.session(user);
    let kind = s.object_kind(&a, &m)?;
    let all = s
        .grantable_permissions(kind)
        .into_iter()
        .collect::<Vec<_>>();
    q.page(
        &uri,
        docmeta_core::Page::of(all, q.request()),
        PermissionOut::from,
    )
}

/// The query parameters of `explain`, for the OpenAPI document.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // Describes the parameters; never constructed.
struct ExplainParams {
    /// The user asked about (absent: the caller).
    #[param(minimum = 1, maximum = 9_007_199_254_740_991_i64)]
    user_id: Option<i64>,
    /// The permission asked about (a key of `GET /api/v4/permissions/`).
    #[param(value_type = PermissionKey)]
    permission: String,
}

#[utoipa::path(get, path = "/api/v5/objects/{app_label}/{model_name}/{object_id}/explain/", tag = "acls",
    params(("app_label" = String, Path), ("model_name" = String, Path), ("object_id" = i64, Path), ExplainParams),
    responses((status = 200, body = ExplanationOut, description = "Why the user may or may not do the permission on the object (needs `acls.acl_view` on it, unless asking about oneself)"),
        (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn explain(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids((a, m, id)): Ids<(String, String, i64)>,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<ExplanationOut>> {
    let about = match q.get("user_id") {
        None => user,
        Some(v) => UserId(
            v.parse()
                .map_err(|_| ApiError::field("user_id", "A valid integer is required."))?,
        ),
    };
    let key = q
        .get("permission")
        .ok_or_else(|| ApiError::field("permission", "This field is required."))?;
    let permission = docmeta_core::Permission::from_key(key)
        .map_err(|_| ApiError::field("permission", format!("Unknown permission \"{key}\".")))?;
    let obj = object(&app, user, &a, &m, id)?;
    let kinds = app.kinds();
    app.run(user, move |s| {
        let e = s.explain(about, permission, obj)?;
        Ok(Json(ExplanationOut::new(&e, &kinds)))
    })
    .await
}
