//! Typed metadata types and search by field over HTTP, against a running `docmeta serve` with
//! the demo (its dates, dates and times and times are typed): `value_type` on the metadata type
//! resource, a value refused for its type, the value type check and a refused change, field-bound
//! terms and `has:`, search and document lists sorted by a typed value, and a user who may not
//! view a type's values finding nothing by it.

mod support;

use serde_json::{Value, json};
use support::{ADMIN, Server, prepare};

const BOB: (&str, &str) = ("bob", "demo-password");

fn labels(page: &Value) -> Vec<String> {
    page["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|d| d["label"].as_str().expect("label").to_owned())
        .collect()
}

fn type_id(s: &Server, name: &str) -> i64 {
    let (status, page) = s.get("/api/v4/metadata/metadata-types/?page_size=100", ADMIN);
    assert_eq!(status, 200, "{page}");
    page["results"]
        .as_array()
        .expect("types")
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("{name}"))["id"]
        .as_i64()
        .expect("id")
}

#[test]
fn typed_metadata_types_and_search_by_field_over_http() {
    let dir = tempfile::tempdir().expect("tempdir");
    prepare(dir.path(), true, "");
    let s = Server::start(dir.path());

    // The resource carries the value type; a new type takes one, an unknown one is refused.
    let due = type_id(&s, "due_date");
    let (status, t) = s.get(&format!("/api/v4/metadata/metadata-types/{due}/"), ADMIN);
    assert_eq!(
        (status, t["value_type"].as_str()),
        (200, Some("date")),
        "{t}"
    );
    let (status, created) = s.call(
        "POST",
        "/api/v4/metadata/metadata-types/",
        Some(ADMIN),
        Some(&json!({"name": "amount", "label": "Amount", "value_type": "decimal"})),
    );
    assert_eq!(
        (status, created["value_type"].as_str()),
        (201, Some("decimal")),
        "{created}"
    );
    let (status, refused) = s.call(
        "POST",
        "/api/v4/metadata/metadata-types/",
        Some(ADMIN),
        Some(&json!({"name": "money", "label": "Money", "value_type": "money"})),
    );
    assert_eq!(status, 400, "{refused}");
    assert!(refused["value_type"][0].as_str().is_some(), "{refused}");

    // A value of the wrong form is refused on `value`.
    let (_, page) = s.get("/api/v4/documents/?page_size=100", ADMIN);
    let invoice = page["results"]
        .as_array()
        .expect("documents")
        .iter()
        .find(|d| d["label"] == "Invoice 1")
        .expect("Invoice 1")["id"]
        .as_i64()
        .expect("id");
    let (_, values) = s.get(&format!("/api/v4/documents/{invoice}/metadata/"), ADMIN);
    let delivery = values["results"]
        .as_array()
        .expect("values")
        .iter()
        .find(|v| v["metadata_type"]["name"] == "delivery_time")
        .expect("a delivery time")["id"]
        .as_i64()
        .expect("id");
    let (status, refused) = s.call(
        "PATCH",
        &format!("/api/v4/documents/{invoice}/metadata/{delivery}/"),
        Some(ADMIN),
        Some(&json!({"value": "half past nine"})),
    );
    assert_eq!(status, 400, "{refused}");
    assert!(refused["value"][0].as_str().is_some(), "{refused}");

    // The check of a change of value type, and the change refused while a value does not fit.
    let party = type_id(&s, "party");
    let check_path =
        format!("/api/v4/metadata/metadata-types/{party}/value-type-check/?value_type=integer");
    let (status, check) = s.get(&check_path, ADMIN);
    assert_eq!(status, 200, "{check}");
    assert_eq!(
        (check["checked"].as_u64(), check["count"].as_u64()),
        (Some(3), Some(3)),
        "{check}"
    );
    assert_eq!(
        check["misfits"].as_array().map(Vec::len),
        Some(3),
        "{check}"
    );
    let (status, _) = s.get(&check_path, BOB);
    assert!(
        status == 403 || status == 404,
        "bob may not edit the type: {status}"
    );
    let (status, missing) = s.get(
        &format!("/api/v4/metadata/metadata-types/{party}/value-type-check/"),
        ADMIN,
    );
    assert_eq!(status, 400, "{missing}");
    assert!(missing["value_type"][0].as_str().is_some(), "{missing}");
    let (status, refused) = s.call(
        "PATCH",
        &format!("/api/v4/metadata/metadata-types/{party}/"),
        Some(ADMIN),
        Some(&json!({"value_type": "integer"})),
    );
    assert_eq!(status, 400, "{refused}");
    assert!(
        refused["value_type"][0]
            .as_str()
            .is_some_and(|m| m.contains("3 of 3")),
        "{refused}"
    );
    let (_, unchanged) = s.get(&format!("/api/v4/metadata/metadata-types/{party}/"), ADMIN);
    assert_eq!(unchanged["value_type"], "text");

    // Field-bound terms compare by type; `has:` finds values of a type.
    let search = |q: &str, user| {
        let path = format!("/api/v4/search/documents/?q={}", urlencode(q));
        let (status, page) = s.get(&path, user);
        assert_eq!(status, 200, "{q}: {page}");
        let mut found = labels(&page);
        found.sort();
        found
    };
    assert_eq!(
        search("due_date:<2024-03-01", ADMIN),
        ["Invoice 1", "Invoice 2"]
    );
    assert_eq!(
        search("due_date:[2024-03-01 TO 2024-12-31] status:draft", ADMIN),
        ["Invoice 5"]
    );
    assert_eq!(search("has:signed_on", ADMIN).len(), 3);
    assert_eq!(
        search("label:invoice NOT has:signed_on", ADMIN).len(),
        5,
        "no invoice has a signing date"
    );
    let (status, malformed) = s.get(
        &format!(
            "/api/v4/search/documents/?q={}",
            urlencode("due_date:[soon TO later]")
        ),
        ADMIN,
    );
    assert_eq!(status, 400, "{malformed}");
    assert!(malformed["q"][0].as_str().is_some(), "{malformed}");

    // Sorted by a typed value: in a search and in the document list (missing last).
    let (status, sorted) = s.get(
        &format!(
            "/api/v4/search/documents/?q={}&ordering=-due_date&page_size=3",
            urlencode("label:invoice")
        ),
        ADMIN,
    );
    assert_eq!(status, 200, "{sorted}");
    assert_eq!(sorted["count"], 5, "{sorted}");
    assert_eq!(
        labels(&sorted)[..3],
        ["Invoice 4", "Invoice 5", "Invoice 3"],
        "{sorted}"
    );
    let invoice_type = page["results"]
        .as_array()
        .expect("documents")
        .iter()
        .find(|d| d["label"] == "Invoice 1")
        .expect("Invoice 1")["document_type"]["id"]
        .as_i64()
        .expect("type id");
    let (status, listed) = s.get(
        &format!("/api/v4/documents/?document_type_id={invoice_type}&ordering=due_date"),
        ADMIN,
    );
    assert_eq!(status, 200, "{listed}");
    assert_eq!(
        labels(&listed)[..3],
        ["Invoice 1", "Invoice 2", "Invoice 3"],
        "{listed}"
    );

    // Bob (Legal) may view contracts, not invoices: `due_date` is unknown to him, answered as a
    // type that does not exist.
    for (hidden, absent) in [
        ("due_date:<2100-01-01", "nosuch:<2100-01-01"),
        ("has:due_date", "has:nosuch"),
    ] {
        let ask = |q: &str| {
            s.get(
                &format!("/api/v4/search/documents/?q={}", urlencode(q)),
                BOB,
            )
        };
        let ((hs, h), (as_, a)) = (ask(hidden), ask(absent));
        assert_eq!((hs, as_), (400, 400), "{h} {a}");
        assert_eq!(
            h.to_string().replace("due_date", "nosuch"),
            a.to_string(),
            "worded alike"
        );
    }
    assert_eq!(search("has:signed_on", BOB).len(), 3);
}

fn urlencode(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
