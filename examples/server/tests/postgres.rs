//! Two `docmeta serve` processes on one PostgreSQL database: a grant or a revoke
//! made through one is enforced by the other for every request that starts after it was
//! answered (security review, round two), and a durable task runs exactly once.
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
    serve_with(dir, url, 500)
}

/// A server whose worker follows the other processes' changes every `refresh_ms`.
fn serve_with(dir: &std::path::Path, url: &str, refresh_ms: u64) -> Server {
    std::fs::create_dir_all(dir).expect("dir");
    std::fs::write(
        dir.join("config.yml"),
        format!(
            "password_hash_memory_kib: 64\npassword_hash_iterations: 1\naccess_refresh_ms: {refresh_ms}\n"
        ),
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
        "DELETE" => agent.delete(&url).header("Authorization", &auth).call(),
        "PATCH" => agent
            .patch(&url)
            .header("Authorization", &auth)
            .header("Content-Type", "application/json")
            .send(body.unwrap_or(json!({})).to_string()),
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
    // A worker deletes finished tasks every few seconds: the attempts are read while the rows
    // are there, and the most seen is what counts.
    let mut most_attempts = 0;
    let mut seen = false;
    loop {
        let rows: Vec<(String, i64, Option<String>)> = db
            .query("SELECT state, attempts, error FROM tasks", &[])
            .expect("tasks")
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect();
        seen |= !rows.is_empty();
        for (_, attempts, _) in &rows {
            most_attempts = most_attempts.max(*attempts);
        }
        if seen && rows.iter().all(|(state, _, _)| state == "done") {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the task did not finish: {rows:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(most_attempts, 1, "each task ran once");
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

/// Every process answers from the same truth: through two servers on one database, after a revoke
/// through A, B still served the document (50 of 50 tries, for up to 1.16 s); after a grant, B
/// answered 404 (50 of 50, up to 1.35 s); a password changed through A still logged in through
/// B. Here the workers follow only once a minute: every answer of B below comes from the
/// catch-up each request makes before it decides anything.
#[test]
fn a_change_answered_by_one_server_is_honoured_by_the_other_for_the_next_request() {
    let Some((url, name, mut admin)) = support::fresh_postgres_database("docmeta_revoke") else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let (a_dir, b_dir) = (tmp.path().join("a"), tmp.path().join("b"));
    load_demo(&a_dir, &url);
    let a = serve_with(&a_dir, &url, 60_000);
    let b = serve_with(&b_dir, &url, 60_000);
    assert_eq!(call(&b.1, "GET", "/api/v4/documents/1/", BOB, None).0, 404);
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
    let permission = |verb: &str| {
        let (code, body) = call(
            &a.1,
            "POST",
            &format!("{acls}{}/permissions/{verb}/", acl["id"]),
            ADMIN,
            Some(json!({"permission": "documents.document_view"})),
        );
        assert_eq!(code, 200, "{verb}: {body}");
    };
    // Keep one permission in the ACL so that removing document_view does not delete it.
    permission("add");
    let (code, _) = call(
        &a.1,
        "POST",
        &format!("{acls}{}/permissions/add/", acl["id"]),
        ADMIN,
        Some(json!({"permission": "documents.document_edit"})),
    );
    assert_eq!(code, 200);
    for round in 0..50 {
        permission("add");
        assert_eq!(
            call(&b.1, "GET", "/api/v4/documents/1/", BOB, None).0,
            200,
            "round {round}: B after a grant answered by A"
        );
        permission("remove");
        assert_eq!(
            call(&b.1, "GET", "/api/v4/documents/1/", BOB, None).0,
            404,
            "round {round}: B after a revoke answered by A"
        );
    }
    // A document created through A is listed by B at once (bob's Legal role sees contracts).
    let (_, types) = call(&a.1, "GET", "/api/v4/documents/types/", ADMIN, None);
    let contract = types["results"]
        .as_array()
        .expect("types")
        .iter()
        .find(|t| t["label"] == "Contract")
        .expect("the demo's Contract type")["id"]
        .clone();
    let (_, metadata_types) = call(&a.1, "GET", "/api/v4/metadata/metadata-types/", ADMIN, None);
    let party = metadata_types["results"]
        .as_array()
        .expect("metadata types")
        .iter()
        .find(|t| t["name"] == "party")
        .expect("the demo's party")["id"]
        .clone();
    for n in 0..20 {
        let (code, doc) = call(
            &a.1,
            "POST",
            "/api/v4/documents/",
            ADMIN,
            Some(json!({
                "document_type_id": contract,
                "label": format!("NDA {n}"),
                "metadata": [{"metadata_type_id": party, "value": "Initech"}],
            })),
        );
        assert_eq!(code, 201, "{doc}");
        let path = format!("/api/v4/documents/{}/", doc["id"]);
        assert_eq!(
            call(&b.1, "GET", &path, BOB, None).0,
            200,
            "created through A"
        );
    }
    // A password changed through A no longer logs in through B (whose login cache trusted it).
    let (_, me) = call(&b.1, "GET", "/api/v4/users/current/", BOB, None);
    let (code, body) = call(
        &a.1,
        "PATCH",
        &format!("/api/v4/users/{}/", me["id"]),
        ADMIN,
        Some(json!({"password": "a brand new password"})),
    );
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        call(&b.1, "GET", "/api/v4/users/current/", BOB, None).0,
        401,
        "the old password, cached by B"
    );
    assert_eq!(
        call(
            &b.1,
            "GET",
            "/api/v4/users/current/",
            ("bob", "a brand new password"),
            None
        )
        .0,
        200
    );
    drop((a, b));
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
