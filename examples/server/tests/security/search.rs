//! Search: a range binary search must not read a metadata value the caller may not view, and
//! one query must not take the server down.

use serde_json::{Value, json};

use super::support::{ADMIN, Server, prepare};

const EVE: (&str, &str) = ("eve", "eve has a long password");

/// A query string value, percent-encoded (space as `+`).
fn encode(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            b' ' => "+".to_owned(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn post(s: &Server, path: &str, body: Value) -> Value {
    let (status, answer) = s.call("POST", path, Some(ADMIN), Some(&body));
    assert!(
        status == 200 || status == 201,
        "POST {path} {body}: {status} {answer}"
    );
    answer
}

fn id(v: &Value) -> i64 {
    v["id"].as_i64().unwrap_or_else(|| panic!("no id in {v}"))
}

/// Grants `permissions` to `role` through an ACL on `object` (`app/model/id`).
fn grant(s: &Server, object: &str, role: i64, permissions: &[&str]) {
    let acls = format!("/api/v5/objects/{object}/acls/");
    let acl = id(&post(s, &acls, json!({ "role_id": role })));
    for p in permissions {
        post(
            s,
            &format!("{acls}{acl}/permissions/add/"),
            json!({ "permission": p }),
        );
    }
}

/// Both searches for `q`, as `user`: the status and the whole answer of each.
fn search(s: &Server, user: (&str, &str), q: &str) -> [(u16, Value); 2] {
    ["documents", "metadata"]
        .map(|what| s.get(&format!("/api/v4/search/{what}/?q={}", encode(q)), user))
}

/// Payslips whose `salary` values eve may not view, though she may view the payslips and their
/// `reference` values.
fn payroll(s: &Server) -> i64 {
    let reference = id(&post(
        s,
        "/api/v4/metadata/metadata-types/",
        json!({"name": "reference", "label": "Reference"}),
    ));
    let salary = id(&post(
        s,
        "/api/v4/metadata/metadata-types/",
        json!({"name": "salary", "label": "Salary"}),
    ));
    let diagnosis = id(&post(
        s,
        "/api/v4/metadata/metadata-types/",
        json!({"name": "diagnosis", "label": "Diagnosis"}),
    ));
    let payslip = id(&post(
        s,
        "/api/v4/documents/types/",
        json!({"label": "Payslip"}),
    ));
    for t in [reference, salary, diagnosis] {
        post(
            s,
            &format!("/api/v4/documents/types/{payslip}/metadata-types/"),
            json!({"metadata_type_id": t, "required": false}),
        );
    }
    let mut target = 0;
    for (n, pay, note) in [(1, "98765", "confidential hernia"), (2, "4321.5", "fit")] {
        let doc = id(&post(
            s,
            "/api/v4/documents/",
            json!({"document_type_id": payslip, "label": format!("Payslip {n}")}),
        ));
        for (t, v) in [
            (reference, format!("PAY-{n:04}")),
            (salary, pay.to_owned()),
            (diagnosis, note.to_owned()),
        ] {
            post(
                s,
                &format!("/api/v4/documents/{doc}/metadata/"),
                json!({"metadata_type_id": t, "value": v}),
            );
        }
        if n == 1 {
            target = doc;
        }
    }
    let user = id(&post(
        s,
        "/api/v4/users/",
        json!({"username": EVE.0, "password": EVE.1}),
    ));
    let group = id(&post(s, "/api/v4/groups/", json!({"name": "clerks"})));
    post(
        s,
        &format!("/api/v4/groups/{group}/users/add/"),
        json!({"user_id": user}),
    );
    let role = id(&post(s, "/api/v4/roles/", json!({"label": "clerks"})));
    post(
        s,
        &format!("/api/v4/roles/{role}/groups/add/"),
        json!({"group_id": group}),
    );
    grant(
        s,
        &format!("documents/documenttype/{payslip}"),
        role,
        &["documents.document_view", "metadata.document_metadata_view"],
    );
    grant(
        s,
        &format!("metadata/metadatatype/{reference}"),
        role,
        &["metadata.document_metadata_view"],
    );
    target
}

/// Finds the largest `n` in `0..=hi` for which `holds(n)`, as an attacker would.
fn binary_search(mut holds: impl FnMut(u64) -> bool, hi: u64) -> u64 {
    let (mut lo, mut hi) = (0, hi);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if holds(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}

#[test]
fn a_range_binary_search_learns_nothing_of_a_hidden_value() {
    let dir = tempfile::tempdir().expect("tempdir");
    prepare(dir.path(), false, "");
    let s = Server::start(dir.path());
    let payslip = payroll(&s);
    // Eve may view the payslip and its reference, not its salary.
    assert_eq!(s.get(&format!("/api/v4/documents/{payslip}/"), EVE).0, 200);
    let (status, values) = s.get(&format!("/api/v4/documents/{payslip}/metadata/"), EVE);
    assert_eq!(status, 200);
    assert!(
        values["results"]
            .as_array()
            .is_some_and(|r| r.len() == 1 && r[0]["value"] == "PAY-0001"),
        "{values}"
    );
    // The attack, as someone who may view salaries: it recovers the salary.
    let matches = |user: (&str, &str), n: u64| {
        let [documents, values] = search(
            &s,
            user,
            &format!("metadata_type__name:salary metadata_value:>={n}"),
        );
        assert_eq!((documents.0, values.0), (200, 200));
        documents.1["results"]
            .as_array()
            .is_some_and(|r| r.iter().any(|d| d["id"] == payslip))
    };
    assert_eq!(binary_search(|n| matches(ADMIN, n), 1 << 20), 98765);
    // As eve: every bound gets the same answers, on both searches, whatever the query shape.
    let mut seen = Vec::new();
    let mut bounds = Vec::new();
    binary_search(
        |n| {
            bounds.push(n);
            matches(EVE, n)
        },
        1 << 20,
    );
    bounds.extend([0, 4321, 4322, 98765, 98766, 1_000_000]);
    for n in bounds {
        for q in [
            format!("metadata_type__name:salary metadata_value:>={n}"),
            format!("metadata_value:>={n}"),
            format!("value:[{n} TO *]"),
            format!("value:{{* TO {n}}}"),
            format!("payslip AND NOT value:>={n}"),
            format!("label:payslip OR value:<{n}"),
        ] {
            let answers = search(&s, EVE, &q);
            let shape = q.replace(&n.to_string(), "N");
            match seen.iter().find(|(s, _)| *s == shape) {
                Some((_, first)) => {
                    assert_eq!(&answers, first, "{q}: the answer depends on the bound")
                }
                None => seen.push((shape, answers)),
            }
        }
    }
    // Partial words of a hidden text value answer as a word nobody has.
    let nothing = search(&s, EVE, "metadata_value:zzqx");
    for probe in [
        "metadata_value:hern",
        "metadata_value:confidential",
        "hernia",
        "diagnosis",
        "metadata_type__name:salary",
        "salary",
    ] {
        assert_eq!(search(&s, EVE, probe), nothing, "{probe}");
    }
    assert_eq!(nothing[0].1["count"], json!(0));
    // What eve may view is still found.
    let [documents, values] = search(&s, EVE, "metadata_value:PAY-0001");
    assert_eq!(
        (documents.1["count"].clone(), values.1["count"].clone()),
        (json!(1), json!(1))
    );
}

#[test]
fn a_deeply_nested_query_is_refused_and_the_server_keeps_answering() {
    let dir = tempfile::tempdir().expect("tempdir");
    prepare(dir.path(), true, "");
    let s = Server::start(dir.path());
    let deep = [
        // About 240 of these aborted the process (a runtime thread's stack overflowed).
        format!("{}invoice", "NOT ".repeat(490)),
        format!("{}invoice{}", "(".repeat(990), ")".repeat(990)),
        format!("{}-invoice{}", "(NOT ".repeat(300), ")".repeat(300)),
        format!("{}invoice", "NOT ".repeat(10_000)),
    ];
    for q in &deep {
        for what in ["documents", "metadata"] {
            let path = format!("/api/v4/search/{what}/?q={}", encode(q));
            let (status, answer) = s.get(&path, ADMIN);
            if path.len() > 8192 {
                // 10,000 NOTs: longer than a request target may be (refused before routing).
                assert_eq!(status, 414, "{what}: {answer}");
                assert!(answer["detail"].is_string(), "{answer}");
            } else {
                assert_eq!(status, 400, "{what}: {answer}");
                assert!(
                    answer["q"][0]
                        .as_str()
                        .is_some_and(|m| m.contains("nested too deep")),
                    "{answer}"
                );
            }
            let (status, health) = s.call("GET", "/api/v4/health/", None, None);
            assert_eq!((status, &health["status"]), (200, &json!("ok")));
        }
    }
    // A range without bounds panicked inside tantivy (500).
    for q in [
        "value:[* TO *]",
        "metadata_value:{* TO *}",
        "label:x OR value:[ * TO * ]",
        "value:[ TO 5]",
    ] {
        for what in ["documents", "metadata"] {
            let (status, answer) = s.get(&format!("/api/v4/search/{what}/?q={}", encode(q)), ADMIN);
            assert_eq!(status, 400, "{q} on {what}: {answer}");
            assert!(answer["q"][0].is_string(), "{answer}");
        }
    }
    let (status, page) = s.get("/api/v4/search/documents/?q=invoice", ADMIN);
    assert_eq!(status, 200);
    assert!(page["count"].as_u64().is_some_and(|n| n > 0));
}
