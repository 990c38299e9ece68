//! A steady mixed load against a running `docmeta serve` (started by `scripts/soak`), reporting
//! every interval the requests, errors, latency and the server's resident memory.
//!
//! Usage: `soak BASE_URL SERVER_PID [SECONDS] [RATE]` (defaults: 300 s, 200 requests/s).
//! The mix, per 20 requests: 7 reads of a document's metadata, 3 metadata edits through the date
//! parser, 2 document listings, 2 searches, 2 document creations, 1 file upload, 1 file
//! download, 1 event listing and 1 deletion of a document this run created (the data set stays
//! about the same size, so memory should stay flat). Any answer other than the expected 2xx is
//! an error; the exit status is non-zero when there was one.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const ADMIN: (&str, &str) = ("admin", "admin-password");
const ALICE: (&str, &str) = ("alice", "demo-password");
const CAROL: (&str, &str) = ("carol", "demo-password");
const WORKERS: u64 = 16;
const INTERVAL: Duration = Duration::from_secs(10);

fn basic(user: (&str, &str)) -> String {
    use base64::Engine;
    let token = base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", user.0, user.1));
    format!("Basic {token}")
}

/// One exchange: the status (0 when the connection failed) and the JSON answer.
fn exchange(
    agent: &ureq::Agent,
    method: &str,
    url: &str,
    user: (&str, &str),
    body: Option<Value>,
) -> (u16, Value) {
    let auth = basic(user);
    let response = match (method, body) {
        ("GET", _) => agent.get(url).header("Authorization", &auth).call(),
        ("DELETE", _) => agent.delete(url).header("Authorization", &auth).call(),
        (m, body) => {
            let r = if m == "PATCH" {
                agent.patch(url)
            } else {
                agent.post(url)
            };
            r.header("Authorization", &auth)
                .header("Content-Type", "application/json")
                .send(body.unwrap_or(Value::Null).to_string())
        }
    };
    match response {
        Ok(mut r) => {
            let status = r.status().as_u16();
            let text = r.body_mut().read_to_string().unwrap_or_default();
            (status, serde_json::from_str(&text).unwrap_or(Value::Null))
        }
        Err(_) => (0, Value::Null),
    }
}

fn upload(agent: &ureq::Agent, url: &str, content: &[u8]) -> (u16, Value) {
    let boundary = "docmeta-soak-boundary";
    let mut body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"soak.txt\"\r\nContent-Type: text/plain\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(content);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    match agent
        .post(url)
        .header("Authorization", basic(ADMIN))
        .header(
            "Content-Type",
            format!("multipart/form-data; boundary={boundary}"),
        )
        .send(&body[..])
    {
        Ok(mut r) => {
            let status = r.status().as_u16();
            let text = r.body_mut().read_to_string().unwrap_or_default();
            (status, serde_json::from_str(&text).unwrap_or(Value::Null))
        }
        Err(_) => (0, Value::Null),
    }
}

/// The server's resident memory in KiB: (anonymous: heap and stacks, file-backed: mapped index
/// segments and libraries, which the kernel may drop at will).
fn rss_kib(pid: &str) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
            .unwrap_or(0)
    };
    (field("RssAnon:"), field("RssFile:") + field("RssShmem:"))
}

#[derive(Default)]
struct Interval {
    requests: u64,
    errors: u64,
    latencies_us: Vec<u64>,
    first_error: Option<String>,
}

struct Shared {
    base: String,
    document_type: i64,
    due_date: i64,
    /// Documents this run created, oldest first (deleted in turn; files go to the newest).
    created: Mutex<VecDeque<i64>>,
    /// Files uploaded: (document, file).
    files: Mutex<VecDeque<(i64, i64)>>,
    interval: Mutex<Interval>,
    sequence: AtomicU64,
}

fn one_request(shared: &Shared, agent: &ureq::Agent, n: u64) -> Result<(), String> {
    let base = &shared.base;
    let expect = |what: &str, got: (u16, Value), want: u16| -> Result<Value, String> {
        if got.0 == want {
            Ok(got.1)
        } else {
            Err(format!("{what}: {} {}", got.0, got.1))
        }
    };
    match n % 20 {
        0..=6 => {
            expect(
                "GET metadata",
                exchange(
                    agent,
                    "GET",
                    &format!("{base}/api/v4/documents/1/metadata/"),
                    ALICE,
                    None,
                ),
                200,
            )?;
        }
        7..=9 => {
            let body = json!({"value": format!("{:02}/{:02}/2030", n % 28 + 1, n % 12 + 1)});
            let url = format!("{base}/api/v4/documents/1/metadata/{}/", shared.due_date);
            expect(
                "PATCH metadata",
                exchange(agent, "PATCH", &url, ALICE, Some(body)),
                200,
            )?;
        }
        10 | 11 => {
            expect(
                "GET documents",
                exchange(
                    agent,
                    "GET",
                    &format!("{base}/api/v4/documents/?page_size=20"),
                    CAROL,
                    None,
                ),
                200,
            )?;
        }
        12 | 13 => {
            let q = if n.is_multiple_of(2) {
                "invoice"
            } else {
                "metadata_value:2024"
            };
            expect(
                "search",
                exchange(
                    agent,
                    "GET",
                    &format!("{base}/api/v4/search/documents/?q={q}"),
                    ALICE,
                    None,
                ),
                200,
            )?;
        }
        14 => {
            let body =
                json!({"document_type_id": shared.document_type, "label": format!("soak {n}")});
            let d = expect(
                "POST document",
                exchange(
                    agent,
                    "POST",
                    &format!("{base}/api/v4/documents/"),
                    ADMIN,
                    Some(body),
                ),
                201,
            )?;
            let id = d["id"].as_i64().ok_or("no id")?;
            shared
                .created
                .lock()
                .map_err(|e| e.to_string())?
                .push_back(id);
        }
        16 => {
            let target = shared
                .created
                .lock()
                .map_err(|e| e.to_string())?
                .back()
                .copied();
            if let Some(d) = target {
                let content = format!("soak file {n}\n").repeat(64);
                match upload(
                    agent,
                    &format!("{base}/api/v4/documents/{d}/files/"),
                    content.as_bytes(),
                ) {
                    (201, f) => {
                        let file = f["id"].as_i64().ok_or("no file id")?;
                        shared
                            .files
                            .lock()
                            .map_err(|e| e.to_string())?
                            .push_back((d, file));
                    }
                    // Deleted meanwhile by another worker: not an error of the server.
                    (404, _) => {}
                    (s, b) => return Err(format!("upload: {s} {b}")),
                }
            }
        }
        17 => {
            let file = shared
                .files
                .lock()
                .map_err(|e| e.to_string())?
                .back()
                .copied();
            if let Some((d, f)) = file {
                let url = format!("{base}/api/v4/documents/{d}/files/{f}/download/");
                let status = agent
                    .get(&url)
                    .header("Authorization", basic(ADMIN))
                    .call()
                    .map(|mut r| {
                        let _ = r.body_mut().read_to_vec();
                        r.status().as_u16()
                    })
                    .unwrap_or(0);
                if status != 200 && status != 404 {
                    return Err(format!("download: {status}"));
                }
            }
        }
        18 => {
            expect(
                "GET events",
                exchange(
                    agent,
                    "GET",
                    &format!("{base}/api/v4/events/?page_size=5"),
                    ADMIN,
                    None,
                ),
                200,
            )?;
        }
        19 => {
            expect(
                "GET document",
                exchange(
                    agent,
                    "GET",
                    &format!("{base}/api/v4/documents/1/"),
                    ALICE,
                    None,
                ),
                200,
            )?;
        }
        _ => {
            let oldest = {
                let mut created = shared.created.lock().map_err(|e| e.to_string())?;
                // Keep the newest few for uploads.
                if created.len() > 8 {
                    created.pop_front()
                } else {
                    None
                }
            };
            if let Some(d) = oldest {
                shared
                    .files
                    .lock()
                    .map_err(|e| e.to_string())?
                    .retain(|(doc, _)| *doc != d);
                let url = format!("{base}/api/v4/documents/{d}/");
                let (status, body) = exchange(agent, "DELETE", &url, ADMIN, None);
                if status != 204 && status != 200 {
                    return Err(format!("DELETE document: {status} {body}"));
                }
            }
        }
    }
    Ok(())
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i] as f64 / 1000.0
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: soak BASE_URL SERVER_PID [SECONDS] [RATE]");
        std::process::exit(2);
    }
    let base = args[1].trim_end_matches('/').to_owned();
    let pid = args[2].clone();
    let seconds: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(300);
    let rate: u64 = args
        .get(4)
        .and_then(|s| s.parse().ok())
        .unwrap_or(200)
        .max(1);
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into();
    let (status, document) = exchange(
        &agent,
        "GET",
        &format!("{base}/api/v4/documents/1/"),
        ADMIN,
        None,
    );
    let (_, metadata) = exchange(
        &agent,
        "GET",
        &format!("{base}/api/v4/documents/1/metadata/"),
        ADMIN,
        None,
    );
    let due_date = metadata["results"]
        .as_array()
        .and_then(|r| r.iter().find(|m| m["metadata_type"]["name"] == "due_date"))
        .and_then(|m| m["id"].as_i64());
    let (Some(document_type), Some(due_date)) =
        (document["document_type"]["id"].as_i64(), due_date)
    else {
        eprintln!("the server does not hold the demo data (GET /documents/1/ answered {status})");
        std::process::exit(2);
    };
    let shared = Arc::new(Shared {
        base,
        document_type,
        due_date,
        created: Mutex::new(VecDeque::new()),
        files: Mutex::new(VecDeque::new()),
        interval: Mutex::new(Interval::default()),
        sequence: AtomicU64::new(0),
    });
    println!("soak: {seconds} s at {rate} requests/s, {WORKERS} workers, server pid {pid}");
    println!(
        "{:>6} {:>9} {:>7} {:>9} {:>9} {:>10} {:>10}",
        "time", "requests", "errors", "p50 ms", "p99 ms", "anon MiB", "file MiB"
    );
    let start = Instant::now();
    let end = start + Duration::from_secs(seconds);
    let period = Duration::from_secs_f64(WORKERS as f64 / rate as f64);
    let workers: Vec<_> = (0..WORKERS)
        .map(|w| {
            let shared = shared.clone();
            std::thread::spawn(move || {
                let agent: ureq::Agent = ureq::Agent::config_builder()
                    .http_status_as_error(false)
                    .timeout_global(Some(Duration::from_secs(30)))
                    .build()
                    .into();
                // Workers start spread over one period, then keep their own schedule.
                let mut next = start + period.mul_f64(w as f64 / WORKERS as f64);
                while next < end {
                    if let Some(wait) = next.checked_duration_since(Instant::now()) {
                        std::thread::sleep(wait);
                    }
                    next += period;
                    let n = shared.sequence.fetch_add(1, Ordering::Relaxed);
                    let began = Instant::now();
                    let outcome = one_request(&shared, &agent, n);
                    let took = began.elapsed().as_micros() as u64;
                    let mut interval = shared.interval.lock().unwrap_or_else(|e| e.into_inner());
                    interval.requests += 1;
                    interval.latencies_us.push(took);
                    if let Err(e) = outcome {
                        interval.errors += 1;
                        interval.first_error.get_or_insert(e);
                    }
                }
            })
        })
        .collect();
    let (mut total, mut errors) = (0u64, 0u64);
    let mut rss_samples = Vec::new();
    let mut tick = start + INTERVAL;
    while tick <= end + Duration::from_millis(1) {
        if let Some(wait) = tick.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let mut interval =
            std::mem::take(&mut *shared.interval.lock().unwrap_or_else(|e| e.into_inner()));
        interval.latencies_us.sort_unstable();
        let (anon, file) = rss_kib(&pid);
        rss_samples.push(anon);
        total += interval.requests;
        errors += interval.errors;
        println!(
            "{:>5}s {:>9} {:>7} {:>9.2} {:>9.2} {:>10.1} {:>10.1}",
            (tick - start).as_secs(),
            interval.requests,
            interval.errors,
            percentile(&interval.latencies_us, 0.5),
            percentile(&interval.latencies_us, 0.99),
            anon as f64 / 1024.0,
            file as f64 / 1024.0
        );
        if let Some(e) = interval.first_error {
            println!("        first error of the interval: {e}");
        }
        tick += INTERVAL;
    }
    for w in workers {
        let _ = w.join();
    }
    let tail = std::mem::take(&mut *shared.interval.lock().unwrap_or_else(|e| e.into_inner()));
    total += tail.requests;
    errors += tail.errors;
    // Anonymous memory (heap): the first minute (warm-up included) against the last.
    let per_minute = (60 / INTERVAL.as_secs()) as usize;
    let mean = |s: &[u64]| s.iter().sum::<u64>() as f64 / s.len().max(1) as f64 / 1024.0;
    let first = mean(&rss_samples[..per_minute.min(rss_samples.len())]);
    let last = mean(&rss_samples[rss_samples.len().saturating_sub(per_minute)..]);
    let peak = rss_samples.iter().max().copied().unwrap_or(0) as f64 / 1024.0;
    println!(
        "total: {total} requests in {:.0} s ({:.0}/s), {errors} errors; server anonymous memory first minute {first:.1} MiB, \
         last minute {last:.1} MiB, peak {peak:.1} MiB",
        start.elapsed().as_secs_f64(),
        total as f64 / start.elapsed().as_secs_f64()
    );
    if errors > 0 {
        std::process::exit(1);
    }
}
