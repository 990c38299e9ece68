//! Groups and their members (api.md).

use std::collections::HashMap;

use crate::body::Json;
use axum::extract::{Query, State};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use docmeta_core::{GroupId, UserId};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::body::JsonBody;
use crate::dto::*;
use crate::error::ApiResult;
use crate::page::ListQuery;
use crate::requests::{GroupIn, GroupPatchIn, UserIdIn};
use crate::state::{AppState, CurrentUser, Ids};

pub fn register(router: OpenApiRouter<AppState>) -> OpenApiRouter<AppState> {
    router
        .routes(routes!(list_groups, create_group))
        .routes(routes!(get_group, patch_group, delete_group))
        .routes(routes!(list_group_users))
        .routes(routes!(group_add_user))
        .routes(routes!(group_remove_user))
}

#[utoipa::path(get, path = "/api/v4/groups/", tag = "users",
    params(crate::page::PageParams, ("ordering" = Option<String>, Query, description = "name or id")),
    responses((status = 200, body = PageOut)))]
async fn list_groups(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Query(q): Query<HashMap<String, String>>,
    uri: Uri,
) -> ApiResult<Response> {
    let q = ListQuery::parse(q)?;
    app.run(user, move |s| {
        q.respond(
            &uri,
            s.groups()?,
            &[
                ("name", |a, b| a.name.cmp(&b.name)),
                ("id", |a, b| a.id.cmp(&b.id)),
            ],
            |g| GroupOut::from(&g),
        )
    })
    .await
    .map(IntoResponse::into_response)
}

#[utoipa::path(post, path = "/api/v4/groups/", tag = "users", request_body = GroupIn,
    responses((status = 201, body = GroupOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut)))]
async fn create_group(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    JsonBody(GroupIn { name }): JsonBody<GroupIn>,
) -> ApiResult<(StatusCode, Json<GroupOut>)> {
    app.run(user, move |s| {
        let g = s.create_group(&name)?;
        Ok((StatusCode::CREATED, Json(GroupOut::from(&g))))
    })
    .await
}

#[utoipa::path(get, path = "/api/v4/groups/{group_id}/", tag = "users",
    params(("group_id" = i64, Path)), responses((status = 200, body = GroupOut), (status = 404, body = ErrorOut)))]
async fn get_group(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
) -> ApiResult<Json<GroupOut>> {
    app.run(user, move |s| {
        Ok(Json(GroupOut::from(&s.group(GroupId(id))?)))
    })
    .await
}

#[utoipa::path(patch, path = "/api/v4/groups/{group_id}/", tag = "users", request_body = GroupPatchIn,
    params(("group_id" = i64, Path)), responses((status = 200, body = GroupOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn patch_group(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    JsonBody(GroupPatchIn { name }): JsonBody<GroupPatchIn>,
) -> ApiResult<Json<GroupOut>> {
    app.run(user, move |s| {
        let g = match name {
            Some(name) => s.rename_group(GroupId(id), &name)?,
            None => s.group(GroupId(id))?,
        };
        Ok(Json(GroupOut::from(&g)))
    })
    .await
}

#[utoipa::path(delete, path = "/api/v4/groups/{group_id}/", tag = "users",
    params(("group_id" = i64, Path)), responses((status = 204), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn delete_group(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
) -> ApiResult<StatusCode> {
    app.run(user, move |s| {
        Ok(s.delete_group(GroupId(id))
            .map(|()| StatusCode::NO_CONTENT)?)
    })
    .await
}

#[utoipa::path(get, path = "/api/v4/groups/{group_id}/users/", tag = "users",
    params(("group_id" = i64, Path), crate::page::PageParams),
    responses((status = 200, body = PageOut), (status = 404, body = ErrorOut)))]
async fn list_group_users(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    Query(q): Query<HashMap<String, String>>,
    uri: Uri,
) -> ApiResult<Response> {
    let q = ListQuery::parse(q)?;
    app.run(user, move |s| {
        let page = s.group_members(GroupId(id), q.request())?;
        Ok(q.page(&uri, page, |u| UserOut::from(&u))?.into_response())
    })
    .await
}

async fn membership(
    app: AppState,
    user: UserId,
    group: i64,
    body: UserIdIn,
    member: bool,
) -> ApiResult<Json<GroupOut>> {
    let target = body.user_id.0;
    app.run(user, move |s| {
        let g = s.set_group_member(GroupId(group), UserId(target), member)?;
        Ok(Json(GroupOut::from(&g)))
    })
    .await
}

#[utoipa::path(post, path = "/api/v4/groups/{group_id}/users/add/", tag = "users", request_body = UserIdIn,
    params(("group_id" = i64, Path)), responses((status = 200, body = GroupOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn group_add_user(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    JsonBody(body): JsonBody<UserIdIn>,
) -> ApiResult<Json<GroupOut>> {
    membership(app, user, id, body, true).await
}

#[utoipa::path(post, path = "/api/v4/groups/{group_id}/users/remove/", tag = "users", request_body = UserIdIn,
    params(("group_id" = i64, Path)), responses((status = 200, body = GroupOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn group_remove_user(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    JsonBody(body): JsonBody<UserIdIn>,
) -> ApiResult<Json<GroupOut>> {
    membership(app, user, id, body, false).await
}
