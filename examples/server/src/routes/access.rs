//! Object ACLs (spec 4.4), users, groups, roles, permissions and cabinets (api.md).

use std::collections::HashMap;

use axum::Json;
use axum::extract::{Query, State};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use docmeta_core::{
    AclId, CabinetId, DocumentId, GroupId, ObjectRef, RoleId, Session, UserId, UserUpdate,
};
use serde_json::json;
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

fn object(app: &AppState, app_label: &str, model_name: &str, id: i64) -> ApiResult<ObjectRef> {
    let kind = app
        .db
        .kinds()
        .find(app_label, model_name)
        .ok_or_else(ApiError::not_found)?;
    Ok(ObjectRef::new(kind, id))
}

fn acl_out(acl: &docmeta_core::AclRow) -> impl Fn(&Session) -> ApiResult<AclOut> + '_ {
    move |s| {
        // The role of an ACL the caller may view is shown by its label.
        let label = s.docmeta().system().role(acl.role_id)?;
        Ok(AclOut::new(acl, &label))
    }
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
    let obj = object(&app, &a, &m, id)?;
    app.run(move |db| {
        let s = db.session(user);
        let acls = s.acls(obj)?;
        let range = q.range(acls.len())?;
        let results = acls[range]
            .iter()
            .map(|acl| acl_out(acl)(&s))
            .collect::<ApiResult<Vec<_>>>()?;
        Ok(q.body(&uri, acls.len(), results).into_response())
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
    let obj = object(&app, &a, &m, id)?;
    let role = body.id("role_id")?;
    app.run(move |db| {
        let s = db.session(user);
        let acl = s.create_acl(obj, RoleId(role))?;
        Ok((StatusCode::CREATED, Json(acl_out(&acl)(&s)?)))
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
    let obj = object(&app, &a, &m, id)?;
    app.run(move |db| {
        let s = db.session(user);
        let acl = s.acl(obj, AclId(acl))?;
        Ok(Json(acl_out(&acl)(&s)?))
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
    let obj = object(&app, &a, &m, id)?;
    app.run(move |db| {
        Ok(db
            .session(user)
            .delete_acl(obj, AclId(acl))
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
    let obj = object(&app, &a, &m, id)?;
    let permission = body.permission()?;
    app.run(move |db| {
        let s = db.session(user);
        let acl = s.acl_add_permission(obj, AclId(acl), permission)?;
        Ok(Json(acl_out(&acl)(&s)?))
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
    let obj = object(&app, &a, &m, id)?;
    let permission = body.permission()?;
    app.run(move |db| {
        let s = db.session(user);
        match s.acl_remove_permission(obj, AclId(acl), permission)? {
            Some(acl) => Ok(Json(acl_out(&acl)(&s)?).into_response()),
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
    CurrentUser(_user): CurrentUser,
    Ids((a, m)): Ids<(String, String)>,
) -> ApiResult<Json<Vec<PermissionOut>>> {
    let kinds = app.db.kinds();
    let kind = kinds.find(&a, &m).ok_or_else(ApiError::not_found)?;
    Ok(Json(
        kinds
            .grantable(kind)
            .iter()
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
    app.run(move |db| {
        q.respond(
            &uri,
            db.session(user).users()?,
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
    app.run(move |db| {
        Ok((
            StatusCode::CREATED,
            Json(
                (&db.session(user)
                    .create_user(&username, &password, superuser)?)
                    .into(),
            ),
        ))
    })
    .await
}

#[utoipa::path(get, path = "/api/v4/users/current/", tag = "users", responses((status = 200, body = UserOut)))]
async fn current_user(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
) -> ApiResult<Json<UserOut>> {
    app.run(move |db| Ok(Json((&db.session(user).user(user)?).into())))
        .await
}

#[utoipa::path(get, path = "/api/v4/users/{user_id}/", tag = "users",
    params(("user_id" = i64, Path)), responses((status = 200, body = UserOut), (status = 404, body = ErrorOut)))]
async fn get_user(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
) -> ApiResult<Json<UserOut>> {
    app.run(move |db| Ok(Json((&db.session(user).user(UserId(id))?).into())))
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
    app.run(move |db| {
        let s = db.session(user);
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
    app.run(move |db| {
        Ok(db
            .session(user)
            .delete_user(UserId(id))
            .map(|()| StatusCode::NO_CONTENT)?)
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
    app.run(move |db| {
        q.respond(
            &uri,
            db.session(user).groups()?,
            &[("name", |a, b| a.1.cmp(&b.1)), ("id", |a, b| a.0.cmp(&b.0))],
            |(id, name)| GroupOut::new(id.0, name),
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
    app.run(move |db| {
        let s = db.session(user);
        let id = s.create_group(&name)?;
        Ok((
            StatusCode::CREATED,
            Json(GroupOut::new(id.0, &s.group(id)?)),
        ))
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
    app.run(move |db| {
        Ok(Json(GroupOut::new(
            id,
            &db.session(user).group(GroupId(id))?,
        )))
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
    app.run(move |db| {
        let s = db.session(user);
        if let Some(name) = name {
            s.rename_group(GroupId(id), &name)?;
        }
        Ok(Json(GroupOut::new(id, &s.group(GroupId(id))?)))
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
    app.run(move |db| {
        Ok(db
            .session(user)
            .delete_group(GroupId(id))
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
    app.run(move |db| {
        let s = db.session(user);
        let members = s.group_members(GroupId(id))?;
        let users: Vec<_> = members.into_iter().filter_map(|u| s.user(u).ok()).collect();
        q.respond(&uri, users, &[], |x| UserOut::from(x))
    })
    .await
    .map(IntoResponse::into_response)
}

async fn membership(
    app: AppState,
    user: UserId,
    group: i64,
    body: Body,
    member: bool,
) -> ApiResult<Json<GroupOut>> {
    let target = body.id("user_id")?;
    app.run(move |db| {
        let s = db.session(user);
        s.set_group_member(GroupId(group), UserId(target), member)?;
        // The caller may have just left the group that let them see it: the change was theirs
        // to make, so the answer shows the group.
        Ok(Json(GroupOut::new(
            group,
            &db.system().group(GroupId(group))?,
        )))
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

fn role_out(id: RoleId, label: &str) -> RoleOut {
    RoleOut {
        id: id.0,
        label: label.to_owned(),
        url: format!("/api/v4/roles/{id}/"),
    }
}

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
    app.run(move |db| {
        q.respond(
            &uri,
            db.session(user).roles()?,
            &[
                ("label", |a, b| a.1.cmp(&b.1)),
                ("id", |a, b| a.0.cmp(&b.0)),
            ],
            |(id, label)| role_out(*id, label),
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
    app.run(move |db| {
        let id = db.session(user).create_role(&label)?;
        Ok((StatusCode::CREATED, Json(role_out(id, label.trim()))))
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
    app.run(move |db| {
        Ok(Json(role_out(
            RoleId(id),
            &db.session(user).role(RoleId(id))?,
        )))
    })
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
    app.run(move |db| {
        let s = db.session(user);
        let Some(label) = label else {
            return Ok(Json(role_out(RoleId(id), &s.role(RoleId(id))?)));
        };
        s.rename_role(RoleId(id), &label)?;
        // Allowed to edit is enough to be shown the role (role_edit without role_view).
        Ok(Json(role_out(RoleId(id), &db.system().role(RoleId(id))?)))
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
    app.run(move |db| {
        Ok(db
            .session(user)
            .delete_role(RoleId(id))
            .map(|()| StatusCode::NO_CONTENT)?)
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
    app.run(move |db| {
        let s = db.session(user);
        // Only the groups the caller may see (the core filters them); a group deleted since is
        // left out.
        let mut named: Vec<(i64, String)> = Vec::new();
        for g in s.role_groups(RoleId(id))? {
            if let Some(name) = crate::error::unless_gone(s.group(g))? {
                named.push((g.0, name));
            }
        }
        q.respond(&uri, named, &[], |(g, name)| GroupOut::new(*g, name))
    })
    .await
    .map(IntoResponse::into_response)
}

async fn role_group(
    app: AppState,
    user: UserId,
    role: i64,
    body: Body,
    assigned: bool,
) -> ApiResult<Json<RoleOut>> {
    let group = body.id("group_id")?;
    app.run(move |db| {
        let s = db.session(user);
        s.set_role_group(RoleId(role), GroupId(group), assigned)?;
        Ok(Json(role_out(
            RoleId(role),
            &db.system().role(RoleId(role))?,
        )))
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
    app.run(move |db| {
        q.respond(
            &uri,
            db.session(user).role_permissions(RoleId(id))?,
            &[],
            |p| PermissionOut::from(*p),
        )
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
    app.run(move |db| {
        let s = db.session(user);
        if granted {
            s.grant_global(permission, RoleId(role))?;
        } else {
            s.revoke_global(permission, RoleId(role))?;
        }
        Ok(Json(
            db.system()
                .role_permissions(RoleId(role))?
                .into_iter()
                .map(PermissionOut::from)
                .collect(),
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
    app.run(move |db| {
        q.respond(
            &uri,
            db.session(user).cabinets()?,
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
    app.run(move |db| {
        Ok((
            StatusCode::CREATED,
            Json((&db.session(user).create_cabinet(&label, parent)?).into()),
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
    app.run(move |db| Ok(Json((&db.session(user).cabinet(CabinetId(id))?).into())))
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
    app.run(move |db| {
        let s = db.session(user);
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
    app.run(move |db| {
        Ok(db
            .session(user)
            .delete_cabinet(CabinetId(id))
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
    app.run(move |db| {
        let s = db.session(user);
        let ids = s.cabinet_documents(CabinetId(id))?;
        let range = q.range(ids.len())?;
        let mut results = Vec::new();
        for id in &ids[range] {
            // A document deleted since the ids were read is left out, not a 404 of the page.
            if let Some(doc) = crate::error::unless_gone(s.document(*id))? {
                let t = db.system().document_type(doc.document_type_id)?;
                results.push(DocumentOut::new(&doc, &t));
            }
        }
        Ok(q.body(&uri, ids.len(), results).into_response())
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
    app.run(move |db| {
        let s = db.session(user);
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
