//! Renders must not starve the server: a user who may read one document looped its lookup, set (by
//! a holder of `metadata_type_edit`) to a template that runs its whole 2 s budget, from 96 threads:
//! every blocking thread of the server rendered, and `health` waited 23.7 s behind them. Now
//! renders hold no reader connection, run on threads of their own (`renders_at_once` beyond the
//! reads' eight) and one user's renders are capped (`renders_per_user`, `429` beyond), so health
//! and reads answer within 1 s while the attack goes on.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::support::*;

/// A template that runs until its render budget stops it (CPU-bound: sorting 50,000 numbers a
/// hundred thousand times).
const SLOW: &str = "{% for i in range(100000) %}{% if (range(50000)|list|sort|length) > 0 %}{% endif %}{% endfor %}";

/// The demo's reader of everything (no permission to change anything).
const CAROL: (&str, &str) = ("carol", "demo-password");

/// The demo's `owner` type: a lookup, associated with invoices such as document 1.
const OWNER: i64 = 6;

fn timed(s: &Server, path: &str, user: Option<(&str, &str)>) -> (u16, Duration) {
    let quick: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into();
    let started = Instant::now();
    let status = request(&quick, &s.base, "GET", path, user, None).map_or(0, |(status, _)| status);
    (status, started.elapsed())
}

#[test]
fn health_and_reads_answer_while_a_user_loops_a_slow_lookup() {
    let dir = tempfile::tempdir().expect("tempdir");
    prepare(dir.path(), true, "");
    let s = Server::start(dir.path());
    let (status, answer) = s.call(
        "PATCH",
        &format!("/api/v4/metadata/metadata-types/{OWNER}/"),
        Some(ADMIN),
        Some(&json!({"lookup": SLOW})),
    );
    assert_eq!(status, 200, "{answer}");
    let lookup = format!("/api/v4/documents/1/metadata/{OWNER}/lookup/");
    let (status, answer) = s.get(&lookup, CAROL);
    assert_eq!(
        status, 400,
        "the slow lookup runs out of its budget: {answer}"
    );

    let stop = Arc::new(AtomicBool::new(false));
    let throttled = Arc::new(AtomicUsize::new(0));
    let documented = Arc::new(AtomicBool::new(true));
    let attackers: Vec<_> = (0..48)
        .map(|_| {
            let (base, lookup) = (s.base.clone(), lookup.clone());
            let (stop, throttled, documented) =
                (stop.clone(), throttled.clone(), documented.clone());
            std::thread::spawn(move || {
                let agent = agent();
                while !stop.load(Ordering::SeqCst) {
                    let Ok(mut response) = agent
                        .get(format!("{base}{lookup}"))
                        .header("Authorization", basic(CAROL))
                        .call()
                    else {
                        continue;
                    };
                    if response.status().as_u16() == 429 {
                        throttled.fetch_add(1, Ordering::SeqCst);
                        let retry = response.headers().get("retry-after").cloned();
                        let body: Value = response.body_mut().read_json().unwrap_or(Value::Null);
                        let detail = body["detail"].as_str().unwrap_or_default();
                        if retry.is_none() || !detail.contains("renders_per_user") {
                            documented.store(false, Ordering::SeqCst);
                        }
                    }
                }
            })
        })
        .collect();
    // Let the attack fill whatever it can fill.
    std::thread::sleep(Duration::from_secs(3));
    for round in 0..3 {
        let (status, took) = timed(&s, "/api/v4/health/", None);
        assert_eq!(status, 200, "health, round {round}");
        assert!(took < Duration::from_secs(1), "health took {took:?}");
        let (status, took) = timed(&s, "/api/v4/documents/1/", Some(ADMIN));
        assert_eq!(status, 200, "a read, round {round}");
        assert!(took < Duration::from_secs(1), "the read took {took:?}");
        std::thread::sleep(Duration::from_millis(500));
    }
    stop.store(true, Ordering::SeqCst);
    for a in attackers {
        let _ = a.join();
    }
    assert!(
        throttled.load(Ordering::SeqCst) > 0,
        "no lookup beyond the user's cap was refused"
    );
    assert!(
        documented.load(Ordering::SeqCst),
        "a refused lookup was not a 429 with Retry-After naming renders_per_user"
    );
}
