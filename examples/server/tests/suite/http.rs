// Black-box tests: the real `docmeta` binary on an ephemeral loopback port with a temporary
// data directory, driven over HTTP. Included by `tests/http.rs` (SQLite) and
// `tests/http_postgres.rs` (the same tests on PostgreSQL), which set `ON_POSTGRES`.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

const ADMIN: (&str, &str) = ("admin", "admin-password");
const ALICE: (&str, &str) = ("alice", "demo-password");
const BOB: (&str, &str) = ("bob", "demo-password");
const CAROL: (&str, &str) = ("carol", "demo-password");

struct Server {
    child: Child,
    base: String,
    agent: ureq::Agent,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn docmeta(dir: &std::path::Path, database_url: Option<&str>) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_docmeta"));
    c.env("DOCMETA_DATA", dir)
        .env("DOCMETA_ADMIN_PASSWORD", ADMIN.1)
        .env("DOCMETA_LOG", "warn");
    if let Some(url) = database_url {
        c.env("DOCMETA_DATABASE_URL", url);
    }
    c
}

impl Server {
    /// A server with the demo loaded, on SQLite or (`ON_POSTGRES`) on a fresh PostgreSQL
    /// database; `None` (the test is skipped, and says why) when PostgreSQL is wanted but absent.
    fn start() -> Option<Server> {
        let database_url = if ON_POSTGRES {
            let Some(base) = std::env::var("DOCMETA_TEST_POSTGRES_URL").ok().filter(|u| !u.is_empty()) else {
                assert!(
                    std::env::var("DOCMETA_REQUIRE_POSTGRES").map_or(true, |v| v != "1"),
                    "DOCMETA_REQUIRE_POSTGRES=1 but DOCMETA_TEST_POSTGRES_URL is not set"
                );
                eprintln!("skipped: DOCMETA_TEST_POSTGRES_URL is not set (no PostgreSQL; .ci/run starts one)");
                return None;
            };
            static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
            let name = format!(
                "docmeta_http_{}_{}",
                std::process::id(),
                NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            );
            let mut admin = postgres::Client::connect(&base, postgres::NoTls).expect("connect");
            admin.batch_execute(&format!("DROP DATABASE IF EXISTS {name}")).expect("drop");
            admin.batch_execute(&format!("CREATE DATABASE {name}")).expect("create");
            Some(format!("{}/{name}", &base[..base.rfind('/').expect("url with a database")]))
        } else {
            None
        };
        let dir = tempfile::tempdir().expect("tempdir");
        // Cheap password hashing: these tests are about HTTP, not Argon2 cost.
        std::fs::write(
            dir.path().join("config.yml"),
            "password_hash_memory_kib: 64\npassword_hash_iterations: 1\n",
        )
        .expect("config");
        let status = docmeta(dir.path(), database_url.as_deref())
            .arg("demo")
            .stdout(Stdio::null())
            .status()
            .expect("run demo");
        assert!(status.success(), "demo failed");
        let mut child = docmeta(dir.path(), database_url.as_deref())
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
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        Some(Server {
            child,
            base,
            agent,
            _dir: dir,
        })
    }

    fn call(
        &self,
        method: &str,
        path: &str,
        user: Option<(&str, &str)>,
        body: Option<Value>,
    ) -> (u16, Value) {
        self.raw(method, path, user, body.map(|b| b.to_string()))
    }

    fn raw(
        &self,
        method: &str,
        path: &str,
        user: Option<(&str, &str)>,
        body: Option<String>,
    ) -> (u16, Value) {
        let url = format!("{}{path}", self.base);
        let auth = user.map(|(u, p)| format!("Basic {}", base64(&format!("{u}:{p}"))));
        let response = match method {
            "GET" | "DELETE" => {
                let mut r = if method == "GET" {
                    self.agent.get(&url)
                } else {
                    self.agent.delete(&url)
                };
                if let Some(a) = &auth {
                    r = r.header("Authorization", a);
                }
                r.call()
            }
            _ => {
                let mut r = match method {
                    "POST" => self.agent.post(&url),
                    "PATCH" => self.agent.patch(&url),
                    _ => self.agent.put(&url),
                };
                if let Some(a) = &auth {
                    r = r.header("Authorization", a);
                }
                r.header("Content-Type", "application/json")
                    .send(body.unwrap_or_default())
            }
        };
        let mut response = response.expect("HTTP exchange");
        let status = response.status().as_u16();
        let text = response.body_mut().read_to_string().unwrap_or_default();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    fn get(&self, path: &str, user: (&str, &str)) -> (u16, Value) {
        self.call("GET", path, Some(user), None)
    }
}

fn base64(s: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(s)
}

#[test]
fn authentication_and_health() {
    let Some(s) = Server::start() else { return };
    let (status, body) = s.call("GET", "/api/v4/health/", None, None);
    assert_eq!((status, body["database"].as_str()), (200, Some("ok")));
    let url = format!("{}/api/v4/documents/", s.base);
    let response = s.agent.get(&url).call().expect("exchange");
    assert_eq!(response.status().as_u16(), 401);
    assert_eq!(
        response
            .headers()
            .get("www-authenticate")
            .and_then(|v| v.to_str().ok()),
        Some("Basic realm=\"docmeta\"")
    );
    assert_eq!(s.get("/api/v4/documents/", ("alice", "wrong")).0, 401);
    assert_eq!(
        s.get("/api/v4/users/current/", ALICE).1["username"],
        "alice"
    );
    // Failed attempts are limited per username.
    let mut last = 0;
    for _ in 0..12 {
        last = s.get("/api/v4/documents/", ("bob", "wrong password")).0;
    }
    assert_eq!(last, 429);
    let response = s
        .agent
        .get(&url)
        .header("Authorization", format!("Basic {}", base64("bob:nope")))
        .call()
        .expect("exchange");
    assert!(response.headers().get("retry-after").is_some());
}

#[test]
fn openapi_describes_every_route_and_every_route_answers() {
    let Some(s) = Server::start() else { return };
    let (status, doc) = s.call("GET", "/api/v4/openapi.json", None, None);
    assert_eq!(status, 200);
    assert!(
        doc["openapi"].as_str().is_some_and(|v| v.starts_with("3.")),
        "OpenAPI 3"
    );
    validate_with_openapi_spec_validator(&doc);
    let paths = doc["paths"].as_object().expect("paths");
    assert!(paths.len() >= 40, "{} paths", paths.len());
    for (path, item) in paths {
        for (method, operation) in item.as_object().expect("path item") {
            if !["get", "post", "put", "patch", "delete"].contains(&method.as_str()) {
                continue;
            }
            assert!(
                operation["responses"]
                    .as_object()
                    .is_some_and(|r| !r.is_empty()),
                "{method} {path} has responses"
            );
            let concrete = path
                .replace("{app_label}", "documents")
                .replace("{model_name}", "document")
                .replace("{object_id}", "1");
            let concrete = regex_free_fill(&concrete);
            if method == "delete" {
                continue; // answering would delete demo data other assertions rely on
            }
            let (status, body) = s.call(
                &method.to_uppercase(),
                &concrete,
                Some(ADMIN),
                Some(json!({})),
            );
            assert!(
                !(status == 404 && body["detail"] == "No such endpoint."),
                "{method} {path} is routed"
            );
            assert!(status < 500, "{method} {concrete} answered {status}");
        }
    }
    assert_eq!(
        s.get("/api/v4/nope/", ADMIN).1["detail"],
        "No such endpoint."
    );
}

/// Validates the document against the OpenAPI 3 specification with `openapi-spec-validator`
/// (PyPI), run by the Python `DOCMETA_OPENAPI_PYTHON` names (`.ci/run` sets it to a virtual
/// environment holding the pinned validator: then it must be there) or else by `python3`
/// (without the module there, the check is skipped, and says so).
fn validate_with_openapi_spec_validator(doc: &Value) {
    let pinned = std::env::var("DOCMETA_OPENAPI_PYTHON").ok();
    let python = pinned.as_deref().unwrap_or("python3");
    let available = Command::new(python)
        .args(["-c", "import openapi_spec_validator"])
        .status()
        .is_ok_and(|s| s.success());
    if !available {
        assert!(
            pinned.is_none(),
            "DOCMETA_OPENAPI_PYTHON={python} cannot import openapi_spec_validator"
        );
        eprintln!(
            "SKIPPED OpenAPI validation: python3 module openapi_spec_validator is not installed (pip install openapi-spec-validator)"
        );
        return;
    }
    let file = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(file.path(), doc.to_string()).expect("write");
    let out = Command::new(python)
        .args(["-m", "openapi_spec_validator"])
        .arg(file.path())
        .output()
        .expect("run validator");
    assert!(
        out.status.success(),
        "openapi.json is not valid OpenAPI 3: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Announces a 2 MiB body and reads the answer: the server refuses before the upload ends.
fn oversized_post(s: &Server, path: &str) -> u16 {
    use std::io::{Read, Write};
    let addr = s.base.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Basic {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        base64(&format!("{}:{}", ADMIN.0, ADMIN.1)),
        2 << 20
    );
    stream.write_all(head.as_bytes()).expect("write");
    let _ = stream.write_all(&[b' '; 65536]);
    let mut answer = [0u8; 64];
    let n = stream.read(&mut answer).unwrap_or(0);
    let text = String::from_utf8_lossy(&answer[..n]);
    text.split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

/// Replaces every remaining `{param}` with 1.
fn regex_free_fill(path: &str) -> String {
    let mut out = String::new();
    let mut in_param = false;
    for c in path.chars() {
        match c {
            '{' => in_param = true,
            '}' => {
                in_param = false;
                out.push('1');
            }
            c if !in_param => out.push(c),
            _ => {}
        }
    }
    out
}

#[test]
fn metadata_type_crud_and_validation_errors() {
    let Some(s) = Server::start() else { return };
    let base = "/api/v4/metadata/metadata-types/";
    let (status, created) = s.call("POST", base, Some(ADMIN), Some(json!({"name": "amount", "label": "Amount", "validation": "svc.apps.metadata.metadata_validators.RegularExpressionValidator", "validation_arguments": "pattern: '[0-9]+'"})));
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_i64().expect("id");
    assert_eq!(created["url"], format!("{base}{id}/"));
    assert_eq!(s.get(&format!("{base}{id}/"), ADMIN).1["name"], "amount");
    let (status, patched) = s.call(
        "PATCH",
        &format!("{base}{id}/"),
        Some(ADMIN),
        Some(json!({"label": "Total"})),
    );
    assert_eq!(
        (
            status,
            patched["label"].as_str(),
            patched["validation_arguments"].as_str()
        ),
        (200, Some("Total"), Some("pattern: '[0-9]+'"))
    );
    let (status, put) = s.call(
        "PUT",
        &format!("{base}{id}/"),
        Some(ADMIN),
        Some(json!({"name": "amount", "label": "Amount"})),
    );
    assert_eq!(
        (status, put["validation"].as_str()),
        (200, Some("")),
        "PUT resets omitted fields"
    );
    let (status, body) = s.call(
        "POST",
        base,
        Some(ADMIN),
        Some(json!({"name": "amount", "label": "Again"})),
    );
    assert_eq!(status, 400);
    assert!(body["name"][0].as_str().is_some(), "{body}");
    let (status, body) = s.call(
        "POST",
        base,
        Some(ADMIN),
        Some(
            json!({"name": "x", "label": "X", "parser": "svc.apps.metadata.metadata_parsers.Nope"}),
        ),
    );
    assert_eq!((status, body["parser"].is_array()), (400, true), "{body}");
    let (status, body) = s.call(
        "POST",
        base,
        Some(ADMIN),
        Some(json!({"name": "bad name", "label": "X"})),
    );
    assert_eq!((status, body["name"].is_array()), (400, true));
    let (status, body) = s.call(
        "POST",
        base,
        Some(ADMIN),
        Some(json!({"name": 5, "label": "X"})),
    );
    assert_eq!(
        (status, body["name"].is_array()),
        (400, true),
        "a wrong JSON type names the field"
    );
    let (status, _) = s.raw("POST", base, Some(ADMIN), Some("{not json".into()));
    assert_eq!(status, 400);
    let (status, body) = s.raw("POST", base, Some(ADMIN), Some("[1, 2]".into()));
    assert_eq!((status, body["non_field_errors"].is_array()), (400, true));
    assert_eq!(oversized_post(&s, base), 413);
    assert_eq!(
        s.call("DELETE", &format!("{base}{id}/"), Some(ADMIN), None)
            .0,
        204
    );
    assert_eq!(s.get(&format!("{base}{id}/"), ADMIN).0, 404);
    assert_eq!(s.get(&format!("{base}abc/"), ADMIN).0, 404);
    assert_eq!(
        s.call(
            "PATCH",
            "/api/v4/metadata/metadata-types/",
            Some(ADMIN),
            Some(json!({}))
        )
        .0,
        405
    );
}

#[test]
fn who_sees_what_401_403_404() {
    let Some(s) = Server::start() else { return };
    assert_eq!(
        s.call(
            "POST",
            "/api/v4/users/",
            Some(ADMIN),
            Some(json!({"username": "nobody", "password": "a long password"}))
        )
        .0,
        201
    );
    let nobody = ("nobody", "a long password");
    // No permission at all: nothing exists, creation of global things is refused.
    assert_eq!(s.get("/api/v4/documents/1/", nobody).0, 404);
    assert_eq!(s.get("/api/v4/documents/", nobody).1["count"], 0);
    assert_eq!(
        s.call(
            "POST",
            "/api/v4/metadata/metadata-types/",
            Some(nobody),
            Some(json!({"name": "n", "label": "N"}))
        )
        .0,
        403
    );
    assert_eq!(
        s.call(
            "POST",
            "/api/v4/documents/types/",
            Some(nobody),
            Some(json!({"label": "T"}))
        )
        .0,
        403
    );
    // Document-type ACL (alice: invoices).
    assert_eq!(s.get("/api/v4/documents/1/", ALICE).0, 200);
    assert_eq!(
        s.get("/api/v4/documents/6/", ALICE).0,
        404,
        "a contract is invisible to accounting"
    );
    assert_eq!(
        s.call("DELETE", "/api/v4/documents/1/", Some(ALICE), None)
            .0,
        403,
        "visible but not deletable"
    );
    // Global permission (carol: read everything).
    assert_eq!(s.get("/api/v4/documents/6/", CAROL).0, 200);
    assert_eq!(s.get("/api/v4/documents/", CAROL).1["count"], 8);
    let (status, _) = s.call(
        "PATCH",
        "/api/v4/documents/1/",
        Some(CAROL),
        Some(json!({"label": "x"})),
    );
    assert_eq!(status, 403);
    // Object ACL through the spec 4.4 endpoints (bob gets one invoice).
    let (status, roles) = s.get("/api/v4/roles/?ordering=label", ADMIN);
    assert_eq!(status, 200);
    let lawyer = roles["results"]
        .as_array()
        .expect("roles")
        .iter()
        .find(|r| r["label"] == "Lawyer")
        .expect("Lawyer")["id"]
        .clone();
    let acls = "/api/v5/objects/documents/document/2/acls/";
    let (status, acl) = s.call("POST", acls, Some(ADMIN), Some(json!({"role_id": lawyer})));
    assert_eq!(status, 201, "{acl}");
    assert_eq!(
        acl["object"],
        json!({"app_label": "documents", "model_name": "document", "id": 2})
    );
    assert_eq!(
        s.call("POST", acls, Some(ADMIN), Some(json!({"role_id": lawyer})))
            .0,
        400,
        "one ACL per role"
    );
    let acl_id = acl["id"].as_i64().expect("id");
    let add = format!("{acls}{acl_id}/permissions/add/");
    let (status, updated) = s.call(
        "POST",
        &add,
        Some(ADMIN),
        Some(json!({"permission": "documents.document_view"})),
    );
    assert_eq!(
        (status, updated["permissions"][0]["pk"].as_str()),
        (200, Some("documents.document_view"))
    );
    assert_eq!(
        s.call(
            "POST",
            &add,
            Some(ADMIN),
            Some(json!({"permission": "metadata.metadata_type_create"}))
        )
        .0,
        400,
        "not grantable on a document"
    );
    let (status, body) = s.call(
        "POST",
        &add,
        Some(ADMIN),
        Some(json!({"permission": "nope.nope"})),
    );
    assert!(status == 400 && body["permission"].is_array(), "{body}");
    assert_eq!(s.get("/api/v4/documents/2/", BOB).0, 200);
    assert_eq!(s.get("/api/v4/documents/1/", BOB).0, 404);
    assert_eq!(
        s.get(acls, BOB).0,
        403,
        "bob sees the document but not its ACLs"
    );
    let (status, body) = s.call(
        "POST",
        &format!("{acls}{acl_id}/permissions/remove/"),
        Some(ADMIN),
        Some(json!({"permission": "documents.document_view"})),
    );
    assert_eq!((status, body), (200, json!({"deleted": true})));
    assert_eq!(s.get("/api/v4/documents/2/", BOB).0, 404);
    assert_eq!(s.get("/api/v5/objects/nope/nope/1/acls/", ADMIN).0, 404);
    let (status, grantable) = s.get(
        "/api/v5/objects/documents/documenttype/permissions/?page_size=500",
        ADMIN,
    );
    assert_eq!(status, 200);
    assert!(
        grantable["results"]
            .as_array()
            .expect("list")
            .iter()
            .any(|p| p["pk"] == "metadata.document_metadata_view")
    );
}

#[test]
fn document_metadata_endpoints() {
    let Some(s) = Server::start() else { return };
    let (status, values) = s.get("/api/v4/documents/1/metadata/", ALICE);
    assert_eq!(status, 200);
    let due = values["results"]
        .as_array()
        .expect("results")
        .iter()
        .find(|v| v["metadata_type"]["name"] == "due_date")
        .expect("due date")
        .clone();
    assert_eq!(due["document"]["id"], 1);
    let url = format!("/api/v4/documents/1/metadata/{}/", due["id"]);
    let (status, edited) = s.call(
        "PATCH",
        &url,
        Some(ALICE),
        Some(json!({"value": "31/12/2030"})),
    );
    assert_eq!(
        (status, edited["value"].as_str()),
        (200, Some("2030-12-31")),
        "stored value is the parsed value"
    );
    let (status, err) = s.call(
        "PATCH",
        &url,
        Some(ALICE),
        Some(json!({"value": "31/02/2030"})),
    );
    assert_eq!((status, err["value"].is_array()), (400, true));
    let (status, defaulted) = s.call("PATCH", &url, Some(ALICE), Some(json!({"value": ""})));
    assert_eq!(status, 200);
    assert_ne!(
        defaulted["value"], "",
        "an empty value re-applies the default"
    );
    let (status, err) = s.call("DELETE", &url, Some(ALICE), None);
    assert_eq!(
        (status, err["non_field_errors"].is_array()),
        (400, true),
        "required metadata cannot be removed"
    );
    let (status, err) = s.call(
        "POST",
        "/api/v4/documents/1/metadata/",
        Some(ALICE),
        Some(json!({"metadata_type_id": due["metadata_type"]["id"], "value": "01/01/2030"})),
    );
    assert_eq!(
        (status, err["metadata_type_id"].is_array()),
        (400, true),
        "second value of a type"
    );
    // party belongs to contracts only.
    let (_, types) = s.get("/api/v4/metadata/metadata-types/?page_size=100", ADMIN);
    let party = types["results"]
        .as_array()
        .expect("types")
        .iter()
        .find(|t| t["name"] == "party")
        .expect("party")["id"]
        .clone();
    let (status, err) = s.call(
        "POST",
        "/api/v4/documents/1/metadata/",
        Some(ADMIN),
        Some(json!({"metadata_type_id": party, "value": "x"})),
    );
    assert_eq!(
        (status, err["metadata_type_id"].is_array()),
        (400, true),
        "not associated"
    );
    // Hostile templates fail fast with a 400.
    let (status, hostile) = s.call("POST", "/api/v4/metadata/metadata-types/", Some(ADMIN), Some(json!({"name": "hostile", "label": "Hostile", "default": "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}"})));
    assert_eq!(status, 201);
    assert_eq!(
        s.call(
            "POST",
            "/api/v4/documents/types/1/metadata-types/",
            Some(ADMIN),
            Some(json!({"metadata_type_id": hostile["id"]}))
        )
        .0,
        201
    );
    let started = std::time::Instant::now();
    let (status, err) = s.call(
        "POST",
        "/api/v4/documents/1/metadata/",
        Some(ADMIN),
        Some(json!({"metadata_type_id": hostile["id"], "value": ""})),
    );
    assert_eq!((status, err["value"].is_array()), (400, true), "{err}");
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}

/// The entry of a list answer's `results` whose `field` (a path of keys) is `value`.
fn result_where<'a>(list: &'a Value, field: &[&str], value: &str) -> Option<&'a Value> {
    list["results"]
        .as_array()?
        .iter()
        .find(|r| field.iter().fold(*r, |v, k| &v[*k]) == value)
}

/// The `due_date` value of document 1 as `user` reads it (`None` when it is not shown).
fn due_date_of_document_1(s: &Server, user: (&str, &str)) -> (u16, Option<String>) {
    let (status, values) = s.get("/api/v4/documents/1/metadata/", user);
    let due = result_where(&values, &["metadata_type", "name"], "due_date")
        .and_then(|v| v["value"].as_str().map(str::to_owned));
    (status, due)
}

/// The second read of a document's metadata is answered from the core's read cache, off the
/// blocking threads: it must still show an edit made after the first.
#[test]
fn a_repeated_metadata_read_shows_the_latest_edit() {
    let Some(s) = Server::start() else { return };
    let (_, values) = s.get("/api/v4/documents/1/metadata/", ALICE);
    let due = result_where(&values, &["metadata_type", "name"], "due_date").expect("due date")
        ["id"]
        .clone();
    let (status, first) = due_date_of_document_1(&s, ALICE);
    assert_eq!(status, 200);
    let url = format!("/api/v4/documents/1/metadata/{due}/");
    let (status, _) = s.call("PATCH", &url, Some(ADMIN), Some(json!({"value": "01/02/2031"})));
    assert_eq!(status, 200);
    let (status, second) = due_date_of_document_1(&s, ALICE);
    assert_eq!(status, 200);
    assert_ne!(first, second);
    assert_eq!(second.as_deref(), Some("2031-02-01"));
}

/// The same, for access: once alice's ACL on invoices is deleted, a document she has read
/// (and that is cached) is not found for her, at once.
#[test]
fn a_repeated_metadata_read_is_refused_once_the_acl_is_deleted() {
    let Some(s) = Server::start() else { return };
    assert_eq!(due_date_of_document_1(&s, ALICE).0, 200);
    assert_eq!(due_date_of_document_1(&s, ALICE).0, 200);
    let acls = "/api/v5/objects/documents/documenttype/1/acls/";
    let (status, list) = s.get(acls, ADMIN);
    assert_eq!(status, 200);
    for acl in list["results"].as_array().expect("acls") {
        let (status, _) = s.call("DELETE", &format!("{acls}{}/", acl["id"]), Some(ADMIN), None);
        assert_eq!(status, 204);
    }
    // Read by the administrator first, so that the document is in the cache again.
    assert_eq!(due_date_of_document_1(&s, ADMIN).0, 200);
    assert_eq!(due_date_of_document_1(&s, ALICE).0, 404);
}

/// The answer bytes the server keeps for a metadata page are shared only by callers the core
/// says are shown the same values: bob, who may view two of document 1's six metadata types,
/// never gets the administrator's answer.
#[test]
fn a_kept_metadata_answer_is_not_sent_to_a_caller_shown_fewer_values() {
    let Some(s) = Server::start() else { return };
    let (_, roles) = s.get("/api/v4/roles/?ordering=label", ADMIN);
    let lawyer = result_where(&roles, &["label"], "Lawyer").expect("Lawyer")["id"].clone();
    let acls = "/api/v5/objects/documents/document/1/acls/";
    let (status, acl) = s.call("POST", acls, Some(ADMIN), Some(json!({"role_id": lawyer})));
    assert_eq!(status, 201, "{acl}");
    let add = format!("{acls}{}/permissions/add/", acl["id"]);
    for permission in ["documents.document_view", "metadata.document_metadata_view"] {
        let (status, _) = s.call("POST", &add, Some(ADMIN), Some(json!({"permission": permission})));
        assert_eq!(status, 200);
    }
    let names = |user| -> Vec<String> {
        let (status, values) = s.get("/api/v4/documents/1/metadata/", user);
        assert_eq!(status, 200);
        let mut names: Vec<String> = values["results"]
            .as_array()
            .expect("results")
            .iter()
            .map(|v| v["metadata_type"]["name"].as_str().expect("name").to_owned())
            .collect();
        names.sort();
        names
    };
    // Twice each: the second read of each is answered from what was kept.
    let admin = (names(ADMIN), names(ADMIN));
    let bob = (names(BOB), names(BOB));
    assert_eq!(admin.0, admin.1);
    assert_eq!(bob.0, bob.1);
    assert_eq!(bob.0, ["owner", "status"]);
    assert!(admin.0.len() > bob.0.len(), "{admin:?}");
}

#[test]
fn types_associations_documents_events_and_pagination() {
    let Some(s) = Server::start() else { return };
    let (status, dt) = s.call(
        "POST",
        "/api/v4/documents/types/",
        Some(ADMIN),
        Some(json!({"label": "Memo"})),
    );
    assert_eq!(status, 201);
    assert_eq!(
        s.call(
            "POST",
            "/api/v4/documents/types/",
            Some(ADMIN),
            Some(json!({"label": "Memo"}))
        )
        .0,
        400
    );
    let (status, mt) = s.call(
        "POST",
        "/api/v4/metadata/metadata-types/",
        Some(ADMIN),
        Some(json!({"name": "topic", "label": "Topic", "default": "general"})),
    );
    assert_eq!(status, 201);
    let assoc_url = format!("/api/v4/documents/types/{}/metadata-types/", dt["id"]);
    let (status, assoc) = s.call(
        "POST",
        &assoc_url,
        Some(ADMIN),
        Some(json!({"metadata_type_id": mt["id"], "required": true})),
    );
    assert_eq!(
        (
            status,
            assoc["required"].as_bool(),
            assoc["metadata_type"]["name"].as_str()
        ),
        (201, Some(true), Some("topic"))
    );
    assert_eq!(
        s.call(
            "POST",
            &assoc_url,
            Some(ADMIN),
            Some(json!({"metadata_type_id": mt["id"]}))
        )
        .0,
        400,
        "duplicate association"
    );
    let (status, doc) = s.call(
        "POST",
        "/api/v4/documents/",
        Some(ADMIN),
        Some(json!({"document_type_id": dt["id"], "label": "Memo 1"})),
    );
    assert_eq!(status, 201);
    let (_, values) = s.get(&format!("/api/v4/documents/{}/metadata/", doc["id"]), ADMIN);
    assert_eq!(
        values["results"][0]["value"], "general",
        "required type added with its default"
    );
    let (status, changed) = s.call(
        "POST",
        &format!("/api/v4/documents/{}/type/change/", doc["id"]),
        Some(ADMIN),
        Some(json!({"document_type_id": 1})),
    );
    assert_eq!(
        (status, changed["document_type"]["label"].as_str()),
        (200, Some("Invoice"))
    );
    let assoc_detail = format!("{assoc_url}{}/", assoc["id"]);
    assert_eq!(
        s.call(
            "PATCH",
            &assoc_detail,
            Some(ADMIN),
            Some(json!({"required": false}))
        )
        .1["required"],
        false
    );
    assert_eq!(s.call("DELETE", &assoc_detail, Some(ADMIN), None).0, 204);
    // Events: newest first, filtered by what the caller may see.
    let (status, events) = s.get("/api/v4/events/?page_size=5", ADMIN);
    assert_eq!(status, 200);
    assert_eq!(
        events["results"][0]["name"],
        "metadata.metadata_type_relationship_updated"
    );
    let (_, alice_events) = s.get("/api/v4/events/?page_size=500", ALICE);
    assert!(
        alice_events["results"]
            .as_array()
            .expect("events")
            .iter()
            .all(|e| e["target"]["model_name"] != "user" || e["target"]["label"] == "alice")
    );
    assert!(
        alice_events["results"]
            .as_array()
            .expect("events")
            .iter()
            .all(|e| !e["target"]["label"]
                .as_str()
                .unwrap_or("")
                .starts_with("Contract"))
    );
    let (status, doc_events) = s.get("/api/v4/documents/1/events/", ALICE);
    assert_eq!(status, 200);
    assert!(doc_events["count"].as_u64().unwrap_or(0) >= 1);
    // Pagination and ordering.
    let (_, page) = s.get(
        "/api/v4/metadata/metadata-types/?page_size=2&ordering=-name",
        ADMIN,
    );
    assert_eq!(page["results"].as_array().map(Vec::len), Some(2));
    assert_eq!(page["results"][0]["name"], "topic");
    assert!(page["next"].as_str().is_some_and(|n| n.contains("page=2")));
    assert_eq!(
        s.get("/api/v4/metadata/metadata-types/?page=99", ADMIN).0,
        404
    );
    let huge = "/api/v4/metadata/metadata-types/?page=18446744073709551615&page_size=500";
    assert_eq!(s.get(huge, ADMIN).0, 404, "no overflow");
    let deep = "/api/v4/search/documents/?q=invoice&page=18446744073709551615";
    assert_eq!(s.get(deep, ADMIN).0, 400);
    // Groups, roles, permissions, cabinets, tasks.
    let (status, group) = s.call(
        "POST",
        "/api/v4/groups/",
        Some(ADMIN),
        Some(json!({"name": "Readers"})),
    );
    assert_eq!(status, 201);
    assert_eq!(
        s.call(
            "POST",
            &format!("/api/v4/groups/{}/users/add/", group["id"]),
            Some(ADMIN),
            Some(json!({"user_id": 2}))
        )
        .0,
        200
    );
    assert_eq!(
        s.get(&format!("/api/v4/groups/{}/users/", group["id"]), ADMIN)
            .1["count"],
        1
    );
    let (status, role) = s.call(
        "POST",
        "/api/v4/roles/",
        Some(ADMIN),
        Some(json!({"label": "Readers"})),
    );
    assert_eq!(status, 201);
    let (status, perms) = s.call(
        "POST",
        &format!("/api/v4/roles/{}/permissions/add/", role["id"]),
        Some(ADMIN),
        Some(json!({"permission": "tags.tag_view"})),
    );
    assert_eq!(
        (status, perms[0]["pk"].as_str()),
        (200, Some("tags.tag_view"))
    );
    assert_eq!(
        s.call(
            "POST",
            &format!("/api/v4/roles/{}/groups/add/", role["id"]),
            Some(ADMIN),
            Some(json!({"group_id": group["id"]}))
        )
        .0,
        200
    );
    assert!(
        s.get("/api/v4/permissions/?page_size=500", ADMIN).1["count"]
            .as_u64()
            .unwrap_or(0)
            > 80
    );
    let (status, cabinets) = s.get("/api/v4/cabinets/", ALICE);
    assert_eq!(
        (status, cabinets["count"].as_u64()),
        (200, Some(2)),
        "the root cabinet ACL covers Q1"
    );
    assert_eq!(s.get("/api/v4/cabinets/2/documents/", ALICE).1["count"], 3);
    assert_eq!(s.get("/api/v4/tasks/", ADMIN).0, 200);
    assert_eq!(s.get("/api/v4/tasks/", ALICE).0, 403);
}

#[test]
fn search_endpoints() {
    let Some(s) = Server::start() else { return };
    let (status, page) = s.get(
        "/api/v4/search/documents/?q=document_type__label:invoice",
        ALICE,
    );
    assert_eq!((status, page["count"].as_u64()), (200, Some(5)));
    assert_eq!(
        s.get("/api/v4/search/documents/?q=approved", ALICE).1["count"],
        1,
        "alice sees only invoices"
    );
    assert_eq!(
        s.get("/api/v4/search/documents/?q=approved", CAROL).1["count"],
        4,
        "carol sees contracts too"
    );
    let (status, page) = s.get(
        "/api/v4/search/documents/?q=metadata_value:%5B2024-02-01%20TO%202024-03-31%5D",
        ALICE,
    );
    assert_eq!(
        (status, page["count"].as_u64()),
        (200, Some(2)),
        "due in February or March: {page}"
    );
    let (status, page) = s.get("/api/v4/search/metadata/?q=metadata_type__name:due_date%20value:%5B2024-01-01%20TO%202024-03-31%5D", ALICE);
    assert_eq!(
        (status, page["count"].as_u64()),
        (200, Some(3)),
        "per value, the name and the range apply together: {page}"
    );
    let (status, page) = s.get(
        "/api/v4/search/documents/?q=metadata_value:1002&page_size=1",
        ALICE,
    );
    assert_eq!(
        (status, page["results"][0]["label"].as_str()),
        (200, Some("Invoice 2")),
        "partial value"
    );
    let (status, page) = s.get(
        "/api/v4/search/metadata/?q=metadata_type__name:party",
        CAROL,
    );
    assert_eq!((status, page["count"].as_u64()), (200, Some(3)));
    assert_eq!(page["results"][0]["metadata_type"]["name"], "party");
    assert_eq!(
        s.get(
            "/api/v4/search/metadata/?q=metadata_type__name:party",
            ALICE
        )
        .1["count"],
        0
    );
    let (status, err) = s.get("/api/v4/search/documents/?q=nope:x", ALICE);
    assert_eq!((status, err["q"].is_array()), (400, true), "{err}");
    assert_eq!(
        s.get("/api/v4/search/documents/", ALICE).0,
        400,
        "q is required"
    );
    assert_eq!(
        s.call("GET", "/api/v4/health/", None, None).1["search"],
        "ok"
    );
}

impl Server {
    /// Uploads `content` as the multipart field `field` of `path`.
    fn upload(
        &self,
        path: &str,
        user: (&str, &str),
        field: &str,
        filename: &str,
        content: &[u8],
    ) -> (u16, Value) {
        let boundary = "docmeta-test-boundary-7d1f";
        let mut body = format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"{field}\"; filename=\"{filename}\"\r\nContent-Type: application/octet-stream\r\n\r\n"
        )
        .into_bytes();
        body.extend_from_slice(content);
        body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        let auth = format!("Basic {}", base64(&format!("{}:{}", user.0, user.1)));
        let mut response = self
            .agent
            .post(format!("{}{path}", self.base))
            .header("Authorization", auth)
            .header(
                "Content-Type",
                format!("multipart/form-data; boundary={boundary}"),
            )
            .send(&body[..])
            .expect("HTTP exchange");
        let status = response.status().as_u16();
        let text = response.body_mut().read_to_string().unwrap_or_default();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// Posts a multipart form of text fields and, optionally, one file field `file`.
    fn form(
        &self,
        path: &str,
        user: (&str, &str),
        fields: &[(&str, &str)],
        file: Option<(&str, &[u8])>,
    ) -> (u16, Value) {
        let boundary = "docmeta-test-boundary-7d1f";
        let mut body = Vec::new();
        for (name, value) in fields {
            body.extend_from_slice(
                format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n")
                    .as_bytes(),
            );
        }
        if let Some((filename, content)) = file {
            body.extend_from_slice(format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\nContent-Type: application/octet-stream\r\n\r\n"
            ).as_bytes());
            body.extend_from_slice(content);
            body.extend_from_slice(b"\r\n");
        }
        body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
        let auth = format!("Basic {}", base64(&format!("{}:{}", user.0, user.1)));
        let mut response = self
            .agent
            .post(format!("{}{path}", self.base))
            .header("Authorization", auth)
            .header(
                "Content-Type",
                format!("multipart/form-data; boundary={boundary}"),
            )
            .send(&body[..])
            .expect("HTTP exchange");
        let status = response.status().as_u16();
        let text = response.body_mut().read_to_string().unwrap_or_default();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// Downloads bytes with their status and content type.
    fn download(&self, path: &str, user: (&str, &str)) -> (u16, String, String, Vec<u8>) {
        let auth = format!("Basic {}", base64(&format!("{}:{}", user.0, user.1)));
        let mut response = self
            .agent
            .get(format!("{}{path}", self.base))
            .header("Authorization", auth)
            .call()
            .expect("HTTP exchange");
        let header = |name: &str| {
            (response.headers().get(name))
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned()
        };
        let (content_type, disposition) = (header("content-type"), header("content-disposition"));
        let status = response.status().as_u16();
        let bytes = response
            .body_mut()
            .with_config()
            .limit(64 << 20)
            .read_to_vec()
            .expect("body");
        (status, content_type, disposition, bytes)
    }
}

#[test]
fn document_file_endpoints() {
    let Some(s) = Server::start() else { return };
    // Larger than the 1 MiB JSON limit: uploads have their own (upload_max_bytes).
    let content: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    let (status, file) = s.upload(
        "/api/v4/documents/1/files/",
        ADMIN,
        "file",
        "../Scan März.pdf",
        &content,
    );
    assert_eq!(status, 201, "{file}");
    assert_eq!(file["filename"], "Scan März.pdf", "no path survives");
    assert_eq!(file["size"], content.len());
    assert_eq!(file["mimetype"], "application/pdf");
    let url = file["url"].as_str().expect("url").to_owned();
    let download = file["download_url"].as_str().expect("url").to_owned();
    let (status, list) = s.get("/api/v4/documents/1/files/", ALICE);
    // The demo's scan and the upload.
    assert_eq!((status, list["count"].as_u64()), (200, Some(2)));
    assert_eq!(list["results"][0]["filename"], "invoice-1.txt");
    assert_eq!(s.get(&url, ALICE).1["checksum"], file["checksum"]);
    let (status, content_type, disposition, bytes) = s.download(&download, ALICE);
    assert_eq!((status, content_type.as_str()), (200, "application/pdf"));
    assert!(
        disposition.contains("filename*=UTF-8''Scan%20M%C3%A4rz.pdf"),
        "{disposition}"
    );
    assert!(
        bytes == content,
        "the downloaded bytes are the uploaded ones"
    );
    // bob (contracts only) sees neither the document's files nor may upload to it.
    assert_eq!(s.get("/api/v4/documents/1/files/", BOB).0, 404);
    assert_eq!(s.download(&download, BOB).0, 404);
    assert_eq!(
        s.upload("/api/v4/documents/1/files/", BOB, "file", "x.txt", b"x")
            .0,
        404
    );
    // carol (read-only auditor) sees them but may not upload.
    assert_eq!(
        s.upload("/api/v4/documents/1/files/", CAROL, "file", "x.txt", b"x")
            .0,
        403
    );
    let (status, body) = s.upload("/api/v4/documents/1/files/", ADMIN, "other", "x.txt", b"x");
    assert_eq!((status, body["file"].is_array()), (400, true));
    // A file of document 1 is not reachable through document 2's URL.
    let other = url.replace("/documents/1/", "/documents/2/");
    assert_eq!(s.get(&other, ADMIN).0, 404);
    assert_eq!(s.call("DELETE", &url, Some(ADMIN), None).0, 204);
    assert_eq!(s.get(&url, ADMIN).0, 404);
    assert_eq!(s.download(&download, ADMIN).0, 404);
}

#[test]
fn workflow_endpoints_and_the_demo_invoice_workflow() {
    let Some(s) = Server::start() else { return };
    let (status, page) = s.get("/api/v4/workflow-templates/", ADMIN);
    assert_eq!((status, page["count"].as_u64()), (200, Some(1)));
    let flow = page["results"][0].clone();
    assert_eq!(flow["label"], "Invoice approval");
    let base = flow["url"].as_str().expect("url").to_owned();
    let (_, states) = s.get(&format!("{base}states/"), ADMIN);
    let states = states["results"].clone();
    let labels: Vec<&str> = states
        .as_array()
        .expect("states")
        .iter()
        .filter_map(|st| st["label"].as_str())
        .collect();
    assert_eq!(labels, ["draft", "review", "approved", "paid"]);
    let (_, transitions) = s.get(&format!("{base}transitions/"), ADMIN);
    let transitions = transitions["results"].clone();
    assert_eq!(
        transitions[0]["triggers"][0],
        "metadata.document_metadata_edited"
    );
    // A new invoice (with its required number) gets an instance in `draft`; editing its
    // status drives it.
    let (_, types) = s.get("/api/v4/metadata/metadata-types/?page_size=500", ADMIN);
    let number = types["results"]
        .as_array()
        .expect("results")
        .iter()
        .find(|t| t["name"] == "invoice_number")
        .expect("invoice_number")["id"]
        .clone();
    let (status, doc) = s.call(
        "POST",
        "/api/v4/documents/",
        Some(ALICE),
        Some(json!({"document_type_id": 1, "label": "Invoice 6",
            "metadata": [{"metadata_type_id": number, "value": "INV-0006"}]})),
    );
    assert_eq!(status, 201, "{doc}");
    let doc_url = doc["url"].as_str().expect("url").to_owned();
    let (status, instances) = s.get(&format!("{doc_url}workflows/"), ADMIN);
    assert_eq!(status, 200);
    let instance = instances["results"][0].clone();
    assert_eq!(instance["current_state_id"], states[0]["id"]);
    assert_eq!(s.get(&doc_url, BOB).0, 404, "the lawyers do not see it yet");
    let (_, values) = s.get(&format!("{doc_url}metadata/"), ALICE);
    let status_value = values["results"]
        .as_array()
        .expect("results")
        .iter()
        .find(|v| v["metadata_type"]["name"] == "status")
        .expect("status")
        .clone();
    let value_url = format!("{doc_url}metadata/{}/", status_value["id"]);
    for next in ["review", "approved"] {
        let (code, body) = s.call(
            "PATCH",
            &value_url,
            Some(ALICE),
            Some(json!({"value": next})),
        );
        assert_eq!(code, 200, "{body}");
    }
    let instance_url = instance["url"].as_str().expect("url").to_owned();
    let (_, now) = s.get(&instance_url, ADMIN);
    assert_eq!(now["current_state_id"], states[2]["id"]);
    assert_eq!(s.get(&doc_url, BOB).0, 200, "the grant action ran");
    let (_, log) = s.get(&format!("{instance_url}log/"), ADMIN);
    assert_eq!(log["results"].as_array().map(Vec::len), Some(2));
    // By hand: only what leaves the current state and passes its condition.
    let (_, available) = s.get(&format!("{instance_url}transitions/"), ADMIN);
    assert_eq!(
        available["results"].as_array().map(Vec::len),
        Some(0),
        "pay needs status paid"
    );
    let (code, body) = s.call(
        "POST",
        &format!("{instance_url}transitions/"),
        Some(ADMIN),
        Some(json!({"transition_id": transitions[0]["id"], "comment": "again"})),
    );
    assert_eq!(
        (code, body["transition_id"].is_array()),
        (400, true),
        "{body}"
    );
    // A template built over HTTP.
    let (code, created) = s.call(
        "POST",
        "/api/v4/workflow-templates/",
        Some(ADMIN),
        Some(json!({"label": "Contracts", "document_type_ids": [2]})),
    );
    assert_eq!(code, 201, "{created}");
    let base = created["url"].as_str().expect("url").to_owned();
    let (_, a) = s.call(
        "POST",
        &format!("{base}states/"),
        Some(ADMIN),
        Some(json!({"label": "open", "initial": true})),
    );
    let (_, b) = s.call(
        "POST",
        &format!("{base}states/"),
        Some(ADMIN),
        Some(json!({"label": "closed"})),
    );
    let (code, t) = s.call(
        "POST",
        &format!("{base}transitions/"),
        Some(ADMIN),
        Some(
            json!({"label": "close", "origin_state_id": a["id"], "destination_state_id": b["id"]}),
        ),
    );
    assert_eq!(code, 201, "{t}");
    let (code, t) = s.call(
        "POST",
        &format!("{base}transitions/{}/triggers/", t["id"]),
        Some(ADMIN),
        Some(json!({"event_type": "document_metadata_removed"})),
    );
    assert_eq!(
        (code, t["triggers"][0].as_str()),
        (201, Some("metadata.document_metadata_removed"))
    );
    let actions = format!("{base}states/{}/actions/", b["id"]);
    let (code, action) = s.call(
        "POST",
        &actions,
        Some(ADMIN),
        Some(json!({"label": "stamp", "when": "entry", "action": {"type": "edit_metadata", "metadata_type_id": 5, "value": "{{ now.year }}"}})),
    );
    assert_eq!(
        (code, action["action"]["type"].as_str()),
        (201, Some("edit_metadata")),
        "{action}"
    );
    let (code, err) = s.call(
        "POST",
        &actions,
        Some(ADMIN),
        Some(json!({"label": "bad", "action": {"type": "launch_rockets"}})),
    );
    assert_eq!((code, err["action"].is_array()), (400, true));
    assert_eq!(s.get(&actions, ADMIN).1["count"].as_u64(), Some(1));
    let trigger_url = format!(
        "{base}transitions/{}/triggers/document_metadata_removed/",
        t["id"]
    );
    assert_eq!(s.call("DELETE", &trigger_url, Some(ADMIN), None).0, 204);
    assert_eq!(
        s.call(
            "DELETE",
            &format!("{actions}{}/", action["id"]),
            Some(ADMIN),
            None
        )
        .0,
        204
    );
    assert_eq!(s.get(&actions, ADMIN).1["count"].as_u64(), Some(0));
    // alice may not create templates.
    assert_eq!(
        s.call(
            "POST",
            "/api/v4/workflow-templates/",
            Some(ALICE),
            Some(json!({"label": "x"}))
        )
        .0,
        403
    );
}

#[test]
fn an_acl_on_an_object_that_does_not_exist_is_not_found() {
    let Some(s) = Server::start() else { return };
    let (_, roles) = s.get("/api/v4/roles/", ADMIN);
    let role = roles["results"][0]["id"].clone();
    for object in [
        "document_states/workflow/999",
        "documents/documentfile/999",
        "documents/document/999",
        "tags/tag/999",
        "sources/source/1",
    ] {
        let (status, body) = s.call(
            "POST",
            &format!("/api/v5/objects/{object}/acls/"),
            Some(ADMIN),
            Some(json!({"role_id": role})),
        );
        assert_eq!(status, 404, "{object}: {body}");
    }
    // An existing workflow takes an ACL.
    let (status, body) = s.call(
        "POST",
        "/api/v5/objects/document_states/workflow/1/acls/",
        Some(ADMIN),
        Some(json!({"role_id": role})),
    );
    assert_eq!(status, 201, "{body}");
}

#[test]
fn a_body_reference_to_a_missing_object_is_a_400_naming_the_field() {
    let Some(s) = Server::start() else { return };
    for (path, body, field) in [
        (
            "/api/v4/documents/",
            json!({"document_type_id": 999, "label": "x"}),
            "document_type_id",
        ),
        (
            "/api/v4/documents/types/1/metadata-types/",
            json!({"metadata_type_id": 999}),
            "metadata_type_id",
        ),
        (
            "/api/v4/documents/1/metadata/",
            json!({"metadata_type_id": 999, "value": "x"}),
            "metadata_type_id",
        ),
        (
            "/api/v4/documents/1/type/change/",
            json!({"document_type_id": 999}),
            "document_type_id",
        ),
        (
            "/api/v4/cabinets/",
            json!({"label": "sub", "parent_id": 999}),
            "parent_id",
        ),
    ] {
        let (status, answer) = s.call("POST", path, Some(ADMIN), Some(body));
        assert_eq!(status, 400, "{path}: {answer}");
        assert!(answer[field].is_array(), "{path}: {answer}");
    }
}

#[test]
fn a_missing_document_in_the_body_is_a_400_but_a_missing_cabinet_in_the_path_a_404() {
    let Some(s) = Server::start() else { return };
    let (_, cabinets) = s.get("/api/v4/cabinets/", ADMIN);
    let cabinet = cabinets["results"][0]["id"].clone();
    let (status, body) = s.call(
        "POST",
        &format!("/api/v4/cabinets/{cabinet}/documents/add/"),
        Some(ADMIN),
        Some(json!({"document_id": 999})),
    );
    assert_eq!((status, body["document_id"].is_array()), (400, true), "{body}");
    // A missing object in the URL path stays a 404.
    let (status, _) = s.call(
        "POST",
        "/api/v4/cabinets/999/documents/add/",
        Some(ADMIN),
        Some(json!({"document_id": 1})),
    );
    assert_eq!(status, 404);
}

/// A new user `name` whose only permissions are the global `permissions`.
fn user_with_global(s: &Server, name: &str, permissions: &[&str]) -> (String, String) {
    let password = "a long enough password".to_owned();
    let post = |path: &str, body: Value| {
        let (status, answer) = s.call("POST", path, Some(ADMIN), Some(body));
        assert!(status == 200 || status == 201, "{path}: {status} {answer}");
        answer
    };
    let user = post(
        "/api/v4/users/",
        json!({"username": name, "password": password}),
    );
    let group = post("/api/v4/groups/", json!({"name": format!("{name} group")}));
    post(
        &format!("/api/v4/groups/{}/users/add/", group["id"]),
        json!({"user_id": user["id"]}),
    );
    let role = post("/api/v4/roles/", json!({"label": format!("{name} role")}));
    post(
        &format!("/api/v4/roles/{}/groups/add/", role["id"]),
        json!({"group_id": group["id"]}),
    );
    for p in permissions {
        post(
            &format!("/api/v4/roles/{}/permissions/add/", role["id"]),
            json!({ "permission": p }),
        );
    }
    (name.to_owned(), password)
}

#[test]
fn creating_a_group_with_only_group_create_answers_201_with_the_group() {
    let Some(s) = Server::start() else { return };
    let (name, password) = user_with_global(&s, "creator", &["user_management.group_create"]);
    let (status, group) = s.call(
        "POST",
        "/api/v4/groups/",
        Some((&name, &password)),
        Some(json!({"name": "New auditors"})),
    );
    assert_eq!((status, group["name"].as_str()), (201, Some("New auditors")), "{group}");
    assert!(group["id"].is_i64());
}

/// A new document type with one required metadata type `number` without a default: its id,
/// and the metadata type's.
fn type_with_required_number(s: &Server) -> (Value, Value) {
    let (_, dt) = s.call(
        "POST",
        "/api/v4/documents/types/",
        Some(ADMIN),
        Some(json!({"label": "Numbered"})),
    );
    let (_, mt) = s.call(
        "POST",
        "/api/v4/metadata/metadata-types/",
        Some(ADMIN),
        Some(json!({"name": "number", "label": "Number"})),
    );
    let (status, _) = s.call(
        "POST",
        &format!("/api/v4/documents/types/{}/metadata-types/", dt["id"]),
        Some(ADMIN),
        Some(json!({"metadata_type_id": mt["id"], "required": true})),
    );
    assert_eq!(status, 201);
    (dt["id"].clone(), mt["id"].clone())
}

#[test]
fn a_document_created_by_multipart_has_its_file_and_values() {
    let Some(s) = Server::start() else { return };
    let (dt, mt) = type_with_required_number(&s);
    let metadata = json!([{"metadata_type_id": mt, "value": "42"}]).to_string();
    let (status, doc) = s.form(
        "/api/v4/documents/",
        ADMIN,
        &[
            ("document_type_id", &dt.to_string()),
            ("label", "Scanned"),
            ("metadata", &metadata),
        ],
        Some(("scan.pdf", b"%PDF-1.7")),
    );
    assert_eq!(status, 201, "{doc}");
    assert_eq!(doc["label"], "Scanned");
    let doc_url = doc["url"].as_str().expect("url").to_owned();
    let (_, files) = s.get(&format!("{doc_url}files/"), ADMIN);
    let files = files["results"].clone();
    assert_eq!(files[0]["filename"], "scan.pdf", "{files}");
    let (_, values) = s.get(&format!("{doc_url}metadata/"), ADMIN);
    assert_eq!(values["results"][0]["value"], "42", "{values}");
}

#[test]
fn a_document_created_by_json_takes_its_initial_metadata_values() {
    let Some(s) = Server::start() else { return };
    let (dt, mt) = type_with_required_number(&s);
    let (status, doc) = s.call(
        "POST",
        "/api/v4/documents/",
        Some(ADMIN),
        Some(json!({"document_type_id": dt, "label": "Typed",
            "metadata": [{"metadata_type_id": mt, "value": "7"}]})),
    );
    assert_eq!(status, 201, "{doc}");
    let (_, values) = s.get(&format!("{}metadata/", doc["url"].as_str().expect("url")), ADMIN);
    assert_eq!(values["results"][0]["value"], "7", "{values}");
}

/// A document type `Dated` with two metadata types, `count` (anything) then `when` (a date);
/// their ids.
fn type_with_a_dated_second_value(s: &Server) -> (Value, Value, Value) {
    let (_, dt) = s.call(
        "POST",
        "/api/v4/documents/types/",
        Some(ADMIN),
        Some(json!({"label": "Dated"})),
    );
    let (_, count) = s.call(
        "POST",
        "/api/v4/metadata/metadata-types/",
        Some(ADMIN),
        Some(json!({"name": "count", "label": "Count"})),
    );
    let (_, when) = s.call(
        "POST",
        "/api/v4/metadata/metadata-types/",
        Some(ADMIN),
        Some(json!({"name": "when", "label": "When",
            "validation": "svc.apps.metadata.metadata_validators.DateValidator"})),
    );
    for mt in [&count, &when] {
        let (status, body) = s.call(
            "POST",
            &format!("/api/v4/documents/types/{}/metadata-types/", dt["id"]),
            Some(ADMIN),
            Some(json!({"metadata_type_id": mt["id"], "required": false})),
        );
        assert_eq!(status, 201, "{body}");
    }
    (dt["id"].clone(), count["id"].clone(), when["id"].clone())
}

/// Asserts `body` is `{"metadata": [{}, {field: [message]}]}`: the second entry refused on
/// `field`, the first accepted.
fn assert_second_entry_refused_on(body: &Value, field: &str) {
    let entries = body["metadata"].as_array().expect("metadata entries");
    assert_eq!(entries.len(), 2, "{body}");
    assert_eq!(entries[0], json!({}), "the first entry is accepted: {body}");
    let refused = entries[1].as_object().expect("the second entry's errors");
    assert_eq!(
        refused.keys().collect::<Vec<_>>(),
        [field],
        "only {field} is refused: {body}"
    );
    assert!(refused[field][0].is_string(), "{body}");
    assert_eq!(body.as_object().map(|b| b.len()), Some(1), "{body}");
}

#[test]
fn a_refused_initial_value_is_a_400_naming_its_entry() {
    let Some(s) = Server::start() else { return };
    let (dt, count, when) = type_with_a_dated_second_value(&s);
    let (_, before) = s.get("/api/v4/documents/", ADMIN);
    let (status, body) = s.call(
        "POST",
        "/api/v4/documents/",
        Some(ADMIN),
        Some(json!({"document_type_id": dt, "label": "Undated",
            "metadata": [{"metadata_type_id": count, "value": "7"},
                         {"metadata_type_id": when, "value": "someday"}]})),
    );
    assert_eq!(status, 400, "{body}");
    assert_second_entry_refused_on(&body, "value");
    let (_, after) = s.get("/api/v4/documents/", ADMIN);
    assert_eq!(before["count"], after["count"], "nothing was created");
}

#[test]
fn a_batch_creates_its_documents_in_order_with_their_values() {
    let Some(s) = Server::start() else { return };
    let (dt, mt) = type_with_required_number(&s);
    let (status, body) = s.call(
        "POST",
        "/api/v4/documents/batch/",
        Some(ADMIN),
        Some(json!({"documents": [
            {"document_type_id": dt, "label": "First", "metadata": [{"metadata_type_id": mt, "value": "1"}]},
            {"document_type_id": dt, "label": "Second", "metadata": [{"metadata_type_id": mt, "value": "2"}]}
        ]})),
    );
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["count"], 2, "{body}");
    assert_eq!(body["results"][0]["label"], "First");
    assert_eq!(body["results"][1]["label"], "Second");
    let url = body["results"][1]["url"].as_str().expect("url").to_owned();
    let (_, values) = s.get(&format!("{url}metadata/"), ADMIN);
    assert_eq!(values["results"][0]["value"], "2", "{values}");
}

#[test]
fn a_refused_value_in_a_batch_is_a_400_naming_its_document_and_entry() {
    let Some(s) = Server::start() else { return };
    let (dt, count, when) = type_with_a_dated_second_value(&s);
    let (_, before) = s.get("/api/v4/documents/", ADMIN);
    let (status, body) = s.call(
        "POST",
        "/api/v4/documents/batch/",
        Some(ADMIN),
        Some(json!({"documents": [
            {"document_type_id": dt, "label": "Fine"},
            {"document_type_id": dt, "label": "Undated",
             "metadata": [{"metadata_type_id": count, "value": "7"},
                          {"metadata_type_id": when, "value": "someday"}]}
        ]})),
    );
    assert_eq!(status, 400, "{body}");
    let entries = body["documents"].as_array().expect("documents entries");
    assert_eq!(entries.len(), 2, "{body}");
    assert_eq!(entries[0], json!({}), "the first document is accepted: {body}");
    assert_second_entry_refused_on(&entries[1], "value");
    let (_, after) = s.get("/api/v4/documents/", ADMIN);
    assert_eq!(before["count"], after["count"], "nothing was created");
}

#[test]
fn a_malformed_batch_entry_is_a_400_inside_that_entry() {
    let Some(s) = Server::start() else { return };
    let (dt, _) = type_with_required_number(&s);
    let (status, body) = s.call(
        "POST",
        "/api/v4/documents/batch/",
        Some(ADMIN),
        Some(json!({"documents": [{"document_type_id": dt, "label": "Fine"}, {"document_type_id": dt}]})),
    );
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        body,
        json!({"documents": [{}, {"label": ["This field is required."]}]})
    );
}

#[test]
fn a_batch_above_the_bound_is_a_400_on_documents() {
    let Some(s) = Server::start() else { return };
    let (dt, _) = type_with_required_number(&s);
    let one = json!({"document_type_id": dt, "label": "Many"});
    let (status, body) = s.call(
        "POST",
        "/api/v4/documents/batch/",
        Some(ADMIN),
        Some(json!({ "documents": vec![one; 1001] })),
    );
    assert_eq!(status, 400, "{body}");
    assert!(body["documents"][0].is_string(), "{body}");
}

#[test]
fn a_refused_initial_value_sent_as_multipart_is_a_400_naming_its_entry() {
    let Some(s) = Server::start() else { return };
    let (dt, count, when) = type_with_a_dated_second_value(&s);
    let metadata = json!([{"metadata_type_id": count, "value": "7"},
                          {"metadata_type_id": when, "value": "someday"}])
    .to_string();
    let (status, body) = s.form(
        "/api/v4/documents/",
        ADMIN,
        &[
            ("document_type_id", &dt.to_string()),
            ("label", "Undated"),
            ("metadata", &metadata),
        ],
        Some(("scan.pdf", b"%PDF-1.7")),
    );
    assert_eq!(status, 400, "{body}");
    assert_second_entry_refused_on(&body, "value");
}

#[test]
fn an_unknown_metadata_type_in_an_initial_value_is_a_400_naming_its_entry() {
    let Some(s) = Server::start() else { return };
    let (dt, count, _) = type_with_a_dated_second_value(&s);
    let (status, body) = s.call(
        "POST",
        "/api/v4/documents/",
        Some(ADMIN),
        Some(json!({"document_type_id": dt, "label": "Unknown",
            "metadata": [{"metadata_type_id": count, "value": "7"},
                         {"metadata_type_id": 987654, "value": "x"}]})),
    );
    assert_eq!(status, 400, "{body}");
    assert_second_entry_refused_on(&body, "metadata_type_id");
    assert_eq!(
        body["metadata"][1]["metadata_type_id"][0],
        "Invalid pk \"987654\" - object does not exist.",
        "as Django REST framework answers for a related key"
    );
}

#[test]
fn a_document_without_a_required_value_that_has_no_default_is_a_400_naming_the_type() {
    let Some(s) = Server::start() else { return };
    let (dt, _) = type_with_required_number(&s);
    let (_, before) = s.get("/api/v4/documents/", ADMIN);
    let (status, body) = s.call(
        "POST",
        "/api/v4/documents/",
        Some(ADMIN),
        Some(json!({"document_type_id": dt, "label": "Unnumbered"})),
    );
    assert_eq!(status, 400, "{body}");
    let message = body["metadata"][0].as_str().unwrap_or_default();
    assert!(message.contains("'number'"), "{body}");
    let (_, after) = s.get("/api/v4/documents/", ADMIN);
    assert_eq!(before["count"], after["count"], "nothing was created");
    // By multipart too, and the file is not kept.
    let (status, body) = s.form(
        "/api/v4/documents/",
        ADMIN,
        &[("document_type_id", &dt.to_string()), ("label", "Unnumbered")],
        Some(("scan.pdf", b"%PDF-1.7")),
    );
    assert_eq!((status, body["metadata"].is_array()), (400, true), "{body}");
}

#[test]
fn a_roles_permissions_are_answered_page_by_page() {
    let Some(s) = Server::start() else { return };
    let (status, role) = s.call(
        "POST",
        "/api/v4/roles/",
        Some(ADMIN),
        Some(json!({"label": "Paged"})),
    );
    assert_eq!(status, 201, "{role}");
    let path = format!("/api/v4/roles/{}/permissions/", role["id"]);
    for permission in [
        "documents.document_view",
        "documents.document_create",
        "documents.document_edit",
    ] {
        let (status, body) = s.call(
            "POST",
            &format!("{path}add/"),
            Some(ADMIN),
            Some(json!({ "permission": permission })),
        );
        assert_eq!(status, 200, "{body}");
    }
    let (status, first) = s.get(&format!("{path}?page_size=2"), ADMIN);
    assert_eq!(status, 200, "{first}");
    assert_eq!(
        (
            first["count"].as_u64(),
            first["results"].as_array().map(Vec::len),
            first["previous"].is_null()
        ),
        (Some(3), Some(2), true),
        "{first}"
    );
    let next = first["next"].as_str().expect("a next page").to_owned();
    let (status, second) = s.get(&next, ADMIN);
    assert_eq!(status, 200, "{second}");
    assert_eq!(
        (
            second["results"].as_array().map(Vec::len),
            second["next"].is_null(),
            second["previous"].is_string()
        ),
        (Some(1), true, true),
        "{second}"
    );
}

#[test]
fn the_permission_keys_are_answered_page_by_page() {
    let Some(s) = Server::start() else { return };
    let (status, page) = s.get("/api/v4/permissions/?page=2&page_size=5", ADMIN);
    assert_eq!(status, 200, "{page}");
    assert!(page["count"].as_u64().unwrap_or(0) > 10, "{page}");
    assert_eq!(page["results"].as_array().map(Vec::len), Some(5), "{page}");
    assert!(
        page["next"].is_string() && page["previous"].is_string(),
        "{page}"
    );
    assert!(page["results"][0]["pk"].is_string(), "{page}");
}

#[test]
fn every_list_answers_the_page_envelope() {
    let Some(s) = Server::start() else { return };
    let (_, flows) = s.get("/api/v4/workflow-templates/", ADMIN);
    let flow = flows["results"][0]["url"].as_str().expect("url").to_owned();
    let (_, states) = s.get(&format!("{flow}states/"), ADMIN);
    let state = states["results"][0]["id"].clone();
    let (_, transitions) = s.get(&format!("{flow}transitions/"), ADMIN);
    let transition = transitions["results"][0]["id"].clone();
    let (_, types) = s.get("/api/v4/metadata/metadata-types/?page_size=500", ADMIN);
    let number = types["results"]
        .as_array()
        .expect("results")
        .iter()
        .find(|t| t["name"] == "invoice_number")
        .expect("invoice_number")["id"]
        .clone();
    let (status, doc) = s.call(
        "POST",
        "/api/v4/documents/",
        Some(ADMIN),
        Some(json!({"document_type_id": 1, "label": "Invoice 9",
            "metadata": [{"metadata_type_id": number, "value": "INV-0009"}]})),
    );
    assert_eq!(status, 201, "{doc}");
    let doc_url = doc["url"].as_str().expect("url").to_owned();
    let (_, instances) = s.get(&format!("{doc_url}workflows/"), ADMIN);
    let instance = instances["results"][0]["url"]
        .as_str()
        .expect("an instance of the demo invoice")
        .to_owned();
    for path in [
        "/api/v4/tasks/".to_owned(),
        "/api/v4/documents/1/files/".to_owned(),
        format!("{flow}states/"),
        format!("{flow}transitions/"),
        format!("{flow}states/{state}/actions/"),
        format!("{flow}transitions/{transition}/triggers/"),
        format!("{doc_url}workflows/"),
        format!("{instance}log/"),
        format!("{instance}transitions/"),
        "/api/v5/objects/documents/document/permissions/".to_owned(),
        "/api/v4/permissions/".to_owned(),
        "/api/v4/roles/1/permissions/".to_owned(),
    ] {
        let (status, page) = s.get(&path, ADMIN);
        assert_eq!(status, 200, "{path}: {page}");
        assert!(
            page["count"].is_u64()
                && page["results"].is_array()
                && page.get("next").is_some()
                && page.get("previous").is_some(),
            "{path}: {page}"
        );
    }
    // Pages of the grantable permissions link to each other.
    let (_, first) = s.get(
        "/api/v5/objects/documents/document/permissions/?page_size=2",
        ADMIN,
    );
    assert_eq!(first["results"].as_array().map(Vec::len), Some(2));
    let next = first["next"].as_str().expect("a next page").to_owned();
    let (status, second) = s.get(&next, ADMIN);
    assert_eq!((status, second["previous"].is_string()), (200, true));
}

#[test]
fn workflow_states_and_transitions_have_detail_patch_and_delete() {
    let Some(s) = Server::start() else { return };
    let (_, flow) = s.call(
        "POST",
        "/api/v4/workflow-templates/",
        Some(ADMIN),
        Some(json!({"label": "Filing", "document_type_ids": []})),
    );
    let base = flow["url"].as_str().expect("url").to_owned();
    let state = |label: &str, initial: bool| {
        let (code, st) = s.call(
            "POST",
            &format!("{base}states/"),
            Some(ADMIN),
            Some(json!({"label": label, "initial": initial})),
        );
        assert_eq!(code, 201, "{st}");
        st["id"].clone()
    };
    let (a, b, c) = (state("new", true), state("filed", false), state("spare", false));
    let (code, t) = s.call(
        "POST",
        &format!("{base}transitions/"),
        Some(ADMIN),
        Some(json!({"label": "file", "origin_state_id": a, "destination_state_id": b})),
    );
    assert_eq!(code, 201, "{t}");
    let transition = format!("{base}transitions/{}/", t["id"]);
    assert_eq!(s.get(&transition, ADMIN).1["label"], "file");
    let (code, patched) = s.call(
        "PATCH",
        &transition,
        Some(ADMIN),
        Some(json!({"label": "archive", "destination_state_id": c})),
    );
    assert_eq!((code, patched["destination_state_id"].clone()), (200, c.clone()), "{patched}");
    let (code, err) = s.call(
        "PATCH",
        &transition,
        Some(ADMIN),
        Some(json!({"origin_state_id": 999_999})),
    );
    assert_eq!((code, err["origin_state_id"].is_array()), (400, true), "{err}");
    let spare = format!("{base}states/{c}/");
    let (code, renamed) = s.call("PATCH", &spare, Some(ADMIN), Some(json!({"label": "kept"})));
    assert_eq!((code, renamed["label"].as_str()), (200, Some("kept")));
    assert_eq!(s.get(&spare, ADMIN).1["label"], "kept");
    // A state a transition ends at is not deleted; once the transition is gone it is.
    let (code, err) = s.call("DELETE", &spare, Some(ADMIN), None);
    assert_eq!((code, err["non_field_errors"].is_array()), (400, true), "{err}");
    assert_eq!(s.call("DELETE", &transition, Some(ADMIN), None).0, 204);
    assert_eq!(s.get(&transition, ADMIN).0, 404);
    assert_eq!(s.call("DELETE", &spare, Some(ADMIN), None).0, 204);
    assert_eq!(s.get(&spare, ADMIN).0, 404);
    // Another workflow's state is not reachable through this one.
    assert_eq!(s.get(&format!("{base}states/1/"), ADMIN).0, 404);
}

#[test]
fn a_transition_that_instance_logs_record_is_not_deleted() {
    let Some(s) = Server::start() else { return };
    let (_, types) = s.get("/api/v4/metadata/metadata-types/?page_size=500", ADMIN);
    let number = types["results"]
        .as_array()
        .expect("results")
        .iter()
        .find(|t| t["name"] == "invoice_number")
        .expect("invoice_number")["id"]
        .clone();
    let (_, doc) = s.call(
        "POST",
        "/api/v4/documents/",
        Some(ADMIN),
        Some(json!({"document_type_id": 1, "label": "Invoice 8",
            "metadata": [{"metadata_type_id": number, "value": "INV-0008"}]})),
    );
    let doc_url = doc["url"].as_str().expect("url").to_owned();
    let (_, instances) = s.get(&format!("{doc_url}workflows/"), ADMIN);
    let instance = instances["results"][0].clone();
    let instance_url = instance["url"].as_str().expect("url").to_owned();
    let flow = format!("/api/v4/workflow-templates/{}/", instance["workflow_id"]);
    // Editing the status drives the instance: the log records the transition taken.
    let (_, values) = s.get(&format!("{doc_url}metadata/"), ADMIN);
    let status_value = values["results"]
        .as_array()
        .expect("results")
        .iter()
        .find(|v| v["metadata_type"]["name"] == "status")
        .expect("status")["id"]
        .clone();
    let (code, body) = s.call(
        "PATCH",
        &format!("{doc_url}metadata/{status_value}/"),
        Some(ADMIN),
        Some(json!({"value": "review"})),
    );
    assert_eq!(code, 200, "{body}");
    let (_, log) = s.get(&format!("{instance_url}log/"), ADMIN);
    let take = log["results"][0]["transition_id"].clone();
    assert!(take.is_i64(), "{log}");
    let (code, err) = s.call(
        "DELETE",
        &format!("{flow}transitions/{take}/"),
        Some(ADMIN),
        None,
    );
    assert_eq!(code, 400, "{err}");
    assert!(
        err["non_field_errors"][0]
            .as_str()
            .is_some_and(|m| m.contains("log")),
        "{err}"
    );
}

#[test]
fn a_documents_lookup_answers_its_rendered_choices() {
    let Some(s) = Server::start() else { return };
    let (_, types) = s.get("/api/v4/metadata/metadata-types/?page_size=500", ADMIN);
    let by_name = |name: &str| {
        types["results"]
            .as_array()
            .expect("results")
            .iter()
            .find(|t| t["name"] == name)
            .expect("type")["id"]
            .clone()
    };
    let (status, body) = s.get(
        &format!("/api/v4/documents/1/metadata/{}/lookup/", by_name("status")),
        ALICE,
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["choices"], json!(["draft", "review", "approved", "paid"]));
    // The owner lookup renders the users: a template, rendered for this caller and document.
    let (status, body) = s.get(
        &format!("/api/v4/documents/1/metadata/{}/lookup/", by_name("owner")),
        ADMIN,
    );
    assert_eq!(status, 200, "{body}");
    assert!(
        body["choices"].as_array().is_some_and(|c| c.iter().any(|u| u == "alice")),
        "{body}"
    );
    // No lookup: any value goes.
    let (_, body) = s.get(
        &format!("/api/v4/documents/1/metadata/{}/lookup/", by_name("invoice_number")),
        ADMIN,
    );
    assert!(body["choices"].is_null(), "{body}");
    // A type of the other document type, and a document the caller cannot see: 404.
    assert_eq!(
        s.get(
            &format!("/api/v4/documents/1/metadata/{}/lookup/", by_name("party")),
            ADMIN
        )
        .0,
        404
    );
    assert_eq!(
        s.get(
            &format!("/api/v4/documents/1/metadata/{}/lookup/", by_name("status")),
            BOB
        )
        .0,
        404
    );
}

#[test]
fn an_event_says_what_changed_and_hides_a_value_its_reader_may_not_view() {
    let Some(s) = Server::start() else { return };
    // A salary on invoices: Alice (the demo's accountant) views invoices and their other
    // values, not this one.
    let (status, salary) = s.call(
        "POST",
        "/api/v4/metadata/metadata-types/",
        Some(ADMIN),
        Some(json!({"name": "salary", "label": "Salary"})),
    );
    assert_eq!(status, 201, "{salary}");
    let (status, _) = s.call(
        "POST",
        "/api/v4/documents/types/1/metadata-types/",
        Some(ADMIN),
        Some(json!({"metadata_type_id": salary["id"], "required": false})),
    );
    assert_eq!(status, 201);
    let (_, types) = s.get("/api/v4/metadata/metadata-types/?page_size=500", ADMIN);
    let number = types["results"]
        .as_array()
        .expect("results")
        .iter()
        .find(|t| t["name"] == "invoice_number")
        .expect("invoice_number")["id"]
        .clone();
    let (status, doc) = s.call(
        "POST",
        "/api/v4/documents/",
        Some(ADMIN),
        Some(json!({"document_type_id": 1, "label": "Payroll",
            "metadata": [{"metadata_type_id": number, "value": "INV-2001"},
                         {"metadata_type_id": salary["id"], "value": "73519"}]})),
    );
    assert_eq!(status, 201, "{doc}");
    let doc_url = doc["url"].as_str().expect("url").to_owned();
    let (_, values) = s.get(&format!("{doc_url}metadata/"), ADMIN);
    let value_of = |name: &str| {
        values["results"]
            .as_array()
            .expect("results")
            .iter()
            .find(|v| v["metadata_type"]["name"] == name)
            .expect("value")
            .clone()
    };
    let (number_value, salary_value) = (value_of("invoice_number"), value_of("salary"));
    let mut edited = Vec::new();
    for (value, new) in [(&number_value, "INV-2002"), (&salary_value, "80000")] {
        let (code, body) = s.call(
            "PATCH",
            &format!("{doc_url}metadata/{}/", value["id"]),
            Some(ADMIN),
            Some(json!({"value": new})),
        );
        assert_eq!(code, 200, "{body}");
        edited.push(body["value"].clone());
    }
    let (status, renamed) = s.call(
        "PATCH",
        &doc_url,
        Some(ADMIN),
        Some(json!({"label": "Payroll 2025"})),
    );
    assert_eq!(status, 200, "{renamed}");

    let edits_of = |user: (&str, &str)| -> Vec<Value> {
        let (status, events) = s.get(&format!("{doc_url}events/?page_size=500"), user);
        assert_eq!(status, 200, "{events}");
        let mut edits: Vec<Value> = events["results"]
            .as_array()
            .expect("results")
            .iter()
            .filter(|e| e["name"] == "metadata.document_metadata_edited")
            .cloned()
            .collect();
        edits.reverse();
        edits
    };
    // The administrator sees both edits whole, in the order made.
    let edits = edits_of(ADMIN);
    assert_eq!(edits.len(), 2, "{edits:?}");
    assert_eq!(
        edits[0]["changes"],
        json!([{"field": "value", "before": number_value["value"], "after": edited[0]}])
    );
    assert_eq!(
        edits[1]["changes"],
        json!([{"field": "value", "before": "73519", "after": "80000"}])
    );
    // Alice sees both events: the invoice number's values, and nothing of the salary but the
    // field that changed.
    let edits = edits_of(ALICE);
    assert_eq!(edits.len(), 2, "{edits:?}");
    assert_eq!(edits[0]["changes"], {
        json!([{"field": "value", "before": number_value["value"], "after": edited[0]}])
    });
    assert_eq!(edits[1]["action_object"], Value::Null);
    assert_eq!(
        edits[1]["changes"],
        json!([{"field": "value", "before": null, "after": null}])
    );
    let (_, all) = s.get("/api/v4/events/?page_size=500", ALICE);
    let text = all.to_string();
    assert!(text.contains("Payroll 2025"), "Alice reads the document's events");
    assert!(
        !text.contains("73519") && !text.contains("80000"),
        "a hidden value leaked: {text}"
    );
    // The document's own change, to a reader of the document.
    let (_, events) = s.get(&format!("{doc_url}events/?page_size=1"), ALICE);
    assert_eq!(events["results"][0]["name"], "documents.document_edited");
    assert_eq!(
        events["results"][0]["changes"],
        json!([{"field": "label", "before": "Payroll", "after": "Payroll 2025"}])
    );
    // The schema says so.
    let (_, api) = s.call("GET", "/api/v4/openapi.json", None, None);
    let schemas = &api["components"]["schemas"];
    // The global list also follows the log, so its answer may carry a cursor.
    for (path, schema) in [
        ("/api/v4/events/", "EventsOut"),
        ("/api/v4/documents/{document_id}/events/", "EventPageOut"),
    ] {
        assert_eq!(
            api["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
                ["$ref"],
            format!("#/components/schemas/{schema}"),
            "{path}"
        );
        assert_eq!(
            schemas[schema]["properties"]["results"]["items"]["$ref"],
            "#/components/schemas/EventOut"
        );
    }
    assert_eq!(
        schemas["EventOut"]["properties"]["changes"]["items"]["$ref"],
        "#/components/schemas/EventChangeOut",
        "{}",
        schemas["EventOut"]
    );
    for field in ["field", "before", "after"] {
        assert!(
            schemas["EventChangeOut"]["properties"][field].is_object(),
            "{}",
            schemas["EventChangeOut"]
        );
    }
}
