//! Users (api.md).

use std::collections::HashMap;

use crate::body::Json;
use axum::extract::{Query, State};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use docmeta_core::{UserId, UserUpdate};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::body::JsonBody;
use crate::dto::*;
use crate::error::ApiResult;
use crate::page::ListQuery;
use crate::requests::{UserIn, UserPatchIn};
use crate::state::{AppState, CurrentUser, Ids};

pub fn register(router: OpenApiRouter<AppState>) -> OpenApiRouter<AppState> {
    router
        .routes(routes!(list_users, create_user))
        .routes(routes!(current_user))
        .routes(routes!(get_user, patch_user, delete_user))
}

#[utoipa::path(get, path = "/api/v4/users/", tag = "users",
    params(crate::page::PageParams, ("ordering" = Option<String>, Query, description = "username or id")),
    responses((status = 200, body = PageOut)))]
async fn list_users(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Query(q): Query<HashMap<String, String>>,
    uri: Uri,
) -> ApiResult<Response> {
    let q = ListQuery::parse(q)?;
    app.run(user, move |s| {
        q.respond(
            &uri,
            s.users()?,
            &[
                ("username", |a, b| a.username.cmp(&b.username)),
                ("id", |a, b| a.id.cmp(&b.id)),
            ],
            |x| UserOut::from(&x),
        )
    })
    .await
    .map(IntoResponse::into_response)
}

#[utoipa::path(post, path = "/api/v4/users/", tag = "users", request_body = UserIn,
    responses((status = 201, body = UserOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut)))]
async fn create_user(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    JsonBody(body): JsonBody<UserIn>,
) -> ApiResult<(StatusCode, Json<UserOut>)> {
    let (username, password) = (body.username, body.password);
    let superuser = body.is_superuser.is_some_and(|f| f.0);
    app.run(user, move |s| {
        Ok((
            StatusCode::CREATED,
            Json((&s.create_user(&username, &password, superuser)?).into()),
        ))
    })
    .await
}

#[utoipa::path(get, path = "/api/v4/users/current/", tag = "users", responses((status = 200, body = UserOut)))]
async fn current_user(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
) -> ApiResult<Json<UserOut>> {
    app.run(user, move |s| Ok(Json((&s.user(user)?).into())))
        .await
}

#[utoipa::path(get, path = "/api/v4/users/{user_id}/", tag = "users",
    params(("user_id" = i64, Path)), responses((status = 200, body = UserOut), (status = 404, body = ErrorOut)))]
async fn get_user(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
) -> ApiResult<Json<UserOut>> {
    app.run(user, move |s| Ok(Json((&s.user(UserId(id))?).into())))
        .await
}

#[utoipa::path(patch, path = "/api/v4/users/{user_id}/", tag = "users", request_body = UserPatchIn,
    params(("user_id" = i64, Path)), responses((status = 200, body = UserOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn patch_user(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    JsonBody(body): JsonBody<UserPatchIn>,
) -> ApiResult<Json<UserOut>> {
    let update = UserUpdate {
        username: body.username,
        password: body.password,
        is_superuser: body.is_superuser.map(|f| f.0),
        is_active: body.is_active.map(|f| f.0),
    };
    app.run(user, move |s| {
        let id = UserId(id);
        // One core call: every field is checked before any is written.
        let u = if update == UserUpdate::default() {
            s.user(id)?
        } else {
            s.update_user(id, update)?
        };
        Ok(Json((&u).into()))
    })
    .await
}

#[utoipa::path(delete, path = "/api/v4/users/{user_id}/", tag = "users",
    params(("user_id" = i64, Path)), responses((status = 204), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn delete_user(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
) -> ApiResult<StatusCode> {
    app.run(user, move |s| {
        Ok(s.delete_user(UserId(id)).map(|()| StatusCode::NO_CONTENT)?)
    })
    .await
}
