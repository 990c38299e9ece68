//! Administrative reach over HTTP: `user_edit` and `group_edit` reaching over a
//! stronger user, a type change that widened access, lockout as a weapon, event actors named
//! to readers who may not view them, and usernames that look alike.

use serde_json::json;

use super::escalation::{
    MALLORY, admin_ok, created, grant_global, grant_on, login_from, server_with_mallory,
};
use super::support::{ADMIN, Server, prepare};

/// A user `boss` (no superuser) in group `Bosses`, whose role holds `permissions` globally;
/// returns the user's and the group's ids.
fn boss(s: &Server, permissions: &[&str]) -> (i64, i64) {
    let boss = created(
        s,
        "/api/v4/users/",
        json!({"username": "boss", "password": "boss-password"}),
    );
    let group = created(s, "/api/v4/groups/", json!({"name": "Bosses"}));
    let role = created(s, "/api/v4/roles/", json!({"label": "Bosses"}));
    for p in permissions {
        grant_global(s, role, p);
    }
    admin_ok(
        s,
        &format!("/api/v4/groups/{group}/users/add/"),
        json!({"user_id": boss}),
    );
    admin_ok(
        s,
        &format!("/api/v4/roles/{role}/groups/add/"),
        json!({"group_id": group}),
    );
    (boss, group)
}

const BOSS: (&str, &str) = ("boss", "boss-password");

#[test]
fn user_edit_cannot_reset_the_password_of_a_user_holding_more() {
    // The reported attack: reset the password of a non-superuser holding more, log in as them.
    let (s, _dir, staff) = server_with_mallory();
    grant_global(&s, staff, "user_management.user_view");
    grant_global(&s, staff, "user_management.user_edit");
    let (boss, _) = boss(&s, &["user_management.user_edit", "permissions.role_edit"]);
    let (status, answer) = s.call(
        "PATCH",
        &format!("/api/v4/users/{boss}/"),
        Some(MALLORY),
        Some(&json!({"password": "taken-over"})),
    );
    assert_eq!(status, 403, "{answer}");
    assert_eq!(s.get("/api/v4/users/current/", BOSS).0, 200);
    assert_eq!(
        s.get("/api/v4/users/current/", ("boss", "taken-over")).0,
        401
    );
    let (status, _) = s.call(
        "DELETE",
        &format!("/api/v4/users/{boss}/"),
        Some(MALLORY),
        None,
    );
    assert_eq!(status, 403, "user_delete is not granted either");
}

#[test]
fn group_edit_cannot_remove_a_member_from_a_group_holding_more() {
    let (s, _dir, staff) = server_with_mallory();
    for p in [
        "user_management.user_view",
        "user_management.group_view",
        "user_management.group_edit",
    ] {
        grant_global(&s, staff, p);
    }
    let (boss, group) = boss(&s, &["user_management.user_edit"]);
    let (status, answer) = s.call(
        "POST",
        &format!("/api/v4/groups/{group}/users/remove/"),
        Some(MALLORY),
        Some(&json!({"user_id": boss})),
    );
    assert_eq!(status, 403, "{answer}");
    let (_, members) = s.get(&format!("/api/v4/groups/{group}/users/"), ADMIN);
    assert_eq!(members["count"], 1, "{members}");
}

/// A document of type `Secret` with a salary, and a type `Public` whose documents and
/// metadata Mallory may view and create; returns (document, public type).
fn secret_document_and_public_type(s: &Server, staff: i64) -> (i64, i64) {
    let secret = created(s, "/api/v4/documents/types/", json!({"label": "Secret"}));
    let public = created(s, "/api/v4/documents/types/", json!({"label": "Public"}));
    let salary = created(
        s,
        "/api/v4/metadata/metadata-types/",
        json!({"name": "salary", "label": "Salary"}),
    );
    for dt in [secret, public] {
        created(
            s,
            &format!("/api/v4/documents/types/{dt}/metadata-types/"),
            json!({"metadata_type_id": salary}),
        );
    }
    let doc = created(
        s,
        "/api/v4/documents/",
        json!({"document_type_id": secret, "label": "payroll",
               "metadata": [{"metadata_type_id": salary, "value": "73519"}]}),
    );
    grant_on(
        s,
        &format!("documents/documenttype/{public}"),
        staff,
        &[
            "documents.document_type_view",
            "documents.document_view",
            "documents.document_create",
            "metadata.document_metadata_view",
        ],
    );
    grant_on(
        s,
        &format!("metadata/metadatatype/{salary}"),
        staff,
        &[
            "metadata.metadata_type_view",
            "metadata.document_metadata_view",
        ],
    );
    (doc, public)
}

#[test]
fn change_type_cannot_move_a_document_its_holder_cannot_view() {
    // The reported attack: document_change_type on a document Mallory cannot view moved it into
    // a type whose ACLs she enjoys; the document and its metadata went 404 -> 200.
    let (s, _dir, staff) = server_with_mallory();
    let (doc, public) = secret_document_and_public_type(&s, staff);
    grant_on(
        &s,
        &format!("documents/document/{doc}"),
        staff,
        &["documents.document_change_type"],
    );
    let (status, answer) = s.call(
        "POST",
        &format!("/api/v4/documents/{doc}/type/change/"),
        Some(MALLORY),
        Some(&json!({"document_type_id": public})),
    );
    assert_eq!(status, 404, "{answer}");
    assert_eq!(s.get(&format!("/api/v4/documents/{doc}/"), MALLORY).0, 404);
    assert_eq!(
        s.get(&format!("/api/v4/documents/{doc}/metadata/"), MALLORY)
            .0,
        404
    );
}

#[test]
fn change_type_needs_creating_documents_of_the_new_type() {
    let (s, _dir, staff) = server_with_mallory();
    let (doc, _) = secret_document_and_public_type(&s, staff);
    let archive = created(&s, "/api/v4/documents/types/", json!({"label": "Archive"}));
    grant_on(
        &s,
        &format!("documents/documenttype/{archive}"),
        staff,
        &["documents.document_type_view", "documents.document_view"],
    );
    grant_on(
        &s,
        &format!("documents/document/{doc}"),
        staff,
        &["documents.document_view", "documents.document_change_type"],
    );
    let (status, answer) = s.call(
        "POST",
        &format!("/api/v4/documents/{doc}/type/change/"),
        Some(MALLORY),
        Some(&json!({"document_type_id": archive})),
    );
    assert_eq!(status, 403, "{answer}");
    let (_, document) = s.get(&format!("/api/v4/documents/{doc}/"), ADMIN);
    assert_eq!(document["document_type"]["label"], "Secret", "{document}");
}

#[test]
fn an_event_hides_an_actor_the_reader_may_not_view() {
    let (s, _dir, staff) = server_with_mallory();
    let (_, _) = boss(&s, &["documents.document_type_create"]);
    let (status, memos) = s.call(
        "POST",
        "/api/v4/documents/types/",
        Some(BOSS),
        Some(&json!({"label": "Memos"})),
    );
    assert_eq!(status, 201, "{memos}");
    let memos = memos["id"].as_i64().expect("id");
    grant_on(
        &s,
        &format!("documents/documenttype/{memos}"),
        staff,
        &["documents.document_type_view"],
    );
    let created_event = |user| {
        let (status, events) = s.get("/api/v4/events/?page_size=500", user);
        assert_eq!(status, 200, "{events}");
        events["results"]
            .as_array()
            .expect("results")
            .iter()
            .find(|e| e["name"] == "documents.document_type_created" && e["target"]["id"] == memos)
            .cloned()
            .expect("the event is listed")
    };
    assert_eq!(created_event(MALLORY)["actor"], json!(null));
    assert_eq!(created_event(ADMIN)["actor"]["username"], "boss");
    grant_global(&s, staff, "user_management.user_view");
    assert_eq!(created_event(MALLORY)["actor"]["username"], "boss");
}

#[test]
fn a_username_that_looks_like_an_existing_one_is_refused() {
    let (s, _dir, _) = server_with_mallory();
    for alike in [
        "\u{0430}dmin",
        "ADMIN",
        "adm\u{0131}n",
        "MALLORY",
        "ma\u{04CF}\u{04CF}ory",
    ] {
        let (status, answer) = s.call(
            "POST",
            "/api/v4/users/",
            Some(ADMIN),
            Some(&json!({"username": alike, "password": "a long password"})),
        );
        assert_eq!(status, 400, "{alike}: {answer}");
        assert!(answer["username"].is_array(), "{alike}: {answer}");
    }
    let (status, answer) = s.call(
        "PATCH",
        "/api/v4/users/2/",
        Some(ADMIN),
        Some(&json!({"username": "\u{0430}dmin"})),
    );
    assert_eq!(status, 400, "{answer}");
    assert!(answer["username"].is_array(), "{answer}");
    assert_eq!(s.get("/api/v4/users/current/", MALLORY).0, 200);
}

/// A server whose `victim` (password `victim-password`) exists, with fast hashing.
fn server_with_victim() -> (Server, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    prepare(dir.path(), false, "");
    let s = Server::start(dir.path());
    created(
        &s,
        "/api/v4/users/",
        json!({"username": "victim", "password": "victim-password"}),
    );
    (s, dir)
}

const VICTIM: (&str, &str) = ("victim", "victim-password");

#[test]
fn paced_guesses_from_many_addresses_do_not_lock_the_user_out_of_a_fresh_address() {
    // The reported attack: wrong passwords from six addresses, each staying under its own
    // limit, kept the user locked out (429) on her right password from a fresh address.
    let (s, _dir) = server_with_victim();
    let attackers: Vec<[u8; 4]> = (2..8).map(|n| [127, 0, 0, n]).collect();
    let mut answers = Vec::new();
    for _ in 0..9 {
        for a in &attackers {
            answers.push(login_from(&s, *a, ("victim", "a guess")));
        }
    }
    // Four times login_failures_per_minute (10) failures are her budget; past it, she is under
    // attack, and each address that has failed for her gets one guess per minute.
    let mut expected = vec![401; 41];
    expected.resize(54, 429);
    assert_eq!(answers, expected);
    assert_eq!(
        login_from(&s, [127, 0, 0, 50], VICTIM),
        200,
        "the user logs in from an address that never failed"
    );
    // Guessing stays throttled: each attacking address now gets one guess per minute for her...
    for a in &attackers {
        assert_eq!(login_from(&s, *a, ("victim", "another guess")), 429);
    }
    // ... and a new attacking address gets one guess, then waits.
    assert_eq!(login_from(&s, [127, 0, 0, 60], ("victim", "a guess")), 401);
    assert_eq!(login_from(&s, [127, 0, 0, 60], ("victim", "a guess")), 429);
    // Others are not affected by her attack, from an attacking address either.
    created(
        &s,
        "/api/v4/users/",
        json!({"username": "bystander", "password": "bystander-password"}),
    );
    assert_eq!(
        login_from(&s, attackers[0], ("bystander", "bystander-password")),
        200
    );
}

#[test]
fn one_address_guessing_many_usernames_is_throttled() {
    let (s, _dir) = server_with_victim();
    let guesser = [127, 0, 0, 9];
    for n in 0..10 {
        let name = format!("someone{n}");
        assert_eq!(login_from(&s, guesser, (&name, "a guess")), 401);
    }
    assert_eq!(login_from(&s, guesser, ("victim", "a guess")), 429);
    assert_eq!(
        login_from(&s, [127, 0, 0, 10], VICTIM),
        200,
        "other addresses are not limited"
    );
}
