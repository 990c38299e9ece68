//! Object ACLs (spec 4.4), users, groups, roles, permissions and cabinets (api.md).

use std::collections::HashMap;

use axum::Json;
use axum::extract::{Query, State};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use docmeta_core::{AclId, CabinetId, DocumentId, GroupId, ObjectRef, RoleId, UserId, UserUpdate};
use serde_json::json;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::body::Body;
use crate::dto::*;
use crate::error::ApiResult;
use crate::page::ListQuery;
use crate::state::{AppState, CurrentUser, Ids};

pub fn register(router: OpenApiRouter<AppState>) -> OpenApiRouter<AppState> {
    router
        .routes(routes!(list_acls, create_acl))
        .routes(routes!(get_acl, delete_acl))
        .routes(routes!(acl_add_permission))
        .routes(routes!(acl_remove_permission))
        .routes(routes!(grantable_permissions))
        .routes(routes!(list_users, create_user))
        .routes(routes!(current_user))
        .routes(routes!(get_user, patch_user, delete_user))
        .routes(routes!(list_groups, create_group))
        .routes(routes!(get_group, patch_group, delete_group))
        .routes(routes!(list_group_users))
        .routes(routes!(group_add_user))
        .routes(routes!(group_remove_user))
        .routes(routes!(list_roles, create_role))
        .routes(routes!(get_role, patch_role, delete_role))
        .routes(routes!(list_role_groups))
        .routes(routes!(role_add_group))
        .routes(routes!(role_remove_group))
        .routes(routes!(list_role_permissions))
        .routes(routes!(role_add_permission))
        .routes(routes!(role_remove_permission))
        .routes(routes!(list_permissions))
        .routes(routes!(list_cabinets, create_cabinet))
        .routes(routes!(get_cabinet, patch_cabinet, delete_cabinet))
        .routes(routes!(list_cabinet_documents))
        .routes(routes!(cabinet_add_document))
        .routes(routes!(cabinet_remove_document))
}

// ----- object ACLs (spec 4.4) --------------------------------------------------------------

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
    params(("app_label" = String, Path), ("model_name" = String, Path), ("object_id" = i64, Path)),
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
        let page = s.acls_page(obj, q.request())?;
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
    body: Body,
) -> ApiResult<(StatusCode, Json<AclOut>)> {
    let obj = object(&app, user, &a, &m, id)?;
    let role = body.id("role_id")?;
    app.run(user, move |s| {
        let v = s.create_acl_view(obj, RoleId(role))?;
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
        let v = s.acl_view(obj, AclId(acl))?;
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
    body: Body,
) -> ApiResult<Json<AclOut>> {
    let obj = object(&app, user, &a, &m, id)?;
    let permission = body.permission()?;
    app.run(user, move |s| {
        let v = s.acl_add_permission_view(obj, AclId(acl), permission)?;
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
    body: Body,
) -> ApiResult<Response> {
    let obj = object(&app, user, &a, &m, id)?;
    let permission = body.permission()?;
    app.run(user, move |s| {
        match s.acl_remove_permission_view(obj, AclId(acl), permission)? {
            Some(v) => Ok(Json(AclOut::new(&v, &a, &m)).into_response()),
            None => Ok(Json(json!({ "deleted": true })).into_response()),
        }
    })
    .await
}

#[utoipa::path(get, path = "/api/v5/objects/{app_label}/{model_name}/permissions/", tag = "acls",
    params(("app_label" = String, Path), ("model_name" = String, Path)),
    responses((status = 200, body = [PermissionOut], description = "The permissions an ACL on this kind of object may hold"), (status = 404, body = ErrorOut)))]
async fn grantable_permissions(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids((a, m)): Ids<(String, String)>,
) -> ApiResult<Json<Vec<PermissionOut>>> {
    let s = app.session(user);
    let kind = s.object_kind(&a, &m)?;
    Ok(Json(
        s.grantable_permissions(kind)
            .into_iter()
            .map(PermissionOut::from)
            .collect(),
    ))
}

// ----- users -------------------------------------------------------------------------------

#[utoipa::path(get, path = "/api/v4/users/", tag = "users",
    params(("page" = Option<usize>, Query), ("page_size" = Option<usize>, Query), ("ordering" = Option<String>, Query, description = "username or id")),
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
            |x| UserOut::from(x),
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
    body: Body,
) -> ApiResult<(StatusCode, Json<UserOut>)> {
    let username = body.str("username")?;
    let password = body.str("password")?;
    let superuser = body.opt_bool("is_superuser")?.unwrap_or(false);
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

#[utoipa::path(patch, path = "/api/v4/users/{user_id}/", tag = "users", request_body = UserIn,
    params(("user_id" = i64, Path)), responses((status = 200, body = UserOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn patch_user(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    body: Body,
) -> ApiResult<Json<UserOut>> {
    let update = UserUpdate {
        username: body.opt_str("username")?,
        password: body.opt_str("password")?,
        is_superuser: body.opt_bool("is_superuser")?,
        is_active: body.opt_bool("is_active")?,
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

// ----- groups ------------------------------------------------------------------------------

#[utoipa::path(get, path = "/api/v4/groups/", tag = "users",
    params(("page" = Option<usize>, Query), ("page_size" = Option<usize>, Query), ("ordering" = Option<String>, Query, description = "name or id")),
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
            |g| GroupOut::from(g),
        )
    })
    .await
    .map(IntoResponse::into_response)
}

#[utoipa::path(post, path = "/api/v4/groups/", tag = "users", request_body = NameIn,
    responses((status = 201, body = GroupOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut)))]
async fn create_group(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    body: Body,
) -> ApiResult<(StatusCode, Json<GroupOut>)> {
    let name = body.str("name")?;
    app.run(user, move |s| {
        let g = s.create_group_view(&name)?;
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

#[utoipa::path(patch, path = "/api/v4/groups/{group_id}/", tag = "users", request_body = NameIn,
    params(("group_id" = i64, Path)), responses((status = 200, body = GroupOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn patch_group(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    body: Body,
) -> ApiResult<Json<GroupOut>> {
    let name = body.opt_str("name")?;
    app.run(user, move |s| {
        let g = match name {
            Some(name) => s.rename_group_view(GroupId(id), &name)?,
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
    params(("group_id" = i64, Path), ("page" = Option<usize>, Query), ("page_size" = Option<usize>, Query)),
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
        let page = s.group_users_page(GroupId(id), q.request())?;
        Ok(q.page(&uri, page, |u| UserOut::from(&u))?.into_response())
    })
    .await
}

async fn membership(
    app: AppState,
    user: UserId,
    group: i64,
    body: Body,
    member: bool,
) -> ApiResult<Json<GroupOut>> {
    let target = body.id("user_id")?;
    app.run(user, move |s| {
        let g = s.set_group_member_view(GroupId(group), UserId(target), member)?;
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
    body: Body,
) -> ApiResult<Json<GroupOut>> {
    membership(app, user, id, body, true).await
}

#[utoipa::path(post, path = "/api/v4/groups/{group_id}/users/remove/", tag = "users", request_body = UserIdIn,
    params(("group_id" = i64, Path)), responses((status = 200, body = GroupOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn group_remove_user(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    body: Body,
) -> ApiResult<Json<GroupOut>> {
    membership(app, user, id, body, false).await
}

// ----- roles -------------------------------------------------------------------------------

#[utoipa::path(get, path = "/api/v4/roles/", tag = "permissions",
    params(("page" = Option<usize>, Query), ("page_size" = Option<usize>, Query), ("ordering" = Option<String>, Query, description = "label or id")),
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
            |r| RoleOut::from(r),
        )
    })
    .await
    .map(IntoResponse::into_response)
}

#[utoipa::path(post, path = "/api/v4/roles/", tag = "permissions", request_body = LabelIn,
    responses((status = 201, body = RoleOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut)))]
async fn create_role(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    body: Body,
) -> ApiResult<(StatusCode, Json<RoleOut>)> {
    let label = body.str("label")?;
    app.run(user, move |s| {
        let r = s.create_role_view(&label)?;
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

#[utoipa::path(patch, path = "/api/v4/roles/{role_id}/", tag = "permissions", request_body = LabelIn,
    params(("role_id" = i64, Path)), responses((status = 200, body = RoleOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn patch_role(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    body: Body,
) -> ApiResult<Json<RoleOut>> {
    let label = body.opt_str("label")?;
    app.run(user, move |s| {
        let r = match label {
            Some(label) => s.rename_role_view(RoleId(id), &label)?,
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
    params(("role_id" = i64, Path), ("page" = Option<usize>, Query), ("page_size" = Option<usize>, Query)),
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
        let page = s.role_groups_page(RoleId(id), q.request())?;
        Ok(q.page(&uri, page, |g| GroupOut::from(&g))?.into_response())
    })
    .await
}

async fn role_group(
    app: AppState,
    user: UserId,
    role: i64,
    body: Body,
    assigned: bool,
) -> ApiResult<Json<RoleOut>> {
    let group = body.id("group_id")?;
    app.run(user, move |s| {
        let r = s.set_role_group_view(RoleId(role), GroupId(group), assigned)?;
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
    body: Body,
) -> ApiResult<Json<RoleOut>> {
    role_group(app, user, id, body, true).await
}

#[utoipa::path(post, path = "/api/v4/roles/{role_id}/groups/remove/", tag = "permissions", request_body = GroupIdIn,
    params(("role_id" = i64, Path)), responses((status = 200, body = RoleOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn role_remove_group(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    body: Body,
) -> ApiResult<Json<RoleOut>> {
    role_group(app, user, id, body, false).await
}

#[utoipa::path(get, path = "/api/v4/roles/{role_id}/permissions/", tag = "permissions",
    params(("role_id" = i64, Path), ("page" = Option<usize>, Query), ("page_size" = Option<usize>, Query)),
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
        q.respond(&uri, s.role_permissions(RoleId(id))?, &[], |p| {
            PermissionOut::from(*p)
        })
    })
    .await
    .map(IntoResponse::into_response)
}

async fn role_permission(
    app: AppState,
    user: UserId,
    role: i64,
    body: Body,
    granted: bool,
) -> ApiResult<Json<Vec<PermissionOut>>> {
    let permission = body.permission()?;
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
    body: Body,
) -> ApiResult<Json<Vec<PermissionOut>>> {
    role_permission(app, user, id, body, true).await
}

#[utoipa::path(post, path = "/api/v4/roles/{role_id}/permissions/remove/", tag = "permissions", request_body = PermissionIn,
    params(("role_id" = i64, Path)), responses((status = 200, body = [PermissionOut]), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn role_remove_permission(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    body: Body,
) -> ApiResult<Json<Vec<PermissionOut>>> {
    role_permission(app, user, id, body, false).await
}

#[utoipa::path(get, path = "/api/v4/permissions/", tag = "permissions",
    params(("page" = Option<usize>, Query), ("page_size" = Option<usize>, Query)),
    responses((status = 200, body = PageOut, description = "Every permission key")))]
async fn list_permissions(
    CurrentUser(_user): CurrentUser,
    Query(q): Query<HashMap<String, String>>,
    uri: Uri,
) -> ApiResult<Response> {
    let q = ListQuery::parse(q)?;
    q.respond(&uri, docmeta_core::Permission::ALL.to_vec(), &[], |p| {
        PermissionOut::from(*p)
    })
    .map(IntoResponse::into_response)
}

// ----- cabinets ----------------------------------------------------------------------------

#[utoipa::path(get, path = "/api/v4/cabinets/", tag = "cabinets",
    params(("page" = Option<usize>, Query), ("page_size" = Option<usize>, Query), ("ordering" = Option<String>, Query, description = "label or id")),
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
            |x| CabinetOut::from(x),
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
    body: Body,
) -> ApiResult<(StatusCode, Json<CabinetOut>)> {
    let label = body.str("label")?;
    let parent = body.opt_id("parent_id")?.map(CabinetId);
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

#[utoipa::path(patch, path = "/api/v4/cabinets/{cabinet_id}/", tag = "cabinets", request_body = CabinetIn,
    params(("cabinet_id" = i64, Path)), responses((status = 200, body = CabinetOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn patch_cabinet(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    body: Body,
) -> ApiResult<Json<CabinetOut>> {
    let label = body.opt_str("label")?;
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
    params(("cabinet_id" = i64, Path), ("page" = Option<usize>, Query), ("page_size" = Option<usize>, Query)),
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
        let page = s.cabinet_documents_page(CabinetId(id), q.request())?;
        Ok(q.page(&uri, page, |d| DocumentOut::from(&d))?
            .into_response())
    })
    .await
}

async fn cabinet_document(
    app: AppState,
    user: UserId,
    cabinet: i64,
    body: Body,
    member: bool,
) -> ApiResult<Json<CabinetOut>> {
    let document = body.id("document_id")?;
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
    body: Body,
) -> ApiResult<Json<CabinetOut>> {
    cabinet_document(app, user, id, body, true).await
}

#[utoipa::path(post, path = "/api/v4/cabinets/{cabinet_id}/documents/remove/", tag = "cabinets", request_body = DocumentIdIn,
    params(("cabinet_id" = i64, Path)), responses((status = 200, body = CabinetOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn cabinet_remove_document(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    body: Body,
) -> ApiResult<Json<CabinetOut>> {
    cabinet_document(app, user, id, body, false).await
}
