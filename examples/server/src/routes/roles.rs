//! Roles, their groups and their global permissions (api.md).

use std::collections::HashMap;

use crate::body::Json;
use axum::extract::{Query, State};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use docmeta_core::{GroupId, RoleId, UserId};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::body::JsonBody;
use crate::body::fields::PermissionKey;
use crate::dto::*;
use crate::error::ApiResult;
use crate::page::ListQuery;
use crate::requests::{GroupIdIn, PermissionIn, RoleIn, RolePatchIn};
use crate::state::{AppState, CurrentUser, Ids};

pub fn register(router: OpenApiRouter<AppState>) -> OpenApiRouter<AppState> {
    router
        .routes(routes!(list_roles, create_role))
        .routes(routes!(get_role, patch_role, delete_role))
        .routes(routes!(list_role_groups))
        .routes(routes!(role_add_group))
        .routes(routes!(role_remove_group))
        .routes(routes!(list_role_permissions))
        .routes(routes!(role_add_permission))
        .routes(routes!(role_remove_permission))
}

#[utoipa::path(get, path = "/api/v4/roles/", tag = "permissions",
    params(crate::page::PageParams, ("ordering" = Option<String>, Query, description = "label or id")),
    responses((status = 200, body = PageOut)))]
async fn list_roles(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Query(q): Query<HashMap<String, String>>,
    uri: Uri,
) -> ApiResult<Response> {
    let q = ListQuery::parse(q)?;
    app.run(user, move |s| {
        q.respond(
            &uri,
            s.roles()?,
            &[
                ("label", |a, b| a.label.cmp(&b.label)),
                ("id", |a, b| a.id.cmp(&b.id)),
            ],
            |r| RoleOut::from(&r),
        )
    })
    .await
    .map(IntoResponse::into_response)
}

#[utoipa::path(post, path = "/api/v4/roles/", tag = "permissions", request_body = RoleIn,
    responses((status = 201, body = RoleOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut)))]
async fn create_role(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    JsonBody(RoleIn { label }): JsonBody<RoleIn>,
) -> ApiResult<(StatusCode, Json<RoleOut>)> {
    app.run(user, move |s| {
        let r = s.create_role(&label)?;
        Ok((StatusCode::CREATED, Json(RoleOut::from(&r))))
    })
    .await
}

#[utoipa::path(get, path = "/api/v4/roles/{role_id}/", tag = "permissions",
    params(("role_id" = i64, Path)), responses((status = 200, body = RoleOut), (status = 404, body = ErrorOut)))]
async fn get_role(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
) -> ApiResult<Json<RoleOut>> {
    app.run(user, move |s| Ok(Json(RoleOut::from(&s.role(RoleId(id))?))))
        .await
}

#[utoipa::path(patch, path = "/api/v4/roles/{role_id}/", tag = "permissions", request_body = RolePatchIn,
    params(("role_id" = i64, Path)), responses((status = 200, body = RoleOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn patch_role(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    JsonBody(RolePatchIn { label }): JsonBody<RolePatchIn>,
) -> ApiResult<Json<RoleOut>> {
    app.run(user, move |s| {
        let r = match label {
            Some(label) => s.rename_role(RoleId(id), &label)?,
            None => s.role(RoleId(id))?,
        };
        Ok(Json(RoleOut::from(&r)))
    })
    .await
}

#[utoipa::path(delete, path = "/api/v4/roles/{role_id}/", tag = "permissions",
    params(("role_id" = i64, Path)), responses((status = 204), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn delete_role(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
) -> ApiResult<StatusCode> {
    app.run(user, move |s| {
        Ok(s.delete_role(RoleId(id)).map(|()| StatusCode::NO_CONTENT)?)
    })
    .await
}

#[utoipa::path(get, path = "/api/v4/roles/{role_id}/groups/", tag = "permissions",
    params(("role_id" = i64, Path), crate::page::PageParams),
    responses((status = 200, body = PageOut), (status = 404, body = ErrorOut)))]
async fn list_role_groups(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    Query(q): Query<HashMap<String, String>>,
    uri: Uri,
) -> ApiResult<Response> {
    let q = ListQuery::parse(q)?;
    app.run(user, move |s| {
        let page = s.role_groups(RoleId(id), q.request())?;
        Ok(q.page(&uri, page, |g| GroupOut::from(&g))?.into_response())
    })
    .await
}

async fn role_group(
    app: AppState,
    user: UserId,
    role: i64,
    body: GroupIdIn,
    assigned: bool,
) -> ApiResult<Json<RoleOut>> {
    let group = body.group_id.0;
    app.run(user, move |s| {
        let r = s.set_role_group(RoleId(role), GroupId(group), assigned)?;
        Ok(Json(RoleOut::from(&r)))
    })
    .await
}

#[utoipa::path(post, path = "/api/v4/roles/{role_id}/groups/add/", tag = "permissions", request_body = GroupIdIn,
    params(("role_id" = i64, Path)), responses((status = 200, body = RoleOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn role_add_group(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    JsonBody(body): JsonBody<GroupIdIn>,
) -> ApiResult<Json<RoleOut>> {
    role_group(app, user, id, body, true).await
}

#[utoipa::path(post, path = "/api/v4/roles/{role_id}/groups/remove/", tag = "permissions", request_body = GroupIdIn,
    params(("role_id" = i64, Path)), responses((status = 200, body = RoleOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn role_remove_group(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    JsonBody(body): JsonBody<GroupIdIn>,
) -> ApiResult<Json<RoleOut>> {
    role_group(app, user, id, body, false).await
}

#[utoipa::path(get, path = "/api/v4/roles/{role_id}/permissions/", tag = "permissions",
    params(("role_id" = i64, Path), crate::page::PageParams),
    responses((status = 200, body = PageOut, description = "The role's global permissions"), (status = 404, body = ErrorOut)))]
async fn list_role_permissions(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    Query(q): Query<HashMap<String, String>>,
    uri: Uri,
) -> ApiResult<Response> {
    let q = ListQuery::parse(q)?;
    app.run(user, move |s| {
        let page = s.role_permissions(RoleId(id), q.request())?;
        Ok(q.page(&uri, page, PermissionOut::from)?.into_response())
    })
    .await
}

async fn role_permission(
    app: AppState,
    user: UserId,
    role: i64,
    PermissionIn {
        permission: PermissionKey(permission),
    }: PermissionIn,
    granted: bool,
) -> ApiResult<Json<Vec<PermissionOut>>> {
    app.run(user, move |s| {
        let permissions = s.set_role_permission(RoleId(role), permission, granted)?;
        Ok(Json(
            permissions.into_iter().map(PermissionOut::from).collect(),
        ))
    })
    .await
}

#[utoipa::path(post, path = "/api/v4/roles/{role_id}/permissions/add/", tag = "permissions", request_body = PermissionIn,
    params(("role_id" = i64, Path)), responses((status = 200, body = [PermissionOut]), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn role_add_permission(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    JsonBody(body): JsonBody<PermissionIn>,
) -> ApiResult<Json<Vec<PermissionOut>>> {
    role_permission(app, user, id, body, true).await
}

#[utoipa::path(post, path = "/api/v4/roles/{role_id}/permissions/remove/", tag = "permissions", request_body = PermissionIn,
    params(("role_id" = i64, Path)), responses((status = 200, body = [PermissionOut]), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn role_remove_permission(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    JsonBody(body): JsonBody<PermissionIn>,
) -> ApiResult<Json<Vec<PermissionOut>>> {
    role_permission(app, user, id, body, false).await
}
