//! Devices over HTTP, against a running `docmeta serve`: `POST /api/v4/devices/` exchanges a
//! username and password for a token (no Authorization header; a wrong password counts as a
//! failed login), the token signs requests in as `Authorization: Bearer`, lists and revokes
//! devices, and is refused (`401 Invalid token.`) once revoked; a token cannot sign another
//! device in; the OpenAPI document describes it.

mod support;

use serde_json::{Value, json};
use support::{ADMIN, Server, agent, prepare};

const ALICE: (&str, &str) = ("alice", "demo-password");

fn server() -> (tempfile::TempDir, Server) {
    let dir = tempfile::tempdir().expect("tempdir");
    prepare(dir.path(), true, "login_failures_per_minute: 3\n");
    let server = Server::start(dir.path());
    (dir, server)
}

/// A request signed with a device's token.
fn bearer(s: &Server, method: &str, path: &str, token: &str) -> (u16, Value) {
    let url = format!("{}{path}", s.base);
    let agent = agent();
    let auth = format!("Bearer {token}");
    let response = match method {
        "GET" => agent.get(&url).header("Authorization", &auth).call(),
        "DELETE" => agent.delete(&url).header("Authorization", &auth).call(),
        _ => agent
            .post(&url)
            .header("Authorization", &auth)
            .header("Content-Type", "application/json")
            .send(
                json!({"username": "alice", "password": "demo-password", "name": "x"}).to_string(),
            ),
    };
    let mut response = response.expect("an answer");
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string().expect("a body");
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn sign_in(s: &Server, username: &str, password: &str, name: &str) -> (u16, Value) {
    s.call(
        "POST",
        "/api/v4/devices/",
        None,
        Some(&json!({"username": username, "password": password, "name": name})),
    )
}

#[test]
fn a_token_signs_requests_in_until_it_is_revoked() {
    let (_dir, s) = server();
    let (status, phone) = sign_in(&s, "alice", "demo-password", "Alice's phone");
    assert_eq!(status, 201, "{phone}");
    let token = phone["token"].as_str().expect("a token").to_owned();
    assert!(token.starts_with("dmd_"));
    assert_eq!(phone["name"], "Alice's phone");
    assert!(phone["expires"].as_str().is_some() && phone["last_used"].is_null());
    // The token reads what alice may read, as her password does.
    let (status, mine) = bearer(&s, "GET", "/api/v4/documents/", &token);
    assert_eq!(status, 200, "{mine}");
    let (_, by_password) = s.get("/api/v4/documents/", ALICE);
    assert_eq!(mine["count"], by_password["count"]);
    // Her devices, without the token.
    let (status, list) = bearer(&s, "GET", "/api/v4/devices/", &token);
    assert_eq!(status, 200, "{list}");
    assert_eq!(list["count"], 1);
    assert_eq!(list["results"][0]["id"], phone["id"]);
    assert!(list["results"][0].get("token").is_none());
    assert!(list["results"][0]["last_used"].as_str().is_some());
    // A token does not sign another device in: only a password does, and it is not read from
    // the Authorization header.
    let (status, _) = bearer(&s, "POST", "/api/v4/devices/", &token);
    assert_eq!(status, 201, "the body's credentials sign in, not the token");
    let (status, again) = s.call(
        "POST",
        "/api/v4/devices/",
        None,
        Some(&json!({"username": "alice", "name": "no password"})),
    );
    assert_eq!(status, 400, "{again}");
    // The administrator sees her devices; revoking one refuses its token at once.
    let (status, hers) = s.get(
        &format!("/api/v4/devices/?user_id={}", phone["user_id"]),
        ADMIN,
    );
    assert_eq!(status, 200, "{hers}");
    assert_eq!(hers["count"], 2);
    let path = format!("/api/v4/devices/{}/", phone["id"]);
    let (status, _) = s.call("DELETE", &path, Some(ADMIN), None);
    assert_eq!(status, 204);
    let (status, refused) = bearer(&s, "GET", "/api/v4/documents/", &token);
    assert_eq!(status, 401, "{refused}");
    assert_eq!(refused["detail"], "Invalid token.");
    let (status, _) = bearer(&s, "GET", "/api/v4/documents/", "dmd_not-a-token");
    assert_eq!(status, 401);
}

#[test]
fn a_wrong_password_is_a_failed_login_and_bad_fields_are_named() {
    let (_dir, s) = server();
    let (status, body) = sign_in(&s, "alice", "wrong password", "phone");
    assert_eq!(status, 401, "{body}");
    let (status, body) = sign_in(&s, "alice", "demo-password", "");
    assert_eq!(status, 400, "{body}");
    assert!(body["name"].is_array(), "{body}");
    let (status, body) = s.call(
        "POST",
        "/api/v4/devices/",
        None,
        Some(
            &json!({"username": "alice", "password": "demo-password", "name": "p",
            "lifetime_days": 400}),
        ),
    );
    assert_eq!(status, 400, "{body}");
    assert!(body["lifetime_days"].is_array(), "{body}");
    // Failed logins of the same username from the same address are limited, as for Basic.
    for _ in 0..3 {
        sign_in(&s, "alice", "wrong password", "phone");
    }
    let (status, body) = sign_in(&s, "alice", "demo-password", "phone");
    assert_eq!(status, 429, "{body}");
}

#[test]
fn the_openapi_document_describes_devices_and_the_bearer_scheme() {
    let (_dir, s) = server();
    let (_, api) = s.call("GET", "/api/v4/openapi.json", None, None);
    assert_eq!(
        api["components"]["securitySchemes"]["device"]["scheme"],
        "bearer"
    );
    let post = &api["paths"]["/api/v4/devices/"]["post"];
    assert_eq!(
        post["requestBody"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/DeviceSignInIn"
    );
    assert_eq!(
        post["security"],
        json!([{}]),
        "a sign-in needs no credentials"
    );
    assert!(api["paths"]["/api/v4/devices/{device_id}/"]["delete"].is_object());
}
