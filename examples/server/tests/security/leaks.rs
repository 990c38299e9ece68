//! Leaks over HTTP: the event log naming hidden objects, existence probes
//! through references in request bodies, and NUL characters that PostgreSQL cannot store.

use serde_json::{Value, json};

use super::escalation::{MALLORY, created, grant_global, grant_on, server_with_mallory};
use super::support::{ADMIN, Server};

/// The answer to a request, with every number in its body replaced by `N`, so that answers about two
/// different ids compare equal when they say the same thing.
fn shape(s: &Server, method: &str, path: &str, body: &Value) -> (u16, String) {
    let (status, answer) = s.call(method, path, Some(MALLORY), Some(body));
    let mut text = String::new();
    for c in answer.to_string().chars() {
        if !c.is_ascii_digit() {
            text.push(c);
        } else if !text.ends_with('N') {
            text.push('N');
        }
    }
    (status, text)
}

#[test]
fn an_acl_for_an_invisible_role_answers_like_an_unknown_role() {
    let (s, _dir, staff) = server_with_mallory();
    let hidden = created(&s, "/api/v4/roles/", json!({"label": "Hidden"}));
    let invoice = created(&s, "/api/v4/documents/types/", json!({"label": "Invoice"}));
    let object = format!("documents/documenttype/{invoice}");
    grant_on(
        &s,
        &object,
        staff,
        &["documents.document_type_view", "acls.acl_edit"],
    );
    let acls = format!("/api/v5/objects/{object}/acls/");
    let invisible = shape(&s, "POST", &acls, &json!({"role_id": hidden}));
    let unknown = shape(&s, "POST", &acls, &json!({"role_id": 9999}));
    assert_eq!(invisible.0, 400, "{invisible:?}");
    assert_eq!(invisible, unknown);
}

#[test]
fn linking_an_invisible_group_answers_like_an_unknown_group() {
    let (s, _dir, staff) = server_with_mallory();
    let hidden = created(&s, "/api/v4/groups/", json!({"name": "Hidden"}));
    grant_global(&s, staff, "permissions.role_view");
    grant_global(&s, staff, "permissions.role_edit");
    let path = format!("/api/v4/roles/{staff}/groups/add/");
    let invisible = shape(&s, "POST", &path, &json!({"group_id": hidden}));
    let unknown = shape(&s, "POST", &path, &json!({"group_id": 9999}));
    assert_eq!(invisible.0, 400, "{invisible:?}");
    assert_eq!(invisible, unknown);
}

#[test]
fn adding_an_invisible_user_answers_like_an_unknown_user() {
    let (s, _dir, staff) = server_with_mallory();
    let other = created(
        &s,
        "/api/v4/users/",
        json!({"username": "other", "password": "other-password"}),
    );
    let group = created(&s, "/api/v4/groups/", json!({"name": "Open"}));
    grant_global(&s, staff, "user_management.group_view");
    grant_global(&s, staff, "user_management.group_edit");
    let path = format!("/api/v4/groups/{group}/users/add/");
    let invisible = shape(&s, "POST", &path, &json!({"user_id": other}));
    let unknown = shape(&s, "POST", &path, &json!({"user_id": 9999}));
    assert_eq!(invisible.0, 400, "{invisible:?}");
    assert_eq!(invisible, unknown);
}

#[test]
fn a_cabinet_event_does_not_name_a_hidden_document() {
    let (s, _dir, staff) = server_with_mallory();
    let secret = created(&s, "/api/v4/documents/types/", json!({"label": "Secret"}));
    let doc = created(
        &s,
        "/api/v4/documents/",
        json!({"document_type_id": secret, "label": "merger plan"}),
    );
    let cabinet = created(&s, "/api/v4/cabinets/", json!({"label": "Shared"}));
    let (status, _) = s.call(
        "POST",
        &format!("/api/v4/cabinets/{cabinet}/documents/add/"),
        Some(ADMIN),
        Some(&json!({"document_id": doc})),
    );
    assert_eq!(status, 200);
    grant_on(
        &s,
        &format!("cabinets/cabinet/{cabinet}"),
        staff,
        &["cabinets.cabinet_view"],
    );
    let (status, events) = s.get("/api/v4/events/?page_size=500", MALLORY);
    assert_eq!(status, 200);
    let results = events["results"].as_array().expect("results");
    assert!(
        results
            .iter()
            .any(|e| e["target"]["model_name"] == "cabinet"),
        "the cabinet's events are listed: {events}"
    );
    for e in results {
        let o = &e["action_object"];
        assert!(
            !(o["model_name"] == "document" && o["id"] == doc),
            "the hidden document is named: {e}"
        );
        assert!(!e.to_string().contains("merger plan"), "{e}");
    }
}

#[test]
fn a_nul_in_a_label_is_400_naming_the_field() {
    let (s, _dir, _) = server_with_mallory();
    let (status, answer) = s.call(
        "POST",
        "/api/v4/documents/types/",
        Some(ADMIN),
        Some(&json!({"label": "Inv\u{0}oice"})),
    );
    assert_eq!(status, 400, "{answer}");
    assert!(answer["label"].is_array(), "{answer}");
}

#[test]
fn a_nul_in_a_metadata_value_is_400_naming_value() {
    let (s, _dir, _) = server_with_mallory();
    let invoice = created(&s, "/api/v4/documents/types/", json!({"label": "Invoice"}));
    let number = created(
        &s,
        "/api/v4/metadata/metadata-types/",
        json!({"name": "number", "label": "Number"}),
    );
    created(
        &s,
        &format!("/api/v4/documents/types/{invoice}/metadata-types/"),
        json!({"metadata_type_id": number, "required": false}),
    );
    let doc = created(
        &s,
        "/api/v4/documents/",
        json!({"document_type_id": invoice, "label": "one"}),
    );
    let (status, answer) = s.call(
        "POST",
        &format!("/api/v4/documents/{doc}/metadata/"),
        Some(ADMIN),
        Some(&json!({"metadata_type_id": number, "value": "12\u{0}3"})),
    );
    assert_eq!(status, 400, "{answer}");
    assert!(answer["value"].is_array(), "{answer}");
}

#[test]
fn a_nul_in_a_username_is_400_naming_the_field() {
    let (s, _dir, _) = server_with_mallory();
    let (status, answer) = s.call(
        "POST",
        "/api/v4/users/",
        Some(ADMIN),
        Some(&json!({"username": "ro\u{0}ot", "password": "a-password"})),
    );
    assert_eq!(status, 400, "{answer}");
    assert!(answer["username"].is_array(), "{answer}");
}
