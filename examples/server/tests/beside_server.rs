//! Several processes on one data directory: every command of `docmeta --help` run beside a
//! `docmeta serve` there, each one's effect checked through the server's HTTP API.

mod support;

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use support::{ADMIN, Server, docmeta, prepare};

/// What a command did: its exit code, standard output and standard error.
struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run(c: &mut Command) -> Ran {
    let out = c.output().expect("run docmeta");
    Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn ok(dir: &Path, args: &[&str]) -> String {
    let r = run(docmeta(dir).args(args));
    assert_eq!(r.code, 0, "docmeta {args:?}: {}{}", r.stdout, r.stderr);
    r.stdout
}

/// A data directory with the demo loaded and a server on it.
fn served() -> (tempfile::TempDir, Server) {
    let dir = tempfile::tempdir().expect("tempdir");
    prepare(dir.path(), true, "");
    let server = Server::start(dir.path());
    (dir, server)
}

/// Polls `check` until it holds (the server follows another process's changes within a bounded
/// delay), for at most 20 s.
fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !check() {
        assert!(Instant::now() < deadline, "{what}: not within 20 s");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn search_count(server: &Server, q: &str) -> u64 {
    let (status, body) = server.get(&format!("/api/v4/search/documents/?q={q}"), ADMIN);
    assert_eq!(status, 200, "{body}");
    body["count"].as_u64().expect("count")
}

fn document_count(server: &Server) -> u64 {
    let (status, body) = server.get("/api/v4/documents/", ADMIN);
    assert_eq!(status, 200, "{body}");
    body["count"].as_u64().expect("count")
}

#[test]
fn the_tests_cover_every_command_of_the_help() {
    let help = run(Command::new(env!("CARGO_BIN_EXE_docmeta")).arg("--help")).stdout;
    let commands: Vec<&str> = help
        .split("Commands:")
        .nth(1)
        .and_then(|rest| rest.split("Options:").next())
        .expect("a command list")
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert_eq!(
        commands,
        [
            "serve", "migrate", "user", "schema", "search", "demo", "backup", "restore", "webhook",
            "storage", "audit"
        ],
        "a new command needs its test beside a running server in this file"
    );
}

#[test]
fn a_second_server_beside_the_first_serves_and_finds_what_the_first_indexed() {
    let (dir, first) = served();
    let second = Server::start(dir.path());
    assert_eq!(document_count(&second), document_count(&first));
    eventually("the second server's search", || {
        search_count(&second, "invoice") == search_count(&first, "invoice")
            && search_count(&first, "invoice") > 0
    });
}

#[test]
fn migrate_and_migrate_check_beside_a_server_report_the_database_current() {
    let (dir, server) = served();
    assert!(ok(dir.path(), &["migrate"]).contains("database is current"));
    assert!(ok(dir.path(), &["migrate", "--check"]).contains("database is current"));
    let (status, _) = server.get("/api/v4/health/", ADMIN);
    assert_eq!(status, 200);
}

#[test]
fn user_create_beside_a_server_lets_the_user_sign_in_to_it() {
    let (dir, server) = served();
    let r = run(docmeta(dir.path())
        .args(["user", "create", "operator"])
        .env("DOCMETA_PASSWORD", "operator-password"));
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    eventually("the new user signs in", || {
        server
            .get("/api/v4/users/current/", ("operator", "operator-password"))
            .0
            == 200
    });
}

#[test]
fn user_set_password_beside_a_server_changes_the_password_it_accepts() {
    let (dir, server) = served();
    assert_eq!(
        server
            .get("/api/v4/users/current/", ("alice", "demo-password"))
            .0,
        200
    );
    let r = run(docmeta(dir.path())
        .args(["user", "set-password", "alice"])
        .env("DOCMETA_PASSWORD", "a new long password"));
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    eventually("the new password is the one accepted", || {
        server
            .get("/api/v4/users/current/", ("alice", "a new long password"))
            .0
            == 200
            && server
                .get("/api/v4/users/current/", ("alice", "demo-password"))
                .0
                == 401
    });
}

#[test]
fn schema_export_and_apply_beside_a_server_change_what_it_serves() {
    let (dir, server) = served();
    let yaml = ok(dir.path(), &["schema", "export"]);
    assert!(yaml.contains("label: Due date"), "{yaml}");
    let file = dir.path().join("schema.yml");
    std::fs::write(&file, yaml.replace("label: Due date", "label: Payment due")).expect("write");
    let file = file.to_string_lossy().into_owned();
    assert!(ok(dir.path(), &["schema", "apply", &file]).contains("made 1 change(s)"));
    let (status, body) = server.get("/api/v4/metadata/metadata-types/?page_size=100", ADMIN);
    assert_eq!(status, 200, "{body}");
    let labels: Vec<&str> = body["results"]
        .as_array()
        .expect("results")
        .iter()
        .filter_map(|t| t["label"].as_str())
        .collect();
    assert!(labels.contains(&"Payment due"), "{labels:?}");
}

#[test]
fn demo_beside_a_server_loads_documents_it_serves() {
    let dir = tempfile::tempdir().expect("tempdir");
    prepare(dir.path(), false, "");
    let server = Server::start(dir.path());
    assert_eq!(document_count(&server), 0);
    assert!(ok(dir.path(), &["demo"]).contains("demo loaded"));
    assert_eq!(document_count(&server), 8);
    eventually("the server indexes the demo", || {
        search_count(&server, "invoice") > 0
    });
}

#[test]
fn search_status_beside_a_server_answers_from_its_index() {
    let (dir, server) = served();
    eventually("the server indexes the demo", || {
        search_count(&server, "invoice") > 0
    });
    let status = ok(dir.path(), &["search", "status"]);
    assert!(
        status.contains("documents.document: 8") && status.contains("(current)"),
        "{status}"
    );
}

#[test]
fn search_initialize_and_reindex_beside_a_server_are_run_by_it() {
    let (dir, server) = served();
    eventually("the server indexes the demo", || {
        search_count(&server, "invoice") > 0
    });
    let r = run(docmeta(dir.path()).args(["search", "initialize"]));
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("queued as task"), "{}", r.stderr);
    assert_eq!(search_count(&server, "invoice"), 0, "emptied by the server");
    let r = run(docmeta(dir.path()).args(["search", "reindex"]));
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("indexed 8 documents"), "{}", r.stdout);
    assert!(
        search_count(&server, "invoice") > 0,
        "refilled by the server"
    );
}

#[test]
fn search_upgrade_beside_a_server_finds_the_index_current() {
    let (dir, _server) = served();
    assert!(ok(dir.path(), &["search", "upgrade"]).contains("search index is current"));
}

#[test]
fn search_index_objects_no_wait_beside_a_server_returns_while_the_server_runs_it() {
    let (dir, server) = served();
    eventually("the server indexes the demo", || {
        search_count(&server, "invoice") > 0
    });
    ok(dir.path(), &["search", "initialize"]);
    assert_eq!(search_count(&server, "invoice"), 0);
    let out = ok(
        dir.path(),
        &[
            "search",
            "index-objects",
            "--model",
            "documents.document",
            "--no-wait",
        ],
    );
    assert!(out.contains("queued as task"), "{out}");
    eventually("the server ran the task", || {
        search_count(&server, "invoice") > 0
    });
}

/// Creates documents through the server until `stop` is raised; returns how many.
fn keep_writing(server_base: String, stop: Arc<AtomicBool>, document_type: i64) -> u64 {
    let agent = support::agent();
    let mut n = 0;
    while !stop.load(Ordering::SeqCst) {
        let body = json!({"document_type_id": document_type, "label": format!("written {n}")});
        let (status, answer) = support::request(
            &agent,
            &server_base,
            "POST",
            "/api/v4/documents/",
            Some(ADMIN),
            Some(&body),
        )
        .expect("POST");
        assert_eq!(status, 201, "{answer}");
        n += 1;
    }
    n
}

#[test]
fn backups_beside_a_server_under_writes_verify_restore_and_prune() {
    let (dir, server) = served();
    let (status, memo) = server.call(
        "POST",
        "/api/v4/documents/types/",
        Some(ADMIN),
        Some(&json!({"label": "Memo"})),
    );
    assert_eq!(status, 201, "{memo}");
    let before = document_count(&server);
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (base, stop, id) = (
            server.base.clone(),
            stop.clone(),
            memo["id"].as_i64().expect("document type id"),
        );
        std::thread::spawn(move || keep_writing(base, stop, id))
    };
    let archives = tempfile::tempdir().expect("archives");
    let full = archives.path().join("full.tar.zst");
    let incremental = archives.path().join("incremental.tar.zst");
    let (full_s, incremental_s) = (
        full.to_string_lossy().into_owned(),
        incremental.to_string_lossy().into_owned(),
    );
    std::thread::sleep(Duration::from_millis(300));
    ok(dir.path(), &["backup", "--out", &full_s]);
    ok(
        dir.path(),
        &["backup", "--out", &incremental_s, "--since", &full_s],
    );
    stop.store(true, Ordering::SeqCst);
    let written = writer.join().expect("writer");
    assert!(written > 0, "writes went on during the backups");
    assert!(ok(dir.path(), &["backup", "verify", &full_s]).contains("every checksum matches"));
    assert!(
        ok(dir.path(), &["backup", "verify", &incremental_s]).contains("every checksum matches")
    );
    // Consistent: the backup restores (integrity checked, a document opens) into a directory of
    // its own, holding a state the live one went through.
    let restored = tempfile::tempdir().expect("restored");
    let target = restored.path().join("data");
    let r = run(docmeta(&target).args(["restore", &full_s, &incremental_s]));
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let copy = Server::start(&target);
    let copied = document_count(&copy);
    assert!(
        (before..=before + written).contains(&copied),
        "{copied} documents, live went from {before} to {}",
        before + written
    );
    let out = ok(
        dir.path(),
        &[
            "backup",
            "prune",
            "--dir",
            &archives.path().to_string_lossy(),
            "--dry-run",
        ],
    );
    assert!(out.contains("keep"), "{out}");
    assert_eq!(document_count(&server), before + written);
}

#[test]
fn restore_beside_a_server_is_refused_in_one_line_changing_nothing() {
    let (dir, server) = served();
    let archive = dir.path().join("backup.tar.zst");
    let archive = archive.to_string_lossy().into_owned();
    ok(dir.path(), &["backup", "--out", &archive]);
    let (status, _) = server.call(
        "POST",
        "/api/v4/documents/types/",
        Some(ADMIN),
        Some(&json!({"label": "After the backup"})),
    );
    assert_eq!(status, 201);
    let r = run(docmeta(dir.path()).args(["restore", &archive]));
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert_eq!(
        r.stderr,
        format!(
            "error: the data directory is in use by process {}; stop it first\n",
            server.child.id()
        )
    );
    let (_, types) = server.get("/api/v4/documents/types/", ADMIN);
    assert!(types.to_string().contains("After the backup"), "{types}");
}

#[test]
fn storage_verify_beside_a_server_checks_the_files_it_serves() {
    let (dir, server) = served();
    let out = ok(dir.path(), &["storage", "verify"]);
    assert!(out.contains("checked 5 document files"), "{out}");
    assert!(out.contains("all intact"), "{out}");
    assert_eq!(document_count(&server), 8);
}

#[test]
fn audit_beside_a_server_verifies_the_log_it_writes_and_checkpoints_it() {
    let (dir, server) = served();
    let out = ok(dir.path(), &["audit", "verify"]);
    assert!(out.contains("the event log is intact"), "{out}");
    let checkpoint = ok(dir.path(), &["audit", "checkpoint"]);
    let file = dir.path().join("checkpoint.json");
    std::fs::write(&file, &checkpoint).expect("write");
    // The server goes on writing; the log still verifies against the checkpoint.
    let (status, body) = server.call(
        "POST",
        "/api/v4/documents/types/",
        Some(ADMIN),
        Some(&serde_json::json!({ "label": "Written after the checkpoint" })),
    );
    assert_eq!(status, 201, "{body}");
    let out = ok(
        dir.path(),
        &[
            "audit",
            "verify",
            "--checkpoint",
            file.to_str().expect("path"),
        ],
    );
    assert!(out.contains("the event log is intact"), "{out}");
    assert_eq!(document_count(&server), 8);
}

#[test]
fn storage_conversion_beside_a_server_is_refused_in_one_line() {
    let (dir, server) = served();
    for command in ["encrypt", "decrypt"] {
        let r = run(docmeta(dir.path()).args(["storage", command]));
        assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
        assert_eq!(
            r.stderr,
            format!(
                "error: the data directory is in use by process {}; stop it first\n",
                server.child.id()
            )
        );
    }
    assert_eq!(document_count(&server), 8);
}

#[test]
fn after_a_server_crash_commands_run_alone_and_restore_proceeds() {
    let (dir, server) = served();
    let archive = dir.path().join("backup.tar.zst");
    let archive = archive.to_string_lossy().into_owned();
    ok(dir.path(), &["backup", "--out", &archive]);
    server.kill();
    // The crash left the lock files; the operating system released their locks.
    assert!(dir.path().join("search/WRITER").exists());
    let r = run(docmeta(dir.path()).args(["search", "reindex"]));
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        !r.stderr.contains("queued") && r.stdout.contains("indexed 8 documents"),
        "run here: {}{}",
        r.stdout,
        r.stderr
    );
    let r = run(docmeta(dir.path()).args(["restore", &archive]));
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let server = Server::start(dir.path());
    assert_eq!(document_count(&server), 8);
}

#[test]
fn search_index_objects_beside_a_server_reports_what_the_server_indexed() {
    let (dir, _server) = served();
    let r = run(docmeta(dir.path()).args([
        "search",
        "index-objects",
        "--model",
        "documents.document",
        "--ids",
        "1-3",
    ]));
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("queued as task"), "{}", r.stderr);
    assert!(r.stdout.contains("indexed 3 documents"), "{}", r.stdout);
}

/// Documents in the directory made for the crash tests: enough that a reindex runs for a while
/// (long enough to be killed while it runs).
const MANY: u64 = 4000;

/// A data directory holding [`MANY`] documents (each with a value), and a server on it that has
/// indexed them all.
fn served_with_many_documents() -> (tempfile::TempDir, Server) {
    let dir = tempfile::tempdir().expect("tempdir");
    prepare(dir.path(), false, "");
    {
        let db = docmeta_core::Docmeta::builder()
            .data_dir(dir.path())
            .open()
            .expect("open");
        let s = db.system();
        let t = s.create_document_type("Ledger").expect("type");
        let m = s
            .create_metadata_type(docmeta_core::MetadataTypeInput::new("entry", "Entry"))
            .expect("metadata type");
        s.associate(t.id, m.id, false).expect("associate");
        for i in 0..MANY {
            s.create_document(t.id, &format!("ledger {i}"), &[(m.id, &format!("E-{i}"))])
                .expect("document");
        }
    }
    let server = Server::start(dir.path());
    eventually("the server indexes every document", || {
        search_count(&server, "ledger") == MANY
    });
    (dir, server)
}

/// Waits until the server's worker runs the handed-off search task (it lists it `running`, for
/// the directory's index), for at most 20 s; returns its id.
fn wait_until_search_work_runs(server: &Server, dir: &Path) -> i64 {
    let index = std::fs::read_to_string(dir.join("search/INSTANCE")).expect("the index id");
    let mut id = None;
    eventually("the server runs the search work", || {
        let (_, tasks) = server.get("/api/v4/tasks/?page_size=500", ADMIN);
        id = tasks["results"].as_array().and_then(|all| {
            all.iter()
                .find(|t| t["name"] == "task_search_work" && t["state"] == "running")
                .inspect(|t| assert_eq!(t["target"], index.trim(), "for this index: {t}"))
                .and_then(|t| t["id"].as_i64())
        });
        id.is_some()
    });
    id.expect("a running task")
}

#[test]
fn a_reindex_whose_server_is_killed_while_running_it_is_finished_by_the_waiting_command() {
    let (dir, server) = served_with_many_documents();
    let command = docmeta(dir.path())
        .args(["search", "reindex"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("search reindex");
    let task = wait_until_search_work_runs(&server, dir.path());
    server.kill();
    let out = command.wait_with_output().expect("search reindex ends");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stderr.contains(&format!("stopped: ran task {task} here")),
        "taken over by the command: {stderr}"
    );
    assert!(
        stdout.contains(&format!("indexed {MANY} documents")),
        "{stdout}"
    );
    // The index the command built is the one a new server answers from: every document, once.
    let server = Server::start(dir.path());
    assert_eq!(search_count(&server, "ledger"), MANY);
    assert_eq!(search_count(&server, &format!("E-{}", MANY - 1)), 1);
    let (_, tasks) = server.get("/api/v4/tasks/", ADMIN);
    assert_eq!(tasks["count"], 0, "nothing left to do: {tasks}");
}

#[test]
fn a_reindex_whose_server_is_killed_while_running_it_is_finished_by_the_next_server() {
    let (dir, server) = served_with_many_documents();
    let queued = ok(dir.path(), &["search", "reindex", "--no-wait"]);
    assert!(queued.contains("queued as task"), "{queued}");
    wait_until_search_work_runs(&server, dir.path());
    server.kill();
    // Alone on the directory, the next server puts the interrupted task back and runs it.
    let server = Server::start(dir.path());
    eventually("the next server finishes the reindex", || {
        let (_, tasks) = server.get("/api/v4/tasks/", ADMIN);
        tasks["count"] == 0
    });
    assert_eq!(search_count(&server, "ledger"), MANY);
    assert_eq!(search_count(&server, &format!("E-{}", MANY - 1)), 1);
    let status = ok(dir.path(), &["search", "status"]);
    assert!(
        status.contains(&format!("documents.document: {MANY}")),
        "{status}"
    );
}

/// A receiver on loopback that answers `500` to every request; counts them.
fn failing_receiver() -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/hook", listener.local_addr().expect("addr"));
    let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let thread_count = count.clone();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut length = 0;
            let mut line = String::new();
            while reader.read_line(&mut line).unwrap_or(0) > 0 && line.trim_end() != "" {
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
                line.clear();
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            thread_count.fetch_add(1, Ordering::SeqCst);
            let _ = stream.write_all(
                b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            );
        }
    });
    (url, count)
}

#[test]
fn webhook_list_deliveries_and_retry_beside_a_server_reach_its_deliverer() {
    let dir = tempfile::tempdir().expect("tempdir");
    prepare(dir.path(), true, "webhooks_allow_private_networks: true\n");
    let server = Server::start(dir.path());
    let (url, received) = failing_receiver();
    let (status, hook) = server.call(
        "POST",
        "/api/v4/webhooks/",
        Some(ADMIN),
        Some(&json!({"url": url, "events": ["documents.document_type_created"]})),
    );
    assert_eq!(status, 201, "{hook}");
    let id = hook["id"].as_i64().expect("id");
    let listed = ok(dir.path(), &["webhook", "list"]);
    assert!(listed.contains(&url), "{listed}");
    let (status, _) = server.call(
        "POST",
        "/api/v4/documents/types/",
        Some(ADMIN),
        Some(&json!({"label": "Webhooked"})),
    );
    assert_eq!(status, 201);
    // The server's deliverer tries it, and gets 500: it is pending, to be tried again later.
    let deliveries = format!("/api/v4/webhooks/{id}/deliveries/");
    let mut delivery = 0;
    eventually("a failed attempt", || {
        let (_, page) = server.get(&deliveries, ADMIN);
        let first = &page["results"][0];
        delivery = first["id"].as_i64().unwrap_or(0);
        first["attempts"] == 1 && first["last_status_code"] == 500
    });
    let shown = ok(dir.path(), &["webhook", "deliveries", &id.to_string()]);
    assert!(
        shown.contains(&format!("{delivery}\t"))
            && shown.contains("pending")
            && shown.contains("500"),
        "{shown}"
    );
    // Retried by the command, sent again by the server.
    let retried = ok(
        dir.path(),
        &["webhook", "retry", &id.to_string(), &delivery.to_string()],
    );
    assert!(retried.contains("is due now"), "{retried}");
    eventually("the retry", || {
        received.load(Ordering::SeqCst) >= 2
            && server.get(&deliveries, ADMIN).1["results"][0]["attempts"] == 2
    });
    // An unknown delivery is an error.
    let r = run(docmeta(dir.path()).args(["webhook", "retry", &id.to_string(), "999999"]));
    assert_ne!(r.code, 0, "{}{}", r.stdout, r.stderr);
}
