//! Offline sync over HTTP, against a running `docmeta serve`: `GET /api/v4/sync/` sends a
//! device's replica every document its user may see (with the values and files the user may
//! see), then what changed since its cursor: an edit sends the document again, a deletion
//! removes it. A device of another user, a cursor the server never gave and a limit out of
//! range are refused; the OpenAPI document describes it.

mod support;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};
use support::{ADMIN, Server, prepare};

const ALICE: (&str, &str) = ("alice", "demo-password");

fn device(s: &Server, user: (&str, &str)) -> i64 {
    let (status, d) = s.call(
        "POST",
        "/api/v4/devices/",
        None,
        Some(&json!({"username": user.0, "password": user.1, "name": "tablet"})),
    );
    assert_eq!(status, 201, "{d}");
    d["id"].as_i64().expect("an id")
}

/// A replica: documents by id, and the cursor.
#[derive(Default)]
struct Replica {
    documents: BTreeMap<i64, Value>,
    cursor: Option<String>,
    batches: usize,
}

impl Replica {
    /// Syncs until the server has nothing more, in batches of `limit`.
    fn sync(&mut self, s: &Server, user: (&str, &str), device: i64, limit: u32) {
        loop {
            let cursor = self.cursor.as_deref().unwrap_or("");
            let (status, batch) = s.get(
                &format!("/api/v4/sync/?device={device}&cursor={cursor}&limit={limit}"),
                user,
            );
            assert_eq!(status, 200, "{batch}");
            self.batches += 1;
            for d in batch["documents"].as_array().expect("documents") {
                let id = d["document"]["id"].as_i64().expect("an id");
                self.documents.insert(id, d.clone());
            }
            for id in batch["removed"].as_array().expect("removed") {
                self.documents.remove(&id.as_i64().expect("an id"));
            }
            self.cursor = Some(batch["cursor"].as_str().expect("a cursor").to_owned());
            if batch["more"] != true {
                break;
            }
        }
    }

    fn ids(&self) -> BTreeSet<i64> {
        self.documents.keys().copied().collect()
    }
}

fn visible(s: &Server, user: (&str, &str)) -> BTreeSet<i64> {
    let (status, list) = s.get("/api/v4/documents/?page_size=500", user);
    assert_eq!(status, 200, "{list}");
    let ids = list["results"].as_array().expect("results").iter();
    ids.map(|d| d["id"].as_i64().expect("an id")).collect()
}

#[test]
fn a_replica_holds_what_its_user_sees_and_follows_changes() {
    let dir = tempfile::tempdir().expect("tempdir");
    prepare(dir.path(), true, "");
    let s = Server::start(dir.path());
    let tablet = device(&s, ALICE);

    let mut replica = Replica::default();
    replica.sync(&s, ALICE, tablet, 2);
    let seen = visible(&s, ALICE);
    assert!(!seen.is_empty(), "the demo shows alice documents");
    assert_eq!(replica.ids(), seen, "the replica holds what alice sees");
    assert!(replica.batches > 2, "in pages of two");
    // Each document with the values alice sees on it.
    for (id, d) in &replica.documents {
        let (_, values) = s.get(&format!("/api/v4/documents/{id}/metadata/"), ALICE);
        let want: BTreeSet<i64> = values["results"]
            .as_array()
            .expect("results")
            .iter()
            .map(|v| v["id"].as_i64().expect("an id"))
            .collect();
        let got: BTreeSet<i64> = d["metadata"]
            .as_array()
            .expect("metadata")
            .iter()
            .map(|v| v["id"].as_i64().expect("an id"))
            .collect();
        assert_eq!(got, want, "document {id}'s values");
        assert!(d["files"].is_array());
    }

    // An edit sends the document again; a deletion removes it.
    let mut ids = seen.iter();
    let (edited, deleted) = (*ids.next().expect("one"), *ids.next().expect("two"));
    let (status, _) = s.call(
        "PATCH",
        &format!("/api/v4/documents/{edited}/"),
        Some(ADMIN),
        Some(&json!({"label": "Renamed offline"})),
    );
    assert_eq!(status, 200);
    let (status, _) = s.call(
        "DELETE",
        &format!("/api/v4/documents/{deleted}/"),
        Some(ADMIN),
        None,
    );
    assert!(status == 202 || status == 204, "deleted: {status}");
    replica.sync(&s, ALICE, tablet, 100);
    assert_eq!(
        replica.documents[&edited]["document"]["label"],
        "Renamed offline"
    );
    assert!(!replica.documents.contains_key(&deleted));
    assert_eq!(replica.ids(), visible(&s, ALICE));
}

#[test]
fn a_sync_refuses_what_is_not_the_callers() {
    let dir = tempfile::tempdir().expect("tempdir");
    prepare(dir.path(), true, "");
    let s = Server::start(dir.path());
    let admins = device(&s, ADMIN);
    let alices = device(&s, ALICE);
    let get = |path: &str| s.get(path, ALICE);
    // Another user's device does not exist for alice.
    let (status, answer) = get(&format!("/api/v4/sync/?device={admins}"));
    assert_eq!(status, 404, "{answer}");
    let field = |path: &str, name: &str| {
        let (status, answer) = get(path);
        assert_eq!(status, 400, "{path}: {answer}");
        assert!(answer[name].is_array(), "{path}: {answer}");
    };
    field("/api/v4/sync/", "device");
    field("/api/v4/sync/?device=x", "device");
    field(
        &format!("/api/v4/sync/?device={alices}&cursor=s1.x"),
        "cursor",
    );
    field(&format!("/api/v4/sync/?device={alices}&limit=0"), "limit");
    field(&format!("/api/v4/sync/?device={alices}&limit=501"), "limit");
    // Without credentials: 401.
    let (status, _) = s.call("GET", &format!("/api/v4/sync/?device={alices}"), None, None);
    assert_eq!(status, 401);
    // The OpenAPI document names the operation.
    let (_, doc) = s.call("GET", "/api/v4/openapi.json", None, None);
    let op: &Value = &doc["paths"]["/api/v4/sync/"]["get"];
    assert!(op["parameters"].is_array(), "{op}");
}

/// A replica of alice's documents over HTTP (`docmeta_core::Replica`): it holds what she sees,
/// finds it offline with the same search, keeps no password, and is emptied once her device is
/// revoked.
#[test]
fn a_replica_over_http_answers_offline_and_is_emptied_when_its_device_is_revoked() {
    use docmeta_core::{DocumentQuery, PageRequest, Remote, Replica};

    let dir = tempfile::tempdir().expect("tempdir");
    prepare(dir.path(), true, "");
    let s = Server::start(dir.path());
    let local = tempfile::tempdir().expect("tempdir");
    let remote = Remote {
        url: s.base.clone(),
        username: ALICE.0.into(),
        password: ALICE.1.into(),
    };
    let replica = Replica::open(local.path(), &remote).expect("signed in");
    let mut batches = 0;
    let done = replica
        .sync_with_progress(|_| batches += 1)
        .expect("synced");
    assert!(!done.more && batches == done.batches);
    let (_, devices) = s.get("/api/v4/devices/", ALICE);
    assert!(
        devices["results"]
            .as_array()
            .expect("results")
            .iter()
            .any(|d| d["last_sync"].is_string()),
        "listed with its last sync: {devices}"
    );
    let session = replica.session();
    let held: BTreeSet<i64> = session
        .documents(DocumentQuery::default(), PageRequest::ALL)
        .expect("a list")
        .items
        .iter()
        .map(|d| d.document.id.0)
        .collect();
    assert_eq!(
        held,
        visible(&s, ALICE),
        "the replica holds what alice sees"
    );
    // Each document's values, as the server shows them to her.
    for id in &held {
        let (_, values) = s.get(&format!("/api/v4/documents/{id}/metadata/"), ALICE);
        let want: BTreeSet<(i64, String)> = values["results"]
            .as_array()
            .expect("results")
            .iter()
            .map(|v| {
                (
                    v["id"].as_i64().expect("id"),
                    v["value"].as_str().expect("value").to_owned(),
                )
            })
            .collect();
        let got: BTreeSet<(i64, String)> = session
            .document_metadata(docmeta_core::DocumentId(*id), PageRequest::ALL)
            .expect("values")
            .items
            .into_iter()
            .map(|v| (v.value.id.0, v.value.value))
            .collect();
        assert_eq!(got, want, "document {id}'s values");
    }
    // A search offline finds what the same search finds on the server.
    let (_, online) = s.get("/api/v4/search/documents/?q=invoice&page_size=500", ALICE);
    let online: BTreeSet<i64> = online["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|d| d["id"].as_i64().expect("id"))
        .collect();
    let offline: BTreeSet<i64> = session
        .search_documents("invoice", PageRequest::new(1, 500))
        .expect("a search")
        .items
        .iter()
        .map(|d| d.document.id.0)
        .collect();
    assert!(!online.is_empty(), "the demo has invoices alice sees");
    assert_eq!(offline, online);
    // Revoked: the next sync says so and nothing stays readable.
    let device = replica.device().expect("read").expect("signed in");
    let (status, _) = s.call(
        "DELETE",
        &format!("/api/v4/devices/{device}/"),
        Some(ALICE),
        None,
    );
    assert_eq!(status, 204);
    assert!(matches!(
        replica.sync(),
        Err(docmeta_core::Error::PermissionDenied(_))
    ));
    let left = session
        .documents(DocumentQuery::default(), PageRequest::ALL)
        .expect("a list");
    assert_eq!(left.count, 0);
    // A wrong password does not sign the replica in again.
    drop(replica);
    let wrong = Remote {
        password: "not hers".into(),
        ..remote.clone()
    };
    assert!(matches!(
        Replica::open(local.path(), &wrong),
        Err(docmeta_core::Error::PermissionDenied(_))
    ));
    // A server that does not offer sync, and one that does not answer: clear errors.
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let not_sync = Remote {
        url: format!("{}/not-docmeta", s.base),
        ..remote.clone()
    };
    match Replica::open(elsewhere.path(), &not_sync) {
        Err(docmeta_core::Error::InvalidInput(m)) => {
            assert!(m.contains("does not offer sync"), "{m}")
        }
        other => panic!("{other:?}"),
    }
    let nobody = tempfile::tempdir().expect("tempdir");
    let gone = Remote {
        url: "http://127.0.0.1:9".into(),
        ..remote.clone()
    };
    match Replica::open(nobody.path(), &gone) {
        Err(e @ docmeta_core::Error::Storage { .. }) => {
            assert!(e.to_string().contains("reaching the server"), "{e}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_push_over_http_applies_conflicts_and_refuses_as_online() {
    let dir = tempfile::tempdir().expect("tempdir");
    prepare(dir.path(), true, "");
    let s = Server::start(dir.path());
    let device = device(&s, ADMIN);
    // A value of a document: the admin's replica edits it offline based on what it held.
    let (_, docs) = s.get("/api/v4/documents/?page_size=500", ADMIN);
    let mut found = None;
    for d in docs["results"].as_array().expect("results") {
        let id = d["id"].as_i64().expect("id");
        let (_, values) = s.get(&format!("/api/v4/documents/{id}/metadata/"), ADMIN);
        if let Some(v) = values["results"].as_array().and_then(|v| v.first()) {
            found = Some((
                id,
                v["metadata_type_id"].as_i64().expect("type"),
                v["value"].clone(),
            ));
            break;
        }
    }
    let (doc, mt, held) = found.expect("a demo document with a value");
    let write = |key: &str, value: &str, base: &Value| {
        json!({"key": key, "action": "set", "document_id": doc, "metadata_type_id": mt,
            "value": value, "base": base})
    };
    let push = |writes: Vec<Value>| {
        let (status, answer) = s.call(
            "POST",
            "/api/v4/sync/push/",
            Some(ADMIN),
            Some(&json!({"device": device, "writes": writes})),
        );
        assert_eq!(status, 200, "{answer}");
        answer["results"].as_array().expect("results").clone()
    };
    // The held value is the base: a value the type accepts is applied; an unchanged one too.
    let out = push(vec![write("a", held.as_str().expect("text"), &held)]);
    assert_eq!(out[0]["key"], "a");
    assert_eq!(out[0]["status"], "applied", "{out:?}");
    // Based on a value the server does not hold: a conflict naming the server's value.
    let out = push(vec![write(
        "b",
        "something else",
        &json!("not what the server holds"),
    )]);
    assert_eq!(out[0]["status"], "conflict", "{out:?}");
    assert_eq!(out[0]["server_value"], held);
    // A document that does not exist: refused, as online.
    let out = push(vec![
        json!({"key": "c", "action": "remove", "document_id": 999_999,
        "metadata_type_id": mt, "base": null}),
    ]);
    assert_eq!(out[0]["status"], "refused", "{out:?}");
    assert_eq!(out[0]["error"]["kind"], "not_found");
    // A set without a value, an unknown action: 400.
    let (status, answer) = s.call(
        "POST",
        "/api/v4/sync/push/",
        Some(ADMIN),
        Some(
            &json!({"device": device, "writes": [{"key": "d", "action": "set",
            "document_id": doc, "metadata_type_id": mt, "base": null}]}),
        ),
    );
    assert_eq!(status, 400, "{answer}");
    let (status, _) = s.call(
        "POST",
        "/api/v4/sync/push/",
        Some(ADMIN),
        Some(
            &json!({"device": device, "writes": [{"key": "d", "action": "explode",
            "document_id": doc, "metadata_type_id": mt}]}),
        ),
    );
    assert_eq!(status, 400);
    // A document created offline: created once per key, answered under the server's id.
    let (_, types) = s.get("/api/v4/documents/types/?page_size=500", ADMIN);
    let contract = types["results"]
        .as_array()
        .expect("results")
        .iter()
        .find(|t| t["label"] == "Contract")
        .expect("the demo's Contract")["id"]
        .clone();
    let (_, kinds) = s.get("/api/v4/metadata/metadata-types/?page_size=500", ADMIN);
    let party = kinds["results"]
        .as_array()
        .expect("results")
        .iter()
        .find(|t| t["name"] == "party")
        .expect("the demo's party")["id"]
        .clone();
    let create = json!({"key": "e", "action": "create", "document_id": 1_i64 << 50,
        "document_type_id": contract, "label": "Signed offline",
        "metadata": [{"metadata_type_id": party, "value": "ACME"}]});
    let first = push(vec![create.clone()]);
    assert_eq!(first[0]["status"], "applied", "{first:?}");
    let created = first[0]["document"]["document"]["id"].clone();
    assert!(created.as_i64().expect("an id") < 1 << 50, "{first:?}");
    let again = push(vec![create]);
    assert_eq!(
        again[0]["document"]["document"]["id"], created,
        "created once"
    );
    let (_, found) = s.get("/api/v4/documents/?page_size=500", ADMIN);
    let made = found["results"]
        .as_array()
        .expect("results")
        .iter()
        .filter(|d| d["label"] == "Signed offline")
        .count();
    assert_eq!(made, 1);
    // A create without its label: 400; one the pipeline refuses: refused, as online.
    let (status, _) = s.call(
        "POST",
        "/api/v4/sync/push/",
        Some(ADMIN),
        Some(
            &json!({"device": device, "writes": [{"key": "f", "action": "create",
            "document_id": 1, "document_type_id": contract}]}),
        ),
    );
    assert_eq!(status, 400);
    let out = push(vec![
        json!({"key": "g", "action": "create", "document_id": 2,
        "document_type_id": contract, "label": "No party"}),
    ]);
    assert_eq!(out[0]["status"], "refused", "{out:?}");
    assert_eq!(out[0]["error"]["kind"], "validation");
}

#[test]
fn a_replica_over_http_follows_workflows_and_pushes_transitions() {
    use docmeta_core::{DocumentId, MetadataTypeId, Remote, Replica, WorkflowTransitionId};

    let dir = tempfile::tempdir().expect("tempdir");
    prepare(dir.path(), true, "");
    let s = Server::start(dir.path());
    let find = |path: &str, key: &str, wanted: &str| -> i64 {
        let (_, list) = s.get(path, ADMIN);
        list["results"]
            .as_array()
            .expect("results")
            .iter()
            .find(|t| t[key] == wanted)
            .unwrap_or_else(|| panic!("{wanted} in {path}"))["id"]
            .as_i64()
            .expect("an id")
    };
    let invoice = find("/api/v4/documents/types/?page_size=500", "label", "Invoice");
    let mt = |name: &str| {
        find(
            "/api/v4/metadata/metadata-types/?page_size=500",
            "name",
            name,
        )
    };
    let status = mt("status");
    let (code, created) = s.call(
        "POST",
        "/api/v4/documents/",
        Some(ADMIN),
        Some(
            &json!({"document_type_id": invoice, "label": "Offline approval",
            "metadata": [{"metadata_type_id": mt("invoice_number"), "value": "INV-7777"},
                {"metadata_type_id": mt("due_date"), "value": "2027-01-31"},
                {"metadata_type_id": status, "value": "draft"}]}),
        ),
    );
    assert_eq!(code, 201, "{created}");
    let doc = created["id"].as_i64().expect("an id");
    let (_, instances) = s.get(&format!("/api/v4/documents/{doc}/workflows/"), ADMIN);
    let instance = &instances["results"][0];
    let instance_id = instance["id"].as_i64().expect("an instance");

    let local = tempfile::tempdir().expect("tempdir");
    let remote = Remote {
        url: s.base.clone(),
        username: ADMIN.0.into(),
        password: ADMIN.1.into(),
    };
    let replica = Replica::open(local.path(), &remote).expect("signed in");
    replica.sync().expect("synced");
    let session = replica.session();
    let held = session
        .workflow_instances(DocumentId(doc))
        .expect("instances");
    assert_eq!(held.len(), 1);
    assert_eq!(
        held[0].state_id.map(|s| s.0),
        instance["current_state_id"].as_i64()
    );
    let (_, online) = s.get(
        &format!("/api/v4/documents/{doc}/workflows/{instance_id}/transitions/"),
        ADMIN,
    );
    let offline = session
        .available_transitions(DocumentId(doc), held[0].id)
        .expect("available");
    assert_eq!(
        offline.len(),
        online["results"].as_array().map_or(0, Vec::len),
        "{online}"
    );

    // Offline, the status edit fires the workflow's trigger on the replica, as on the server;
    // the sync pushes the value, and the server's trigger moves the instance there too.
    replica
        .set_value(DocumentId(doc), MetadataTypeId(status), "review")
        .expect("set offline");
    let moved = session
        .workflow_instances(DocumentId(doc))
        .expect("instances");
    let review = session
        .workflow_states(moved[0].workflow_id)
        .expect("states")
        .into_iter()
        .find(|s| s.label == "review")
        .expect("review");
    assert_eq!(
        moved[0].state_id,
        Some(review.id),
        "the trigger fired offline"
    );
    replica.sync().expect("pushed");
    let (_, after) = s.get(
        &format!("/api/v4/documents/{doc}/workflows/{instance_id}/"),
        ADMIN,
    );
    assert_eq!(after["current_state_id"], review.id.0, "{after}");

    // A transition taken offline goes over HTTP; the server takes it through the user's session.
    let approve = session
        .workflow_transitions(moved[0].workflow_id)
        .expect("transitions")
        .into_iter()
        .find(|t| t.label == "approve")
        .expect("approve");
    replica
        .set_value(DocumentId(doc), MetadataTypeId(status), "approved")
        .expect("set offline");
    let state = session
        .workflow_instances(DocumentId(doc))
        .expect("instances")[0]
        .state_id;
    assert_eq!(
        state,
        Some(approve.destination_state_id),
        "the trigger fired offline"
    );
    replica.sync().expect("pushed");
    let (_, log) = s.get(
        &format!("/api/v4/documents/{doc}/workflows/{instance_id}/log/"),
        ADMIN,
    );
    let taken: Vec<i64> = log["results"]
        .as_array()
        .expect("results")
        .iter()
        .filter_map(|e| e["transition_id"].as_i64())
        .collect();
    assert!(taken.contains(&approve.id.0), "{log}");
    assert_eq!(
        session
            .workflow_log(DocumentId(doc), held[0].id)
            .expect("log")
            .len(),
        log["results"].as_array().map_or(0, Vec::len),
        "the replica holds the server's log"
    );

    // Pushed by hand: a transition without its transition id is a 400; one that does not
    // leave the state the replica held is a conflict naming the server's state.
    let device = replica.device().expect("read").expect("signed in").0;
    let (code, _) = s.call(
        "POST",
        "/api/v4/sync/push/",
        Some(ADMIN),
        Some(
            &json!({"device": device, "writes": [{"key": "t", "action": "transition",
            "document_id": doc, "workflow_instance_id": instance_id}]}),
        ),
    );
    assert_eq!(code, 400);
    let (code, answer) = s.call(
        "POST",
        "/api/v4/sync/push/",
        Some(ADMIN),
        Some(
            &json!({"device": device, "writes": [{"key": "u", "action": "transition",
            "document_id": doc, "workflow_instance_id": instance_id,
            "transition_id": approve.id.0, "base_state_id": review.id.0 + 1000}]}),
        ),
    );
    assert_eq!(code, 200, "{answer}");
    let result = &answer["results"][0];
    assert_eq!(
        result["status"], "applied",
        "already in its destination: {answer}"
    );
    let pay: WorkflowTransitionId = session
        .workflow_transitions(moved[0].workflow_id)
        .expect("transitions")
        .into_iter()
        .find(|t| t.label == "pay")
        .expect("pay")
        .id;
    let (_, answer) = s.call(
        "POST",
        "/api/v4/sync/push/",
        Some(ADMIN),
        Some(
            &json!({"device": device, "writes": [{"key": "v", "action": "transition",
            "document_id": doc, "workflow_instance_id": instance_id,
            "transition_id": pay.0, "base_state_id": review.id.0}]}),
        ),
    );
    let result = &answer["results"][0];
    assert_eq!(result["status"], "conflict", "{answer}");
    assert_eq!(
        result["server_value"],
        approve.destination_state_id.0.to_string(),
        "{answer}"
    );
}

#[test]
fn a_file_added_offline_goes_over_http_with_its_bytes_and_a_refusal_before_them() {
    use docmeta_core::{DocumentId, DocumentQuery, PageRequest, Remote, Replica};

    let dir = tempfile::tempdir().expect("tempdir");
    prepare(dir.path(), true, "");
    let s = Server::start(dir.path());
    let open = |user: (&str, &str), path: &std::path::Path| {
        let remote = Remote {
            url: s.base.clone(),
            username: user.0.into(),
            password: user.1.into(),
        };
        let replica = Replica::open(path, &remote).expect("signed in");
        replica.sync().expect("synced");
        replica
    };
    let first = |replica: &Replica| {
        replica
            .session()
            .documents(DocumentQuery::default(), PageRequest::new(1, 1))
            .expect("a list")
            .items[0]
            .document
            .id
    };
    // The administrator's file: sent with its bytes, added on the server, kept on the replica.
    let admin_dir = tempfile::tempdir().expect("tempdir");
    let admins = open(ADMIN, admin_dir.path());
    let doc = first(&admins);
    let content = b"a page photographed in the field".repeat(2_000);
    admins
        .add_file(doc, "field notes.jpg", &mut content.as_slice())
        .expect("added offline");
    let done = admins.sync().expect("pushed");
    assert_eq!((done.pushed, done.rejected), (1, 0));
    let (_, files) = s.get(&format!("/api/v4/documents/{doc}/files/"), ADMIN);
    let file = files["results"]
        .as_array()
        .expect("results")
        .iter()
        .find(|f| f["filename"] == "field notes.jpg")
        .expect("added on the server")
        .clone();
    assert_eq!(file["size"], content.len(), "{file}");
    let id = docmeta_core::DocumentFileId(file["id"].as_i64().expect("an id"));
    assert_eq!(admins.session().read_file(id).expect("kept"), content);
    // Alice may not add files to her invoices: refused before the bytes are sent, kept.
    let alice_dir = tempfile::tempdir().expect("tempdir");
    let alices = open(ALICE, alice_dir.path());
    let hers = first(&alices);
    alices
        .add_file(hers, "not hers to add.txt", &mut &b"no"[..])
        .expect("added offline");
    let done = alices.sync().expect("synced");
    assert_eq!((done.pushed, done.rejected), (0, 1));
    let rejected = alices.rejected().expect("rejected");
    assert!(
        matches!(
            rejected[0].result,
            docmeta_core::PushResult::Refused {
                kind: docmeta_core::ErrorKind::PermissionDenied,
                ..
            }
        ),
        "{rejected:?}"
    );
    // By hand: a missing document is a 400, another user's device a 404, before any byte.
    let device = alices.device().expect("read").expect("signed in").0;
    let (status, answer) = s.call(
        "POST",
        &format!("/api/v4/sync/push/file/?device={device}&key=k"),
        Some(ALICE),
        None,
    );
    assert_eq!(status, 400, "{answer}");
    let (status, _) = s.call(
        "POST",
        &format!(
            "/api/v4/sync/push/file/?device={device}&key=k&document_id={}",
            DocumentId(hers.0)
        ),
        Some(ADMIN),
        None,
    );
    assert_eq!(status, 404);
}
