//! The application: shared state, the router (every route registered together with its OpenAPI
//! description, so the two cannot drift), middleware, and graceful serving.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{DefaultBodyLimit, FromRequestParts, Path, Request};
use axum::http::{StatusCode, request::Parts};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use docmeta_core::Docmeta;
use serde::de::DeserializeOwned;
use tower_http::catch_panic::CatchPanicLayer;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;

use crate::auth::Auth;
use crate::error::{ApiError, ApiResult};
use crate::routes;

/// Largest JSON request body.
pub const MAX_BODY: usize = 1 << 20;
/// Longest time one request may take.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// What every handler gets.
#[derive(Clone)]
pub struct AppState {
    pub db: Docmeta,
    pub auth: Arc<Auth>,
    pub openapi: Arc<serde_json::Value>,
}

impl AppState {
    /// Runs a blocking core call off the async workers.
    pub async fn run<T, F>(&self, f: F) -> ApiResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Docmeta) -> ApiResult<T> + Send + 'static,
    {
        let db = self.db.clone();
        tokio::task::spawn_blocking(move || f(&db))
            .await
            .map_err(|e| {
                tracing::error!(error = %e, "a blocking task failed");
                ApiError::internal()
            })?
    }
}

/// Path parameters; a malformed id is `404`, as an unknown one is.
pub struct Ids<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for Ids<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Path::<T>::from_request_parts(parts, state)
            .await
            .map(|Path(t)| Ids(t))
            .map_err(|_| ApiError::not_found())
    }
}

#[derive(OpenApi)]
#[openapi(
    info(title = "docmeta", description = "Metadata, access control and operations of a document-management system."),
    modifiers(&BasicAuth),
    security(("basic" = []))
)]
struct ApiDoc;

struct BasicAuth;

impl Modify for BasicAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "basic",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Basic).build()),
        );
    }
}

/// The body of a path no route matches.
pub const NO_ROUTE: &str = "No such endpoint.";

async fn no_route() -> ApiError {
    ApiError::detail(StatusCode::NOT_FOUND, NO_ROUTE)
}

/// Whether a request uploads a document file (large body, no time limit).
fn is_upload(request: &Request) -> bool {
    let path = request.uri().path();
    request.method() == axum::http::Method::POST
        && path.starts_with("/api/v4/documents/")
        && path.ends_with("/files/")
}

/// Bounds every request body (`MAX_BODY`, or `upload_max_bytes` for uploads: an announced
/// oversized body is refused before it is sent, a longer one is cut at the limit) and every
/// request's duration (`REQUEST_TIMEOUT`, except uploads, which take as long as the network).
async fn limits(
    axum::extract::State(upload_max): axum::extract::State<u64>,
    request: Request,
    next: Next,
) -> Response {
    let upload = is_upload(&request);
    let limit = if upload { upload_max } else { MAX_BODY as u64 };
    let announced = (request.headers().get(axum::http::header::CONTENT_LENGTH))
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if announced.is_some_and(|n| n > limit) {
        return ApiError::detail(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("The request body is larger than {limit} bytes."),
        )
        .into_response();
    }
    let request = request.map(|body| {
        axum::body::Body::new(http_body_util::Limited::new(
            body,
            usize::try_from(limit).unwrap_or(usize::MAX),
        ))
    });
    if upload {
        let mut response = next.run(request).await;
        // A refused upload leaves its body unread: the connection cannot carry another request,
        // and the client is told so rather than finding out on its next request.
        if !response.status().is_success() {
            response.headers_mut().insert(
                axum::http::header::CONNECTION,
                axum::http::HeaderValue::from_static("close"),
            );
        }
        return response;
    }
    let handle = async move {
        // A JSON body (at most MAX_BODY) is read whole before the handler runs, so a request
        // refused early (401, 403, 404 ...) still leaves the connection ready for the next one.
        let (parts, body) = request.into_parts();
        let bytes = match axum::body::to_bytes(axum::body::Body::new(body), usize::MAX).await {
            Ok(bytes) => bytes,
            Err(e) if over_limit(&e) => {
                return ApiError::detail(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    &format!("The request body is larger than {limit} bytes."),
                )
                .into_response();
            }
            Err(_) => {
                return ApiError::detail(
                    StatusCode::BAD_REQUEST,
                    "The request body could not be read.",
                )
                .into_response();
            }
        };
        next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
            .await
    };
    match tokio::time::timeout(REQUEST_TIMEOUT, handle).await {
        Ok(response) => response,
        Err(_) => ApiError::detail(StatusCode::REQUEST_TIMEOUT, "The request took too long.")
            .into_response(),
    }
}

/// Whether reading a body failed because it passed the limit (rather than a broken connection).
fn over_limit(e: &axum::Error) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if c.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        cause = c.source();
    }
    false
}

/// One structured log line per request.
async fn log_request(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let response = next.run(request).await;
    tracing::info!(target: "docmeta::http", %method, %path, status = response.status().as_u16(), latency_us = started.elapsed().as_micros() as u64, "request");
    response
}

fn panic_response(_: Box<dyn std::any::Any + Send + 'static>) -> Response {
    tracing::error!("a request handler panicked");
    ApiError::internal().into_response()
}

/// The router and its OpenAPI document.
pub fn router(db: Docmeta) -> (axum::Router, Arc<serde_json::Value>) {
    let upload_max = db.config().upload_max_bytes;
    let api = routes::register(OpenApiRouter::with_openapi(ApiDoc::openapi()));
    let (router, openapi) = api.split_for_parts();
    let mut openapi = serde_json::to_value(&openapi).unwrap_or_default();
    document_common_responses(&mut openapi);
    let openapi = Arc::new(openapi);
    let state = AppState {
        auth: Auth::new(&db),
        db,
        openapi: openapi.clone(),
    };
    let router = router
        .fallback(no_route)
        .with_state(state)
        // Bodies are bounded by `limits` (per route), not by extractor defaults.
        .layer(DefaultBodyLimit::disable())
        .layer(axum::middleware::from_fn_with_state(upload_max, limits))
        .layer(axum::middleware::from_fn(log_request))
        .layer(CatchPanicLayer::custom(panic_response));
    (router, openapi)
}

/// Adds to every operation the answers any request may get, so that clients (and schemathesis)
/// find every status the server sends documented: `400` (a malformed parameter or body), `404`
/// (an unknown or invisible object), `413` (a body over the limit) and `408` (too slow), and for
/// operations behind authentication `401` (no or wrong credentials), `403` and `429` (too many
/// failed logins). Each answer is an `ErrorOut`.
fn document_common_responses(doc: &mut serde_json::Value) {
    use serde_json::json;
    let error = |description: &str| {
        json!({
            "description": description,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorOut"}}}
        })
    };
    let Some(paths) = doc.get_mut("paths").and_then(|p| p.as_object_mut()) else {
        return;
    };
    for (path, item) in paths.iter_mut() {
        let Some(item) = item.as_object_mut() else {
            continue;
        };
        for (method, operation) in item.iter_mut() {
            // `security: [{}]` marks the public operations (health, this document).
            let public = operation["security"].as_array().is_some_and(|s| {
                s.iter()
                    .all(|r| r.as_object().is_some_and(|r| r.is_empty()))
            });
            let paged = operation["parameters"]
                .as_array()
                .is_some_and(|p| p.iter().any(|p| p["name"] == "page"));
            let Some(responses) = operation
                .get_mut("responses")
                .and_then(|r| r.as_object_mut())
            else {
                continue;
            };
            let mut add = |status: &str, description: &str| {
                responses
                    .entry(status)
                    .or_insert_with(|| error(description));
            };
            add("408", "The request took too long.");
            if public {
                continue;
            }
            add("400", "A parameter or the body is malformed.");
            add("401", "No credentials, or wrong ones.");
            add("403", "The caller may not do this.");
            add(
                "429",
                "Too many failed logins from this client or for this user.",
            );
            if path.contains('{') || paged {
                add(
                    "404",
                    "No such object, or the caller may not see it (or no such page).",
                );
            }
            if method != "get" && method != "delete" {
                add("413", "The body is larger than the server accepts.");
            }
        }
    }
}

/// Serves until SIGINT or SIGTERM, then finishes in-flight requests.
pub async fn serve(db: Docmeta, bind: SocketAddr) -> std::io::Result<()> {
    let (router, _) = router(db);
    let listener = tokio::net::TcpListener::bind(bind).await?;
    let local = listener.local_addr()?;
    tracing::info!(%local, "docmeta listening");
    println!("docmeta listening on http://{local}");
    axum::serve(
        listener,
        router.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown_signal())
    .await
}

async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {},
        () = terminate => {},
    }
    tracing::info!("shutting down: finishing in-flight requests");
}
