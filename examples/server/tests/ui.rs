//! The web interface against a running `docmeta serve`: its pages and assets (the strict
//! Content-Security-Policy, nothing inline, the size budget), its session (an `HttpOnly`,
//! `SameSite=Strict` cookie, `Secure` with the `__Host-` prefix behind TLS, the login limits),
//! CSRF protection on every change made with the cookie, sign-out that ends the session in the
//! store, Basic authentication unchanged beside it, and the `explain` route the ACL page uses.
//! The browser tests (`browser.rs`) drive the same pages in Chromium.

mod support;

use serde_json::{Value, json};
use support::{ADMIN, Server, agent, basic, prepare};

const ALICE: (&str, &str) = ("alice", "demo-password");

fn server() -> (tempfile::TempDir, Server) {
    let dir = tempfile::tempdir().expect("tempdir");
    prepare(dir.path(), true, "login_failures_per_minute: 3\n");
    let server = Server::start(dir.path());
    (dir, server)
}

/// An answer: status, headers (lower-case names; repeated ones joined by `\n`), body.
struct Answer {
    status: u16,
    headers: std::collections::HashMap<String, String>,
    body: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }
}

/// One request with exactly `headers` (no credentials unless given).
fn raw(
    s: &Server,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> Answer {
    let url = format!("{}{path}", s.base);
    let agent = agent();
    let response = match method {
        "GET" | "DELETE" | "HEAD" => {
            let mut r = match method {
                "GET" => agent.get(&url),
                "HEAD" => agent.head(&url),
                _ => agent.delete(&url),
            };
            for (k, v) in headers {
                r = r.header(*k, *v);
            }
            r.call()
        }
        _ => {
            let mut r = match method {
                "POST" => agent.post(&url),
                "PUT" => agent.put(&url),
                _ => agent.patch(&url),
            };
            for (k, v) in headers {
                r = r.header(*k, *v);
            }
            r.header("Content-Type", "application/json")
                .send(body.map(Value::to_string).unwrap_or_default())
        }
    };
    let mut response = response.unwrap_or_else(|e| panic!("{method} {path}: {e}"));
    let mut map = std::collections::HashMap::<String, String>::new();
    for (name, value) in response.headers() {
        let value = value.to_str().unwrap_or("").to_owned();
        map.entry(name.as_str().to_owned())
            .and_modify(|v| {
                v.push('\n');
                v.push_str(&value);
            })
            .or_insert(value);
    }
    Answer {
        status: response.status().as_u16(),
        headers: map,
        body: response.body_mut().read_to_string().unwrap_or_default(),
    }
}

/// Signs `user` in through the interface: the cookie pair (`name=value`) and the CSRF token.
fn sign_in(s: &Server, user: (&str, &str), extra: &[(&str, &str)]) -> (String, String, Answer) {
    let a = raw(
        s,
        "POST",
        "/ui/session",
        extra,
        Some(&json!({"username": user.0, "password": user.1})),
    );
    assert_eq!(a.status, 200, "sign-in: {}", a.body);
    let cookie = a.header("set-cookie").expect("a cookie").to_owned();
    let pair = cookie
        .split(';')
        .next()
        .expect("name=value")
        .trim()
        .to_owned();
    let csrf = a.json()["csrf_token"].as_str().expect("csrf").to_owned();
    (pair, csrf, a)
}

/// The first metadata value of document 1 that alice may edit: its path and value.
fn a_value(s: &Server) -> (String, String) {
    let (status, list) = s.get("/api/v4/documents/1/metadata/?page_size=500", ALICE);
    assert_eq!(status, 200, "{list}");
    let v = list["results"]
        .as_array()
        .expect("results")
        .iter()
        .find(|v| v["metadata_type"]["name"] == "party" || v["metadata_type"]["name"] == "status")
        .or_else(|| list["results"].as_array().and_then(|r| r.first()))
        .expect("a value")
        .clone();
    (
        format!("/api/v4/documents/1/metadata/{}/", v["id"]),
        v["value"].as_str().unwrap_or("").to_owned(),
    )
}

#[test]
fn pages_are_served_with_a_strict_policy_and_nothing_inline() {
    let (_dir, s) = server();
    let mut total = 0;
    for (path, kind) in [
        ("/", "text/html"),
        ("/ui/app.js", "text/javascript"),
        ("/ui/app.css", "text/css"),
        ("/ui/icon.svg", "image/svg+xml"),
    ] {
        let a = raw(&s, "GET", path, &[], None);
        assert_eq!(a.status, 200, "{path}");
        assert!(
            a.header("content-type").unwrap_or("").starts_with(kind),
            "{path}"
        );
        let csp = a.header("content-security-policy").expect("a policy");
        assert!(
            csp.contains("script-src 'self'") && !csp.contains("unsafe"),
            "{csp}"
        );
        assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
        assert_eq!(a.header("x-content-type-options"), Some("nosniff"));
        total += a.body.len();
        // Revalidated, not downloaded again.
        let etag = a.header("etag").expect("an etag").to_owned();
        let again = raw(&s, "GET", path, &[("If-None-Match", &etag)], None);
        assert_eq!(again.status, 304, "{path}");
    }
    assert!(total <= 200 * 1024, "the pages' assets are {total} bytes");
    let page = raw(&s, "GET", "/", &[], None).body;
    assert!(page.contains("src=\"/ui/app.js\""), "{page}");
    // No inline script, style or handler: the policy would refuse them anyway.
    for inline in ["<script>", "style=", " on", "javascript:"] {
        assert!(
            !page.to_lowercase().contains(inline),
            "index.html holds {inline:?}"
        );
    }
    let script = raw(&s, "GET", "/ui/app.js", &[], None).body;
    for sink in [
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
        "new Function",
    ] {
        assert!(
            !script.contains(sink),
            "app.js uses {sink}: HTML parsed from data"
        );
    }
    // Nothing else under /ui/; the API's answers may never run as a page.
    assert_eq!(raw(&s, "GET", "/ui/../Cargo.toml", &[], None).status, 404);
    assert_eq!(raw(&s, "GET", "/ui/other.js", &[], None).status, 404);
    let api = raw(
        &s,
        "GET",
        "/api/v4/documents/",
        &[("Authorization", &basic(ALICE))],
        None,
    );
    assert_eq!(api.status, 200);
    let csp = api.header("content-security-policy").expect("a policy");
    assert!(
        csp.contains("sandbox") && csp.contains("default-src 'none'"),
        "{csp}"
    );
}

#[test]
fn a_session_cookie_signs_in_and_every_change_needs_the_csrf_token() {
    let (_dir, s) = server();
    // Signed out: 401 without a challenge (no password dialog over the page).
    let out = raw(&s, "GET", "/ui/session", &[], None);
    assert_eq!(out.status, 401);
    assert_eq!(out.header("www-authenticate"), None);
    let wrong = raw(
        &s,
        "POST",
        "/ui/session",
        &[],
        Some(&json!({"username": "alice", "password": "wrong"})),
    );
    assert_eq!(wrong.status, 401, "{}", wrong.body);
    assert_eq!(wrong.header("www-authenticate"), None);
    assert_eq!(wrong.header("set-cookie"), None);

    let (cookie, csrf, signed_in) = sign_in(&s, ALICE, &[]);
    let set = signed_in.header("set-cookie").expect("set-cookie");
    assert!(set.starts_with("docmeta_session="), "{set}");
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Strict"),
        "{set}"
    );
    assert!(!set.contains("Secure"), "plain HTTP: {set}");
    assert_eq!(signed_in.json()["user"]["username"], "alice");
    assert_eq!(csrf.len(), 64);
    let me = raw(&s, "GET", "/ui/session", &[("Cookie", &cookie)], None);
    assert_eq!(me.status, 200, "{}", me.body);
    assert_eq!(me.json()["csrf_token"], csrf.as_str());

    // The cookie reads what alice reads, through the same API.
    let by_cookie = raw(
        &s,
        "GET",
        "/api/v4/documents/",
        &[("Cookie", &cookie)],
        None,
    );
    let (_, by_basic) = s.get("/api/v4/documents/", ALICE);
    assert_eq!(by_cookie.status, 200);
    assert_eq!(by_cookie.json()["count"], by_basic["count"]);

    // A change without the token, with a wrong one, or from another origin changes nothing.
    let (value, before) = a_value(&s);
    let body = json!({"value": "draft"});
    let refused: [&[(&str, &str)]; 5] = [
        &[("Cookie", &cookie)],
        &[("Cookie", &cookie), ("X-CSRF-Token", "00")],
        &[("Cookie", &cookie), ("X-CSRF-Token", &"0".repeat(64))],
        &[
            ("Cookie", &cookie),
            ("X-CSRF-Token", &csrf),
            ("Origin", "http://evil.example"),
        ],
        &[
            ("Cookie", &cookie),
            ("X-CSRF-Token", &csrf),
            ("Sec-Fetch-Site", "cross-site"),
        ],
    ];
    for headers in refused {
        let a = raw(&s, "PATCH", &value, headers, Some(&body));
        assert_eq!(a.status, 403, "{headers:?}: {}", a.body);
        assert!(
            a.body.contains("CSRF") || a.body.contains("another site"),
            "{}",
            a.body
        );
    }
    let (_, after) = s.get(&value, ALICE);
    assert_eq!(
        after["value"],
        before.as_str(),
        "a refused change was applied"
    );
    // With the token, from this origin: applied.
    let origin = s.base.clone();
    let ok = raw(
        &s,
        "PATCH",
        &value,
        &[
            ("Cookie", &cookie),
            ("X-CSRF-Token", &csrf),
            ("Origin", &origin),
            ("Sec-Fetch-Site", "same-origin"),
        ],
        Some(&body),
    );
    assert!(ok.status == 200 || ok.status == 400, "{}", ok.body);

    // Basic authentication is unchanged, and ignores a cookie beside it.
    let basic_alice = basic(ALICE);
    let a = raw(
        &s,
        "GET",
        "/api/v4/users/current/",
        &[
            ("Authorization", &basic_alice),
            ("Cookie", "docmeta_session=1.forged"),
        ],
        None,
    );
    assert_eq!(a.status, 200, "{}", a.body);
    let a = raw(&s, "GET", "/api/v4/users/current/", &[], None);
    assert_eq!(a.status, 401);
    assert!(
        a.header("www-authenticate")
            .is_some_and(|v| v.starts_with("Basic"))
    );
    // A page's script asking without a session gets no dialog either; a navigation does.
    let a = raw(
        &s,
        "GET",
        "/api/v4/documents/",
        &[
            ("Sec-Fetch-Site", "same-origin"),
            ("Sec-Fetch-Mode", "cors"),
        ],
        None,
    );
    assert_eq!((a.status, a.header("www-authenticate")), (401, None));
    let a = raw(
        &s,
        "GET",
        "/api/v4/documents/",
        &[("Sec-Fetch-Site", "none"), ("Sec-Fetch-Mode", "navigate")],
        None,
    );
    assert!(a.header("www-authenticate").is_some());
    // A forged cookie signs nobody in, and gets no password dialog.
    let a = raw(
        &s,
        "GET",
        "/api/v4/documents/",
        &[("Cookie", "docmeta_session=1.dmd_forged")],
        None,
    );
    assert_eq!(a.status, 401);
    assert_eq!(a.header("www-authenticate"), None);
}

#[test]
fn sign_out_ends_the_session_for_every_process_and_needs_the_token() {
    let (_dir, s) = server();
    let (cookie, csrf, _) = sign_in(&s, ALICE, &[]);
    // A forged sign-out (no token) signs nobody out.
    let forged = raw(&s, "DELETE", "/ui/session", &[("Cookie", &cookie)], None);
    assert_eq!(forged.status, 403);
    assert_eq!(
        raw(&s, "GET", "/ui/session", &[("Cookie", &cookie)], None).status,
        200
    );
    // The session is a device of alice's, listed and revocable like any.
    let (_, devices) = s.get("/api/v4/devices/", ALICE);
    assert!(
        devices["results"]
            .as_array()
            .expect("devices")
            .iter()
            .any(|d| d["name"] == "Web browser"),
        "{devices}"
    );
    let out = raw(
        &s,
        "DELETE",
        "/ui/session",
        &[("Cookie", &cookie), ("X-CSRF-Token", &csrf)],
        None,
    );
    assert_eq!(out.status, 204, "{}", out.body);
    let cleared = out.header("set-cookie").expect("cleared");
    assert!(
        cleared.contains("docmeta_session=;") && cleared.contains("Max-Age=0"),
        "{cleared}"
    );
    // Revoked in the store: the old cookie is refused everywhere.
    assert_eq!(
        raw(&s, "GET", "/ui/session", &[("Cookie", &cookie)], None).status,
        401
    );
    assert_eq!(
        raw(
            &s,
            "GET",
            "/api/v4/documents/",
            &[("Cookie", &cookie)],
            None
        )
        .status,
        401
    );
    // A session revoked from elsewhere (the device list) ends too.
    let (cookie, _, _) = sign_in(&s, ALICE, &[]);
    let id = cookie
        .split('=')
        .nth(1)
        .and_then(|v| v.split('.').next())
        .expect("id")
        .to_owned();
    let (status, _) = s.call(
        "DELETE",
        &format!("/api/v4/devices/{id}/"),
        Some(ALICE),
        None,
    );
    assert_eq!(status, 204);
    assert_eq!(
        raw(&s, "GET", "/ui/session", &[("Cookie", &cookie)], None).status,
        401
    );
}

#[test]
fn behind_tls_the_cookie_is_secure_and_host_only() {
    let (_dir, s) = server();
    let (cookie, csrf, a) = sign_in(&s, ALICE, &[("X-Forwarded-Proto", "https")]);
    let set = a.header("set-cookie").expect("set-cookie");
    assert!(set.starts_with("__Host-docmeta_session="), "{set}");
    assert!(
        set.contains("; Secure") && set.contains("Path=/") && !set.contains("Domain"),
        "{set}"
    );
    assert!(cookie.starts_with("__Host-"));
    let me = raw(&s, "GET", "/ui/session", &[("Cookie", &cookie)], None);
    assert_eq!(me.status, 200);
    assert_eq!(me.json()["csrf_token"], csrf.as_str());
}

#[test]
fn the_sign_in_is_limited_as_every_login_and_refuses_other_origins() {
    let (_dir, s) = server();
    let from_elsewhere = raw(
        &s,
        "POST",
        "/ui/session",
        &[("Origin", "http://evil.example")],
        Some(&json!({"username": "alice", "password": "demo-password"})),
    );
    assert_eq!(from_elsewhere.status, 403, "{}", from_elsewhere.body);
    assert_eq!(from_elsewhere.header("set-cookie"), None);
    let missing = raw(
        &s,
        "POST",
        "/ui/session",
        &[],
        Some(&json!({"username": "alice"})),
    );
    assert_eq!(missing.status, 400, "{}", missing.body);
    assert!(missing.json()["password"].is_array(), "{}", missing.body);
    let mut limited = None;
    for _ in 0..6 {
        let a = raw(
            &s,
            "POST",
            "/ui/session",
            &[],
            Some(&json!({"username": "bob", "password": "wrong"})),
        );
        if a.status == 429 {
            limited = Some(a);
            break;
        }
        assert_eq!(a.status, 401);
    }
    let limited = limited.expect("the login limit applies to the interface's sign-in");
    assert!(limited.header("retry-after").is_some());
    // The same limit as Basic's: the right password from here waits too.
    let a = raw(
        &s,
        "POST",
        "/ui/session",
        &[],
        Some(&json!({"username": "bob", "password": "demo-password"})),
    );
    assert_eq!(a.status, 429, "{}", a.body);
}

#[test]
fn explain_answers_why_and_needs_acl_view_for_others() {
    let (_dir, s) = server();
    let (status, me) = s.get("/api/v4/users/current/", ALICE);
    assert_eq!(status, 200);
    let alice = me["id"].as_i64().expect("id");
    // About oneself: allowed.
    let (status, e) = s.get(
        "/api/v5/objects/documents/document/1/explain/?permission=documents.document_view",
        ALICE,
    );
    assert_eq!(status, 200, "{e}");
    assert!(
        e["granted"].is_boolean() && e["description"].is_string(),
        "{e}"
    );
    // The administrator asks about alice.
    let (status, e) = s.get(
        &format!("/api/v5/objects/documents/document/1/explain/?user_id={alice}&permission=documents.document_view"),
        ADMIN,
    );
    assert_eq!(status, 200, "{e}");
    assert!(e["checked"][0]["id"] == 1, "{e}");
    // Bad input is a field error.
    let (status, e) = s.get(
        "/api/v5/objects/documents/document/1/explain/?permission=nope",
        ADMIN,
    );
    assert_eq!(status, 400, "{e}");
    assert!(e["permission"].is_array(), "{e}");
    let (status, e) = s.get("/api/v5/objects/documents/document/1/explain/", ADMIN);
    assert_eq!(status, 400, "{e}");
    // Another user's reasons need acl_view on the object.
    let (status, e) = s.get(
        &format!("/api/v5/objects/documents/document/1/explain/?user_id={}&permission=documents.document_view", me["id"].as_i64().unwrap_or(0) + 100),
        ("carol", "demo-password"),
    );
    assert!(status == 403 || status == 404, "{status} {e}");
}

#[test]
fn templates_preview_before_they_are_saved_with_what_the_caller_may_view() {
    let (_dir, s) = server();
    let preview = |user: (&str, &str), body: Value| {
        s.call(
            "POST",
            "/api/v4/metadata/metadata-types/preview/",
            Some(user),
            Some(&body),
        )
    };
    let (status, p) = preview(
        ADMIN,
        json!({"default": "{{ 6 * 7 }}", "lookup": "{% for u in users %}{{ u.username }},{% endfor %}"}),
    );
    assert_eq!(status, 200, "{p}");
    assert_eq!(p["default"], "42");
    let choices = p["lookup_choices"].as_array().expect("choices");
    assert!(choices.iter().any(|c| c == "alice"), "{p}");
    // Errors are answered in the preview; nothing is saved.
    let (status, p) = preview(ADMIN, json!({"default": "{{ broken", "lookup": ""}));
    assert_eq!(status, 200, "{p}");
    assert!(
        p["default_error"].is_string() && p["default"].is_null(),
        "{p}"
    );
    assert!(
        p["lookup_choices"].is_null() && p["lookup_error"].is_null(),
        "{p}"
    );
    // For a document: its values, as the caller may view them.
    let (status, p) = preview(
        ADMIN,
        json!({"default": "{{ document.label }}", "document_id": 1}),
    );
    assert_eq!(status, 200, "{p}");
    assert!(p["default"].as_str().is_some_and(|l| !l.is_empty()), "{p}");
    // Who may not create metadata types may not preview; an unknown type or document is 404.
    let (status, _) = preview(ALICE, json!({"default": "{{ 1 }}"}));
    assert_eq!(status, 403);
    let (status, _) = preview(ADMIN, json!({"default": "x", "document_id": 999_999}));
    assert_eq!(status, 404);
    let (status, e) = preview(ADMIN, json!({"default": "x".repeat(100_000)}));
    assert_eq!(status, 400, "{e}");
}

#[test]
fn no_credential_lets_another_site_change_anything() {
    let (_dir, s) = server();
    let (_, before) = s.get("/api/v4/documents/1/", ADMIN);
    // A form of another site, sent by a browser that keeps a Basic password (text/plain, which a
    // form may send, holding JSON).
    let basic_admin = basic(ADMIN);
    let body = json!({"label": "planted"});
    for headers in [
        vec![
            ("Authorization", basic_admin.as_str()),
            ("Origin", "https://evil.example"),
        ],
        vec![
            ("Authorization", basic_admin.as_str()),
            ("Sec-Fetch-Site", "cross-site"),
        ],
        vec![
            ("Authorization", basic_admin.as_str()),
            ("Sec-Fetch-Site", "same-site"),
        ],
    ] {
        let a = raw(&s, "PATCH", "/api/v4/documents/1/", &headers, Some(&body));
        assert_eq!(a.status, 403, "{headers:?}: {}", a.body);
    }
    let (_, after) = s.get("/api/v4/documents/1/", ADMIN);
    assert_eq!(
        before["label"], after["label"],
        "a cross-site request changed a document"
    );
    // Clients that are not browsers send neither header: unchanged.
    let (status, e) = s.call("PATCH", "/api/v4/documents/1/", Some(ADMIN), Some(&body));
    assert_eq!(status, 200, "{e}");
    // A proxy that rewrites Host names the original in X-Forwarded-Host.
    let (cookie, csrf, _) = sign_in(&s, ALICE, &[]);
    let (value, _) = a_value(&s);
    let a = raw(
        &s,
        "PATCH",
        &value,
        &[
            ("Cookie", &cookie),
            ("X-CSRF-Token", &csrf),
            ("Origin", "https://docs.example"),
            ("X-Forwarded-Host", "docs.example"),
        ],
        Some(&json!({"value": "draft"})),
    );
    assert!(a.status == 200 || a.status == 400, "{}", a.body);
    // The API's answers are kept by no shared cache.
    let a = raw(
        &s,
        "GET",
        "/api/v4/documents/",
        &[("Cookie", &cookie)],
        None,
    );
    assert_eq!(a.header("cache-control"), Some("no-store"));
}

#[test]
fn a_planted_cookie_signs_in_nobody_and_a_new_sign_in_ends_the_old_session() {
    let (_dir, s) = server();
    let (alice, _, _) = sign_in(&s, ALICE, &[]);
    let (bob, _, _) = sign_in(&s, ("bob", "demo-password"), &[]);
    // Two session cookies (one planted beside the user's): neither is read.
    let both = format!("{bob}; {alice}");
    assert_eq!(
        raw(&s, "GET", "/ui/session", &[("Cookie", &both)], None).status,
        401
    );
    // Through TLS only the __Host- cookie is read (a sibling host or a plain-HTTP page can set
    // the other).
    let (secure, _, _) = sign_in(&s, ALICE, &[("X-Forwarded-Proto", "https")]);
    let tls = [("X-Forwarded-Proto", "https")];
    assert_eq!(
        raw(&s, "GET", "/ui/session", &[tls[0], ("Cookie", &bob)], None).status,
        401
    );
    assert_eq!(
        raw(
            &s,
            "GET",
            "/ui/session",
            &[tls[0], ("Cookie", &secure)],
            None
        )
        .status,
        200
    );
    // Signing in again from a browser that has a session ends that session.
    let (again, _, _) = sign_in(&s, ALICE, &[("Cookie", alice.as_str())]);
    assert_eq!(
        raw(&s, "GET", "/ui/session", &[("Cookie", &alice)], None).status,
        401
    );
    assert_eq!(
        raw(&s, "GET", "/ui/session", &[("Cookie", &again)], None).status,
        200
    );
}
