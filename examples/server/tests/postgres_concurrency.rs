//! Concurrent writers on PostgreSQL: three `docmeta serve` processes on one
//! database, 32 clients editing the same few documents at once (adding, editing and removing
//! values, granting and revoking ACL permissions). Afterwards every rule holds in the database,
//! no client saw a `5xx`, and each process shows every user what a fourth process started
//! afterwards (a fresh access snapshot and a fresh search index) shows.
//!
//! Needs `DOCMETA_TEST_POSTGRES_URL` (a role that may create databases); `.ci/run` starts a
//! throwaway cluster and sets it. Without it the test says why it is skipped.

mod support;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{ADMIN, Server};

const BOB: (&str, &str) = ("bob", "demo-password");
const ALICE: (&str, &str) = ("alice", "demo-password");
const CLIENTS: usize = 32;
const DOCUMENTS: usize = 6;
const RUN: Duration = Duration::from_secs(5);
/// The values clients write to the optional types (searched for afterwards).
const WORDS: [&str; 3] = ["amber", "cobalt", "violet"];
/// The permissions clients grant and revoke on the documents' ACLs for the Lawyer role.
const PERMISSIONS: [&str; 3] = [
    "documents.document_view",
    "documents.document_edit",
    "metadata.document_metadata_view",
];

fn command(dir: &Path, url: &str) -> std::process::Command {
    let mut c = support::docmeta(dir);
    c.env("DOCMETA_DATABASE_URL", url);
    c
}

fn serve(dir: &Path, url: &str) -> Server {
    support::prepare(dir, false, "access_refresh_ms: 200\n");
    Server::start_command(command(dir, url), dir)
}

fn ok(server: &Server, method: &str, path: &str, body: Option<Value>) -> Value {
    let (code, answer) = server.call(method, path, Some(ADMIN), body.as_ref());
    assert!(
        (200..300).contains(&code),
        "{method} {path}: {code} {answer}"
    );
    answer
}

/// The test's documents: a type with a required value and three optional ones, and an ACL
/// of the Lawyer role (bob's) on each document with one permission.
struct Fixture {
    documents: Vec<i64>,
    required: i64,
    optional: Vec<i64>,
    lawyer: i64,
}

fn fixture(server: &Server) -> Fixture {
    let t = ok(
        server,
        "POST",
        "/api/v4/documents/types/",
        Some(json!({"label": "Shared"})),
    )["id"]
        .as_i64()
        .expect("type id");
    let mut types = Vec::new();
    for name in ["code", "colour_a", "colour_b", "colour_c"] {
        let id = ok(
            server,
            "POST",
            "/api/v4/metadata/metadata-types/",
            Some(json!({"name": name, "label": name})),
        )["id"]
            .as_i64()
            .expect("metadata type id");
        ok(
            server,
            "POST",
            &format!("/api/v4/documents/types/{t}/metadata-types/"),
            Some(json!({"metadata_type_id": id, "required": name == "code"})),
        );
        types.push(id);
    }
    let roles = ok(server, "GET", "/api/v4/roles/?page_size=100", None);
    let lawyer = roles["results"]
        .as_array()
        .expect("roles")
        .iter()
        .find(|r| r["label"] == "Lawyer")
        .expect("the demo's Lawyer role")["id"]
        .as_i64()
        .expect("role id");
    let mut documents = Vec::new();
    for i in 0..DOCUMENTS {
        let doc = ok(
            server,
            "POST",
            "/api/v4/documents/",
            Some(json!({
                "document_type_id": t,
                "label": format!("Shared {i}"),
                "metadata": [{"metadata_type_id": types[0], "value": format!("C-{i}")}],
            })),
        )["id"]
            .as_i64()
            .expect("document id");
        let acl = ok(
            server,
            "POST",
            &format!("/api/v5/objects/documents/document/{doc}/acls/"),
            Some(json!({"role_id": lawyer})),
        )["id"]
            .as_i64()
            .expect("acl id");
        ok(
            server,
            "POST",
            &format!("/api/v5/objects/documents/document/{doc}/acls/{acl}/permissions/add/"),
            Some(json!({"permission": PERMISSIONS[0]})),
        );
        documents.push(doc);
    }
    Fixture {
        documents,
        required: types[0],
        optional: types[1..].to_vec(),
        lawyer,
    }
}

/// A small deterministic generator per client (no shared state, reproducible by seed).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// What the clients saw: every answer's status, and any 5xx with its request.
#[derive(Default)]
struct Seen {
    requests: AtomicUsize,
    refused: AtomicUsize,
    errors: Mutex<Vec<String>>,
}

impl Seen {
    fn call(
        &self,
        agent: &ureq::Agent,
        base: &str,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        let (code, answer) =
            support::request(agent, base, method, path, Some(ADMIN), body.as_ref())
                .unwrap_or_else(|e| (599, json!(e.to_string())));
        if code >= 500 {
            self.errors
                .lock()
                .expect("errors")
                .push(format!("{method} {base}{path}: {code} {answer}"));
        } else if code >= 400 {
            self.refused.fetch_add(1, Ordering::Relaxed);
        }
        (code, answer)
    }
}

/// One client's edits until `until`: values of the shared documents and the Lawyer role's ACL
/// permissions on them, on the server `base`.
fn client(base: &str, fixture: &Fixture, seed: u64, until: Instant, seen: &Seen) {
    let agent = support::agent();
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    while Instant::now() < until {
        let doc = fixture.documents[rng.below(fixture.documents.len())];
        let values = format!("/api/v4/documents/{doc}/metadata/");
        match rng.below(6) {
            // Add an optional value (a conflict if it is there already: 400).
            0 => {
                let t = fixture.optional[rng.below(fixture.optional.len())];
                let word = WORDS[rng.below(WORDS.len())];
                seen.call(
                    &agent,
                    base,
                    "POST",
                    &values,
                    Some(json!({"metadata_type_id": t, "value": word})),
                );
            }
            // Edit or remove a value (the required one cannot be removed: 400).
            1 | 2 => {
                let (code, list) = seen.call(&agent, base, "GET", &values, None);
                if code != 200 {
                    continue;
                }
                let list = list["results"].as_array().cloned().unwrap_or_default();
                if list.is_empty() {
                    continue;
                }
                let m = &list[rng.below(list.len())];
                let path = format!("{values}{}/", m["id"]);
                if rng.below(2) == 0 {
                    let word = if m["metadata_type"]["id"] == fixture.required {
                        format!("C-{}", rng.below(100))
                    } else {
                        WORDS[rng.below(WORDS.len())].to_owned()
                    };
                    seen.call(&agent, base, "PATCH", &path, Some(json!({"value": word})));
                } else {
                    seen.call(&agent, base, "DELETE", &path, None);
                }
            }
            // Grant or revoke a permission of the Lawyer role on one of two documents (few
            // ACLs, so that revokes of their last permissions meet).
            _ => {
                let doc = fixture.documents[rng.below(2)];
                let acls = format!("/api/v5/objects/documents/document/{doc}/acls/");
                let (code, list) = seen.call(&agent, base, "GET", &acls, None);
                if code != 200 {
                    continue;
                }
                let acl = list["results"]
                    .as_array()
                    .and_then(|l| {
                        l.iter()
                            .find(|a| a["role"]["id"] == fixture.lawyer)
                            .cloned()
                    })
                    .map(|a| a["id"].clone());
                let permission = PERMISSIONS[rng.below(PERMISSIONS.len())];
                match acl {
                    None => {
                        // A new ACL is empty until its first permission: given at once (when
                        // another client created it first, that one gives it).
                        let (code, acl) = seen.call(
                            &agent,
                            base,
                            "POST",
                            &acls,
                            Some(json!({"role_id": fixture.lawyer})),
                        );
                        if code == 201 {
                            seen.call(
                                &agent,
                                base,
                                "POST",
                                &format!("{acls}{}/permissions/add/", acl["id"]),
                                Some(json!({"permission": permission})),
                            );
                        }
                    }
                    Some(acl) => {
                        let action = if rng.below(2) == 0 { "add" } else { "remove" };
                        seen.call(
                            &agent,
                            base,
                            "POST",
                            &format!("{acls}{acl}/permissions/{action}/"),
                            Some(json!({"permission": permission})),
                        );
                    }
                }
            }
        }
    }
}

/// What `user` sees through `server`: the ids of the documents listed, and of those a search
/// for each of the written words finds.
fn view(server: &Server, user: (&str, &str)) -> Vec<BTreeSet<i64>> {
    let ids = |answer: &Value| -> BTreeSet<i64> {
        answer["results"]
            .as_array()
            .map(|l| l.iter().filter_map(|d| d["id"].as_i64()).collect())
            .unwrap_or_default()
    };
    let mut out = Vec::new();
    let (code, list) = server.get("/api/v4/documents/?page_size=500", user);
    assert_eq!(code, 200, "{list}");
    out.push(ids(&list));
    for word in WORDS.iter().chain(&["Shared"]) {
        let (code, found) = server.get(
            &format!("/api/v4/search/documents/?q={word}&page_size=500"),
            user,
        );
        assert_eq!(code, 200, "{found}");
        out.push(ids(&found));
    }
    out
}

fn count(db: &mut postgres::Client, sql: &str) -> i64 {
    db.query_one(sql, &[]).expect(sql).get(0)
}

#[test]
fn three_servers_with_32_clients_keep_every_rule() {
    let Some((url, _, _cluster)) = support::fresh_postgres_database("docmeta_concurrency") else {
        return;
    };
    // A connection to the test's database, for checking the rules afterwards.
    let mut db = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    let tmp = tempfile::tempdir().expect("tempdir");
    let dirs: Vec<_> = (0..4).map(|i| tmp.path().join(format!("p{i}"))).collect();
    support::prepare(&dirs[0], false, "access_refresh_ms: 200\n");
    let demo = command(&dirs[0], &url)
        .arg("demo")
        .stdout(Stdio::null())
        .status()
        .expect("demo");
    assert!(demo.success(), "demo on PostgreSQL");
    let servers: Vec<Server> = dirs[..3].iter().map(|d| serve(d, &url)).collect();
    let fixture = Arc::new(fixture(&servers[0]));

    let seen = Arc::new(Seen::default());
    let until = Instant::now() + RUN;
    let threads: Vec<_> = (0..CLIENTS)
        .map(|i| {
            let base = servers[i % servers.len()].base.clone();
            let (fixture, seen) = (fixture.clone(), seen.clone());
            std::thread::spawn(move || client(&base, &fixture, i as u64 + 1, until, &seen))
        })
        .collect();
    for t in threads {
        t.join().expect("client");
    }
    let errors = seen.errors.lock().expect("errors").clone();
    eprintln!(
        "{} requests by {CLIENTS} clients on 3 servers in {RUN:?}: {} refused (4xx), {} 5xx",
        seen.requests.load(Ordering::Relaxed),
        seen.refused.load(Ordering::Relaxed),
        errors.len()
    );
    assert!(errors.is_empty(), "no client may see a 5xx: {errors:#?}");

    // The rules, in the database.
    assert_eq!(
        count(
            &mut db,
            "SELECT count(*) FROM (SELECT 1 FROM document_metadata \
             GROUP BY document_id, metadata_type_id HAVING count(*) > 1) d"
        ),
        0,
        "one value per document and type"
    );
    assert_eq!(
        count(
            &mut db,
            &format!(
                "SELECT count(*) FROM documents d WHERE d.label LIKE 'Shared %' AND NOT EXISTS \
                 (SELECT 1 FROM document_metadata m WHERE m.document_id = d.id \
                 AND m.metadata_type_id = {})",
                fixture.required
            )
        ),
        0,
        "no required value missing"
    );
    assert_eq!(
        count(
            &mut db,
            "SELECT count(*) FROM acls a WHERE NOT EXISTS \
             (SELECT 1 FROM acl_permissions p WHERE p.acl_id = a.id)"
        ),
        0,
        "every ACL has a permission"
    );

    // Each process shows every user what a process started afresh shows.
    let fresh = serve(&dirs[3], &url);
    for user in [ADMIN, ALICE, BOB] {
        let started = Instant::now();
        for (i, server) in servers.iter().enumerate() {
            loop {
                let (want, got) = (view(&fresh, user), view(server, user));
                if want == got {
                    break;
                }
                assert!(
                    started.elapsed() < Duration::from_secs(60),
                    "server {i} still shows {} {got:?}, a fresh server {want:?}",
                    user.0
                );
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
}
