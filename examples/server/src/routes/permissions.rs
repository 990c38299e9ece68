//! Every permission key (api.md).

use std::collections::HashMap;

use axum::extract::Query;
use axum::http::Uri;
use axum::response::{IntoResponse, Response};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::dto::*;
use crate::error::ApiResult;
use crate::page::ListQuery;
use crate::state::{AppState, CurrentUser};

pub fn register(router: OpenApiRouter<AppState>) -> OpenApiRouter<AppState> {
    router.routes(routes!(list_permissions))
}

#[utoipa::path(get, path = "/api/v4/permissions/", tag = "permissions",
    params(crate::page::PageParams),
    responses((status = 200, body = PageOut, description = "Every permission key")))]
async fn list_permissions(
    CurrentUser(_user): CurrentUser,
    Query(q): Query<HashMap<String, String>>,
    uri: Uri,
) -> ApiResult<Response> {
    let q = ListQuery::parse(q)?;
    q.respond(
        &uri,
        docmeta_core::Permission::ALL.to_vec(),
        &[],
        PermissionOut::from,
    )
    .map(IntoResponse::into_response)
}
