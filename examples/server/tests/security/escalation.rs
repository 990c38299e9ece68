//! Escalation over HTTP: a narrow permission used to take over a superuser, to
//! grant what its holder lacks, or half-applied by a refused PATCH.

use serde_json::{Value, json};

use super::support::{ADMIN, Server, prepare};

pub const MALLORY: (&str, &str) = ("mallory", "mallory-password");

/// A server with the administrator (user 1, a superuser) and `mallory`, member of group
/// `Staff` holding role `Staff`; returns the server and the Staff role's id.
pub fn server_with_mallory() -> (Server, tempfile::TempDir, i64) {
    let dir = tempfile::tempdir().expect("temp dir");
    prepare(dir.path(), false, "");
    let s = Server::start(dir.path());
    let mallory = created(
        &s,
        "/api/v4/users/",
        json!({"username": MALLORY.0, "password": MALLORY.1}),
    );
    let group = created(&s, "/api/v4/groups/", json!({"name": "Staff"}));
    let role = created(&s, "/api/v4/roles/", json!({"label": "Staff"}));
    admin_ok(
        &s,
        &format!("/api/v4/groups/{group}/users/add/"),
        json!({"user_id": mallory}),
    );
    admin_ok(
        &s,
        &format!("/api/v4/roles/{role}/groups/add/"),
        json!({"group_id": group}),
    );
    (s, dir, role)
}

/// [`server_with_mallory`], with `permissions` granted globally to her role.
fn server_where_mallory_holds(permissions: &[&str]) -> (Server, tempfile::TempDir) {
    let (s, dir, staff) = server_with_mallory();
    for p in permissions {
        grant_global(&s, staff, p);
    }
    (s, dir)
}

/// POSTs as the administrator and returns the new record's id.
pub fn created(s: &Server, path: &str, body: Value) -> i64 {
    let (status, answer) = s.call("POST", path, Some(ADMIN), Some(&body));
    assert_eq!(status, 201, "POST {path}: {answer}");
    answer["id"].as_i64().expect("id")
}

/// POSTs as the administrator, expecting 200.
pub fn admin_ok(s: &Server, path: &str, body: Value) {
    let (status, answer) = s.call("POST", path, Some(ADMIN), Some(&body));
    assert_eq!(status, 200, "POST {path}: {answer}");
}

/// Grants `permission` to `role` globally, as the administrator.
pub fn grant_global(s: &Server, role: i64, permission: &str) {
    admin_ok(
        s,
        &format!("/api/v4/roles/{role}/permissions/add/"),
        json!({"permission": permission}),
    );
}

/// Grants `permissions` to `role` on an object through its ACL, as the administrator.
pub fn grant_on(s: &Server, object: &str, role: i64, permissions: &[&str]) {
    let acls = format!("/api/v5/objects/{object}/acls/");
    let acl = created(s, &acls, json!({"role_id": role}));
    for p in permissions {
        admin_ok(
            s,
            &format!("{acls}{acl}/permissions/add/"),
            json!({"permission": p}),
        );
    }
}

fn can_log_in(s: &Server, user: (&str, &str)) -> bool {
    s.get("/api/v4/users/current/", user).0 == 200
}

#[test]
fn user_edit_cannot_change_the_superusers_password() {
    let (s, _dir) =
        server_where_mallory_holds(&["user_management.user_view", "user_management.user_edit"]);
    let (status, _) = s.call(
        "PATCH",
        "/api/v4/users/1/",
        Some(MALLORY),
        Some(&json!({"password": "taken-over"})),
    );
    assert_eq!(status, 403);
    assert!(
        can_log_in(&s, ADMIN),
        "the administrator's password is unchanged"
    );
    assert!(!can_log_in(&s, ("admin", "taken-over")));
}

#[test]
fn user_edit_cannot_deactivate_the_superuser() {
    let (s, _dir) =
        server_where_mallory_holds(&["user_management.user_view", "user_management.user_edit"]);
    let (status, _) = s.call(
        "PATCH",
        "/api/v4/users/1/",
        Some(MALLORY),
        Some(&json!({"is_active": false})),
    );
    assert_eq!(status, 403);
    assert!(can_log_in(&s, ADMIN));
}

#[test]
fn a_refused_user_patch_leaves_the_password_unchanged() {
    let (s, _dir) =
        server_where_mallory_holds(&["user_management.user_view", "user_management.user_edit"]);
    let clerk = created(
        &s,
        "/api/v4/users/",
        json!({"username": "clerk", "password": "clerk-password"}),
    );
    let (status, _) = s.call(
        "PATCH",
        &format!("/api/v4/users/{clerk}/"),
        Some(MALLORY),
        Some(&json!({"password": "chosen-by-mallory", "is_superuser": true})),
    );
    assert_eq!(status, 403);
    assert!(can_log_in(&s, ("clerk", "clerk-password")));
    assert!(!can_log_in(&s, ("clerk", "chosen-by-mallory")));
}

#[test]
fn role_edit_on_one_role_cannot_grant_it_a_global_permission() {
    let (s, _dir, staff) = server_with_mallory();
    let editors = created(&s, "/api/v4/roles/", json!({"label": "Editors"}));
    grant_on(
        &s,
        &format!("permissions/role/{editors}"),
        staff,
        &["permissions.role_view", "permissions.role_edit"],
    );
    let (status, _) = s.call(
        "POST",
        &format!("/api/v4/roles/{editors}/permissions/add/"),
        Some(MALLORY),
        Some(&json!({"permission": "documents.document_delete"})),
    );
    assert_eq!(status, 403);
    let (_, permissions) = s.get(&format!("/api/v4/roles/{editors}/permissions/"), ADMIN);
    assert_eq!(permissions["count"], 0, "{permissions}");
}

#[test]
fn role_edit_cannot_grant_its_own_role_a_permission_it_lacks() {
    let (s, _dir, staff) = server_with_mallory();
    grant_global(&s, staff, "permissions.role_view");
    grant_global(&s, staff, "permissions.role_edit");
    let (status, _) = s.call(
        "POST",
        &format!("/api/v4/roles/{staff}/permissions/add/"),
        Some(MALLORY),
        Some(&json!({"permission": "user_management.user_edit"})),
    );
    assert_eq!(status, 403);
    let (status, _) = s.call(
        "PATCH",
        "/api/v4/users/1/",
        Some(MALLORY),
        Some(&json!({"password": "taken-over"})),
    );
    assert_ne!(status, 200);
}

#[test]
fn group_edit_cannot_join_the_group_of_a_stronger_role() {
    let (s, _dir, staff) = server_with_mallory();
    let admins_group = created(&s, "/api/v4/groups/", json!({"name": "Admins"}));
    let admins = created(&s, "/api/v4/roles/", json!({"label": "Admins"}));
    grant_global(&s, admins, "user_management.user_delete");
    admin_ok(
        &s,
        &format!("/api/v4/roles/{admins}/groups/add/"),
        json!({"group_id": admins_group}),
    );
    grant_global(&s, staff, "user_management.group_view");
    grant_global(&s, staff, "user_management.group_edit");
    grant_global(&s, staff, "user_management.user_view");
    let (status, _) = s.call(
        "POST",
        &format!("/api/v4/groups/{admins_group}/users/add/"),
        Some(MALLORY),
        Some(&json!({"user_id": 2})),
    );
    assert_eq!(status, 403);
    let (_, members) = s.get(&format!("/api/v4/groups/{admins_group}/users/"), ADMIN);
    assert_eq!(members["count"], 0, "{members}");
}

#[test]
fn acl_edit_cannot_grant_a_permission_its_holder_lacks_there() {
    let (s, _dir, staff) = server_with_mallory();
    let invoice = created(&s, "/api/v4/documents/types/", json!({"label": "Invoice"}));
    let object = format!("documents/documenttype/{invoice}");
    grant_on(
        &s,
        &object,
        staff,
        &[
            "documents.document_type_view",
            "acls.acl_view",
            "acls.acl_edit",
        ],
    );
    grant_global(&s, staff, "permissions.role_view");
    let (_, acls) = s.get(&format!("/api/v5/objects/{object}/acls/"), MALLORY);
    let acl = acls["results"][0]["id"].as_i64().expect("Staff's ACL");
    let (status, _) = s.call(
        "POST",
        &format!("/api/v5/objects/{object}/acls/{acl}/permissions/add/"),
        Some(MALLORY),
        Some(&json!({"permission": "documents.document_delete"})),
    );
    assert_eq!(status, 403);
}

/// `GET /api/v4/users/current/` as `user`, sent from the loopback address `from` (127.0.0.x);
/// returns the status.
pub fn login_from(s: &Server, from: [u8; 4], user: (&str, &str)) -> u16 {
    use std::io::{Read, Write};
    let server: std::net::SocketAddr = s
        .base
        .trim_start_matches("http://")
        .parse()
        .expect("server address");
    let socket =
        socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("socket");
    let local = std::net::SocketAddr::from((from, 0));
    socket.bind(&local.into()).expect("bind the client address");
    socket.connect(&server.into()).expect("connect");
    let mut stream: std::net::TcpStream = socket.into();
    let request = format!(
        "GET /api/v4/users/current/ HTTP/1.1\r\nHost: {server}\r\nAuthorization: {}\r\nConnection: close\r\n\r\n",
        super::support::basic(user)
    );
    stream.write_all(request.as_bytes()).expect("send");
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0)
}

#[test]
fn failed_logins_from_one_address_do_not_lock_the_user_out_elsewhere() {
    let (s, _dir, _) = server_with_mallory();
    created(
        &s,
        "/api/v4/users/",
        json!({"username": "victim", "password": "victim-password"}),
    );
    let attacker = [127, 0, 0, 1];
    for _ in 0..10 {
        assert_eq!(login_from(&s, attacker, ("victim", "a guess")), 401);
    }
    assert_eq!(
        login_from(&s, attacker, ("victim", "a guess")),
        429,
        "the guessing address is limited"
    );
    assert_eq!(
        login_from(&s, [127, 0, 0, 2], ("victim", "victim-password")),
        200,
        "the user still logs in from another address"
    );
}
