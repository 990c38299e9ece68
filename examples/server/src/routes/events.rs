//! The event log (api.md): listed newest first, globally and per document, and followed as it
//! grows: `GET /api/v4/events/?after=<cursor>&wait=<seconds>` answers the next events in commit
//! order with the cursor to go on from, waiting up to `wait` seconds for one; the same resource
//! with `Accept: text/event-stream` streams them as Server-Sent Events for as long as the client
//! stays, resuming from `Last-Event-ID`.
//!
//! What a follower is shown, and where its cursor goes, is the core's
//! (`Session::events_after`). A waiting request holds no thread and no database connection: it
//! awaits the core's wake-up (`AppState::watch_events`, moved by every commit, this process's
//! or another's), then reads once more on the blocking pool, as every request reads.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use docmeta_core::{DocumentId, EventFeed, EventId, EventQuery, MAX_EVENT_WAIT, Session, UserId};
use tokio::sync::Notify;
use utoipa::IntoParams;
use utoipa::openapi::Required;
use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::body::Json;
use crate::dto::*;
use crate::error::{ApiError, ApiResult};
use crate::page::ListQuery;
use crate::state::{AppState, CurrentUser, Ids};

/// The path of the event log.
pub const EVENTS: &str = "/api/v4/events/";

/// Events listed per request, newest first (older ones are reached with `before`).
const EVENT_WINDOW: u32 = 1000;

/// How often an event stream with nothing to send sends a comment, so that proxies and clients
/// keep the connection, and a client that has gone is noticed.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// How long an event stream's client waits before it connects again after the stream ended
/// (the SSE `retry` field).
const RETRY_MS: u32 = 2000;

pub fn register(router: OpenApiRouter<AppState>) -> OpenApiRouter<AppState> {
    router
        .routes(routes!(list_events))
        .routes(routes!(list_document_events))
}

/// Whether a request asks for Server-Sent Events (`Accept: text/event-stream`).
pub fn wants_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|v| {
            v.split(';')
                .next()
                .is_some_and(|t| t.trim().eq_ignore_ascii_case("text/event-stream"))
        })
}

fn events_page(
    s: &Session,
    mut query: EventQuery,
    q: &ListQuery,
    uri: &Uri,
) -> ApiResult<crate::page::Page<EventOut>> {
    if let Some(before) = q.params.get("before") {
        query.before =
            Some(EventId(before.parse().map_err(|_| {
                ApiError::field("before", "A valid integer is required.")
            })?));
    }
    query.limit = Some(EVENT_WINDOW);
    let events = s.events(&query)?;
    q.respond(uri, events, &[], |e| EventOut::from(&e))
}

/// The parameters of the event log beyond paging (for the OpenAPI description).
struct FeedParams;

impl IntoParams for FeedParams {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        let integer = |minimum: Option<i64>, maximum: Option<i64>| {
            utoipa::openapi::ObjectBuilder::new()
                .schema_type(utoipa::openapi::schema::Type::Integer)
                .format(Some(utoipa::openapi::SchemaFormat::KnownFormat(
                    utoipa::openapi::KnownFormat::Int64,
                )))
                .minimum(minimum)
                .maximum(Some(maximum.unwrap_or(i64::MAX)))
                .build()
        };
        let parameter = |name: &str, place: ParameterIn, schema, description: &str| {
            ParameterBuilder::new()
                .name(name)
                .parameter_in(place)
                .required(Required::False)
                .description(Some(description))
                .schema(Some(schema))
                .build()
        };
        let max_wait = i64::try_from(MAX_EVENT_WAIT.as_secs()).unwrap_or(60);
        vec![
            parameter(
                "before",
                ParameterIn::Query,
                integer(None, None),
                "The list: only events older than this id. Not with `after` or `wait`.",
            ),
            parameter(
                "after",
                ParameterIn::Query,
                integer(Some(0), None),
                "Follow the log: the events after this cursor (the `cursor` of the previous \
                 answer; absent for the start of the log), in commit order, at most `page_size`, \
                 with the cursor to go on from.",
            ),
            parameter(
                "wait",
                ParameterIn::Query,
                integer(Some(0), Some(max_wait)),
                "Follow the log, waiting up to this many seconds for an event the caller may \
                 see when none is there yet (0, the default, answers at once).",
            ),
            parameter(
                "Last-Event-ID",
                ParameterIn::Header,
                integer(Some(0), None),
                "With `Accept: text/event-stream`: the stream starts after this event (what an \
                 EventSource sends when it connects again); before `after`.",
            ),
        ]
    }
}

#[utoipa::path(get, path = "/api/v4/events/", tag = "events",
    description = "The event log, only events whose target the caller may view (an action object or actor the caller may not view is `null`). Without `after` and `wait`: newest first, 1,000 per window, paged, older windows with `before`. With `after` or `wait`: following the log, the next events in commit order (at most `page_size`) with `cursor`, the position to pass as `after` next (past the events the caller may not see too; `null` only while the log is empty), and `next`, the request that goes on; when none is there, the answer waits up to `wait` seconds (at most 60) for one, and is empty at the deadline. With `Accept: text/event-stream`: Server-Sent Events for as long as the client stays (`id:` the event id, `event:` its name, `data:` the event as JSON; an `id:` alone moves the client's position past events it may not see; a comment every 15 s), starting after `Last-Event-ID`, else after `after`, else at the start of the log.",
    params(crate::page::PageParams, FeedParams),
    responses((status = 200, description = "Events whose target the caller may view: a page of the list, or what a follower gets (with `cursor`); or a stream of them",
        content((EventsOut = "application/json"), (String = "text/event-stream")))))]
async fn list_events(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
    uri: Uri,
) -> ApiResult<Response> {
    let q = ListQuery::parse(q)?;
    let following = q.params.contains_key("after") || q.params.contains_key("wait");
    let stream = wants_event_stream(&headers);
    if !(following || stream) {
        return app
            .run(user, move |s| {
                events_page(s, EventQuery::default(), &q, &uri)
            })
            .await
            .map(IntoResponse::into_response);
    }
    if q.params.contains_key("before") {
        return Err(ApiError::field(
            "before",
            "Cannot be combined with after, wait or an event stream.",
        ));
    }
    let after = cursor_param(q.params.get("after").map(String::as_str), "after")?;
    let wait = wait_param(q.params.get("wait").map(String::as_str))?;
    let limit = u32::try_from(q.page_size).unwrap_or(u32::MAX);
    if stream {
        let last = headers
            .get("last-event-id")
            .map(|v| v.to_str().unwrap_or("\u{fffd}"))
            .filter(|v| !v.trim().is_empty());
        let start = cursor_param(last, "Last-Event-ID")?.or(after);
        // Read before the stream starts: a refusal is an answer of its own.
        let first = read(&app, user, start, limit).await?;
        return Ok(event_stream(app, user, start, first, limit));
    }
    let feed = follow(&app, user, after, wait, limit).await?;
    Ok(Json(feed_answer(&feed, wait, &q)).into_response())
}

#[utoipa::path(get, path = "/api/v4/documents/{document_id}/events/", tag = "events",
    params(("document_id" = i64, Path), crate::page::PageParams),
    responses((status = 200, body = EventPageOut), (status = 404, body = ErrorOut)))]
async fn list_document_events(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    Query(q): Query<HashMap<String, String>>,
    uri: Uri,
) -> ApiResult<Response> {
    let q = ListQuery::parse(q)?;
    app.run(user, move |s| {
        s.document(DocumentId(id))?;
        let query = EventQuery {
            object: Some(("documents.document".into(), id)),
            ..Default::default()
        };
        events_page(s, query, &q, &uri)
    })
    .await
    .map(IntoResponse::into_response)
}

/// A cursor given as `field`: an integer, not negative.
fn cursor_param(value: Option<&str>, field: &str) -> ApiResult<Option<EventId>> {
    let Some(value) = value else {
        return Ok(None);
    };
    let cursor: i64 = value
        .trim()
        .parse()
        .map_err(|_| ApiError::field(field, "A valid integer is required."))?;
    if cursor < 0 {
        return Err(ApiError::field(
            field,
            "Ensure this value is greater than or equal to 0.",
        ));
    }
    Ok(Some(EventId(cursor)))
}

/// `wait`: whole seconds, from 0 to the core's longest wait.
fn wait_param(value: Option<&str>) -> ApiResult<Duration> {
    let Some(value) = value else {
        return Ok(Duration::ZERO);
    };
    let seconds: u64 = value
        .trim()
        .parse()
        .map_err(|_| ApiError::field("wait", "A valid integer is required."))?;
    let wait = Duration::from_secs(seconds);
    if wait > MAX_EVENT_WAIT {
        return Err(ApiError::field(
            "wait",
            format!(
                "Ensure this value is less than or equal to {}.",
                MAX_EVENT_WAIT.as_secs()
            ),
        ));
    }
    Ok(wait)
}

/// One read of the feed after `cursor`, on the blocking pool, not waiting.
async fn read(
    app: &AppState,
    user: UserId,
    cursor: Option<EventId>,
    limit: u32,
) -> ApiResult<EventFeed> {
    app.run(user, move |s| {
        Ok(s.events_after(cursor, Duration::ZERO, limit)?)
    })
    .await
}

/// The next events after `after` that `user` may see, waiting up to `wait` for one: each read
/// is short and on the blocking pool; between reads the request awaits the core's wake-up and
/// holds nothing else.
async fn follow(
    app: &AppState,
    user: UserId,
    after: Option<EventId>,
    wait: Duration,
    limit: u32,
) -> ApiResult<EventFeed> {
    let deadline = Instant::now() + wait;
    let woken = Arc::new(Notify::new());
    // Watching before the first read: a commit after it is never missed.
    let _watch = (!wait.is_zero()).then(|| {
        let woken = woken.clone();
        app.watch_events(move || woken.notify_one())
    });
    let mut cursor = after;
    loop {
        let feed = read(app, user, cursor, limit).await?;
        let moved = feed.cursor != cursor;
        cursor = feed.cursor;
        if !feed.events.is_empty() || Instant::now() >= deadline {
            return Ok(feed);
        }
        // Past events the caller may not see: read on at once, there may be more.
        if moved {
            continue;
        }
        tokio::select! {
            () = woken.notified() => {}
            () = tokio::time::sleep_until(deadline.into()) => {}
            () = app.stopping.stopped() => return Ok(feed),
        }
    }
}

/// The answer of a follower's request: the list's shape, with the cursor, and `next`, the
/// request that goes on from it.
fn feed_answer(feed: &EventFeed, wait: Duration, q: &ListQuery) -> EventsOut {
    let mut next = format!("{EVENTS}?");
    if let Some(cursor) = feed.cursor {
        next.push_str(&format!("after={cursor}&"));
    }
    if q.params.contains_key("page_size") {
        next.push_str(&format!("page_size={}&", q.page_size));
    }
    next.push_str(&format!("wait={}", wait.as_secs()));
    EventsOut {
        count: feed.events.len(),
        next: Some(next),
        previous: None,
        results: feed.events.iter().map(EventOut::from).collect(),
        cursor: Some(feed.cursor.map(|c| c.0)),
    }
}

/// Server-Sent Events from `first` on, for as long as the client reads them: each read on the
/// blocking pool, between reads the core's wake-up awaited with a comment every
/// [`KEEP_ALIVE`]; the stream ends when a read fails (the client connects again from its last
/// event id) or the server stops.
fn event_stream(
    app: AppState,
    user: UserId,
    start: Option<EventId>,
    first: EventFeed,
    limit: u32,
) -> Response {
    let woken = Arc::new(Notify::new());
    let watch = {
        let woken = woken.clone();
        app.watch_events(move || woken.notify_one())
    };
    let mut opening = format!("retry: {RETRY_MS}\n\n").into_bytes();
    opening.extend_from_slice(&sse_events(&first, start));
    let state = Stream {
        app,
        user,
        limit,
        cursor: first.cursor,
        woken,
        _watch: watch,
        pending: Some(Bytes::from(opening)),
        read_now: first.cursor != start,
        keep_alive_at: Instant::now() + KEEP_ALIVE,
    };
    let body = futures_util::stream::unfold(state, |mut s| async move {
        let chunk = s.next_chunk().await?;
        Some((Ok::<_, std::convert::Infallible>(chunk), s))
    });
    let mut response = Body::from_stream(body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    // Proxies that buffer answers (nginx) pass this one on as it comes.
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    *response.status_mut() = StatusCode::OK;
    response
}

/// An event stream between two chunks.
struct Stream {
    app: AppState,
    user: UserId,
    limit: u32,
    cursor: Option<EventId>,
    woken: Arc<Notify>,
    _watch: docmeta_core::EventWatch,
    /// A chunk to send before anything else.
    pending: Option<Bytes>,
    /// Read again before waiting: the last read may not have reached the end of the log.
    read_now: bool,
    /// When to send a comment if nothing else was sent by then.
    keep_alive_at: Instant,
}

impl Stream {
    /// The next chunk to send; `None` ends the stream.
    async fn next_chunk(&mut self) -> Option<Bytes> {
        let chunk = self.produce().await?;
        self.keep_alive_at = Instant::now() + KEEP_ALIVE;
        Some(chunk)
    }

    async fn produce(&mut self) -> Option<Bytes> {
        if let Some(chunk) = self.pending.take() {
            return Some(chunk);
        }
        loop {
            if !self.read_now {
                tokio::select! {
                    () = self.woken.notified() => {}
                    () = tokio::time::sleep_until(self.keep_alive_at.into()) => {
                        return Some(Bytes::from_static(b": keep-alive\n\n"));
                    }
                    () = self.app.stopping.stopped() => return None,
                }
            }
            let feed = match read(&self.app, self.user, self.cursor, self.limit).await {
                Ok(feed) => feed,
                Err(e) => {
                    tracing::warn!(
                        status = e.status.as_u16(),
                        "an event stream ended on a failed read"
                    );
                    return None;
                }
            };
            let before = self.cursor;
            self.cursor = feed.cursor;
            // Events, or a position moved past hidden ones: read on before waiting.
            self.read_now = feed.cursor != before;
            if feed.cursor != before {
                return Some(Bytes::from(sse_events(&feed, before)));
            }
        }
    }
}

/// `feed` as Server-Sent Events: each event as `id`, `event` (its name) and `data` (its JSON);
/// with no event but a cursor past `before`, an `id:` alone, which moves the client's
/// `Last-Event-ID` past events it may not see without dispatching anything.
fn sse_events(feed: &EventFeed, before: Option<EventId>) -> Vec<u8> {
    let mut out = Vec::new();
    for e in &feed.events {
        let json = serde_json::to_string(&EventOut::from(e)).unwrap_or_default();
        out.extend_from_slice(
            format!(
                "id: {}\nevent: {}\ndata: {json}\n\n",
                e.event.id, e.event.name
            )
            .as_bytes(),
        );
    }
    let last_sent = feed.events.last().map(|e| e.event.id);
    if let Some(cursor) = feed.cursor
        && feed.cursor != last_sent
        && feed.cursor != before
    {
        out.extend_from_slice(format!("id: {cursor}\n\n").as_bytes());
    }
    out
}
