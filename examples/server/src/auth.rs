//! HTTP Basic authentication against Argon2id hashes.
//!
//! Verifying Argon2 on every request would cap throughput at a few dozen requests per second per
//! core, so successful verifications are cached in memory, keyed by an HMAC (with the data
//! directory's SECRET_KEY) of the credentials: the cache never holds a password, and a changed
//! password simply misses. Entries of a user are dropped when the user is edited (password,
//! activity, deletion: the `user_management.user_edited` event). Failed attempts are limited per
//! username and per client address (`429` with `Retry-After`).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::{StatusCode, header, request::Parts};
use base64::Engine;
use docmeta_core::{Docmeta, UserId};
use hmac::{Hmac, Mac};
use parking_lot::{Mutex, RwLock};
use sha2::Sha256;

use crate::app::AppState;
use crate::conn::Conn;
use crate::error::ApiError;

/// The window of `login_failures_per_minute`.
const WINDOW: Duration = Duration::from_secs(60);
/// A cached verification is trusted this long before Argon2 runs again.
const CACHE_TTL: Duration = Duration::from_secs(600);

#[derive(Debug)]
struct Failures {
    count: u32,
    since: Instant,
}

/// The credential cache and the failure limiter.
pub struct Auth {
    key: Vec<u8>,
    /// Failed attempts allowed per window, per username and per client address.
    max_failures: u32,
    /// Argon2 verifications running at once (each takes the configured memory cost): a burst
    /// of logins queues here instead of exhausting memory.
    verifying: tokio::sync::Semaphore,
    cache: RwLock<HashMap<[u8; 32], (UserId, Instant)>>,
    failures: Mutex<HashMap<String, Failures>>,
}

impl Auth {
    pub fn new(db: &Docmeta) -> Arc<Auth> {
        let parallel = std::thread::available_parallelism().map_or(2, usize::from);
        let auth = Arc::new(Auth {
            key: db.secret_key().to_vec(),
            max_failures: db.config().login_failures_per_minute,
            verifying: tokio::sync::Semaphore::new(parallel),
            cache: RwLock::new(HashMap::new()),
            failures: Mutex::new(HashMap::new()),
        });
        let weak = Arc::downgrade(&auth);
        db.subscribe(move |event| {
            if event.name == docmeta_core::events::names::USER_EDITED
                && let Some(auth) = weak.upgrade()
            {
                let user = UserId(event.target.id);
                auth.cache.write().retain(|_, (u, _)| *u != user);
            }
        });
        auth
    }

    fn fingerprint(&self, username: &str, password: &str) -> [u8; 32] {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.key)
            .unwrap_or_else(|_| unreachable!("HMAC takes any key length"));
        mac.update(username.as_bytes());
        mac.update(&[0]);
        mac.update(password.as_bytes());
        mac.finalize().into_bytes().into()
    }

    /// Seconds to wait when `key` has failed too often in the current window.
    fn blocked(&self, key: &str) -> Option<u64> {
        let failures = self.failures.lock();
        let f = failures.get(key)?;
        let elapsed = f.since.elapsed();
        (f.count >= self.max_failures && elapsed < WINDOW)
            .then(|| (WINDOW - elapsed).as_secs().max(1))
    }

    fn record_failure(&self, keys: &[String]) {
        let mut failures = self.failures.lock();
        if failures.len() > 100_000 {
            failures.retain(|_, f| f.since.elapsed() < WINDOW);
        }
        for key in keys {
            let f = failures.entry(key.clone()).or_insert(Failures {
                count: 0,
                since: Instant::now(),
            });
            if f.since.elapsed() >= WINDOW {
                *f = Failures {
                    count: 0,
                    since: Instant::now(),
                };
            }
            f.count += 1;
        }
    }

    /// Authenticates `Authorization: Basic ...` from `client`.
    pub async fn authenticate(
        self: &Arc<Self>,
        db: &Docmeta,
        header: Option<&str>,
        client: Option<IpAddr>,
    ) -> Result<UserId, ApiError> {
        let (username, password) = header
            .and_then(parse_basic)
            .ok_or_else(ApiError::unauthorized)?;
        let fingerprint = self.fingerprint(&username, &password);
        if let Some((user, at)) = self.cache.read().get(&fingerprint)
            && at.elapsed() < CACHE_TTL
        {
            return Ok(*user);
        }
        let keys: Vec<String> = [
            Some(format!("user:{username}")),
            client.map(|c| format!("addr:{c}")),
        ]
        .into_iter()
        .flatten()
        .collect();
        if let Some(wait) = keys.iter().filter_map(|k| self.blocked(k)).max() {
            let mut e = ApiError::detail(
                StatusCode::TOO_MANY_REQUESTS,
                "Too many failed login attempts; try again later.",
            );
            e.retry_after = Some(wait);
            return Err(e);
        }
        let _permit = self
            .verifying
            .acquire()
            .await
            .map_err(|_| ApiError::internal())?;
        // Another request may have verified the same credentials while this one waited.
        if let Some((user, at)) = self.cache.read().get(&fingerprint)
            && at.elapsed() < CACHE_TTL
        {
            return Ok(*user);
        }
        let db = db.clone();
        let (name, pass) = (username.clone(), password);
        let user = tokio::task::spawn_blocking(move || db.authenticate(&name, &pass))
            .await
            .map_err(|_| ApiError::internal())??;
        match user {
            Some(u) => {
                let mut cache = self.cache.write();
                if cache.len() > 100_000 {
                    cache.clear();
                }
                cache.insert(fingerprint, (u.id, Instant::now()));
                Ok(u.id)
            }
            None => {
                self.record_failure(&keys);
                Err(ApiError::unauthorized())
            }
        }
    }
}

fn parse_basic(header: &str) -> Option<(String, String)> {
    let encoded = header
        .strip_prefix("Basic ")
        .or_else(|| header.strip_prefix("basic "))?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (user, pass) = text.split_once(':')?;
    Some((user.to_owned(), pass.to_owned()))
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
