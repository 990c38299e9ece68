//! Tasks, health and the OpenAPI document.

use std::collections::HashMap;

use crate::body::Json;
use axum::extract::{Query, State};
use axum::http::Uri;
use serde_json::Value;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::dto::*;
use crate::error::ApiResult;
use crate::page::{ListQuery, Page};
use crate::state::{AppState, CurrentUser};

pub fn register(router: OpenApiRouter<AppState>) -> OpenApiRouter<AppState> {
    router
        .routes(routes!(list_tasks))
        .routes(routes!(health))
        .routes(routes!(openapi))
}

#[utoipa::path(get, path = "/api/v4/tasks/", tag = "system",
    params(crate::page::PageParams),
    responses((status = 200, body = PageOut, description = "Pending, running and failed background tasks"), (status = 403, body = ErrorOut)))]
async fn list_tasks(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Query(q): Query<HashMap<String, String>>,
    uri: Uri,
) -> ApiResult<Page<TaskOut>> {
    let q = ListQuery::parse(q)?;
    app.run(user, move |s| {
        q.page(&uri, docmeta_core::Page::of(s.tasks()?, q.request()), |t| {
            TaskOut::from(&t)
        })
    })
    .await
}

#[utoipa::path(get, path = "/api/v4/health/", tag = "system", security(()),
    responses((status = 200, body = HealthOut), (status = 503, body = HealthOut)))]
async fn health(State(app): State<AppState>) -> (axum::http::StatusCode, Json<HealthOut>) {
    let database = app.database_ok().await;
    let status = if database {
        axum::http::StatusCode::OK
    } else {
        axum::http::StatusCode::SERVICE_UNAVAILABLE
    };
    let text = |ok: bool| {
        if ok {
            "ok".to_owned()
        } else {
            "error".to_owned()
        }
    };
    (
        status,
        Json(HealthOut {
            status: text(database),
            database: text(database),
            search: if app.search_rebuilding() {
                "rebuilding"
            } else {
                "ok"
            }
            .into(),
        }),
    )
}

#[utoipa::path(get, path = "/api/v4/openapi.json", tag = "system", security(()),
    responses((status = 200, description = "This OpenAPI 3 document")))]
async fn openapi(State(app): State<AppState>) -> Json<Value> {
    Json((*app.openapi).clone())
}
