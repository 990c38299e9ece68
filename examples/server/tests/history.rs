//! A value's history over HTTP and the `docmeta audit` commands, against a running
//! `docmeta serve` with the demo: the history of an invoice's value (newest first, before and
//! after), its values at a past time (`?at=`), a user who may not view invoices answered `404`,
//! bad parameters answered `400` naming them; `docmeta audit verify` beside the running server,
//! a checkpoint kept in a file, and an edited event found with exit status 1.

mod support;

use std::process::Stdio;

use serde_json::{Value, json};
use support::{ADMIN, Server, docmeta, prepare};

const BOB: (&str, &str) = ("bob", "demo-password");

/// The first invoice and its first value: (document, value id, metadata type id).
fn an_invoice_value(s: &Server) -> (i64, i64, i64) {
    let (status, page) = s.get("/api/v4/documents/?page_size=500", ADMIN);
    assert_eq!(status, 200, "{page}");
    let invoice = page["results"]
        .as_array()
        .expect("documents")
        .iter()
        .find(|d| {
            d["label"]
                .as_str()
                .is_some_and(|l| l.starts_with("Invoice"))
        })
        .expect("an invoice")["id"]
        .as_i64()
        .expect("id");
    let (status, values) = s.get(&format!("/api/v4/documents/{invoice}/metadata/"), ADMIN);
    assert_eq!(status, 200, "{values}");
    let value = values["results"]
        .as_array()
        .expect("values")
        .iter()
        .find(|v| v["metadata_type"]["name"] == "invoice_number")
        .expect("an invoice number")
        .clone();
    (
        invoice,
        value["id"].as_i64().expect("id"),
        value["metadata_type_id"].as_i64().expect("type"),
    )
}

#[test]
fn history_and_values_at_a_past_time_over_http() {
    let dir = tempfile::tempdir().expect("tempdir");
    prepare(dir.path(), true, "");
    let s = Server::start(dir.path());
    let (doc, value, mt) = an_invoice_value(&s);
    let (_, before) = s.get(&format!("/api/v4/documents/{doc}/metadata/"), ADMIN);
    let first = before["results"]
        .as_array()
        .expect("values")
        .iter()
        .find(|v| v["id"] == value)
        .expect("value")["value"]
        .clone();
    // The time between the demo's values and the edits (the parser stores the numbers
    // without their dash).
    std::thread::sleep(std::time::Duration::from_millis(20));
    let then = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    std::thread::sleep(std::time::Duration::from_millis(20));
    for number in ["INV-9001", "INV-9002"] {
        let (status, answer) = s.call(
            "PATCH",
            &format!("/api/v4/documents/{doc}/metadata/{value}/"),
            Some(ADMIN),
            Some(&json!({ "value": number })),
        );
        assert_eq!(status, 200, "{answer}");
    }
    let (status, history) = s.get(
        &format!("/api/v4/documents/{doc}/metadata/history/?metadata_type_id={mt}&page_size=2"),
        ADMIN,
    );
    assert_eq!(status, 200, "{history}");
    assert_eq!(history["count"], 3, "{history}");
    let newest = &history["results"][0];
    assert_eq!(
        (&newest["action"], &newest["before"], &newest["after"]),
        (&json!("edited"), &json!("INV9001"), &json!("INV9002"))
    );
    assert_eq!(newest["actor"]["username"], "admin");
    assert_eq!(newest["hidden"], false);
    assert_eq!(history["results"][1]["before"], first);
    assert!(
        history["next"]
            .as_str()
            .is_some_and(|n| n.contains("page=2"))
    );
    // The whole document's history holds the other values too.
    let (status, all) = s.get(&format!("/api/v4/documents/{doc}/metadata/history/"), ADMIN);
    assert_eq!(status, 200, "{all}");
    assert!(all["count"].as_u64().expect("count") > 3, "{all}");
    // The values at `then`: the demo's value, not the edits.
    let (status, past) = s.get(
        &format!(
            "/api/v4/documents/{doc}/metadata/?at={}",
            then.replace('+', "%2B")
        ),
        ADMIN,
    );
    assert_eq!(status, 200, "{past}");
    let number = past["results"]
        .as_array()
        .expect("values")
        .iter()
        .find(|v| v["metadata_type_id"] == mt)
        .expect("the number then")
        .clone();
    assert_eq!(number["value"], first, "{past}");
    assert_eq!(number["metadata_type"]["name"], "invoice_number");
    // Bob may not view invoices: nothing of it, as if it did not exist.
    let (status, _) = s.get(&format!("/api/v4/documents/{doc}/metadata/history/"), BOB);
    assert_eq!(status, 404);
    let (status, _) = s.get(&format!("/api/v4/documents/{doc}/metadata/?at={then}"), BOB);
    assert_eq!(status, 404);
    // Bad parameters name themselves.
    let (status, answer) = s.get(
        &format!("/api/v4/documents/{doc}/metadata/?at=yesterday"),
        ADMIN,
    );
    assert_eq!(status, 400);
    assert!(answer["at"].is_array(), "{answer}");
    let (status, answer) = s.get(
        &format!("/api/v4/documents/{doc}/metadata/history/?metadata_type_id=x"),
        ADMIN,
    );
    assert_eq!(status, 400);
    assert!(answer["metadata_type_id"].is_array(), "{answer}");
    drop(s);
}

fn audit(dir: &std::path::Path, args: &[&str]) -> (bool, String) {
    let out = docmeta(dir)
        .arg("audit")
        .args(args)
        .stderr(Stdio::piped())
        .output()
        .expect("run docmeta audit");
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[test]
fn audit_commands_verify_beside_a_running_server_and_find_an_edited_event() {
    let dir = tempfile::tempdir().expect("tempdir");
    prepare(dir.path(), true, "");
    let s = Server::start(dir.path());
    let (ok, out) = audit(dir.path(), &["verify"]);
    assert!(ok, "{out}");
    assert!(out.contains("the event log is intact"), "{out}");
    let (ok, checkpoint) = audit(dir.path(), &["checkpoint"]);
    assert!(ok, "{checkpoint}");
    let parsed: Value = serde_json::from_str(&checkpoint).expect("a JSON checkpoint");
    let (ok, key) = audit(dir.path(), &["public-key"]);
    assert!(ok, "{key}");
    assert_eq!(parsed["public_key"].as_str(), Some(key.trim()));
    let file = dir.path().join("kept-elsewhere.json");
    std::fs::write(&file, &checkpoint).expect("write");
    let (ok, out) = audit(
        dir.path(),
        &["verify", "--checkpoint", file.to_str().expect("path")],
    );
    assert!(ok, "{out}");
    drop(s);
    // One byte of one event changed: found, named, exit status 1.
    let conn = rusqlite::Connection::open(dir.path().join("db.sqlite3")).expect("open");
    conn.execute_batch("UPDATE events SET target_label = target_label || '!' WHERE seq = 3")
        .expect("tamper");
    drop(conn);
    let (ok, out) = audit(
        dir.path(),
        &["verify", "--checkpoint", file.to_str().expect("path")],
    );
    assert!(!ok, "{out}");
    assert!(out.contains("FAILED at position 3"), "{out}");
    // A prune refuses a log that fails verification.
    let (ok, out) = audit(dir.path(), &["prune", "--before", "2100-01-01T00:00:00Z"]);
    assert!(!ok && out.contains("not pruned"), "{out}");
    let (ok, out) = audit(dir.path(), &["prune", "--before", "not a time"]);
    assert!(!ok && out.contains("RFC 3339"), "{out}");
}
