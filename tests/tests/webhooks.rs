//! Webhooks: signed deliveries from the outbox, in order per webhook, as their owner may see
//! each event when it is sent; a deactivated owner's webhook stops; a hanging receiver delays
//! only its own webhook; private addresses are refused unless allowed; others' webhooks are not
//! found. Each test runs a tiny HTTP receiver on loopback (so `webhooks_allow_private_networks`
//! is on), and waits for what it expects with generous time limits, never timing anything.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use base64::Engine;
use docmeta_core::{
    DeliveryStatus, Docmeta, DocumentTypeId, Error, Event, ObjectKind, ObjectRef, PageRequest,
    Permission as P, Result, RoleId, Session, UserId, UserUpdate, WebhookUpdate,
};
use hmac::Mac;

/// How long a test waits for deliveries it expects (they come within seconds).
const PATIENCE: Duration = Duration::from_secs(120);

/// One request a receiver got.
#[derive(Debug, Clone)]
struct Received {
    headers: HashMap<String, String>,
    body: Vec<u8>,
}

impl Received {
    fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }

    fn event_id(&self) -> i64 {
        self.json()["data"]["id"].as_i64().expect("data.id")
    }

    fn header(&self, name: &str) -> &str {
        self.headers.get(name).map_or("", String::as_str)
    }
}

/// How a receiver answers.
#[derive(Debug, Clone, Copy)]
enum Answer {
    /// `204` to everything.
    Ok,
    /// `500` to the first `n` requests, then `204`.
    FailFirst(usize),
    /// Nothing, ever (the connection is kept open).
    Hang,
}

/// A receiver on loopback, each connection in a thread of its own.
struct Receiver {
    url: String,
    got: Arc<parking_lot::Mutex<Vec<Received>>>,
}

impl Receiver {
    fn start(answer: Answer) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}/hook", listener.local_addr().expect("addr"));
        let got = Arc::new(parking_lot::Mutex::new(Vec::new()));
        let seen = Arc::new(AtomicUsize::new(0));
        let thread_got = got.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (got, seen) = (thread_got.clone(), seen.clone());
                std::thread::spawn(move || serve(stream, answer, &got, &seen));
            }
        });
        Receiver { url, got }
    }

    fn received(&self) -> Vec<Received> {
        self.got.lock().clone()
    }

    /// The requests answered `2xx`, once per `webhook-id` (a repeat dropped), in arrival order.
    fn delivered(&self, answer: Answer) -> Vec<Received> {
        let all = self.received();
        let mut seen = std::collections::HashSet::new();
        all.into_iter()
            .enumerate()
            .filter(|(i, _)| match answer {
                Answer::FailFirst(n) => *i >= n,
                _ => true,
            })
            .map(|(_, r)| r)
            .filter(|r| seen.insert(r.header("webhook-id").to_owned()))
            .collect()
    }
}

fn serve(
    stream: TcpStream,
    answer: Answer,
    got: &parking_lot::Mutex<Vec<Received>>,
    seen: &AtomicUsize,
) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut headers = HashMap::new();
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
        }
    }
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let n = seen.fetch_add(1, Ordering::SeqCst);
    got.lock().push(Received { headers, body });
    let status = match answer {
        Answer::Ok => "204 No Content",
        Answer::FailFirst(k) if n < k => "500 Internal Server Error",
        Answer::FailFirst(_) => "204 No Content",
        Answer::Hang => {
            std::thread::sleep(Duration::from_secs(600));
            return;
        }
    };
    let mut stream = stream;
    let _ = stream.write_all(
        format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n").as_bytes(),
    );
}

/// Waits until `done` holds, for at most [`PATIENCE`].
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !done() {
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether `r` carries a valid Standard Webhooks signature made with `secret`.
fn signed_with(r: &Received, secret: &str) -> bool {
    let key = base64::engine::general_purpose::STANDARD
        .decode(secret.strip_prefix("whsec_").expect("whsec_"))
        .expect("base64");
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(&key).expect("key");
    mac.update(
        format!(
            "{}.{}.",
            r.header("webhook-id"),
            r.header("webhook-timestamp")
        )
        .as_bytes(),
    );
    mac.update(&r.body);
    let expected = format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
    );
    r.header("webhook-signature")
        .split(' ')
        .any(|s| s == expected)
}

struct World {
    db: Docmeta,
    admin: Session,
    /// A type whose documents alice may view, and one whose documents she may not.
    seen: DocumentTypeId,
    hidden: DocumentTypeId,
    alice: UserId,
    alice_role: RoleId,
}

fn config(allow_private: bool) -> docmeta_core::Config {
    docmeta_core::Config {
        password_hash_memory_kib: 64,
        password_hash_iterations: 1,
        webhooks_allow_private_networks: allow_private,
        ..Default::default()
    }
}

/// An instance with its deliverer running, and a user holding every webhook key.
fn world() -> Result<World> {
    let db = Docmeta::builder()
        .config(config(true))
        .worker(true)
        .open()?;
    let admin = db.system();
    let seen = admin.create_document_type("Seen")?.id;
    let hidden = admin.create_document_type("Hidden")?.id;
    let (alice, alice_role) = webhook_user(&admin, "alice")?;
    admin.grant(
        P::DocumentView,
        alice_role,
        ObjectRef::new(ObjectKind::DOCUMENT_TYPE, seen.0),
    )?;
    Ok(World {
        db,
        admin,
        seen,
        hidden,
        alice,
        alice_role,
    })
}

/// A user holding the four webhook keys globally, through a role of their own.
fn webhook_user(admin: &Session, name: &str) -> Result<(UserId, RoleId)> {
    let user = admin.create_user(name, "a long password", false)?.id;
    let group = admin.create_group(&format!("{name}'s"))?.id;
    let role = admin.create_role(&format!("{name}'s role"))?.id;
    admin.set_group_member(group, user, true)?;
    admin.set_role_group(role, group, true)?;
    for p in [
        P::WebhookCreate,
        P::WebhookView,
        P::WebhookEdit,
        P::WebhookDelete,
    ] {
        admin.grant_global(p, role)?;
    }
    Ok((user, role))
}

fn created() -> Vec<String> {
    vec![Event::DOCUMENT_CREATED.to_owned()]
}

#[test]
fn deliveries_are_signed_retried_and_in_order() -> Result<()> {
    let w = world()?;
    let answer = Answer::FailFirst(1);
    let receiver = Receiver::start(answer);
    let alice = w.db.session(w.alice);
    let hook = alice.create_webhook(&receiver.url, &created(), None)?;
    assert!(hook.secret.starts_with("whsec_"));
    assert_eq!(hook.webhook.events, created());
    let mut ids = Vec::new();
    for i in 0..12 {
        ids.push(
            w.admin
                .create_document(w.seen, &format!("doc {i}"), &[])?
                .document
                .id,
        );
    }
    wait_for("12 deliveries", || receiver.delivered(answer).len() == 12);
    let all = receiver.received();
    // The first attempt was answered 500 and sent again, with the same id.
    assert_eq!(all.len(), 13, "one retry, no other repeat");
    assert_eq!(all[0].header("webhook-id"), all[1].header("webhook-id"));
    let delivered = receiver.delivered(answer);
    let events: Vec<i64> = delivered.iter().map(Received::event_id).collect();
    let mut sorted = events.clone();
    sorted.sort_unstable();
    assert_eq!(events, sorted, "in the order of the log");
    for (r, id) in delivered.iter().zip(&ids) {
        assert!(signed_with(r, &hook.secret), "signed: {r:?}");
        let json = r.json();
        assert_eq!(json["type"], Event::DOCUMENT_CREATED);
        assert_eq!(json["data"]["target"]["id"], id.0);
        assert_eq!(json["data"]["target"]["model_name"], "document");
        assert_eq!(r.header("content-type"), "application/json");
        assert!(r.header("webhook-timestamp").parse::<i64>().is_ok());
    }
    let deliveries = alice.webhook_deliveries(hook.webhook.id, PageRequest::ALL)?;
    assert_eq!(deliveries.count, 12);
    assert!(
        deliveries
            .items
            .iter()
            .all(|d| d.status == DeliveryStatus::Delivered && d.last_status_code == Some(204))
    );
    let first = deliveries.items.last().expect("the first delivery");
    assert_eq!(first.attempts, 2);
    assert_eq!(first.message_id, all[0].header("webhook-id"));
    // A new secret signs what is sent from then on.
    let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    alice.update_webhook(
        hook.webhook.id,
        WebhookUpdate {
            secret: Some(secret.into()),
            ..Default::default()
        },
    )?;
    w.admin
        .create_document(w.seen, "after the new secret", &[])?;
    wait_for("the 13th delivery", || {
        receiver.delivered(answer).len() == 13
    });
    let last = receiver.delivered(answer).pop().expect("last");
    assert!(signed_with(&last, secret) && !signed_with(&last, &hook.secret));
    Ok(())
}

#[test]
fn a_delivery_says_what_changed_as_far_as_its_owner_may_view_it() -> Result<()> {
    let w = world()?;
    let receiver = Receiver::start(Answer::Ok);
    let alice = w.db.session(w.alice);
    let events = vec![
        Event::DOCUMENT_EDITED.to_owned(),
        Event::DOCUMENT_METADATA_ADDED.to_owned(),
    ];
    alice.create_webhook(&receiver.url, &events, None)?;
    let amount = w
        .admin
        .create_metadata_type(docmeta_core::MetadataTypeInput::new("amount", "Amount"))?;
    w.admin.associate(w.seen, amount.id, false)?;
    let doc = w.admin.create_document(w.seen, "March", &[])?.document;
    w.admin.update_document(doc.id, "March 2026")?;
    // Alice sees the document but not its values: the value's change is sent without them.
    w.admin
        .add_document_metadata(doc.id, amount.id, "1234.56")?;
    wait_for("two deliveries", || receiver.received().len() == 2);
    let bodies: Vec<serde_json::Value> = receiver.received().iter().map(Received::json).collect();
    assert_eq!(bodies[0]["type"], Event::DOCUMENT_EDITED);
    assert_eq!(
        bodies[0]["data"]["changes"],
        serde_json::json!([{"field": "label", "before": "March", "after": "March 2026"}])
    );
    assert_eq!(bodies[1]["type"], Event::DOCUMENT_METADATA_ADDED);
    assert_eq!(
        bodies[1]["data"]["changes"],
        serde_json::json!([{"field": "value", "before": null, "after": null}])
    );
    assert!(
        receiver
            .received()
            .iter()
            .all(|r| !String::from_utf8_lossy(&r.body).contains("1234.56")),
        "a value she may not view was sent"
    );
    Ok(())
}

#[test]
fn an_owner_gets_nothing_about_what_they_may_not_see_nor_after_a_revoke() -> Result<()> {
    let w = world()?;
    let receiver = Receiver::start(Answer::Ok);
    let alice = w.db.session(w.alice);
    let hook = alice.create_webhook(&receiver.url, &[], None)?.webhook;
    let secret_doc = w.admin.create_document(w.hidden, "secret plans", &[])?;
    let visible = w.admin.create_document(w.seen, "visible", &[])?;
    wait_for("the visible document", || {
        receiver
            .received()
            .iter()
            .any(|r| r.json()["data"]["target"]["id"] == visible.document.id.0)
    });
    // Revoked: her view of the type's documents goes, and so does every later event of them.
    w.admin.revoke(
        P::DocumentView,
        w.alice_role,
        ObjectRef::new(ObjectKind::DOCUMENT_TYPE, w.seen.0),
    )?;
    let after = w.admin.create_document(w.seen, "after the revoke", &[])?;
    // A marker she may see: a type she is given, created after the revoked document.
    let marker_type = w.admin.create_document_type("Marker")?;
    w.admin.grant(
        P::DocumentView,
        w.alice_role,
        ObjectRef::new(ObjectKind::DOCUMENT_TYPE, marker_type.id.0),
    )?;
    let marker = w.admin.create_document(marker_type.id, "marker", &[])?;
    wait_for("the marker", || {
        receiver
            .received()
            .iter()
            .any(|r| r.json()["data"]["target"]["id"] == marker.document.id.0)
    });
    let bodies: Vec<String> = receiver
        .received()
        .iter()
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .collect();
    for text in &bodies {
        assert!(
            !text.contains("secret plans"),
            "hidden document sent: {text}"
        );
        assert!(
            !text.contains("after the revoke"),
            "sent after revoke: {text}"
        );
        assert!(!text.contains("Hidden"), "hidden type sent: {text}");
    }
    let targets: Vec<i64> = receiver
        .received()
        .iter()
        .map(|r| r.json()["data"]["target"]["id"].as_i64().unwrap_or(0))
        .collect();
    assert!(!targets.contains(&secret_doc.document.id.0));
    assert!(!targets.contains(&after.document.id.0));
    // Nor does the list of deliveries name those events: only what was sent.
    let listed = alice.webhook_deliveries(hook.id, PageRequest::ALL)?;
    assert_eq!(listed.count, receiver.received().len());
    assert!(
        listed
            .items
            .iter()
            .all(|d| d.status == DeliveryStatus::Delivered)
    );
    Ok(())
}

#[test]
fn a_deactivated_owners_webhook_stops() -> Result<()> {
    let w = world()?;
    let receiver = Receiver::start(Answer::Ok);
    let marker_receiver = Receiver::start(Answer::Ok);
    let alice = w.db.session(w.alice);
    let hook = alice
        .create_webhook(&receiver.url, &created(), None)?
        .webhook;
    let (bob, bob_role) = webhook_user(&w.admin, "bob")?;
    w.admin.grant(
        P::DocumentView,
        bob_role,
        ObjectRef::new(ObjectKind::DOCUMENT_TYPE, w.seen.0),
    )?;
    w.db.session(bob)
        .create_webhook(&marker_receiver.url, &created(), None)?;
    w.admin.create_document(w.seen, "before", &[])?;
    wait_for("the first delivery", || receiver.received().len() == 1);
    w.admin.update_user(
        w.alice,
        UserUpdate {
            is_active: Some(false),
            ..Default::default()
        },
    )?;
    for i in 0..3 {
        w.admin
            .create_document(w.seen, &format!("while away {i}"), &[])?;
    }
    wait_for("bob's deliveries", || marker_receiver.received().len() == 4);
    // Nothing was even queued for her webhook while she was deactivated.
    let listed = w.admin.webhook_deliveries(hook.id, PageRequest::ALL)?;
    assert_eq!(listed.count, 1);
    assert_eq!(receiver.received().len(), 1);
    // She cannot use it either: a deactivated user is refused everything.
    assert!(alice.webhook(hook.id).is_err());
    Ok(())
}

#[test]
fn a_hanging_receiver_delays_only_its_own_webhook() -> Result<()> {
    let w = world()?;
    let hanging = Receiver::start(Answer::Hang);
    let fine = Receiver::start(Answer::Ok);
    let alice = w.db.session(w.alice);
    alice.create_webhook(&hanging.url, &created(), None)?;
    alice.create_webhook(&fine.url, &created(), None)?;
    for i in 0..20 {
        w.admin.create_document(w.seen, &format!("doc {i}"), &[])?;
    }
    wait_for("every delivery of the other webhook", || {
        fine.received().len() == 20
    });
    // The hanging receiver got its first delivery and has answered nothing: the other
    // webhook's twenty went meanwhile.
    assert_eq!(hanging.received().len(), 1);
    let events: Vec<i64> = fine.received().iter().map(Received::event_id).collect();
    assert!(events.windows(2).all(|p| p[0] < p[1]));
    Ok(())
}

#[test]
fn private_addresses_are_refused_unless_allowed() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let receiver = Receiver::start(Answer::Ok);
    let open = |allow| {
        Docmeta::builder()
            .data_dir(dir.path())
            .config(config(allow))
            .worker(true)
            .open()
    };
    let db = open(false)?;
    let admin = db.system();
    let (alice, role) = webhook_user(&admin, "alice")?;
    admin.grant_global(P::DocumentTypeView, role)?;
    let alice_session = db.session(alice);
    for url in [
        receiver.url.as_str(),
        "http://localhost/hook",
        "http://10.0.0.1/hook",
        "http://[::1]/hook",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::ffff:127.0.0.1]/hook",
    ] {
        match alice_session.create_webhook(url, &[], None) {
            Err(Error::Validation { field, .. }) => assert_eq!(field, "url", "{url}"),
            other => panic!("{url} was not refused: {other:?}"),
        }
    }
    for (url, field) in [
        ("ftp://example.com/", "url"),
        ("not a url", "url"),
        ("http://user:secret@example.com/", "url"),
    ] {
        match alice_session.create_webhook(url, &[], None) {
            Err(Error::Validation { field: f, .. }) => assert_eq!(f, field, "{url}"),
            other => panic!("{url} was not refused: {other:?}"),
        }
    }
    drop((alice_session, admin, db));
    // Allowed, it is created; refused again when delivering once no longer allowed.
    let db = open(true)?;
    let hook = db.session(alice).create_webhook(&receiver.url, &[], None)?;
    drop(db);
    let db = open(false)?;
    db.system().create_document_type("An event")?;
    wait_for("an attempt refused", || {
        db.system()
            .webhook_deliveries(hook.webhook.id, PageRequest::ALL)
            .is_ok_and(|p| p.items.iter().any(|d| d.attempts > 0))
    });
    let tried = db
        .system()
        .webhook_deliveries(hook.webhook.id, PageRequest::ALL)?;
    let attempt = tried.items.iter().find(|d| d.attempts > 0).expect("tried");
    assert_eq!(attempt.status, DeliveryStatus::Pending, "retried later");
    assert!(
        attempt.last_error.contains("not a public address"),
        "{}",
        attempt.last_error
    );
    assert!(receiver.received().is_empty(), "nothing reached loopback");
    Ok(())
}

#[test]
fn others_webhooks_are_not_found_and_fields_are_checked() -> Result<()> {
    let w = world()?;
    let receiver = Receiver::start(Answer::Ok);
    let alice = w.db.session(w.alice);
    let (bob, _) = webhook_user(&w.admin, "bob")?;
    let bob = w.db.session(bob);
    let hook = alice
        .create_webhook(&receiver.url, &created(), None)?
        .webhook;
    let mine = bob.create_webhook(&receiver.url, &[], None)?.webhook;
    w.admin.create_document(w.seen, "an event", &[])?;
    wait_for("alice's delivery", || {
        alice
            .webhook_deliveries(hook.id, PageRequest::ALL)
            .is_ok_and(|p| {
                p.items
                    .iter()
                    .any(|d| d.status == DeliveryStatus::Delivered)
            })
    });
    let delivery = alice
        .webhook_deliveries(hook.id, PageRequest::ALL)?
        .items
        .remove(0)
        .id;
    let not_found = |r: Result<()>| matches!(r, Err(Error::NotFound(_)));
    assert!(not_found(bob.webhook(hook.id).map(drop)));
    assert!(not_found(
        bob.update_webhook(
            hook.id,
            WebhookUpdate {
                url: Some("http://127.0.0.1:9/elsewhere".into()),
                ..Default::default()
            }
        )
        .map(drop)
    ));
    assert!(not_found(bob.delete_webhook(hook.id)));
    assert!(not_found(
        bob.webhook_deliveries(hook.id, PageRequest::ALL).map(drop)
    ));
    assert!(not_found(
        bob.retry_webhook_delivery(hook.id, delivery).map(drop)
    ));
    assert_eq!(alice.webhook(hook.id)?.url, receiver.url, "unchanged");
    // Each lists their own; a superuser and docmeta itself list every one.
    assert_eq!(
        bob.webhooks(PageRequest::ALL)?
            .items
            .iter()
            .map(|h| h.id)
            .collect::<Vec<_>>(),
        vec![mine.id]
    );
    assert_eq!(w.admin.webhooks(PageRequest::ALL)?.count, 2);
    let root = w.admin.create_user("root", "a long password", true)?;
    assert_eq!(w.db.session(root.id).webhooks(PageRequest::ALL)?.count, 2);
    // Delivered deliveries are not retried; unknown ones are not found.
    assert!(matches!(
        alice.retry_webhook_delivery(hook.id, delivery),
        Err(Error::Validation { .. })
    ));
    assert!(not_found(
        alice.retry_webhook_delivery(mine.id, delivery).map(drop)
    ));
    // Without the keys: refused.
    let carol = w.admin.create_user("carol", "a long password", false)?;
    let carol = w.db.session(carol.id);
    assert!(matches!(
        carol.create_webhook(&receiver.url, &[], None),
        Err(Error::PermissionDenied(_))
    ));
    assert!(matches!(
        carol.webhooks(PageRequest::ALL),
        Err(Error::PermissionDenied(_))
    ));
    assert!(not_found(carol.webhook(hook.id).map(drop)));
    // Her own webhook, once the key is gone: refused, not hidden.
    w.admin.revoke_global(P::WebhookDelete, w.alice_role)?;
    assert!(matches!(
        alice.delete_webhook(hook.id),
        Err(Error::PermissionDenied(_))
    ));
    // docmeta itself owns no webhook.
    assert!(matches!(
        w.admin.create_webhook(&receiver.url, &[], None),
        Err(Error::InvalidInput(_))
    ));
    // Field errors name their field; a refused update changes nothing.
    let field = |r: Result<docmeta_core::Webhook>| match r {
        Err(Error::Validation { field, .. }) => field,
        other => panic!("not refused: {other:?}"),
    };
    assert_eq!(
        field(
            alice
                .create_webhook(&receiver.url, &["no.such_event".into()], None)
                .map(|c| c.webhook)
        ),
        "events"
    );
    assert_eq!(
        field(
            alice
                .create_webhook(&receiver.url, &[], Some("whsec_short"))
                .map(|c| c.webhook)
        ),
        "secret"
    );
    assert_eq!(
        field(alice.update_webhook(
            hook.id,
            WebhookUpdate {
                url: Some("gopher://x/".into()),
                active: Some(false),
                ..Default::default()
            }
        )),
        "url"
    );
    assert!(alice.webhook(hook.id)?.active, "nothing changed");
    // PATCH semantics: only what is given changes.
    let patched = alice.update_webhook(
        hook.id,
        WebhookUpdate {
            active: Some(false),
            ..Default::default()
        },
    )?;
    assert_eq!(
        (patched.url.as_str(), patched.events.clone(), patched.active),
        (receiver.url.as_str(), created(), false)
    );
    Ok(())
}

/// On PostgreSQL (`DOCMETA_TEST_POSTGRES_URL`; skipped without it): two processes (two instances
/// on one database, each with its deliverer) write at once; every event reaches the webhook once,
/// in commit order, though both deliverers claim (`FOR UPDATE SKIP LOCKED`, commit order).
#[test]
fn on_postgresql_two_deliverers_send_each_event_once_in_commit_order() -> Result<()> {
    let Some(base) = std::env::var("DOCMETA_TEST_POSTGRES_URL")
        .ok()
        .filter(|u| !u.is_empty())
    else {
        assert!(
            std::env::var("DOCMETA_REQUIRE_POSTGRES").map_or(true, |v| v != "1"),
            "DOCMETA_REQUIRE_POSTGRES=1 but DOCMETA_TEST_POSTGRES_URL is not set"
        );
        eprintln!("skipped: DOCMETA_TEST_POSTGRES_URL is not set");
        return Ok(());
    };
    let name = format!("docmeta_webhooks_{}", std::process::id());
    let mut admin = postgres::Client::connect(&base, postgres::NoTls).expect("connect");
    for statement in [
        format!("DROP DATABASE IF EXISTS {name}"),
        format!("CREATE DATABASE {name}"),
    ] {
        admin.batch_execute(&statement).expect("create database");
    }
    let url = format!("{}/{name}", &base[..base.rfind('/').expect("a database")]);
    let (one, two) = (
        tempfile::tempdir().expect("one"),
        tempfile::tempdir().expect("two"),
    );
    let open = |dir: &std::path::Path| {
        Docmeta::builder()
            .data_dir(dir)
            .postgres(&url)
            .config(config(true))
            .worker(true)
            .open()
    };
    let a = open(one.path())?;
    let b = open(two.path())?;
    let receiver = Receiver::start(Answer::Ok);
    let system = a.system();
    let seen = system.create_document_type("Seen")?.id;
    // A superuser's webhook: every event is hers to see.
    let root = system.create_user("root", "a long password", true)?.id;
    let before = system
        .events(&docmeta_core::EventQuery {
            limit: Some(1),
            ..Default::default()
        })?
        .first()
        .map(|e| e.event.id);
    let hook = a.session(root).create_webhook(&receiver.url, &[], None)?;
    let writers: Vec<_> = [a.clone(), b.clone()]
        .into_iter()
        .enumerate()
        .map(|(n, db)| {
            std::thread::spawn(move || -> Result<()> {
                for i in 0..25 {
                    db.system()
                        .create_document(seen, &format!("doc {n}.{i}"), &[])?;
                }
                Ok(())
            })
        })
        .collect();
    for w in writers {
        w.join().expect("writer")?;
    }
    // The log in commit order, as a follower reads it.
    let expected: Vec<i64> = a
        .events(&docmeta_core::EventQuery {
            after: before,
            limit: Some(1000),
            oldest_first: true,
            ..Default::default()
        })?
        .iter()
        .map(|e| e.id.0)
        .collect();
    assert_eq!(expected.len(), 50);
    wait_for("every delivery", || {
        receiver.received().len() >= expected.len()
    });
    let received = receiver.received();
    let ids: Vec<i64> = received.iter().map(Received::event_id).collect();
    assert_eq!(ids, expected, "each once, in commit order");
    assert!(received.iter().all(|r| signed_with(r, &hook.secret)));
    drop((a, b));
    admin
        .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .expect("drop database");
    Ok(())
}
