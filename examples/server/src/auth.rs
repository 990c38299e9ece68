//! HTTP Basic authentication against Argon2id hashes, and Bearer authentication by a device's
//! token (`Authorization: Bearer dmd_...`, see [`Docmeta::sign_in_device`]).
//!
//! Verifying Argon2 on every request would cap throughput at a few dozen requests per second per
//! core, so successful verifications are cached in memory, keyed by an HMAC (with the data
//! directory's SECRET_KEY) of the credentials: the cache never holds a password, and a changed
//! password simply misses. Each entry remembers [`Docmeta::credentials_epoch`]: when any user is
//! created, edited (password, activity, name) or deleted, in this process or in another one on
//! the same PostgreSQL database, the epoch moves and every entry is verified again.
//!
//! Failed logins are limited three ways (`429` with `Retry-After`). A client's "address" is its
//! IPv4 address, or the /64 network of its IPv6 address (one host usually has a whole /64, so
//! counting single IPv6 addresses would give a guesser billions of them):
//! - per address: `login_failures_per_minute` failures, across all usernames, then that
//!   address waits for the rest of the minute;
//! - per username *and* address: the same, so guessing one user's password from one address
//!   stops there, and locks out nobody else;
//! - a username under attack: once it has failed more than four times
//!   `login_failures_per_minute` from all addresses together (within 15 minutes of each
//!   other; a quiet quarter of an hour forgets it), each address that has failed for it in
//!   those 15 minutes gets one attempt per minute for it. An address that has not failed for
//!   that username is not limited by the attack at all: nobody can lock a user out of an
//!   address they have never guessed from, and a guesser with many addresses still gets only
//!   one guess per address per minute.
//!
//! A device's token is checked against the store on every request (one indexed read; no cache),
//! so a revoke, an expiry or a deactivation committed by any process refuses it at once. The
//! sign-in that makes a token ([`Auth::sign_in_device`]) goes through the same limiter as a
//! Basic login.
//!
//! The web interface signs in the same way: its sign-in makes a device ("Web browser", 12
//! hours) whose token it keeps in an `HttpOnly`, `SameSite=Strict` cookie ([`SESSION_COOKIE`];
//! `Secure` and named with the `__Host-` prefix when the request came through TLS). A request
//! without an `Authorization` header is authenticated by that cookie, as a Bearer token would
//! be, and a request that changes something (any method but `GET`, `HEAD`, `OPTIONS`) must also
//! carry [`CSRF_HEADER`], an HMAC of the cookie that only a page of this origin can have read
//! (from `GET /ui/session`), and come from this origin when the browser says where it came from
//! (`Origin`, `Sec-Fetch-Site`). Basic and Bearer authentication are unchanged: a request with
//! an `Authorization` header never looks at the cookie.
//!
//! The limiter is kept in each process's memory: two `docmeta serve` processes behind one
//! balancer count separately, and a restart forgets.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use base64::Engine;
use docmeta_core::{Docmeta, TOKEN_LEN, UserId};
use parking_lot::{Mutex, RwLock};

use crate::error::ApiError;

/// The window of `login_failures_per_minute`.
const WINDOW: Duration = Duration::from_secs(60);
/// A cached verification is trusted this long before Argon2 runs again.
const CACHE_TTL: Duration = Duration::from_secs(600);
/// How many times `login_failures_per_minute` a username may fail, from all addresses, before
/// it is under attack.
const USER_FAILURES_FACTOR: u32 = 4;
/// A username's failures, and which addresses failed for it, are forgotten after this long
/// without one.
const USER_FAILURES_MEMORY: Duration = Duration::from_secs(900);
/// Past this many entries, a failure map drops what it no longer needs (bounded memory).
const MAX_ENTRIES: usize = 100_000;

/// Failures of one address, or of one username from one address, in the current window.
#[derive(Debug)]
struct Failures {
    count: u32,
    since: Instant,
    /// The latest failure (outlives the window: see [`Auth::under_attack`]).
    last: Instant,
}

impl Failures {
    fn new(now: Instant) -> Failures {
        Failures {
            count: 0,
            since: now,
            last: now,
        }
    }

    /// Counts a failure at `now`, starting a new window when the last one is over.
    fn add(&mut self, now: Instant) {
        if now.duration_since(self.since) >= WINDOW {
            self.count = 0;
            self.since = now;
        }
        self.count = self.count.saturating_add(1);
        self.last = now;
    }

    /// Seconds left in the window once `max` failures are reached in it.
    fn wait(&self, max: u32, now: Instant) -> Option<u64> {
        let elapsed = now.duration_since(self.since);
        (self.count >= max && elapsed < WINDOW).then(|| rounded_up(WINDOW - elapsed))
    }
}

/// Failures of one username from all addresses, to tell when it is under attack.
#[derive(Debug)]
struct UserFailures {
    count: u32,
    last: Instant,
}

/// Where a login comes from, as the limiter counts it: an IPv4 address, an IPv6 /64 network
/// (an IPv4-mapped IPv6 address is its IPv4 address), or nothing known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Origin {
    V4(std::net::Ipv4Addr),
    V6Net(u64),
    Unknown,
}

impl Origin {
    fn of(client: Option<IpAddr>) -> Origin {
        match client.map(|c| c.to_canonical()) {
            Some(IpAddr::V4(a)) => Origin::V4(a),
            Some(IpAddr::V6(a)) => Origin::V6Net((u128::from(a) >> 64) as u64),
            None => Origin::Unknown,
        }
    }
}

/// A verified credential: the user, when it was verified, and the credentials epoch then.
type CacheEntry = (UserId, Instant, u64);

/// The failure limiter's counts (see the module documentation).
#[derive(Default)]
struct Limiter {
    addresses: HashMap<Origin, Failures>,
    /// Per username and address.
    pairs: HashMap<(String, Origin), Failures>,
    users: HashMap<String, UserFailures>,
}

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
    limiter: Mutex<Limiter>,
}

fn rounded_up(d: Duration) -> u64 {
    // A client that waits what Retry-After says is let through.
    (d.as_secs() + u64::from(d.subsec_nanos() > 0)).max(1)
}

impl Auth {
    pub fn new(db: &Docmeta) -> Arc<Auth> {
        let parallel = std::thread::available_parallelism().map_or(2, usize::from);
        Arc::new(Auth {
            db: db.clone(),
            max_failures: db.config().login_failures_per_minute,
            verifying: tokio::sync::Semaphore::new(parallel),
            cache: RwLock::new(HashMap::new()),
            limiter: Mutex::new(Limiter::default()),
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

    /// Whether `username` has failed more than its budget from all addresses lately.
    fn under_attack(&self, limiter: &Limiter, username: &str, now: Instant) -> bool {
        limiter.users.get(username).is_some_and(|f| {
            now.duration_since(f.last) < USER_FAILURES_MEMORY
                && f.count > self.max_failures.saturating_mul(USER_FAILURES_FACTOR)
        })
    }

    /// Seconds `username` must wait before trying from `origin`, if any.
    fn wait(&self, username: &str, origin: Origin) -> Option<u64> {
        let now = Instant::now();
        let limiter = self.limiter.lock();
        let address = limiter
            .addresses
            .get(&origin)
            .and_then(|f| f.wait(self.max_failures, now));
        let pair = limiter.pairs.get(&(username.to_owned(), origin));
        let pair_wait = pair.and_then(|f| f.wait(self.max_failures, now));
        // Under attack, only the addresses that have failed for this username are slowed, to
        // one attempt per window each; any other address logs in as usual.
        let attack = pair
            .filter(|_| self.under_attack(&limiter, username, now))
            .and_then(|f| {
                let since = now.duration_since(f.last);
                (since < WINDOW).then(|| rounded_up(WINDOW - since))
            });
        [address, pair_wait, attack].into_iter().flatten().max()
    }

    fn record_failure(&self, username: &str, origin: Origin) {
        let now = Instant::now();
        let mut limiter = self.limiter.lock();
        if limiter.addresses.len() > MAX_ENTRIES {
            limiter
                .addresses
                .retain(|_, f| now.duration_since(f.since) < WINDOW);
        }
        if limiter.pairs.len() > MAX_ENTRIES {
            limiter
                .pairs
                .retain(|_, f| now.duration_since(f.last) < USER_FAILURES_MEMORY);
        }
        if limiter.users.len() > MAX_ENTRIES {
            limiter
                .users
                .retain(|_, f| now.duration_since(f.last) < USER_FAILURES_MEMORY);
        }
        limiter
            .addresses
            .entry(origin)
            .or_insert_with(|| Failures::new(now))
            .add(now);
        limiter
            .pairs
            .entry((username.to_owned(), origin))
            .or_insert_with(|| Failures::new(now))
            .add(now);
        let user = limiter
            .users
            .entry(username.to_owned())
            .or_insert(UserFailures {
                count: 0,
                last: now,
            });
        if now.duration_since(user.last) >= USER_FAILURES_MEMORY {
            user.count = 0;
        }
        user.count = user.count.saturating_add(1);
        user.last = now;
    }

    /// A login that succeeded from `origin`: its earlier failures for `username` no longer
    /// count against that address (the user mistyped, then got it right).
    fn record_success(&self, username: &str, origin: Origin) {
        self.limiter
            .lock()
            .pairs
            .remove(&(username.to_owned(), origin));
    }

    /// Authenticates `Authorization: Basic ...` from `client`.
    pub async fn authenticate(
        self: &Arc<Self>,
        db: &Docmeta,
        header: Option<&str>,
        client: Option<IpAddr>,
    ) -> Result<UserId, ApiError> {
        if let Some(token) = header.and_then(parse_bearer) {
            return authenticate_device(db, token).await;
        }
        let (username, password) = header
            .and_then(parse_basic)
            .ok_or_else(ApiError::unauthorized)?;
        let fingerprint = self.fingerprint(&username, &password);
        // A password changed or a user deactivated by another process before this request
        // arrived must stop the cached login: apply what was committed before trusting it.
        let began = crate::clock::request_began();
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
        let origin = Origin::of(client);
        if let Some(wait) = self.wait(&username, origin) {
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
                drop(cache);
                self.record_success(&username, origin);
                Ok(u.id)
            }
            None => {
                self.record_failure(&username, origin);
                Err(ApiError::unauthorized())
            }
        }
    }
}

impl Auth {
    /// Signs a device in (`POST /api/v4/devices/`): the username and password exchanged for a
    /// token, limited as a Basic login is (a wrong password counts as a failed login).
    pub async fn sign_in_device(
        self: &Arc<Self>,
        db: &Docmeta,
        client: Option<IpAddr>,
        username: String,
        password: String,
        name: String,
        lifetime: Option<Duration>,
    ) -> Result<docmeta_core::NewDevice, ApiError> {
        let origin = Origin::of(client);
        if let Some(wait) = self.wait(&username, origin) {
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
        let db = db.clone();
        let name_of_user = username.clone();
        let device = tokio::task::spawn_blocking(move || {
            db.sign_in_device(&name_of_user, &password, &name, lifetime)
                .map_err(|e| match e {
                    // The body names the lifetime in days.
                    docmeta_core::Error::Validation { field, .. } if field == "lifetime" => {
                        docmeta_core::Error::Validation {
                            field: "lifetime_days".into(),
                            message: "Ensure this value is between 1 and 365.".into(),
                        }
                    }
                    e => e,
                })
        })
        .await
        .map_err(|_| ApiError::internal())??;
        match device {
            Some(device) => {
                self.record_success(&username, origin);
                Ok(device)
            }
            None => {
                self.record_failure(&username, origin);
                Err(ApiError::unauthorized())
            }
        }
    }
}

/// The web interface's session cookie (over plain HTTP).
pub const SESSION_COOKIE: &str = "docmeta_session";
/// The web interface's session cookie when the request came through TLS: the `__Host-` prefix
/// makes the browser refuse it unless it is `Secure`, for this host only and for every path.
pub const SECURE_SESSION_COOKIE: &str = "__Host-docmeta_session";
/// The header a cookie-authenticated request that changes something carries: the session's
/// CSRF token (see [`csrf_token`]).
pub const CSRF_HEADER: &str = "x-csrf-token";

/// The session cookie's value in a request (`<device id>.<token>`), if it has exactly one: a
/// request that came through TLS is read only by the `__Host-` cookie (which another site or a
/// sibling host cannot set), and one with two session cookies (one planted beside the user's) by
/// neither.
pub fn session_cookie(headers: &HeaderMap) -> Option<&str> {
    let secure = through_tls(headers);
    let mut found = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(|(name, _)| *name == SECURE_SESSION_COOKIE || *name == SESSION_COOKIE);
    let (name, value) = found.next()?;
    if found.next().is_some() || (secure && name != SECURE_SESSION_COOKIE) {
        return None;
    }
    Some(value.trim()).filter(|v| !v.is_empty())
}

/// Whether the request came through TLS, as the proxy in front of the server says
/// (`X-Forwarded-Proto: https`, or `proto=https` in `Forwarded`). It decides whether the session
/// cookie is `Secure` (with the `__Host-` prefix) and which cookie name is read: a client that
/// claims it falsely only stops its own cookie being sent.
pub fn through_tls(headers: &HeaderMap) -> bool {
    let value = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_ascii_lowercase)
    };
    value("x-forwarded-proto").is_some_and(|v| v.split(',').next().map(str::trim) == Some("https"))
        || value("forwarded").is_some_and(|v| {
            v.split([';', ','])
                .any(|p| p.trim() == "proto=https" || p.trim() == "proto=\"https\"")
        })
}

/// The device id and the token of a session cookie's value.
pub fn split_session(value: &str) -> Option<(i64, &str)> {
    let (id, token) = value.split_once('.')?;
    Some((id.parse().ok()?, token))
}

/// The CSRF token of a session: an HMAC, with the installation's secret key, of the cookie's
/// value. A page of another origin can neither read the cookie nor this token.
pub fn csrf_token(db: &Docmeta, session: &str) -> String {
    db.sign_token(&[b"csrf", session.as_bytes()])
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Whether a browser request comes from this server's own pages: its `Sec-Fetch-Site` (when
/// sent) says `same-origin` (or `none`: typed by the user), and its `Origin` (when sent) names
/// the host it was sent to (`Host`, the request's authority under HTTP/2, or the
/// `X-Forwarded-Host` of a proxy that rewrites `Host`; a page of another site can set none of
/// them). A request with neither (not from a browser) passes: clients other than browsers send
/// their credentials themselves, so another site cannot make them send a request.
pub fn same_origin(headers: &HeaderMap, authority: Option<&str>) -> bool {
    let site_ok = headers
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok())
        .is_none_or(|v| v == "same-origin" || v == "none");
    let origin_ok = match headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) {
        None => true,
        Some(origin) => {
            let sent_to = origin
                .strip_prefix("http://")
                .or_else(|| origin.strip_prefix("https://"));
            let header_value = |name| {
                headers
                    .get(name)
                    .and_then(|v: &HeaderValue| v.to_str().ok())
            };
            let forwarded = header_value("x-forwarded-host")
                .and_then(|v| v.split(',').next())
                .map(str::trim);
            sent_to.is_some()
                && [header_value(header::HOST.as_str()), authority, forwarded]
                    .into_iter()
                    .flatten()
                    .any(|host| Some(host) == sent_to)
        }
    };
    site_ok && origin_ok
}

/// Refuses a request that changes something (any method but `GET`, `HEAD`, `OPTIONS`) when a
/// browser says it comes from another site, whatever its credentials: a browser that keeps a
/// Basic password sends it with another site's form too.
pub fn refuse_cross_site(
    method: &Method,
    headers: &HeaderMap,
    authority: Option<&str>,
) -> Result<(), ApiError> {
    let safe = matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS);
    if safe || same_origin(headers, authority) {
        return Ok(());
    }
    Err(ApiError::detail(
        StatusCode::FORBIDDEN,
        "A change may not come from another site's page.",
    ))
}

/// The user of a request authenticated by the web interface's session cookie (`session`, its
/// value). A request that changes something must carry the session's CSRF token and come from
/// this origin (`403` otherwise); the token is then checked as a device's.
pub async fn authenticate_session(
    db: &Docmeta,
    method: &Method,
    headers: &HeaderMap,
    authority: Option<&str>,
    session: &str,
) -> Result<UserId, ApiError> {
    let safe = matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS);
    if !safe {
        let sent = headers.get(CSRF_HEADER).map_or(&[][..], |v| v.as_bytes());
        let expected = csrf_token(db, session);
        // Compared in constant time (the lengths are public: a token is 64 hex digits).
        let token_ok = sent.len() == expected.len()
            && sent
                .iter()
                .zip(expected.as_bytes())
                .fold(0u8, |diff, (a, b)| diff | (a ^ b))
                == 0;
        if !token_ok || !same_origin(headers, authority) {
            return Err(ApiError::detail(
                StatusCode::FORBIDDEN,
                "CSRF check failed: a change made with the session cookie must come from this \
                 server's own pages, with the session's X-CSRF-Token header.",
            ));
        }
    }
    let Some((_, token)) = split_session(session) else {
        return Err(ApiError::detail(
            StatusCode::UNAUTHORIZED,
            "Invalid session.",
        ));
    };
    authenticate_device(db, token).await
}

/// The user a device's token signs in as (read from the store: see the module's documentation).
async fn authenticate_device(db: &Docmeta, token: &str) -> Result<UserId, ApiError> {
    let db = db.clone();
    let token = token.to_owned();
    let user = tokio::task::spawn_blocking(move || db.authenticate_device(&token))
        .await
        .map_err(|_| ApiError::internal())??;
    user.map(|u| u.id).ok_or_else(|| {
        // Revoked, expired, unknown, or its user deactivated: the device signs in again.
        ApiError::detail(StatusCode::UNAUTHORIZED, "Invalid token.")
    })
}

fn parse_bearer(header: &str) -> Option<&str> {
    header
        .strip_prefix("Bearer ")
        .or_else(|| header.strip_prefix("bearer "))
        .map(str::trim)
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

    fn at(address: &str) -> Origin {
        Origin::of(Some(address.parse().expect("an address")))
    }

    fn fail(auth: &Auth, user: &str, address: &str) {
        auth.record_failure(user, at(address));
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
    fn a_few_failures_from_many_addresses_slow_down_no_address() {
        let auth = auth();
        for i in 0..auth.max_failures * USER_FAILURES_FACTOR {
            fail(&auth, "ann", &format!("10.0.0.{i}"));
        }
        assert_eq!(auth.wait("ann", at("10.0.0.1")), None);
    }

    #[test]
    fn under_attack_each_failing_address_waits_and_a_fresh_one_does_not() {
        let auth = auth();
        for i in 0..=auth.max_failures * USER_FAILURES_FACTOR {
            fail(&auth, "ann", &format!("10.0.0.{i}"));
        }
        let wait = auth
            .wait("ann", at("10.0.0.3"))
            .expect("a failing address waits");
        assert!((59..=60).contains(&wait), "{wait}");
        assert_eq!(auth.wait("ann", at("10.0.1.1")), None, "a fresh address");
        assert_eq!(
            auth.wait("bob", at("10.0.0.3")),
            None,
            "other users are not affected"
        );
    }

    #[test]
    fn a_success_forgets_that_address_s_failures_for_that_user() {
        let auth = auth();
        for _ in 0..auth.max_failures {
            fail(&auth, "ann", "10.0.0.1");
        }
        auth.record_success("ann", at("10.0.0.1"));
        // The address itself stays limited (it failed ten times in this minute).
        assert!(auth.wait("bob", at("10.0.0.1")).is_some());
        assert!(
            !auth
                .limiter
                .lock()
                .pairs
                .contains_key(&("ann".into(), at("10.0.0.1")))
        );
    }

    #[test]
    fn ipv6_addresses_of_one_64_network_count_as_one() {
        let auth = auth();
        for i in 0..auth.max_failures {
            fail(&auth, &format!("user{i}"), &format!("2001:db8:1:2::{i:x}"));
        }
        assert!(auth.wait("anyone", at("2001:db8:1:2:ffff::9")).is_some());
        assert_eq!(auth.wait("anyone", at("2001:db8:1:3::1")), None);
        assert_eq!(at("::ffff:10.0.0.1"), at("10.0.0.1"));
    }
}
