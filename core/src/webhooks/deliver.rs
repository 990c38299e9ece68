//! The deliverer: a dispatcher thread that claims due deliveries and a bounded pool of threads
//! that send them, one webhook per thread at a time.
//!
//! - **At least once, in order.** A delivery is a row written with its event (the outbox), so a
//!   process killed at any moment loses none; it is marked delivered only after a `2xx`
//!   answer, so one may be sent again (receivers drop repeats by `webhook-id`). Only the oldest
//!   pending delivery of a webhook is ever claimed (see `Tx::claim_webhook_delivery`), so a
//!   webhook's deliveries go one after another, in commit order, and a later one waits while an
//!   earlier one is retried.
//! - **One sender per delivery.** A claim is a lease (its end and a random token) on the row,
//!   taken by a conditional update (on PostgreSQL after `FOR UPDATE SKIP LOCKED`), so that
//!   several processes on one database never send one delivery at once; an outcome counts only
//!   under its own claim's token. A process starting alone on its data directory ends the
//!   claims a killed one left; otherwise they end after [`LEASE`].
//! - **As its owner may see it, when it is sent.** The payload is the event as
//!   `Session::events` shows it to the webhook's owner at that moment (its action object and
//!   actor removed when they may not view them). An event whose target the owner may not view
//!   is never sent, and its delivery is removed (so nothing about it is listed either). While
//!   the owner is deactivated the webhook stops: nothing is queued and nothing is sent.
//! - **Retries.** Anything but a `2xx` answer (redirects are not followed) is retried after 10
//!   s, doubling up to an hour, until the delivery is a day old; then it is failed.
//! - **A slow receiver delays only its own webhook.** [`SENDERS`] threads send at once, each
//!   bounded by the HTTP client's timeouts (10 s to connect, 10 s for the answer, 40 s in all).
//!
//! Part of `webhooks` (layer 7 of `scripts/check-structure`): it may import only what
//! `webhooks` may (see `webhooks`' module documentation).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use chrono::Utc;
use parking_lot::{Condvar, Mutex};

use super::address::CheckedResolver;
use super::sign::{secret_key, signature};
use crate::error::Result;
use crate::kernel::{Docmeta, Inner};
use crate::model::*;
use crate::session::Session;
use crate::store::{ClaimedDelivery, DeliveryOutcome};

/// Threads sending deliveries at once (each to another webhook).
pub(crate) const SENDERS: usize = 4;
/// How long a claim holds a delivery: longer than an attempt may take ([`TIMEOUT_TOTAL`]).
const LEASE: Duration = Duration::from_secs(120);
/// The HTTP client's time limits.
const TIMEOUT_CONNECT: Duration = Duration::from_secs(10);
const TIMEOUT_ANSWER: Duration = Duration::from_secs(10);
const TIMEOUT_TOTAL: Duration = Duration::from_secs(40);
/// The first retry's delay, doubled after each failed attempt up to [`LAST_DELAY`].
const FIRST_DELAY_SECONDS: i64 = 10;
const LAST_DELAY_SECONDS: i64 = 3600;
/// A delivery whose attempt fails this long after it was queued is failed.
const GIVE_UP_AFTER_HOURS: i64 = 24;
/// How long delivered and failed deliveries are kept.
const KEEP_DELIVERED_DAYS: i64 = 7;
const KEEP_FAILED_DAYS: i64 = 30;
/// How often the dispatcher looks for due deliveries when nothing wakes it (deliveries queued
/// by other processes, retries coming due).
const POLL: Duration = Duration::from_secs(1);
/// How often delivered and failed deliveries past their keeping time are removed.
const PRUNE_EVERY: Duration = Duration::from_secs(3600);
/// The longest error message kept with a delivery.
const MAX_ERROR_LEN: usize = 500;

/// Claimed deliveries waiting for a sender, and how many senders are free.
struct Pool {
    queue: Mutex<(Vec<ClaimedDelivery>, usize)>,
    changed: Condvar,
}

/// The running deliverer of one instance; stopping it (dropping it) lets its threads end: the
/// dispatcher at once, a sender when its current attempt ends.
pub(crate) struct Deliverer {
    stop: Arc<AtomicBool>,
    pool: Arc<Pool>,
    inner: Weak<Inner>,
    dispatcher: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Deliverer {
    /// Starts the dispatcher and [`SENDERS`] senders for `db`.
    pub(crate) fn start(db: &Docmeta) -> Deliverer {
        let stop = Arc::new(AtomicBool::new(false));
        let pool = Arc::new(Pool {
            queue: Mutex::new((Vec::new(), SENDERS)),
            changed: Condvar::new(),
        });
        let weak = Arc::downgrade(&db.inner);
        let agent = agent(db.config().webhooks_allow_private_networks);
        for n in 0..SENDERS {
            let (stop, pool, weak, agent) =
                (stop.clone(), pool.clone(), weak.clone(), agent.clone());
            let _ = std::thread::Builder::new()
                .name(format!("docmeta-webhooks-{n}"))
                .spawn(move || send_loop(&stop, &pool, &weak, &agent));
        }
        let (thread_stop, thread_pool, thread_weak) = (stop.clone(), pool.clone(), weak.clone());
        let dispatcher = std::thread::Builder::new()
            .name("docmeta-webhooks".into())
            .spawn(move || dispatch_loop(&thread_stop, &thread_pool, &thread_weak))
            .ok();
        Deliverer {
            stop,
            pool,
            inner: weak,
            dispatcher: Mutex::new(dispatcher),
        }
    }
}

impl Drop for Deliverer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        {
            let _queue = self.pool.queue.lock();
            self.pool.changed.notify_all();
        }
        if let Some(inner) = self.inner.upgrade() {
            Docmeta::from_inner(inner).notify_deliveries();
        }
        if let Some(h) = self.dispatcher.lock().take()
            && h.thread().id() != std::thread::current().id()
        {
            let _ = h.join();
        }
    }
}

/// The HTTP client of deliveries: no proxy, no redirects, no kept connections (each delivery
/// resolves and checks its host again), every non-`2xx` status an answer rather than an error.
fn agent(allow_private: bool) -> ureq::Agent {
    let config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .proxy(None)
        .max_idle_connections(0)
        .timeout_resolve(Some(TIMEOUT_CONNECT))
        .timeout_connect(Some(TIMEOUT_CONNECT))
        .timeout_send_request(Some(TIMEOUT_ANSWER))
        .timeout_send_body(Some(TIMEOUT_ANSWER))
        .timeout_recv_response(Some(TIMEOUT_ANSWER))
        .timeout_global(Some(TIMEOUT_TOTAL))
        .user_agent(concat!("docmeta-webhooks/", env!("CARGO_PKG_VERSION")))
        .build();
    ureq::Agent::with_parts(
        config,
        ureq::unversioned::transport::DefaultConnector::new(),
        CheckedResolver { allow_private },
    )
}

/// Claims due deliveries while senders are free and hands them over; sleeps until woken (events
/// committed, a sender free, a retry) or [`POLL`] has passed.
fn dispatch_loop(stop: &AtomicBool, pool: &Pool, weak: &Weak<Inner>) {
    let mut last_prune: Option<std::time::Instant> = None;
    while !stop.load(Ordering::SeqCst) {
        let Some(inner) = weak.upgrade() else {
            return;
        };
        let db = Docmeta::from_inner(inner);
        if last_prune.is_none_or(|t| t.elapsed() >= PRUNE_EVERY) {
            let now = Utc::now();
            let _ = db.write_system(|tx| {
                tx.prune_webhook_deliveries(
                    now - chrono::Duration::days(KEEP_DELIVERED_DAYS),
                    now - chrono::Duration::days(KEEP_FAILED_DAYS),
                )
            });
            last_prune = Some(std::time::Instant::now());
        }
        // Every free sender gets a claimed delivery, while there are due ones.
        let mut claimed_any = false;
        while !stop.load(Ordering::SeqCst) && pool.queue.lock().1 > 0 {
            match claim(&db) {
                Ok(Some(claimed)) => {
                    let mut queue = pool.queue.lock();
                    queue.1 -= 1;
                    queue.0.push(claimed);
                    pool.changed.notify_all();
                    claimed_any = true;
                }
                _ => break,
            }
        }
        {
            let (lock, cv) = &db.inner.delivery_signal;
            let mut woken = lock.lock();
            if !*woken && !stop.load(Ordering::SeqCst) && !claimed_any {
                cv.wait_for(&mut woken, POLL);
            }
            *woken = false;
        }
        drop(db);
        // With every sender busy, wait for one to be free.
        let mut queue = pool.queue.lock();
        while queue.1 == 0 && !stop.load(Ordering::SeqCst) {
            pool.changed.wait_for(&mut queue, POLL);
        }
    }
}

/// The next due delivery, claimed: looked for in a read first (nothing is written while none is
/// due), then claimed in a write.
fn claim(db: &Docmeta) -> Result<Option<ClaimedDelivery>> {
    let now = Utc::now();
    if !db.read(|tx| tx.webhook_delivery_due(now))? {
        return Ok(None);
    }
    let mut token = [0u8; 16];
    getrandom::fill(&mut token)
        .map_err(|e| crate::error::Error::storage("claiming a delivery", e.to_string()))?;
    let token = crate::config::encode_hex(&token);
    let lease = chrono::Duration::from_std(LEASE).unwrap_or_else(|_| chrono::Duration::minutes(2));
    db.write_system(|tx| tx.claim_webhook_delivery(now, now + lease, &token))
}

/// A sender: takes claimed deliveries and sends them, until stopped.
fn send_loop(stop: &AtomicBool, pool: &Pool, weak: &Weak<Inner>, agent: &ureq::Agent) {
    loop {
        let claimed = {
            let mut queue = pool.queue.lock();
            loop {
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                if let Some(c) = queue.0.pop() {
                    break c;
                }
                pool.changed.wait_for(&mut queue, POLL);
            }
        };
        let id = claimed.delivery.id;
        let token = claimed.token.clone();
        if send(weak, agent, claimed).is_err() {
            // The store failed before the outcome was recorded: the claim ends, and the
            // delivery is tried again.
            if let Some(inner) = weak.upgrade() {
                let db = Docmeta::from_inner(inner);
                let _ = db.write_system(|tx| tx.release_webhook_delivery(id, &token));
            }
        }
        let mut queue = pool.queue.lock();
        queue.1 += 1;
        pool.changed.notify_all();
        drop(queue);
        if let Some(inner) = weak.upgrade() {
            Docmeta::from_inner(inner).notify_deliveries();
        }
    }
}

/// What a claimed delivery sends: its body and the key that signs it.
struct Prepared {
    body: Vec<u8>,
    key: Vec<u8>,
}

/// Sends one claimed delivery and records the outcome.
fn send(weak: &Weak<Inner>, agent: &ureq::Agent, claimed: ClaimedDelivery) -> Result<()> {
    let Some(inner) = weak.upgrade() else {
        return Ok(());
    };
    let db = Docmeta::from_inner(inner);
    let Some(prepared) = prepare(&db, &claimed)? else {
        return Ok(());
    };
    // The instance is not held while the receiver answers: it may close meanwhile.
    drop(db);
    let message_id = &claimed.delivery.message_id;
    let timestamp = Utc::now().timestamp();
    let answer = agent
        .post(&claimed.url)
        .header("content-type", "application/json")
        .header("webhook-id", message_id)
        .header("webhook-timestamp", timestamp.to_string())
        .header(
            "webhook-signature",
            signature(&prepared.key, message_id, timestamp, &prepared.body),
        )
        .send(&prepared.body[..]);
    let (code, error) = match answer {
        Ok(response) => {
            let code = response.status().as_u16();
            let error = if response.status().is_success() {
                String::new()
            } else {
                format!("the receiver answered {}", response.status())
            };
            (Some(code), error)
        }
        Err(e) => (None, e.to_string()),
    };
    let Some(inner) = weak.upgrade() else {
        return Ok(());
    };
    let db = Docmeta::from_inner(inner);
    let now = Utc::now();
    let attempts = claimed.delivery.attempts + 1;
    let status = if error.is_empty() {
        DeliveryStatus::Delivered
    } else if now - claimed.delivery.created >= chrono::Duration::hours(GIVE_UP_AFTER_HOURS) {
        DeliveryStatus::Failed
    } else {
        DeliveryStatus::Pending
    };
    let delay = (FIRST_DELAY_SECONDS << (attempts - 1).clamp(0, 20)).min(LAST_DELAY_SECONDS);
    let error: String = error.chars().take(MAX_ERROR_LEN).collect();
    let outcome = DeliveryOutcome {
        status,
        status_code: code,
        at: now,
        next_attempt: if status == DeliveryStatus::Pending {
            now + chrono::Duration::seconds(delay)
        } else {
            now
        },
        error: &error,
    };
    db.write_system(|tx| {
        tx.finish_webhook_delivery(claimed.delivery.id, &claimed.token, &outcome)
    })?;
    Ok(())
}

/// The body and key of a claimed delivery, or `None` when it is not sent: its owner was
/// deactivated since it was claimed (the claim ends; it waits), or may not see its event (it is
/// removed).
fn prepare(db: &Docmeta, claimed: &ClaimedDelivery) -> Result<Option<Prepared>> {
    let id = claimed.delivery.id;
    let token = &claimed.token;
    let (owner, event) =
        db.read(|tx| Ok((tx.user(claimed.owner)?, tx.event(claimed.delivery.event)?)))?;
    if !owner.is_some_and(|o| o.is_active) {
        db.write_system(|tx| tx.release_webhook_delivery(id, token))?;
        return Ok(None);
    }
    let shown = match event {
        Some(event) => Session::new(db.clone(), Actor::User(claimed.owner)).event_as_seen(event)?,
        None => None,
    };
    let Some(shown) = shown else {
        db.write_system(|tx| tx.drop_webhook_delivery(id, token))?;
        return Ok(None);
    };
    let key = match secret_key(&claimed.secret) {
        Ok(key) => key,
        Err(_) => {
            // Secrets are checked when stored; one that is not valid is never sent with.
            db.write_system(|tx| tx.release_webhook_delivery(id, token))?;
            return Ok(None);
        }
    };
    let body = payload(&shown, claimed.delivery.webhook);
    Ok(Some(Prepared {
        body: serde_json::to_vec(&body).unwrap_or_default(),
        key,
    }))
}

/// The JSON a delivery POSTs (Standard Webhooks' `type`, `timestamp`, `data`): `data` is the
/// event as `GET /api/v4/events/` shows it, with the webhook's id.
fn payload(shown: &EventView, webhook: WebhookId) -> serde_json::Value {
    let e = &shown.event;
    let object = |o: &crate::events::EventObject| {
        let (app_label, model_name) = o.kind.split_once('.').unwrap_or((&o.kind, ""));
        serde_json::json!({
            "app_label": app_label,
            "model_name": model_name,
            "id": o.id,
            "label": o.label,
        })
    };
    let timestamp = e
        .timestamp
        .to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    serde_json::json!({
        "type": e.name,
        "timestamp": timestamp,
        "webhook": webhook.0,
        "data": {
            "id": e.id.0,
            "timestamp": timestamp,
            "name": e.name,
            "actor": shown.actor.as_ref().map(|a| serde_json::json!({
                "id": a.id.0,
                "username": a.username,
            })),
            "target": object(&e.target),
            "action_object": e.action_object.as_ref().map(object),
            "changes": e.changes.iter().map(|c| serde_json::json!({
                "field": c.field,
                "before": c.before,
                "after": c.after,
            })).collect::<Vec<_>>(),
        },
    })
}
