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

/// `docmeta audit` with `args`: whether it succeeded, and what it printed.
fn audit(dir: &std::path::Path, args: &[&str]) -> (bool, String) {
    let (code, out) = audit_exit(dir, args);
    (code == Some(0), out)
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

/// The user [`add_narrow_reader`] makes.
const NARROW: (&str, &str) = ("narrow", "narrow-reader-password");

/// Makes [`NARROW`] in the demo's data directory `dir` (with the library, while no server
/// runs): a user who may view the invoice `doc` and the values of metadata type `shown` on it,
/// and know of metadata type `known` without viewing its values; of the other types nothing.
fn add_narrow_reader(dir: &std::path::Path, doc: i64, shown: i64, known: i64) {
    use docmeta_core::{ObjectKind, ObjectRef, Permission as P};
    let db = docmeta_core::Docmeta::builder()
        .data_dir(dir)
        .open()
        .expect("open");
    let s = db.system();
    let user = s.create_user(NARROW.0, NARROW.1, false).expect("a user");
    let group = s.create_group("Narrow readers").expect("a group");
    let role = s.create_role("Narrow reader").expect("a role");
    s.set_group_member(group.id, user.id, true).expect("member");
    s.set_role_group(role.id, group.id, true).expect("role");
    let document = ObjectRef::new(ObjectKind::DOCUMENT, doc);
    s.grant(P::DocumentView, role.id, document).expect("grant");
    s.grant(P::DocumentMetadataView, role.id, document)
        .expect("grant");
    let shown = ObjectRef::new(ObjectKind::METADATA_TYPE, shown);
    s.grant(P::MetadataTypeView, role.id, shown).expect("grant");
    s.grant(P::DocumentMetadataView, role.id, shown)
        .expect("grant");
    let known = ObjectRef::new(ObjectKind::METADATA_TYPE, known);
    s.grant(P::MetadataTypeView, role.id, known).expect("grant");
}

#[test]
fn a_narrow_reader_sees_a_hidden_change_without_its_values_over_http() {
    let dir = tempfile::tempdir().expect("tempdir");
    prepare(dir.path(), true, "");
    let s = Server::start(dir.path());
    let (doc, _, number) = an_invoice_value(&s);
    let (_, values) = s.get(&format!("/api/v4/documents/{doc}/metadata/"), ADMIN);
    let status = values["results"]
        .as_array()
        .expect("values")
        .iter()
        .find(|v| v["metadata_type"]["name"] == "status")
        .expect("a status")
        .clone();
    let status_value = status["id"].as_i64().expect("id");
    let status_type = status["metadata_type_id"].as_i64().expect("type");
    let old = status["value"].as_str().expect("a value").to_owned();
    drop(s);
    add_narrow_reader(dir.path(), doc, number, status_type);
    let s = Server::start(dir.path());
    std::thread::sleep(std::time::Duration::from_millis(20));
    let then = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    std::thread::sleep(std::time::Duration::from_millis(20));
    let new = if old == "review" { "draft" } else { "review" };
    let (status_code, answer) = s.call(
        "PATCH",
        &format!("/api/v4/documents/{doc}/metadata/{status_value}/"),
        Some(ADMIN),
        Some(&json!({ "value": new })),
    );
    assert_eq!(status_code, 200, "{answer}");
    // The administrator sees the edit whole.
    let history = format!("/api/v4/documents/{doc}/metadata/history/?page_size=500");
    let (code, all) = s.get(&history, ADMIN);
    assert_eq!(code, 200, "{all}");
    let edit = all["results"]
        .as_array()
        .expect("changes")
        .iter()
        .find(|c| c["metadata_type_id"] == status_type && c["action"] == "edited")
        .expect("the status edit")
        .clone();
    assert_eq!(
        (&edit["before"], &edit["after"], &edit["hidden"]),
        (&json!(old), &json!(new), &json!(false))
    );
    // The narrow reader: the same change listed, its values null and `hidden` set; the
    // invoice number's changes whole; no change of a type it may not know of, none counted.
    let (code, seen) = s.get(&history, NARROW);
    assert_eq!(code, 200, "{seen}");
    let changes = seen["results"].as_array().expect("changes");
    let hidden = changes
        .iter()
        .find(|c| c["event_id"] == edit["event_id"])
        .expect("the status edit, listed");
    assert_eq!(hidden["hidden"], true, "{hidden}");
    assert!(
        hidden["before"].is_null() && hidden["after"].is_null(),
        "{hidden}"
    );
    assert_eq!(hidden["action"], "edited", "{hidden}");
    assert_eq!(hidden["metadata_type_label"], "Status", "{hidden}");
    for c in changes {
        if c["metadata_type_id"] == status_type {
            assert_eq!(c["hidden"], true, "{c}");
            assert!(c["before"].is_null() && c["after"].is_null(), "{c}");
        } else {
            assert_eq!(
                c["metadata_type_id"], number,
                "a type it may not know of: {c}"
            );
            assert_eq!(c["hidden"], false, "{c}");
        }
    }
    assert!(
        changes
            .iter()
            .any(|c| c["metadata_type_id"] == number && c["after"].is_string()),
        "{seen}"
    );
    let count = |page: &Value| page["count"].as_u64().expect("count");
    assert_eq!(count(&seen), changes.len() as u64, "{seen}");
    assert!(count(&seen) < count(&all), "{seen}");
    assert!(!seen.to_string().contains(&format!("\"{new}\"")), "{seen}");
    // The hidden type's history alone: listed, every value withheld.
    let (code, only) = s.get(
        &format!("/api/v4/documents/{doc}/metadata/history/?metadata_type_id={status_type}"),
        NARROW,
    );
    assert_eq!(code, 200, "{only}");
    let listed = only["results"].as_array().expect("changes");
    assert!(listed.len() >= 2, "the demo's value and the edit: {only}");
    assert!(
        listed
            .iter()
            .all(|c| c["hidden"] == true && c["before"].is_null() && c["after"].is_null()),
        "{only}"
    );
    // The values at `then`: the invoice number, without the status, whose values it may not
    // view (the administrator's answer holds it).
    let at = format!(
        "/api/v4/documents/{doc}/metadata/?at={}",
        then.replace('+', "%2B")
    );
    let (code, past) = s.get(&at, NARROW);
    assert_eq!(code, 200, "{past}");
    let types: Vec<i64> = past["results"]
        .as_array()
        .expect("values")
        .iter()
        .map(|v| v["metadata_type_id"].as_i64().expect("type"))
        .collect();
    assert_eq!(types, [number], "{past}");
    let (code, past) = s.get(&at, ADMIN);
    assert_eq!(code, 200, "{past}");
    let status_then = past["results"]
        .as_array()
        .expect("values")
        .iter()
        .find(|v| v["metadata_type_id"] == status_type)
        .expect("the status then")
        .clone();
    assert_eq!(status_then["value"], json!(old), "{past}");
    drop(s);
}

/// `docmeta audit` with `args`: its exit code (`None` when a signal ended it) and what it
/// printed.
fn audit_exit(dir: &std::path::Path, args: &[&str]) -> (Option<i32>, String) {
    let out = docmeta(dir)
        .arg("audit")
        .args(args)
        .stderr(Stdio::piped())
        .output()
        .expect("run docmeta audit");
    (
        out.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[test]
fn audit_verify_refuses_an_altered_or_unreadable_checkpoint_file_with_a_clear_message() {
    let dir = tempfile::tempdir().expect("tempdir");
    prepare(dir.path(), true, "");
    let (ok, checkpoint) = audit(dir.path(), &["checkpoint"]);
    assert!(ok, "{checkpoint}");
    let kept: Value = serde_json::from_str(&checkpoint).expect("a JSON checkpoint");
    let file = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("write");
        path.to_str().expect("path").to_owned()
    };
    let good = file("good.json", &checkpoint);
    let (code, out) = audit_exit(dir.path(), &["verify", "--checkpoint", &good]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("the event log is intact"), "{out}");
    // Altered: its signature; its position. Exit status 1 (a panic's is 101), the failure
    // named.
    let signature = kept["signature"].as_str().expect("a signature");
    let first = if signature.starts_with('0') { "1" } else { "0" };
    let mut forged = kept.clone();
    forged["signature"] = json!(format!("{first}{}", &signature[1..]));
    let mut earlier = kept.clone();
    earlier["seq"] = json!(kept["seq"].as_i64().expect("a position") - 1);
    for (name, altered) in [("forged.json", forged), ("earlier.json", earlier)] {
        let path = file(name, &serde_json::to_string_pretty(&altered).expect("json"));
        let (code, out) = audit_exit(dir.path(), &["verify", "--checkpoint", &path]);
        assert_eq!(code, Some(1), "{name}: {out}");
        assert!(out.contains("FAILED at position"), "{name}: {out}");
        assert!(
            out.contains("given checkpoint") && out.contains("not signed"),
            "{name}: {out}"
        );
        assert!(out.contains("the event log was altered"), "{name}: {out}");
        assert!(!out.contains("panicked"), "{name}: {out}");
    }
    // Not a checkpoint: not JSON, JSON of something else, no file at all.
    for (name, text) in [
        ("junk.json", Some("this is not a checkpoint\n")),
        ("other.json", Some("{\"seq\": \"ten\"}")),
        ("missing.json", None),
    ] {
        let path = match text {
            Some(text) => file(name, text),
            None => dir.path().join(name).to_str().expect("path").to_owned(),
        };
        let (code, out) = audit_exit(dir.path(), &["verify", "--checkpoint", &path]);
        assert_eq!(code, Some(1), "{name}: {out}");
        assert!(
            out.contains("error: ") && out.contains(name),
            "{name}: {out}"
        );
        let why = if text.is_some() {
            "is not a checkpoint"
        } else {
            "reading"
        };
        assert!(out.contains(why), "{name}: {out}");
        assert!(!out.contains("panicked"), "{name}: {out}");
    }
    // None of it changed the log.
    let (ok, out) = audit(dir.path(), &["verify", "--checkpoint", &good]);
    assert!(ok && out.contains("the event log is intact"), "{out}");
}

/// The first number in `text` after `after`.
fn number_after(text: &str, after: &str) -> i64 {
    text.split(after)
        .nth(1)
        .and_then(|rest| {
            rest.split(|c: char| !c.is_ascii_digit())
                .next()
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or_else(|| panic!("no number after {after:?} in {text}"))
}

#[test]
fn audit_prune_removes_the_events_before_a_time_and_the_log_still_verifies() {
    let dir = tempfile::tempdir().expect("tempdir");
    prepare(dir.path(), true, "");
    // A checkpoint of the demo's log, kept outside.
    let (ok, checkpoint) = audit(dir.path(), &["checkpoint"]);
    assert!(ok, "{checkpoint}");
    let kept = dir.path().join("before-the-prune.json");
    std::fs::write(&kept, &checkpoint).expect("write");
    let kept = kept.to_str().expect("path").to_owned();
    // An edit before the cut, one after it.
    let s = Server::start(dir.path());
    let (doc, value, mt) = an_invoice_value(&s);
    let edit = |number: &str| {
        let (status, answer) = s.call(
            "PATCH",
            &format!("/api/v4/documents/{doc}/metadata/{value}/"),
            Some(ADMIN),
            Some(&json!({ "value": number })),
        );
        assert_eq!(status, 200, "{answer}");
    };
    edit("INV-7001");
    std::thread::sleep(std::time::Duration::from_millis(20));
    let cut = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    std::thread::sleep(std::time::Duration::from_millis(20));
    edit("INV-7002");
    drop(s);
    let (ok, out) = audit(dir.path(), &["prune", "--before", &cut]);
    assert!(ok, "{out}");
    assert!(out.contains("removed "), "{out}");
    let start = number_after(&out, "the log now starts after position ");
    assert!(start > 0, "{out}");
    // The rest verifies from the prune's checkpoint on.
    let (ok, out) = audit(dir.path(), &["verify"]);
    assert!(ok, "{out}");
    assert!(out.contains("the event log is intact"), "{out}");
    assert!(
        out.contains(&format!("(positions {} to ", start + 1)),
        "{out}"
    );
    assert!(number_after(&out, "verified ") > 0, "{out}");
    // A checkpoint of events the prune removed cannot be checked any more: said, exit 1.
    let (code, out) = audit_exit(dir.path(), &["verify", "--checkpoint", &kept]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("a prune removed"), "{out}");
    // A prune before the first event left removes nothing, and the log still verifies.
    let (ok, out) = audit(dir.path(), &["prune", "--before", "2000-01-01T00:00:00Z"]);
    assert!(ok && out.contains("no event to remove"), "{out}");
    let (ok, out) = audit(dir.path(), &["verify"]);
    assert!(ok && out.contains("the event log is intact"), "{out}");
    // The history keeps the change after the cut; before it, the value that change found.
    let s = Server::start(dir.path());
    let (status, history) = s.get(
        &format!("/api/v4/documents/{doc}/metadata/history/?metadata_type_id={mt}"),
        ADMIN,
    );
    assert_eq!(status, 200, "{history}");
    assert_eq!(history["count"], 1, "{history}");
    let left = &history["results"][0];
    assert_eq!(
        (&left["before"], &left["after"]),
        (&json!("INV7001"), &json!("INV7002")),
        "{history}"
    );
    let (status, past) = s.get(
        &format!(
            "/api/v4/documents/{doc}/metadata/?at={}",
            cut.replace('+', "%2B")
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
    assert_eq!(number["value"], "INV7001", "{past}");
    drop(s);
}
