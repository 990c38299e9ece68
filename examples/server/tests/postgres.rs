//! Two `docmeta serve` processes on one PostgreSQL database (issue #10): a grant made through
//! one is enforced by the other within the refresh delay, and a durable task runs exactly once.
//!
//! Needs `DOCMETA_TEST_POSTGRES_URL` (a role that may create databases); `.ci/run` starts a
//! throwaway cluster and sets it. Without it the test says why it is skipped.

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const ADMIN: (&str, &str) = ("admin", "admin-password");
const BOB: (&str, &str) = ("bob", "demo-password");

struct Server(Child, String);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn docmeta(dir: &std::path::Path, url: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_docmeta"));
    c.env("DOCMETA_DATA", dir)
        .env("DOCMETA_DATABASE_URL", url)
        .env("DOCMETA_ADMIN_PASSWORD", ADMIN.1)
        .env("DOCMETA_LOG", "warn");
    c
}

fn serve(dir: &std::path::Path, url: &str) -> Server {
    std::fs::create_dir_all(dir).expect("dir");
    std::fs::write(
        dir.join("config.yml"),
        "password_hash_memory_kib: 64\npassword_hash_iterations: 1\naccess_refresh_ms: 500\n",
    )
    .expect("config");
    let mut child = docmeta(dir, url)
        .args(["serve", "--bind", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("serve");
    let stdout = child.stdout.take().expect("stdout");
    let mut base = String::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.expect("line");
        if let Some(addr) = line.strip_prefix("docmeta listening on ") {
            base = addr.trim().to_owned();
            break;
        }
    }
    assert!(!base.is_empty(), "the server did not start");
    Server(child, base)
}

fn call(
    base: &str,
    method: &str,
    path: &str,
    user: (&str, &str),
    body: Option<Value>,
) -> (u16, Value) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let auth = format!(
        "Basic {}",
        base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            format!("{}:{}", user.0, user.1)
        )
    );
    let url = format!("{base}{path}");
    let response = match method {
        "GET" => agent.get(&url).header("Authorization", &auth).call(),
        _ => agent
            .post(&url)
            .header("Authorization", &auth)
            .header("Content-Type", "application/json")
            .send(body.unwrap_or(json!({})).to_string()),
    };
    let mut response = response.expect("HTTP exchange");
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string().unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// Loads the demo into the database through `dir` (before any server starts).
fn load_demo(dir: &std::path::Path, url: &str) {
    std::fs::create_dir_all(dir).expect("dir");
    std::fs::write(
        dir.join("config.yml"),
        "password_hash_memory_kib: 64\npassword_hash_iterations: 1\n",
    )
    .expect("config");
    let status = docmeta(dir, url)
        .arg("demo")
        .stdout(Stdio::null())
        .status()
        .expect("demo");
    assert!(status.success(), "demo on PostgreSQL");
}

#[test]
fn two_servers_share_one_database() {
    let Some((url, name, mut admin)) = support::fresh_postgres_database("docmeta_serve") else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let (a_dir, b_dir) = (tmp.path().join("a"), tmp.path().join("b"));
    load_demo(&a_dir, &url);
    let a = serve(&a_dir, &url);
    let b = serve(&b_dir, &url);

    // bob (Legal: contracts) cannot see invoice 1 through either server.
    assert_eq!(call(&b.1, "GET", "/api/v4/documents/1/", BOB, None).0, 404);
    // A grant through A...
    let (_, roles) = call(&a.1, "GET", "/api/v4/roles/", ADMIN, None);
    let lawyer = roles["results"]
        .as_array()
        .expect("roles")
        .iter()
        .find(|r| r["label"] == "Lawyer")
        .expect("the demo's Lawyer role")["id"]
        .clone();
    let acls = "/api/v5/objects/documents/document/1/acls/";
    let (code, acl) = call(&a.1, "POST", acls, ADMIN, Some(json!({"role_id": lawyer})));
    assert_eq!(code, 201, "{acl}");
    let granted = Instant::now();
    let (code, _) = call(
        &a.1,
        "POST",
        &format!("{acls}{}/permissions/add/", acl["id"]),
        ADMIN,
        Some(json!({"permission": "documents.document_view"})),
    );
    assert_eq!(code, 200);
    assert_eq!(
        call(&a.1, "GET", "/api/v4/documents/1/", BOB, None).0,
        200,
        "at once on the writer"
    );
    // ...is enforced by B within the refresh delay (500 ms here).
    loop {
        if call(&b.1, "GET", "/api/v4/documents/1/", BOB, None).0 == 200 {
            break;
        }
        assert!(
            granted.elapsed() < Duration::from_secs(5),
            "B never saw the grant"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    eprintln!("B enforced the grant after {:?}", granted.elapsed());

    // A durable task (a required association added to existing documents) runs exactly once
    // although both servers' workers are looking for work.
    let (code, t) = call(
        &b.1,
        "POST",
        "/api/v4/metadata/metadata-types/",
        ADMIN,
        Some(json!({"name": "ref", "label": "Reference", "default": "none"})),
    );
    assert_eq!(code, 201, "{t}");
    let (code, assoc) = call(
        &a.1,
        "POST",
        "/api/v4/documents/types/1/metadata-types/",
        ADMIN,
        Some(json!({"metadata_type_id": t["id"], "required": true})),
    );
    assert_eq!(code, 201, "{assoc}");
    let started = Instant::now();
    let mut db = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    loop {
        let open: i64 = db
            .query_one("SELECT count(*) FROM tasks WHERE state <> 'done'", &[])
            .expect("tasks")
            .get(0);
        if open == 0 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the task did not finish"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let attempts: Vec<i64> = db
        .query("SELECT attempts FROM tasks", &[])
        .expect("tasks")
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(
        !attempts.is_empty() && attempts.iter().all(|a| *a == 1),
        "each task ran once: {attempts:?}"
    );
    let values: i64 = db
        .query_one(
            "SELECT count(*) FROM document_metadata m JOIN documents d ON d.id = m.document_id WHERE m.metadata_type_id = $1 AND d.document_type_id = 1",
            &[&t["id"].as_i64().expect("id")],
        )
        .expect("values")
        .get(0);
    assert_eq!(values, 5, "every invoice got the required value once");
    drop((a, b));
    drop(db);
    let _ = admin.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"));
}

/// Documents a search through `base` finds, once its index has caught up (or `Null` if the
/// search fails).
fn invoices_found(base: &str) -> Value {
    call(
        base,
        "GET",
        "/api/v4/search/documents/?q=invoice",
        ADMIN,
        None,
    )
    .1["count"]
        .clone()
}

/// Waits until the search through `base` finds `expected` invoices.
fn wait_for_invoices(base: &str, expected: u64, what: &str) {
    let started = Instant::now();
    while invoices_found(base) != json!(expected) {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{what}: {} invoices found, expected {expected}",
            invoices_found(base)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn search_work_handed_to_a_server_runs_on_that_servers_index_only() {
    let Some((url, name, mut admin)) = support::fresh_postgres_database("docmeta_targets") else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let (a_dir, b_dir) = (tmp.path().join("a"), tmp.path().join("b"));
    load_demo(&a_dir, &url);
    let a = serve(&a_dir, &url);
    let b = serve(&b_dir, &url);
    wait_for_invoices(&a.1, 5, "A's index");
    wait_for_invoices(&b.1, 5, "B's index");
    // `search initialize` beside A hands the work to A's worker; B's worker, looking for work
    // on the same database, must leave it (it would empty B's index). Three times, so that a
    // claim by the wrong worker could not pass by luck.
    for round in 0..3 {
        let out = docmeta(&a_dir, &url)
            .args(["search", "initialize"])
            .output()
            .expect("search initialize");
        assert!(
            out.status.success(),
            "round {round}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("queued as task")
                || String::from_utf8_lossy(&out.stderr).contains("queued as task"),
            "round {round}: handed to the server: {out:?}"
        );
        assert_eq!(
            invoices_found(&a.1),
            json!(0),
            "round {round}: A's index emptied"
        );
        assert_eq!(
            invoices_found(&b.1),
            json!(5),
            "round {round}: B's index untouched"
        );
    }
    let mut db = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    let strays: i64 = db
        .query_one(
            "SELECT count(*) FROM tasks WHERE name LIKE 'task_search%' AND state <> 'done'",
            &[],
        )
        .expect("tasks")
        .get(0);
    assert_eq!(strays, 0, "every handed-off task ran");
    drop((a, b));
    drop(db);
    let _ = admin.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"));
}
