//! The web interface: a small page application served at `/` from assets embedded in the
//! binary, and its session (`/ui/session`: sign in, who is signed in, sign out).
//!
//! The pages hold no rule of their own: they call the JSON API as the signed-in user, whose
//! session cookie authenticates them there (see `auth`), and the core decides what each call may
//! see and do. The assets build every element from text nodes (no HTML is ever parsed from
//! data), and a strict Content-Security-Policy allows only this origin's script and style.
//!
//! May import: `state`, `auth`, `error`, `body`, `dto`. Not `app` or `routes`.

use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use docmeta_core::{DeviceId, UserId};
use serde::Deserialize;

use crate::auth::{
    SECURE_SESSION_COOKIE, SESSION_COOKIE, session_cookie, split_session, through_tls,
};
use crate::body::JsonBody;
use crate::dto::UserOut;
use crate::error::{ApiError, ApiResult};
use crate::state::{AppState, ClientAddr};

/// How long a browser's session lasts before its user signs in again.
pub const SESSION_LIFETIME: Duration = Duration::from_secs(12 * 3600);
/// The name of the device a browser's sign-in makes (listed among the user's devices).
pub const DEVICE_NAME: &str = "Web browser";

/// The pages' policy: script, style and images only from this origin, no inline script or
/// style, no plugin, no frame, requests only to this origin.
pub const PAGE_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; \
     frame-ancestors 'none'";
/// Every other answer's policy (JSON, downloads, the event stream): nothing in it runs, even a
/// stored file a browser was tricked into rendering.
pub const API_CSP: &str = "default-src 'none'; frame-ancestors 'none'; sandbox";

/// An asset of the interface, embedded in the binary.
struct Asset {
    path: &'static str,
    file: &'static str,
    content_type: &'static str,
    bytes: &'static [u8],
}

/// Every asset the interface has; nothing else is served from `/ui/`.
const ASSETS: &[Asset] = &[
    Asset {
        path: "/",
        file: "index.html",
        content_type: "text/html; charset=utf-8",
        bytes: include_bytes!("../../ui/index.html"),
    },
    Asset {
        path: "/ui/app.js",
        file: "app.js",
        content_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../../ui/app.js"),
    },
    Asset {
        path: "/ui/app.css",
        file: "app.css",
        content_type: "text/css; charset=utf-8",
        bytes: include_bytes!("../../ui/app.css"),
    },
    Asset {
        path: "/ui/icon.svg",
        file: "icon.svg",
        content_type: "image/svg+xml",
        bytes: include_bytes!("../../ui/icon.svg"),
    },
];

/// The interface's routes.
pub fn router() -> axum::Router<AppState> {
    let mut router = axum::Router::new().route(
        "/ui/session",
        get(current_session).post(sign_in).delete(sign_out),
    );
    for asset in ASSETS {
        router = router.route(asset.path, get(serve_asset));
    }
    router
}

/// Whether a path is the interface's (a page or its session) rather than the API's.
fn is_interface(path: &str) -> bool {
    path == "/" || path.starts_with("/ui/")
}

/// Security headers on every answer: the pages' policy on the interface, the API's elsewhere,
/// `nosniff` everywhere. A request of the interface, one authenticated by its cookie, or one
/// its pages make by script gets no `WWW-Authenticate` challenge on `401`, so that the
/// browser does not open its password dialog over the page: the page shows its own sign-in.
pub async fn security_headers(request: Request, next: Next) -> Response {
    let interface = is_interface(request.uri().path());
    let headers = request.headers();
    let by_cookie =
        !headers.contains_key(header::AUTHORIZATION) && session_cookie(headers).is_some();
    // A request a page of this origin made by script (not a navigation): the page shows its
    // own sign-in.
    let from_page = headers
        .get("sec-fetch-site")
        .is_some_and(|v| v == "same-origin")
        && headers
            .get("sec-fetch-mode")
            .is_some_and(|v| v != "navigate");
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(if interface { PAGE_CSP } else { API_CSP }),
    );
    if interface {
        headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
        headers.insert(
            header::REFERRER_POLICY,
            HeaderValue::from_static("same-origin"),
        );
        headers.insert(
            "cross-origin-opener-policy",
            HeaderValue::from_static("same-origin"),
        );
    }
    // An answer of the API is the caller's alone: no shared cache keeps it (a request with the
    // session cookie carries no Authorization header, which would otherwise keep it out).
    if !interface && !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    if interface || by_cookie || from_page {
        headers.remove(header::WWW_AUTHENTICATE);
    }
    response
}

/// An asset, with an `ETag` so that a browser revalidates instead of downloading it again.
async fn serve_asset(uri: Uri, headers: HeaderMap) -> Response {
    let Some(asset) = ASSETS.iter().find(|a| a.path == uri.path()) else {
        return ApiError::not_found().into_response();
    };
    let bytes = asset_bytes(asset);
    let etag = format!("\"{:016x}\"", fnv1a(&bytes));
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag));
    let common = [
        (header::CACHE_CONTROL, "no-cache".to_owned()),
        (header::ETAG, etag),
    ];
    if fresh {
        return (StatusCode::NOT_MODIFIED, common).into_response();
    }
    (common, [(header::CONTENT_TYPE, asset.content_type)], bytes).into_response()
}

/// An asset's bytes: embedded, or in a debug build read from `DOCMETA_UI_DIR` when it is set
/// (so that the pages can be edited without building the server again).
fn asset_bytes(asset: &Asset) -> Vec<u8> {
    #[cfg(debug_assertions)]
    if let Some(dir) = std::env::var_os("DOCMETA_UI_DIR")
        && let Ok(bytes) = std::fs::read(std::path::Path::new(&dir).join(asset.file))
    {
        return bytes;
    }
    let _ = asset.file;
    asset.bytes.to_vec()
}

/// FNV-1a, 64 bits: an asset's `ETag` (tells versions apart; not a security measure).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The body of a sign-in.
#[derive(Debug, Deserialize)]
struct SignIn {
    username: String,
    password: String,
}

/// The session's answer: who is signed in, and the token a change must carry.
fn session_answer(user: UserOut, csrf_token: String) -> Response {
    let mut response = axum::Json(serde_json::json!({
        "user": user,
        "csrf_token": csrf_token,
    }))
    .into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// `401` for a request of the interface without a valid session.
fn signed_out() -> ApiError {
    ApiError::detail(StatusCode::UNAUTHORIZED, "Not signed in.")
}

/// `GET /ui/session`: the signed-in user and the session's CSRF token, or `401`.
async fn current_session(State(app): State<AppState>, headers: HeaderMap) -> ApiResult<Response> {
    let session = session_cookie(&headers).ok_or_else(signed_out)?.to_owned();
    let user = app
        .session_user(&Method::GET, &headers, None, &session)
        .await
        .map_err(|_| signed_out())?;
    let out = user_out(&app, user).await?;
    Ok(session_answer(out, app.csrf_token(&session)))
}

async fn user_out(app: &AppState, user: UserId) -> ApiResult<UserOut> {
    app.run(user, move |s| Ok(UserOut::from(&s.user(user)?)))
        .await
}

/// `POST /ui/session`: signs in with a username and password (limited as every login is),
/// making a device of [`SESSION_LIFETIME`] whose token the cookie keeps.
async fn sign_in(
    State(app): State<AppState>,
    ClientAddr(client): ClientAddr,
    uri: Uri,
    headers: HeaderMap,
    JsonBody(body): JsonBody<SignIn>,
) -> ApiResult<Response> {
    let authority = uri.authority().map(|a| a.as_str().to_owned());
    // A page of another site must not sign a browser in to an account of its choosing.
    if !crate::auth::same_origin(&headers, authority.as_deref()) {
        return Err(ApiError::detail(
            StatusCode::FORBIDDEN,
            "Sign in from this server's own pages.",
        ));
    }
    let signed_in = app
        .sign_in_device(
            client,
            body.username,
            body.password,
            DEVICE_NAME.to_owned(),
            Some(SESSION_LIFETIME),
        )
        .await?;
    // The session this browser had ends: a sign-in replaces it rather than leaving it valid.
    if let Some(previous) = session_cookie(&headers).map(str::to_owned)
        && let Ok(user) = app
            .session_user(&Method::GET, &headers, None, &previous)
            .await
        && let Some((device, _)) = split_session(&previous)
    {
        let _ = app
            .run(user, move |s| Ok(s.revoke_device(DeviceId(device))?))
            .await;
    }
    let session = format!("{}.{}", signed_in.device.id.0, signed_in.token);
    let out = user_out(&app, signed_in.device.user).await?;
    let mut response = session_answer(out, app.csrf_token(&session));
    let cookie = if through_tls(&headers) {
        format!(
            "{SECURE_SESSION_COOKIE}={session}; Path=/; Max-Age={}; HttpOnly; SameSite=Strict; Secure",
            SESSION_LIFETIME.as_secs()
        )
    } else {
        format!(
            "{SESSION_COOKIE}={session}; Path=/; Max-Age={}; HttpOnly; SameSite=Strict",
            SESSION_LIFETIME.as_secs()
        )
    };
    let cookie = HeaderValue::from_str(&cookie).map_err(|_| ApiError::internal())?;
    response.headers_mut().append(header::SET_COOKIE, cookie);
    Ok(response)
}

/// `DELETE /ui/session`: signs out (the session's device is revoked, so its token is refused
/// by every process from now on) and clears the cookie.
async fn sign_out(
    State(app): State<AppState>,
    uri: Uri,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let authority = uri.authority().map(|a| a.as_str().to_owned());
    if let Some(session) = session_cookie(&headers).map(str::to_owned) {
        match app
            .session_user(&Method::DELETE, &headers, authority.as_deref(), &session)
            .await
        {
            Ok(user) => {
                if let Some((device, _)) = split_session(&session) {
                    let revoked = app
                        .run(user, move |s| Ok(s.revoke_device(DeviceId(device))?))
                        .await;
                    match revoked {
                        // Revoked meanwhile by another request: signed out all the same.
                        Err(e) if e.status != StatusCode::NOT_FOUND => return Err(e),
                        _ => {}
                    }
                }
            }
            // A forged request (no CSRF token) signs nobody out.
            Err(e) if e.status == StatusCode::FORBIDDEN => return Err(e),
            // Already expired or revoked: only the cookie is left to clear.
            Err(_) => {}
        }
    }
    let mut response = StatusCode::NO_CONTENT.into_response();
    for cookie in [
        format!("{SESSION_COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict"),
        format!("{SECURE_SESSION_COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict; Secure"),
    ] {
        if let Ok(v) = HeaderValue::from_str(&cookie) {
            response.headers_mut().append(header::SET_COOKIE, v);
        }
    }
    Ok(response)
}
