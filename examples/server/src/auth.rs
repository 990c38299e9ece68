//! HTTP Basic authentication against Argon2id hashes.
//!
//! Verifying Argon2 on every request would cap throughput at a few dozen requests per second per
//! core, so successful verifications are cached in memory, keyed by an HMAC (with the data
//! directory's SECRET_KEY) of the credentials: the cache never holds a password, and a changed
//! password simply misses. Each entry remembers [`Docmeta::credentials_epoch`]: when any user is
//! created, edited (password, activity, name) or deleted, in this process or in another one on
//! the same PostgreSQL database, the epoch moves and every entry is verified again.
//!
//! Failed logins are limited three ways (`429` with `Retry-After`):
//! - per client address: `login_failures_per_minute` failures, then that address waits for the
//!   rest of the minute;
//! - per username *and* address: the same, so guessing one user's password from one address
//!   stops there, and locks out nobody else;
//! - per username across all addresses, progressively: only after four times
//!   `login_failures_per_minute` failures (a guesser with many addresses), each further failure
//!   locks the username for twice as long as the one before, from 1 s up to 5 minutes; a quiet
//!   quarter of an hour forgets it. So nobody can lock a known user out for a minute with a few
//!   wrong passwords, and a distributed guesser's rate still drops exponentially.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use base64::Engine;
use docmeta_core::{Docmeta, TOKEN_LEN, UserId};
use parking_lot::{Mutex, RwLock};

use crate::error::ApiError;

/// The window of `login_failures_per_minute`.
const WINDOW: Duration = Duration::from_secs(60);
/// A cached verification is trusted this long before Argon2 runs again.
const CACHE_TTL: Duration = Duration::from_secs(600);
/// How many times `login_failures_per_minute` a username may fail, from any addresses, before
/// its progressive lockout starts.
const USER_FAILURES_FACTOR: u32 = 4;
/// The longest progressive lockout of a username.
const MAX_USER_LOCKOUT: Duration = Duration::from_secs(300);
/// A username's failures are forgotten after this long without one.
const USER_FAILURES_MEMORY: Duration = Duration::from_secs(900);

/// Failures of one key in the current window.
#[derive(Debug)]
struct Failures {
    count: u32,
    since: Instant,
}

/// Failures of one username from every address, for the progressive lockout.
#[derive(Debug)]
struct UserFailures {
    count: u32,
    last: Instant,
    locked_until: Option<Instant>,
}

/// A verified credential: the user, when it was verified, and the credentials epoch then.
type CacheEntry = (UserId, Instant, u64);

/// The credential cache and the failure limiter.
pub struct Auth {
    /// Signs the cache keys (with the data directory's secret key, which stays in the core).
    db: Docmeta,
    /// Failed attempts allowed per window, per client address and per username and address.
    max_failures: u32,
    /// Argon2 verifications running at once (each takes the configured memory cost): a burst
    /// of logins queues here instead of exhausting memory.
    verifying: tokio::sync::Semaphore,
    cache: RwLock<HashMap<[u8; TOKEN_LEN], CacheEntry>>,
    failures: Mutex<HashMap<String, Failures>>,
    user_failures: Mutex<HashMap<String, UserFailures>>,
}

impl Auth {
    pub fn new(db: &Docmeta) -> Arc<Auth> {
        let parallel = std::thread::available_parallelism().map_or(2, usize::from);
        Arc::new(Auth {
            db: db.clone(),
            max_failures: db.config().login_failures_per_minute,
            verifying: tokio::sync::Semaphore::new(parallel),
            cache: RwLock::new(HashMap::new()),
            failures: Mutex::new(HashMap::new()),
            user_failures: Mutex::new(HashMap::new()),
        })
    }

    fn fingerprint(&self, username: &str, password: &str) -> [u8; TOKEN_LEN] {
        self.db
            .sign_token(&[username.as_bytes(), password.as_bytes()])
    }

    /// The user of a cached verification still valid under `epoch`.
    fn cached(&self, fingerprint: &[u8; TOKEN_LEN], epoch: u64) -> Option<UserId> {
        self.cache
            .read()
            .get(fingerprint)
            .filter(|(_, at, e)| at.elapsed() < CACHE_TTL && *e == epoch)
            .map(|(user, _, _)| *user)
    }

    /// Seconds to wait when `key` has failed too often in the current window.
    fn blocked(&self, key: &str) -> Option<u64> {
        let failures = self.failures.lock();
        let f = failures.get(key)?;
        let elapsed = f.since.elapsed();
        (f.count >= self.max_failures && elapsed < WINDOW)
            .then(|| (WINDOW - elapsed).as_secs().max(1))
    }

    /// Seconds to wait while `username` is under its progressive lockout.
    fn user_locked(&self, username: &str) -> Option<u64> {
        let failures = self.user_failures.lock();
        let until = failures.get(username)?.locked_until?;
        let left = until.checked_duration_since(Instant::now())?;
        // Rounded up: a client that waits what Retry-After says is let through.
        Some(left.as_secs() + u64::from(left.subsec_nanos() > 0))
    }

    fn record_failure(&self, keys: &[String], username: &str) {
        {
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
        let mut users = self.user_failures.lock();
        if users.len() > 100_000 {
            users.retain(|_, f| f.last.elapsed() < USER_FAILURES_MEMORY);
        }
        let now = Instant::now();
        let f = users.entry(username.to_owned()).or_insert(UserFailures {
            count: 0,
            last: now,
            locked_until: None,
        });
        if f.last.elapsed() >= USER_FAILURES_MEMORY {
            f.count = 0;
            f.locked_until = None;
        }
        f.count = f.count.saturating_add(1);
        f.last = now;
        let threshold = self.max_failures.saturating_mul(USER_FAILURES_FACTOR);
        if f.count > threshold {
            let doublings = (f.count - threshold - 1).min(16);
            let lockout = Duration::from_secs(1 << doublings).min(MAX_USER_LOCKOUT);
            f.locked_until = Some(now + lockout);
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
        // A password changed or a user deactivated by another process before this request
        // arrived must stop the cached login: apply what was committed before trusting it.
        let began = crate::state::request_began();
        if !db.caught_up_since(began) {
            let db = db.clone();
            tokio::task::spawn_blocking(move || db.catch_up_since(began))
                .await
                .map_err(|_| ApiError::internal())??;
        }
        // Read before verifying: a user edit committed meanwhile makes this entry stale.
        let epoch = db.credentials_epoch();
        if let Some(user) = self.cached(&fingerprint, epoch) {
            return Ok(user);
        }
        let keys: Vec<String> = match client {
            Some(c) => vec![format!("addr:{c}"), format!("user:{username}@{c}")],
            None => vec![format!("user:{username}")],
        };
        let wait = keys
            .iter()
            .filter_map(|k| self.blocked(k))
            .chain(self.user_locked(&username))
            .max();
        if let Some(wait) = wait {
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
        if let Some(user) = self.cached(&fingerprint, epoch) {
            return Ok(user);
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
                cache.insert(fingerprint, (u.id, Instant::now(), epoch));
                Ok(u.id)
            }
            None => {
                self.record_failure(&keys, &username);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn auth() -> Arc<Auth> {
        let db = Docmeta::in_memory().expect("database");
        Auth::new(&db)
    }

    fn fail(auth: &Auth, user: &str, address: &str) {
        auth.record_failure(
            &[format!("addr:{address}"), format!("user:{user}@{address}")],
            user,
        );
    }

    #[test]
    fn the_cache_key_is_the_hmac_of_username_nul_password_with_the_secret_key() {
        use hmac::{Hmac, Mac};
        let dir = tempfile::tempdir().expect("temporary directory");
        let db = Docmeta::builder()
            .data_dir(dir.path())
            .open()
            .expect("database");
        let hex = std::fs::read_to_string(dir.path().join("system/SECRET_KEY")).expect("key");
        let hex = hex.trim();
        let key: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
            .collect();
        let mut mac = <Hmac<sha2::Sha256> as Mac>::new_from_slice(&key).expect("any key length");
        mac.update(b"ann\0a long password");
        let expected: [u8; 32] = mac.finalize().into_bytes().into();
        assert_eq!(
            Auth::new(&db).fingerprint("ann", "a long password"),
            expected
        );
    }

    #[test]
    fn a_few_failures_from_many_addresses_do_not_lock_a_user() {
        let auth = auth();
        for i in 0..auth.max_failures * USER_FAILURES_FACTOR {
            fail(&auth, "ann", &format!("10.0.0.{i}"));
        }
        assert_eq!(auth.user_locked("ann"), None);
    }

    #[test]
    fn the_user_lockout_doubles_with_each_failure_past_the_threshold() {
        let auth = auth();
        for i in 0..auth.max_failures * USER_FAILURES_FACTOR {
            fail(&auth, "ann", &format!("10.0.0.{i}"));
        }
        fail(&auth, "ann", "10.0.1.1");
        assert_eq!(auth.user_locked("ann"), Some(1));
        fail(&auth, "ann", "10.0.1.2");
        fail(&auth, "ann", "10.0.1.3");
        assert_eq!(auth.user_locked("ann"), Some(4));
        assert_eq!(
            auth.user_locked("bob"),
            None,
            "other users are not affected"
        );
    }

    #[test]
    fn the_user_lockout_never_exceeds_five_minutes() {
        let auth = auth();
        for i in 0..200 {
            fail(&auth, "ann", &format!("10.0.{}.{}", i / 250, i % 250));
        }
        let locked = auth.user_locked("ann").expect("locked");
        assert!(locked <= MAX_USER_LOCKOUT.as_secs(), "{locked}");
    }
}
