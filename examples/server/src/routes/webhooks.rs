//! Webhooks and their deliveries: a user's own webhooks (a superuser's: every one).

use std::collections::HashMap;

use crate::body::Json;
use axum::extract::{Query, State};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use docmeta_core::{WebhookDeliveryId, WebhookId, WebhookUpdate};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::body::JsonBody;
use crate::dto::*;
use crate::error::ApiResult;
use crate::page::ListQuery;
use crate::requests::{WebhookIn, WebhookPatchIn};
use crate::state::{AppState, CurrentUser, Ids};

pub fn register(router: OpenApiRouter<AppState>) -> OpenApiRouter<AppState> {
    router
        .routes(routes!(list_webhooks, create_webhook))
        .routes(routes!(get_webhook, patch_webhook, delete_webhook))
        .routes(routes!(list_webhook_deliveries))
        .routes(routes!(retry_webhook_delivery))
}

#[utoipa::path(get, path = "/api/v4/webhooks/", tag = "webhooks",
    params(crate::page::PageParams),
    responses((status = 200, body = PageOut), (status = 403, body = ErrorOut)))]
async fn list_webhooks(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Query(q): Query<HashMap<String, String>>,
    uri: Uri,
) -> ApiResult<Response> {
    let q = ListQuery::parse(q)?;
    app.run(user, move |s| {
        let page = s.webhooks(q.request())?;
        Ok(q.page(&uri, page, |w| WebhookOut::from(&w))?
            .into_response())
    })
    .await
}

#[utoipa::path(post, path = "/api/v4/webhooks/", tag = "webhooks", request_body = WebhookIn,
    responses((status = 201, body = WebhookCreatedOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut)))]
async fn create_webhook(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    JsonBody(body): JsonBody<WebhookIn>,
) -> ApiResult<(StatusCode, Json<WebhookCreatedOut>)> {
    let WebhookIn {
        url,
        events,
        secret,
    } = body;
    app.run(user, move |s| {
        let created = s.create_webhook(&url, &events.unwrap_or_default(), secret.as_deref())?;
        Ok((StatusCode::CREATED, Json((&created).into())))
    })
    .await
}

#[utoipa::path(get, path = "/api/v4/webhooks/{webhook_id}/", tag = "webhooks",
    params(("webhook_id" = i64, Path)),
    responses((status = 200, body = WebhookOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn get_webhook(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
) -> ApiResult<Json<WebhookOut>> {
    app.run(user, move |s| Ok(Json((&s.webhook(WebhookId(id))?).into())))
        .await
}

#[utoipa::path(patch, path = "/api/v4/webhooks/{webhook_id}/", tag = "webhooks", request_body = WebhookPatchIn,
    params(("webhook_id" = i64, Path)),
    responses((status = 200, body = WebhookOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn patch_webhook(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    JsonBody(body): JsonBody<WebhookPatchIn>,
) -> ApiResult<Json<WebhookOut>> {
    let update = WebhookUpdate {
        url: body.url,
        events: body.events,
        secret: body.secret,
        active: body.active.map(|f| f.0),
    };
    app.run(user, move |s| {
        // One core call: every field is checked before any is written.
        Ok(Json((&s.update_webhook(WebhookId(id), update)?).into()))
    })
    .await
}

#[utoipa::path(delete, path = "/api/v4/webhooks/{webhook_id}/", tag = "webhooks",
    params(("webhook_id" = i64, Path)),
    responses((status = 204), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn delete_webhook(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
) -> ApiResult<StatusCode> {
    app.run(user, move |s| {
        Ok(s.delete_webhook(WebhookId(id))
            .map(|()| StatusCode::NO_CONTENT)?)
    })
    .await
}

#[utoipa::path(get, path = "/api/v4/webhooks/{webhook_id}/deliveries/", tag = "webhooks",
    params(("webhook_id" = i64, Path), crate::page::PageParams),
    responses((status = 200, body = PageOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn list_webhook_deliveries(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    Query(q): Query<HashMap<String, String>>,
    uri: Uri,
) -> ApiResult<Response> {
    let q = ListQuery::parse(q)?;
    app.run(user, move |s| {
        let page = s.webhook_deliveries(WebhookId(id), q.request())?;
        Ok(q.page(&uri, page, |d| WebhookDeliveryOut::from(&d))?
            .into_response())
    })
    .await
}

#[utoipa::path(post, path = "/api/v4/webhooks/{webhook_id}/deliveries/{delivery_id}/retry/", tag = "webhooks",
    params(("webhook_id" = i64, Path), ("delivery_id" = i64, Path)),
    responses((status = 200, body = WebhookDeliveryOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn retry_webhook_delivery(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids((id, delivery)): Ids<(i64, i64)>,
) -> ApiResult<Json<WebhookDeliveryOut>> {
    app.run(user, move |s| {
        let d = s.retry_webhook_delivery(WebhookId(id), WebhookDeliveryId(delivery))?;
        Ok(Json((&d).into()))
    })
    .await
}
