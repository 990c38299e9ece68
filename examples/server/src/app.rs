//! The application: shared state, the router (every route registered together with its OpenAPI
//! description, so the two cannot drift), middleware, and graceful serving.

use std::net::SocketAddr;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use axum::extract::{DefaultBodyLimit, Request};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use docmeta_core::Docmeta;
use tower_http::catch_panic::CatchPanicLayer;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;

use crate::auth::Auth;
use crate::clock::{BEGAN, REQUEST, RequestClock};
use crate::conn::ConnLimits;
use crate::error::ApiError;
use crate::routes;
use crate::state::{AppState, Stopping};
use crate::streams::{StreamCounter, StreamLimits, config_duration};

pub use crate::body::MAX_BODY;
/// Longest request target (path and query) the server reads; longer is `414`.
pub const MAX_URI: usize = 8 * 1024;
/// Most request header fields; more is `431`.
pub const MAX_HEADERS: usize = 64;
/// Largest request header section (names and values); larger is `431`.
pub const MAX_HEADER_BYTES: usize = 32 * 1024;

#[derive(OpenApi)]
#[openapi(
    info(title = "docmeta", description = "Metadata, access control and operations of a document-management system."),
    modifiers(&BasicAuth),
    security(("basic" = []), ("device" = []))
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
        // A device's token (`POST /api/v4/devices/` exchanges a password for one).
        components.add_security_scheme(
            "device",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("dmd_ token")
                    .build(),
            ),
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
    let multipart = || {
        (request.headers().get(axum::http::header::CONTENT_TYPE))
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("multipart/form-data"))
    };
    let document_file = path.starts_with("/api/v4/documents/")
        && (path.ends_with("/files/") || (path == "/api/v4/documents/" && multipart()));
    request.method() == axum::http::Method::POST
        && (document_file || path == "/api/v4/sync/push/file/")
}

/// Whether a request follows the event log, waiting for what comes (`wait`, or Server-Sent
/// Events): it has no time limit (its wait is bounded, a stream lasts while its client stays).
fn is_feed(request: &Request) -> bool {
    request.method() == axum::http::Method::GET
        && request.uri().path() == crate::routes::EVENTS
        && (crate::routes::wants_event_stream(request.headers())
            || request
                .uri()
                .query()
                .is_some_and(|q| q.split('&').any(|p| p == "wait" || p.starts_with("wait="))))
}

/// The limits `limits` applies, from `config.yml`.
#[derive(Debug, Clone, Copy)]
struct Limits {
    upload_max: u64,
    request_timeout: Duration,
}

/// Bounds every request body (`MAX_BODY`, or `upload_max_bytes` for uploads: an announced
/// oversized body is refused before it is sent, a longer one is cut at the limit) and every
/// request's duration (`request_timeout_ms`, except uploads, whose streams have their own
/// limits, the bodies of downloads, streamed after the handler has answered, and event feeds,
/// whose waits are bounded by the feed).
///
/// At the time limit, a request whose handler has not yet handed work to the core answers
/// `408` at once (nothing was done). One whose work has begun waits for that work's outcome:
/// the core refuses to commit past the deadline (the handler then answers `408`, nothing
/// changed), and a change that committed in time is answered as such, never as `408`.
async fn limits(
    axum::extract::State(limits): axum::extract::State<Limits>,
    request: Request,
    next: Next,
) -> Response {
    BEGAN
        .scope(Instant::now(), limited(limits, request, next))
        .await
}

/// [`limits`], within the request's arrival time (`BEGAN`).
async fn limited(limits: Limits, request: Request, next: Next) -> Response {
    let upload = is_upload(&request);
    let limit = if upload {
        limits.upload_max
    } else {
        MAX_BODY as u64
    };
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
    if is_feed(&request) {
        return next.run(request).await;
    }
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
    let clock = Arc::new(RequestClock {
        deadline: Instant::now() + limits.request_timeout,
        started: AtomicBool::new(false),
    });
    let handle = REQUEST.scope(clock.clone(), handle);
    tokio::pin!(handle);
    tokio::select! {
        response = &mut handle => response,
        () = tokio::time::sleep_until(clock.deadline.into()) => {
            if clock.started.load(Ordering::SeqCst) {
                handle.await
            } else {
                ApiError::detail(StatusCode::REQUEST_TIMEOUT, "The request took too long.")
                    .into_response()
            }
        }
    }
}

/// Refuses a request whose target or header section is larger than the server reads (`414`,
/// `431`), with a JSON body like every other error. (Past hyper's own parser limits, a head over
/// [`MAX_HEAD_BYTES`](crate::conn::MAX_HEAD_BYTES) or more than 100 header fields, hyper answers
/// `431` itself, without a body, before any of this code runs.)
async fn head_limits(request: Request, next: Next) -> Response {
    let target = request
        .uri()
        .path_and_query()
        .map_or(0, |p| p.as_str().len());
    if target > MAX_URI {
        return ApiError::detail(
            StatusCode::URI_TOO_LONG,
            &format!("The request target is longer than {MAX_URI} bytes."),
        )
        .into_response();
    }
    let headers = request.headers();
    let bytes: usize = headers
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len())
        .sum();
    if headers.len() > MAX_HEADERS || bytes > MAX_HEADER_BYTES {
        return ApiError::detail(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            &format!(
                "The request has more than {MAX_HEADERS} header fields or more than \
                 {MAX_HEADER_BYTES} bytes of them."
            ),
        )
        .into_response();
    }
    next.run(request).await
}

/// Gives an error answer made without a body (axum's `405` for a method a path does not
/// have, say) the JSON body every other error has: `{"detail": "<reason>"}`.
async fn json_errors(request: Request, next: Next) -> Response {
    use axum::body::HttpBody as _;
    let response = next.run(request).await;
    let status = response.status();
    let bodyless = response.body().size_hint().exact() == Some(0);
    if !(status.is_client_error() || status.is_server_error())
        || !bodyless
        || response
            .headers()
            .contains_key(axum::http::header::CONTENT_TYPE)
    {
        return response;
    }
    let (mut parts, _) = response.into_parts();
    let reason = status.canonical_reason().unwrap_or("Error");
    let json = ApiError::detail(status, &format!("{reason}.")).into_response();
    let (json_parts, body) = json.into_parts();
    parts.headers.remove(axum::http::header::CONTENT_LENGTH);
    for (name, value) in &json_parts.headers {
        parts.headers.insert(name, value.clone());
    }
    Response::from_parts(parts, body)
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

/// The router, its OpenAPI document, and what tells its waiting requests to end.
pub fn router(db: Docmeta) -> (axum::Router, Arc<serde_json::Value>, Stopping) {
    let limits = Limits {
        upload_max: db.config().upload_max_bytes,
        request_timeout: config_duration(db.config().request_timeout_ms),
    };
    let spool_dir = db
        .data_dir()
        .map_or_else(std::env::temp_dir, |d| d.join(routes::files::SPOOL_DIR));
    routes::files::clean_spool(&spool_dir);
    let api = routes::register(OpenApiRouter::with_openapi(ApiDoc::openapi()));
    let (router, openapi) = api.split_for_parts();
    let mut openapi = serde_json::to_value(&openapi).unwrap_or_default();
    document_common_responses(&mut openapi);
    document_classes(&mut openapi, db.classes());
    let openapi = Arc::new(openapi);
    let stopping = Stopping::new();
    let state = AppState::new(
        Auth::new(&db),
        StreamCounter::new(StreamLimits::from_config(db.config())),
        spool_dir.into(),
        db,
        openapi.clone(),
        stopping.clone(),
    );
    // The web interface's routes stay out of the OpenAPI document: they are pages, not API.
    let router = router.merge(crate::ui::router());
    let router = with_middleware(router.fallback(no_route).with_state(state), limits);
    (router, openapi, stopping)
}

/// The middleware every request passes through, outermost last. The floor server of the HTTP
/// benchmark uses the same, so that the two differ only in the work of the handlers.
fn with_middleware(router: axum::Router, limits: Limits) -> axum::Router {
    router
        // Bodies are bounded by `limits` (per route), not by extractor defaults.
        .layer(DefaultBodyLimit::disable())
        .layer(axum::middleware::from_fn_with_state(limits, self::limits))
        .layer(axum::middleware::from_fn(head_limits))
        .layer(axum::middleware::from_fn(json_errors))
        .layer(axum::middleware::from_fn(crate::ui::security_headers))
        .layer(axum::middleware::from_fn(log_request))
        .layer(CatchPanicLayer::custom(panic_response))
}

/// The floor of `benches/http/load.sh`: the same tokio runtime, listener, middleware and logging
/// as [`serve`], answering every request with one constant JSON body of `body_bytes` bytes and
/// doing nothing else. What a docmeta route costs beyond it is docmeta's own work.
pub async fn serve_floor(
    config: &docmeta_core::Config,
    bind: SocketAddr,
    body_bytes: usize,
) -> std::io::Result<()> {
    let body = axum::body::Bytes::from(floor_body(body_bytes));
    let limits = Limits {
        upload_max: config.upload_max_bytes,
        request_timeout: config_duration(config.request_timeout_ms),
    };
    let constant = move || {
        let body = body.clone();
        async move {
            (
                [(axum::http::header::CONTENT_TYPE, "application/json")],
                body,
            )
        }
    };
    let router = with_middleware(axum::Router::new().fallback(constant), limits);
    listen(
        router,
        bind,
        ConnLimits::from_config(config),
        "docmeta floor",
        shutdown_signal(),
    )
    .await
}

/// A JSON object of exactly `len` bytes (at least `{"p":""}`'s 8).
fn floor_body(len: usize) -> Vec<u8> {
    let pad = len.saturating_sub(8);
    let mut body = Vec::with_capacity(pad + 8);
    body.extend_from_slice(b"{\"p\":\"");
    body.resize(body.len() + pad, b'x');
    body.extend_from_slice(b"\"}");
    body
}

/// Adds to every operation the answers any request may get, so that clients (and schemathesis)
/// find every status the server sends documented: `400` (a malformed parameter or body), `404`
/// (an unknown or invisible object), `413` (a body over the limit), `408` (too slow), `414` and
/// `431` (a request target or headers larger than the server reads), and for
/// operations behind authentication `401` (no or wrong credentials), `403`, `429` (too many
/// failed logins, streams or template renders) and, for changes, `503` (busy: conflicting
/// concurrent changes). Each answer is an `ErrorOut`.
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
            add("408", "The request took too long (nothing was changed).");
            add("414", "The request target is longer than the server reads.");
            add(
                "431",
                "The request has more header fields, or larger ones, than the server reads.",
            );
            if public {
                continue;
            }
            add("400", "A parameter or the body is malformed.");
            add("401", "No credentials, or wrong ones.");
            add("403", "The caller may not do this.");
            add(
                "429",
                "Too many failed logins from this client or for this user (or, for file \
                 uploads and downloads, too many of them in progress for this user; or too \
                 many template renders in progress for this user or in all: renders_per_user, \
                 renders_at_once). Retry-After says when to try again.",
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
            if method != "get" {
                add(
                    "503",
                    "The change kept conflicting with concurrent ones (PostgreSQL), or the \
                     values its templates read kept changing while it was written: nothing was \
                     changed. Retry-After says when to try again.",
                );
            }
        }
    }
}

/// States in the metadata type bodies which validator and parser classes this server knows
/// (the built-in ones and those the host registered): `validation` and `parser` are one of
/// their class paths, or empty (none); and `validation_arguments` / `parser_arguments` are
/// empty unless a class is given beside them.
fn document_classes(doc: &mut serde_json::Value, classes: &docmeta_core::ClassRegistry) {
    use serde_json::{Value, json};
    let paths = |paths: Vec<&str>| paths.into_iter().map(Value::from).collect::<Vec<_>>();
    let validators = paths(classes.validators().map(|c| c.path.as_str()).collect());
    let parsers = paths(classes.parsers().map(|c| c.path.as_str()).collect());
    let choices = |paths: &[Value]| {
        let mut choices = vec![Value::Null, json!("")];
        choices.extend(paths.iter().cloned());
        json!({
            "type": ["string", "null"],
            "enum": choices,
            "description": "A class path this server knows, or empty (none).",
        })
    };
    // Arguments without a class are refused ("Arguments given without a validator.").
    let arguments_need = |class: &str, arguments: &str, paths: &[Value]| {
        json!({
            "if": {"properties": {class: {"enum": paths}}, "required": [class]},
            "else": {"properties": {arguments: {"enum": [Value::Null, ""]}}},
        })
    };
    for body in ["MetadataTypeIn", "MetadataTypePatchIn"] {
        let Some(schema) = doc
            .pointer_mut(&format!("/components/schemas/{body}"))
            .and_then(Value::as_object_mut)
        else {
            continue;
        };
        if let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) {
            properties.insert("validation".into(), choices(&validators));
            properties.insert("parser".into(), choices(&parsers));
        }
        schema.insert(
            "allOf".into(),
            json!([
                arguments_need("validation", "validation_arguments", &validators),
                arguments_need("parser", "parser_arguments", &parsers),
            ]),
        );
    }
}

/// Serves until SIGINT or SIGTERM, then finishes in-flight requests (waiting event feeds answer
/// with what they have, event streams end).
pub async fn serve(db: Docmeta, bind: SocketAddr) -> std::io::Result<()> {
    let limits = ConnLimits::from_config(db.config());
    let (router, _, stopping) = router(db);
    let shutdown = async move {
        shutdown_signal().await;
        stopping.stop();
    };
    listen(router, bind, limits, "docmeta", shutdown).await
}

async fn listen(
    router: axum::Router,
    bind: SocketAddr,
    limits: ConnLimits,
    name: &str,
    shutdown: impl std::future::Future<Output = ()>,
) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(bind).await?;
    let local = listener.local_addr()?;
    tracing::info!(%local, "{name} listening");
    println!("{name} listening on http://{local}");
    crate::conn::serve(listener, router, limits, shutdown).await
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
