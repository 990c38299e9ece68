//! What every handler gets: the shared state, the authenticated user of a request, path
//! parameters, and how a handler runs core work (as a [`Session`], off the async workers,
//! within the request's time limit). Handlers never see the root [`Docmeta`] handle.
//!
//! May import: `auth` (the credential cache), `clock`, `answers`, `streams`, `error`. Not `app` or `routes`.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::extract::{ConnectInfo, FromRequestParts, Path};
use axum::http::{header, request::Parts};
use docmeta_core::{Docmeta, EventWatch, Session, UserId};
use serde::de::DeserializeOwned;

use crate::answers::MetadataAnswers;
use crate::auth::Auth;
use crate::clock::{REQUEST, request_began};
use crate::conn::Conn;
use crate::error::{ApiError, ApiResult};
use crate::streams::StreamCounter;

/// What every handler gets.
#[derive(Clone)]
pub struct AppState {
    /// The root handle: for authentication and the health check only, never for a handler.
    db: Docmeta,
    pub auth: Arc<Auth>,
    pub openapi: Arc<serde_json::Value>,
    /// Downloads and uploads in progress, per user.
    pub streams: Arc<StreamCounter>,
    /// Metadata pages' answers, by what the core says they show.
    pub metadata_answers: Arc<MetadataAnswers>,
    /// Where uploads are received before they are stored.
    pub spool_dir: Arc<std::path::Path>,
    /// Whether the server is stopping: requests that wait (event feeds) end then.
    pub stopping: Stopping,
}

/// Tells the requests that wait for something (event feeds) that the server is stopping, so
/// that they answer with what they have, or end their stream, instead of holding up a graceful
/// shutdown until their wait ends.
#[derive(Debug, Clone)]
pub struct Stopping(Arc<tokio::sync::watch::Sender<bool>>);

impl Stopping {
    pub fn new() -> Stopping {
        Stopping(Arc::new(tokio::sync::watch::channel(false).0))
    }

    /// Tells every waiting request to end.
    pub fn stop(&self) {
        self.0.send_replace(true);
    }

    /// Completes once the server is stopping (at once if it is).
    pub async fn stopped(&self) {
        let mut stopping = self.0.subscribe();
        let _ = stopping.wait_for(|s| *s).await;
    }
}

impl AppState {
    pub fn new(
        auth: Arc<Auth>,
        streams: Arc<StreamCounter>,
        spool_dir: Arc<std::path::Path>,
        db: Docmeta,
        openapi: Arc<serde_json::Value>,
        stopping: Stopping,
    ) -> AppState {
        AppState {
            db,
            auth,
            openapi,
            streams,
            metadata_answers: Arc::default(),
            spool_dir,
            stopping,
        }
    }

    /// Calls `wake` whenever events may have been committed (by this process or another), until
    /// the watch is dropped: a waiting request awaits it, holding no thread and no database
    /// connection, then reads with `Session::events_after`, which decides what it shows.
    pub fn watch_events(&self, wake: impl Fn() + Send + Sync + 'static) -> EventWatch {
        self.db.watch_events(wake)
    }

    /// A session of `user`, for work that reads no stored data (object kinds, say).
    pub fn session(&self, user: UserId) -> Session {
        self.db.session(user).consistent_from(request_began())
    }

    /// Runs a blocking core call as `user` off the async workers. Within a request's time
    /// limit, the session gets the request's deadline: a change that would commit after it
    /// rolls back (`408`), so a request is never answered "too slow" and then applied.
    pub async fn run<T, F>(&self, user: UserId, f: F) -> ApiResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Session) -> ApiResult<T> + Send + 'static,
    {
        // The authentication caught up as of the request's arrival: each call need not again.
        let session = self.db.session(user).consistent_from(request_began());
        let session = match REQUEST.try_with(Arc::clone) {
            Ok(clock) => {
                clock.started.store(true, Ordering::SeqCst);
                session.with_deadline(clock.deadline)
            }
            Err(_) => session,
        };
        tokio::task::spawn_blocking(move || f(&session))
            .await
            .map_err(|e| {
                tracing::error!(error = %e, "a blocking task failed");
                ApiError::internal()
            })?
    }

    /// Signs a device in: its credentials exchanged for a token, limited as a login is.
    pub async fn sign_in_device(
        &self,
        client: Option<std::net::IpAddr>,
        username: String,
        password: String,
        name: String,
        lifetime: Option<std::time::Duration>,
    ) -> ApiResult<docmeta_core::NewDevice> {
        self.auth
            .sign_in_device(&self.db, client, username, password, name, lifetime)
            .await
    }

    /// The object kinds (names for answers; no stored data).
    pub fn kinds(&self) -> docmeta_core::KindRegistry {
        self.db.kinds()
    }

    /// The CSRF token of a web interface session (the session cookie's value).
    pub fn csrf_token(&self, session: &str) -> String {
        crate::auth::csrf_token(&self.db, session)
    }

    /// The user a web interface session (the session cookie's value) signs in as, read from
    /// the store (a revoke by any process ends it at once), for a request of `method` with
    /// `headers` to `authority` (a change needs the CSRF token and this origin).
    pub async fn session_user(
        &self,
        method: &axum::http::Method,
        headers: &axum::http::HeaderMap,
        authority: Option<&str>,
        session: &str,
    ) -> ApiResult<UserId> {
        crate::auth::authenticate_session(&self.db, method, headers, authority, session).await
    }

    /// Whether the database answers (the health check).
    pub async fn database_ok(&self) -> bool {
        if let Ok(clock) = REQUEST.try_with(Arc::clone) {
            clock.started.store(true, Ordering::SeqCst);
        }
        let db = self.db.clone();
        tokio::task::spawn_blocking(move || db.store().schema_version().is_ok())
            .await
            .unwrap_or(false)
    }

    /// Whether the search index is being rebuilt (the health check).
    pub fn search_rebuilding(&self) -> bool {
        self.db.search_rebuilding()
    }
}

/// The authenticated user of a request.
#[derive(Debug, Clone, Copy)]
pub struct CurrentUser(pub UserId);

impl FromRequestParts<AppState> for CurrentUser {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let header = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        let authority = parts.uri.authority().map(|a| a.as_str());
        // Whatever the credentials: a browser sends a Basic password it keeps with another
        // site's form as well.
        crate::auth::refuse_cross_site(&parts.method, &parts.headers, authority)?;
        if header.is_none()
            && let Some(session) = crate::auth::session_cookie(&parts.headers)
        {
            let session = session.to_owned();
            return crate::auth::authenticate_session(
                &state.db,
                &parts.method,
                &parts.headers,
                authority,
                &session,
            )
            .await
            .map(CurrentUser);
        }
        let client = client_addr(parts);
        state
            .auth
            .authenticate(&state.db, header, client)
            .await
            .map(CurrentUser)
    }
}

/// The address of the client of a request (`None` where the server does not know it).
pub struct ClientAddr(pub Option<std::net::IpAddr>);

impl<S: Send + Sync> FromRequestParts<S> for ClientAddr {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(ClientAddr(client_addr(parts)))
    }
}

/// The address of a request's client, from its connection.
fn client_addr(parts: &Parts) -> Option<std::net::IpAddr> {
    parts
        .extensions
        .get::<ConnectInfo<Conn>>()
        .map(|c| c.0.addr.ip())
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
