//! What every handler gets: the shared state, the request's time limit, and the extractors that
//! read the state (path ids, the authenticated user). Routes and middleware import this module;
//! it imports neither (the router in `app.rs` puts them together).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use axum::extract::{ConnectInfo, FromRequestParts, Path};
use axum::http::{header, request::Parts};
use docmeta_core::Docmeta;
use serde::de::DeserializeOwned;

use crate::auth::{Auth, CurrentUser};
use crate::conn::Conn;
use crate::error::{ApiError, ApiResult};
use crate::streams::StreamCounter;

/// What every handler gets.
#[derive(Clone)]
pub struct AppState {
    pub db: Docmeta,
    pub auth: Arc<Auth>,
    pub openapi: Arc<serde_json::Value>,
    /// Downloads and uploads in progress, per user.
    pub streams: Arc<StreamCounter>,
    /// Where uploads are received before they are stored.
    pub spool_dir: PathBuf,
}

tokio::task_local! {
    /// The time limit of the request being handled (absent for uploads, which have their own).
    pub(crate) static REQUEST: Arc<RequestClock>;
}

/// A request's time limit, and whether its handler has begun work in the core.
#[derive(Debug)]
pub(crate) struct RequestClock {
    pub(crate) deadline: Instant,
    /// Set when the handler hands work to the core: from then on the core's deadline check
    /// decides the outcome, and the answer waits for it.
    pub(crate) started: AtomicBool,
}

impl AppState {
    /// Runs a blocking core call off the async workers. Within a request's time limit, the
    /// core gets the request's deadline: a change that would commit after it rolls back
    /// (`408`), so a request is never answered "too slow" and then applied.
    pub async fn run<T, F>(&self, f: F) -> ApiResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Docmeta) -> ApiResult<T> + Send + 'static,
    {
        let db = match REQUEST.try_with(Arc::clone) {
            Ok(clock) => {
                clock.started.store(true, Ordering::SeqCst);
                self.db.with_deadline(clock.deadline)
            }
            Err(_) => self.db.clone(),
        };
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
        let client = parts
            .extensions
            .get::<ConnectInfo<Conn>>()
            .map(|c| c.0.addr.ip());
        state
            .auth
            .authenticate(&state.db, header, client)
            .await
            .map(CurrentUser)
    }
}
