//! Devices: a user's sign-in for an application on a device, by a token exchanged once for the
//! password (`Authorization: Bearer <token>` from then on).

use std::collections::HashMap;
use std::time::Duration;

use crate::body::Json;
use axum::extract::{Query, State};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use docmeta_core::{DeviceId, UserId};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::body::JsonBody;
use crate::dto::*;
use crate::error::{ApiError, ApiResult};
use crate::page::ListQuery;
use crate::requests::DeviceSignInIn;
use crate::state::{AppState, ClientAddr, CurrentUser, Ids};

pub fn register(router: OpenApiRouter<AppState>) -> OpenApiRouter<AppState> {
    router
        .routes(routes!(list_devices, sign_in_device))
        .routes(routes!(revoke_device))
}

/// The query parameters of the device list, for the OpenAPI document.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // Describes the parameters; never constructed.
struct DeviceListParams {
    /// Another user's devices (needs `user_management.user_view`); absent: the caller's own.
    user_id: Option<i64>,
}

#[utoipa::path(get, path = "/api/v4/devices/", tag = "devices",
    params(DeviceListParams, crate::page::PageParams),
    responses((status = 200, body = PageOut), (status = 404, body = ErrorOut)))]
async fn list_devices(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Query(q): Query<HashMap<String, String>>,
    uri: Uri,
) -> ApiResult<Response> {
    let q = ListQuery::parse(q)?;
    let of = match q.params.get("user_id") {
        None => None,
        Some(id) => Some(UserId(id.parse().map_err(|_| {
            ApiError::field("user_id", "A valid integer is required.")
        })?)),
    };
    let of = of.or(Some(user));
    app.run(user, move |s| {
        let page = s.devices(of, q.request())?;
        Ok(q.page(&uri, page, |d| DeviceOut::from(&d))?.into_response())
    })
    .await
}

#[utoipa::path(post, path = "/api/v4/devices/", tag = "devices", request_body = DeviceSignInIn,
    security(()),
    responses((status = 201, body = DeviceSignedInOut), (status = 400, body = ErrorOut),
        (status = 401, body = ErrorOut), (status = 429, body = ErrorOut)))]
async fn sign_in_device(
    State(app): State<AppState>,
    ClientAddr(client): ClientAddr,
    JsonBody(body): JsonBody<DeviceSignInIn>,
) -> ApiResult<(StatusCode, Json<DeviceSignedInOut>)> {
    let DeviceSignInIn {
        username,
        password,
        name,
        lifetime_days,
    } = body;
    // A count of days the core refuses (under one, over 365) stays one it refuses: a negative
    // count reads as none, a huge one saturates.
    let lifetime = lifetime_days
        .map(|d| Duration::from_secs(u64::try_from(d).unwrap_or(0).saturating_mul(86_400)));
    let signed_in = app
        .sign_in_device(client, username, password, name, lifetime)
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(DeviceSignedInOut {
            device: (&signed_in.device).into(),
            token: signed_in.token,
        }),
    ))
}

#[utoipa::path(delete, path = "/api/v4/devices/{device_id}/", tag = "devices",
    params(("device_id" = i64, Path)),
    responses((status = 204), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn revoke_device(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
) -> ApiResult<StatusCode> {
    app.run(user, move |s| {
        Ok(s.revoke_device(DeviceId(id))
            .map(|()| StatusCode::NO_CONTENT)?)
    })
    .await
}
