//! The access matrix over HTTP: every operation, as every user, against a reference evaluator.
//!
//! A deterministic pseudo-random world is built through the HTTP API as the administrator:
//! users, groups, roles, global permissions, object ACLs (on document types, documents, metadata
//! types, cabinets, roles and workflows) with keys of spec 5.4 grantable there, and documents,
//! metadata values, files, a cabinet tree and workflow instances for them to protect. Roles have
//! random grants plus a coherent "job" each, so that most operations have non-superusers who may
//! do them; two users (`edge1`, `edge2`) hold only corner cases (an action without the view
//! permission, ACL edit without ACL view, an ACL on an intermediate cabinet, metadata view on
//! documents they may not see...). Then every operation of the server's own `openapi.json` is
//! called as every user and without credentials, on every relevant object, and each answer is
//! compared with a small reference evaluator written from the specification (5.2-5.4 and the
//! HTTP contract in docs/specification.md, and docs/access-control.md), not from the server's code:
//!
//! * `has(user, permission, object)`: the user is a superuser; or a role of one of the user's
//!   groups holds the permission globally; or an ACL of such a role grants it on the object or on
//!   an object it inherits from (spec 5.3: document -> document type; document file -> document;
//!   workflow instance -> workflow; a cabinet -> the root of its tree, never an intermediate
//!   cabinet). There is no deny.
//! * Refusals (api.md): an object the caller may not view, or that does not exist, is `404`; a
//!   visible object without the needed permission `403`; a missing global create permission
//!   `403`; no credentials `401`. Lists contain exactly what the caller may view (and `count`
//!   agrees).
//! * Where the specification is silent (whether acting on an object also needs seeing it, what
//!   an address under a document needs), [`RULES`] states the server's convention for that
//!   endpoint (editing a group or a metadata type needs seeing it, editing a document does not).
//!
//! [`RULES`] says, for every (method, path) of openapi.json, which permission on which object
//! decides it; the test fails when openapi.json has an operation the table does not know (so a
//! new endpoint cannot escape the matrix) or when a table entry is never exercised. Writes are
//! exercised too: the records a call may touch are read back as the administrator before and
//! after it, so a refused call must leave them unchanged and an allowed one must change them
//! (they are then restored); deletions and type changes run last against the model, so later
//! callers see their effect (roles, groups, users and ACLs are only deleted when they are spare
//! ones no caller depends on, so the deletions never change who may do what). At the end the
//! model is compared with everything the administrator sees, and the reads run again on what is
//! left (events of deleted objects included).
//!
//! A failure lists the differences by kind: the server allows or lists what the evaluator refuses
//! (`AllowsRefused`, `ListShowsHidden`), a refused call changed something (`RefusedChanged`), an
//! allowed call was carried out but answered 403/404 (`DoneButRefused`), a 403 reveals an object
//! the caller may not see (`RevealsExistence`), the server refuses or hides what the evaluator
//! allows (`RefusesAllowed`, `ListMissesVisible`). A 404 where api.md says 403 (or the reverse
//! for an object that no longer exists) reveals nothing, and a 400 or another success where the
//! permission check passed is not about access control: both are printed as notes only.
//!
//! A second test checks that refused logins take as long for unknown usernames as for known ones.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{ADMIN, Server};

#[path = "../../../tests/oracle/access_model.rs"]
mod access_model;

use access_model::*;

// ----- the table: every operation of openapi.json and the rule that decides it -------------------

/// `(operation, rule)`. "(403/404)" means: refused with 403 when the caller may view the object,
/// 404 otherwise (api.md). Every operation of openapi.json must be here.
const RULES: &[(&str, &str)] = &[
    (
        "GET /api/v4/health/",
        "public: 200 for everyone, with or without credentials",
    ),
    ("GET /api/v4/openapi.json", "public: 200 for everyone"),
    ("GET /api/v4/tasks/", "superusers only; 403 for other users"),
    ("GET /api/v4/permissions/", "any authenticated user"),
    (
        "GET /api/v5/objects/{app_label}/{model_name}/permissions/",
        "any authenticated user",
    ),
    (
        "GET /api/v4/users/",
        "list: the caller, and every user with global user_view",
    ),
    (
        "POST /api/v4/users/",
        "global user_create (403); is_superuser only by a superuser (403)",
    ),
    (
        "GET /api/v4/users/current/",
        "any authenticated user: the caller",
    ),
    (
        "GET /api/v4/users/{user_id}/",
        "the caller themselves or global user_view; else 404",
    ),
    (
        "PATCH /api/v4/users/{user_id}/",
        "not the caller and no user_view: 404; own password: allowed; else global user_edit (403); is_superuser only by a superuser (403); another user only by one holding everything they hold (403)",
    ),
    (
        "DELETE /api/v4/users/{user_id}/",
        "not the caller and no user_view: 404; global user_delete (403); a superuser only by a superuser (403); holding everything the user holds (403)",
    ),
    (
        "GET /api/v4/groups/",
        "list: every group with global group_view, none without",
    ),
    ("POST /api/v4/groups/", "global group_create (403)"),
    (
        "GET /api/v4/groups/{group_id}/",
        "global group_view; else 404",
    ),
    (
        "PATCH /api/v4/groups/{group_id}/",
        "group_view (404) then group_edit (403), global only; holding what the group's roles grant (403)",
    ),
    (
        "DELETE /api/v4/groups/{group_id}/",
        "group_view (404) then group_delete (403); holding what the group's roles grant (403)",
    ),
    (
        "GET /api/v4/groups/{group_id}/users/",
        "group_view (404); list: the members the caller may view",
    ),
    (
        "POST /api/v4/groups/{group_id}/users/add/",
        "group_view (404) then group_edit (403); the user visible (400); holding what the group's roles grant (403)",
    ),
    (
        "POST /api/v4/groups/{group_id}/users/remove/",
        "group_view (404) then group_edit (403); the user visible (400); holding what the group's roles grant (403)",
    ),
    (
        "GET /api/v4/roles/",
        "list: roles with role_view (global, or an ACL on the role)",
    ),
    ("POST /api/v4/roles/", "global role_create (403)"),
    (
        "GET /api/v4/roles/{role_id}/",
        "role_view on the role; else 404",
    ),
    (
        "PATCH /api/v4/roles/{role_id}/",
        "role_edit on the role (403/404); holding what the role grants (403)",
    ),
    (
        "DELETE /api/v4/roles/{role_id}/",
        "role_delete on the role (403/404); holding what the role grants (403)",
    ),
    (
        "GET /api/v4/roles/{role_id}/groups/",
        "role_view (404); list: the role's groups the caller may view (group_view)",
    ),
    (
        "POST /api/v4/roles/{role_id}/groups/add/",
        "role_edit on the role (403/404); the group visible (400); holding what the role grants (403)",
    ),
    (
        "POST /api/v4/roles/{role_id}/groups/remove/",
        "role_edit on the role (403/404); the group visible (400); holding what the role grants (403)",
    ),
    (
        "GET /api/v4/roles/{role_id}/permissions/",
        "role_view (404); list: the role's global permissions",
    ),
    (
        "POST /api/v4/roles/{role_id}/permissions/add/",
        "role_edit on the role (403/404); role_edit globally and the permission globally (403)",
    ),
    (
        "POST /api/v4/roles/{role_id}/permissions/remove/",
        "role_edit on the role (403/404); role_edit globally and the permission globally (403)",
    ),
    (
        "GET /api/v4/metadata/metadata-types/",
        "list: metadata types with metadata_type_view",
    ),
    (
        "POST /api/v4/metadata/metadata-types/",
        "global metadata_type_create (403)",
    ),
    (
        "GET /api/v4/metadata/metadata-types/{metadata_type_id}/",
        "metadata_type_view; else 404",
    ),
    (
        "GET /api/v4/metadata/metadata-types/{metadata_type_id}/value-type-check/",
        "metadata_type_view (404) then metadata_type_edit (403); misfits listed only where the caller may view the value",
    ),
    (
        "PATCH /api/v4/metadata/metadata-types/{metadata_type_id}/",
        "metadata_type_view (404) then metadata_type_edit (403)",
    ),
    (
        "PUT /api/v4/metadata/metadata-types/{metadata_type_id}/",
        "metadata_type_view (404) then metadata_type_edit (403)",
    ),
    (
        "DELETE /api/v4/metadata/metadata-types/{metadata_type_id}/",
        "metadata_type_delete (403/404)",
    ),
    (
        "POST /api/v4/metadata/metadata-types/preview/",
        "changes nothing; global metadata_type_create (403), or with metadata_type_id metadata_type_edit on it (403/404); with document_id document_view on it (404)",
    ),
    (
        "GET /api/v4/documents/types/",
        "list: document types with document_type_view",
    ),
    (
        "POST /api/v4/documents/types/",
        "global document_type_create (403)",
    ),
    (
        "GET /api/v4/documents/types/{document_type_id}/",
        "document_type_view; else 404",
    ),
    (
        "PATCH /api/v4/documents/types/{document_type_id}/",
        "document_type_edit (403/404)",
    ),
    (
        "PUT /api/v4/documents/types/{document_type_id}/",
        "document_type_edit (403/404)",
    ),
    (
        "DELETE /api/v4/documents/types/{document_type_id}/",
        "document_type_delete (403/404); allowed but the type still has documents: 400",
    ),
    (
        "GET /api/v4/documents/types/{document_type_id}/metadata-types/",
        "document_type_view, document_create or document_metadata_add on the type (404); list: associations whose metadata type the caller may view",
    ),
    (
        "POST /api/v4/documents/types/{document_type_id}/metadata-types/",
        "document_type_edit on the document type (403/404) and metadata_type_view on the metadata type (a body reference: 400)",
    ),
    (
        "GET /api/v4/documents/types/{document_type_id}/metadata-types/{association_id}/",
        "(document_type_view, document_create or document_metadata_add on the type) and metadata_type_view; else 404",
    ),
    (
        "PATCH /api/v4/documents/types/{document_type_id}/metadata-types/{association_id}/",
        "document_type_view and metadata_type_view (404) then document_type_edit (403)",
    ),
    (
        "PUT /api/v4/documents/types/{document_type_id}/metadata-types/{association_id}/",
        "document_type_view and metadata_type_view (404) then document_type_edit (403)",
    ),
    (
        "DELETE /api/v4/documents/types/{document_type_id}/metadata-types/{association_id}/",
        "document_type_view and metadata_type_view (404) then document_type_edit (403)",
    ),
    (
        "GET /api/v4/documents/",
        "list: documents with document_view",
    ),
    (
        "POST /api/v4/documents/",
        "document_create on the document type (403 if the type is viewable, else 400: a body reference)",
    ),
    (
        "POST /api/v4/documents/batch/",
        "document_create on each entry's document type, as POST /api/v4/documents/ (403, or 400 in the entry)",
    ),
    (
        "GET /api/v4/documents/{document_id}/",
        "document_view; else 404",
    ),
    (
        "PATCH /api/v4/documents/{document_id}/",
        "document_edit (403/404)",
    ),
    (
        "DELETE /api/v4/documents/{document_id}/",
        "document_delete (403/404)",
    ),
    (
        "POST /api/v4/documents/{document_id}/type/change/",
        "document_view (404), document_change_type on the document (403), document_type_view on the new type (a body reference: 400), document_create on the new type (403)",
    ),
    (
        "GET /api/v4/documents/{document_id}/metadata/",
        "document_view (404); list: values with document_metadata_view on the document and on the metadata type",
    ),
    (
        "GET /api/v4/documents/{document_id}/metadata/history/",
        "document_view (404); with metadata_type_id, metadata_type_view on that type (404); a change's values only with document_metadata_view on the document and on its type (else null, hidden)",
    ),
    (
        "POST /api/v4/documents/{document_id}/metadata/",
        "document_view (404); document_metadata_add on the document (403) and on the metadata type (403 if the caller knows the type: metadata_type_view or document_metadata_view on it; else 400: a body reference)",
    ),
    (
        "GET /api/v4/documents/{document_id}/metadata/{metadata_type_id}/lookup/",
        "document_view on the document (404); the type associated with the document's type and metadata_type_view or document_metadata_view on it (404)",
    ),
    (
        "GET /api/v4/documents/{document_id}/metadata/{metadata_id}/",
        "document_view, and document_metadata_view on the document and on the type; else 404",
    ),
    (
        "PATCH /api/v4/documents/{document_id}/metadata/{metadata_id}/",
        "visible as GET (404) then document_metadata_edit on the document and on the type (403)",
    ),
    (
        "PUT /api/v4/documents/{document_id}/metadata/{metadata_id}/",
        "visible as GET (404) then document_metadata_edit on the document and on the type (403)",
    ),
    (
        "DELETE /api/v4/documents/{document_id}/metadata/{metadata_id}/",
        "visible as GET (404) then document_metadata_remove on the document and on the type (403); a required value 400",
    ),
    (
        "GET /api/v4/documents/{document_id}/files/",
        "document_view; else 404",
    ),
    (
        "POST /api/v4/documents/{document_id}/files/",
        "document_file_new (403/404)",
    ),
    (
        "GET /api/v4/documents/{document_id}/files/{file_id}/",
        "document_view; else 404",
    ),
    (
        "DELETE /api/v4/documents/{document_id}/files/{file_id}/",
        "document_view (404) then document_edit (403)",
    ),
    (
        "GET /api/v4/documents/{document_id}/files/{file_id}/download/",
        "document_view; else 404",
    ),
    (
        "GET /api/v4/documents/{document_id}/events/",
        "document_view (404); list: events about the document whose target the caller may view",
    ),
    (
        "GET /api/v4/events/",
        "list: events whose target the caller may view; the actor shown only to the actor and user_view holders",
    ),
    (
        "GET /api/v4/documents/{document_id}/workflows/",
        "document_view (404); list: instances with workflow_template_view on the instance or its workflow",
    ),
    (
        "GET /api/v4/documents/{document_id}/workflows/{instance_id}/",
        "document_view and workflow_template_view on the instance or its workflow; else 404",
    ),
    (
        "GET /api/v4/documents/{document_id}/workflows/{instance_id}/log/",
        "as the instance",
    ),
    (
        "GET /api/v4/documents/{document_id}/workflows/{instance_id}/transitions/",
        "as the instance; list: the transitions leaving its current state",
    ),
    (
        "POST /api/v4/documents/{document_id}/workflows/{instance_id}/transitions/",
        "instance visible (404) then workflow_instance_transition on the instance, its workflow or the document (403)",
    ),
    (
        "GET /api/v4/workflow-templates/",
        "list: workflows with workflow_template_view",
    ),
    (
        "POST /api/v4/workflow-templates/",
        "global workflow_template_create (403)",
    ),
    (
        "GET /api/v4/workflow-templates/{workflow_id}/",
        "workflow_template_view; else 404",
    ),
    (
        "PATCH /api/v4/workflow-templates/{workflow_id}/",
        "workflow_template_edit (403/404); renaming also needs what every action does on the bound types, rebinding on each type added or removed (403)",
    ),
    (
        "DELETE /api/v4/workflow-templates/{workflow_id}/",
        "workflow_template_delete (403/404); and what every action of the workflow does on its bound types (403)",
    ),
    (
        "GET /api/v4/workflow-templates/{workflow_id}/states/",
        "workflow_template_view; else 404",
    ),
    (
        "POST /api/v4/workflow-templates/{workflow_id}/states/",
        "workflow_template_edit (403/404); and what every action of the workflow does on its bound types (403)",
    ),
    (
        "GET /api/v4/workflow-templates/{workflow_id}/states/{state_id}/",
        "workflow_template_view on the workflow (404); a state of another workflow 404",
    ),
    (
        "PATCH /api/v4/workflow-templates/{workflow_id}/states/{state_id}/",
        "workflow_template_edit on the workflow (403/404); and what every action of the workflow does on its bound types (403)",
    ),
    (
        "DELETE /api/v4/workflow-templates/{workflow_id}/states/{state_id}/",
        "workflow_template_edit on the workflow (403/404); and what every action of the workflow does on its bound types (403); a state still in use 400",
    ),
    (
        "GET /api/v4/workflow-templates/{workflow_id}/transitions/{transition_id}/",
        "workflow_template_view on the workflow (404); a transition of another workflow 404",
    ),
    (
        "PATCH /api/v4/workflow-templates/{workflow_id}/transitions/{transition_id}/",
        "workflow_template_edit on the workflow (403/404); and what every action of the workflow does on its bound types (403)",
    ),
    (
        "DELETE /api/v4/workflow-templates/{workflow_id}/transitions/{transition_id}/",
        "workflow_template_edit on the workflow (403/404); and what every action of the workflow does on its bound types (403); a transition the logs record 400",
    ),
    (
        "GET /api/v4/workflow-templates/{workflow_id}/transitions/",
        "workflow_template_view; else 404",
    ),
    (
        "POST /api/v4/workflow-templates/{workflow_id}/transitions/",
        "workflow_template_edit (403/404); and what every action of the workflow does on its bound types (403)",
    ),
    (
        "GET /api/v4/workflow-templates/{workflow_id}/states/{state_id}/actions/",
        "workflow_template_view; else 404",
    ),
    (
        "POST /api/v4/workflow-templates/{workflow_id}/states/{state_id}/actions/",
        "workflow_template_edit (403/404); an unseen metadata type or role 400; what the action does on every bound type (403)",
    ),
    (
        "DELETE /api/v4/workflow-templates/{workflow_id}/states/{state_id}/actions/{action_id}/",
        "workflow_template_edit (403/404); what the action does on every bound type (403)",
    ),
    (
        "GET /api/v4/workflow-templates/{workflow_id}/transitions/{transition_id}/triggers/",
        "workflow_template_view; else 404",
    ),
    (
        "POST /api/v4/workflow-templates/{workflow_id}/transitions/{transition_id}/triggers/",
        "workflow_template_edit (403/404); and what every action of the workflow does on its bound types (403)",
    ),
    (
        "DELETE /api/v4/workflow-templates/{workflow_id}/transitions/{transition_id}/triggers/{event_type}/",
        "workflow_template_edit (403/404); and what every action of the workflow does on its bound types (403)",
    ),
    (
        "GET /api/v4/cabinets/",
        "list: cabinets with cabinet_view (an ACL on the cabinet or on the root of its tree)",
    ),
    (
        "POST /api/v4/cabinets/",
        "a root: global cabinet_create (403); a sub-cabinet: cabinet_create on the parent (403, or 400 when the caller cannot see it: a body reference)",
    ),
    (
        "GET /api/v4/cabinets/{cabinet_id}/",
        "cabinet_view; else 404",
    ),
    (
        "PATCH /api/v4/cabinets/{cabinet_id}/",
        "cabinet_edit (403/404)",
    ),
    (
        "DELETE /api/v4/cabinets/{cabinet_id}/",
        "cabinet_delete (403/404)",
    ),
    (
        "GET /api/v4/cabinets/{cabinet_id}/documents/",
        "cabinet_view (404); list: its documents with document_view",
    ),
    (
        "POST /api/v4/cabinets/{cabinet_id}/documents/add/",
        "cabinet_add_document on the cabinet (403/404), then on the document (403, or 400 when the caller cannot see it: a body reference)",
    ),
    (
        "POST /api/v4/cabinets/{cabinet_id}/documents/remove/",
        "cabinet_remove_document on the cabinet (403/404), then on the document (403, or 400 when the caller cannot see it: a body reference)",
    ),
    (
        "GET /api/v4/search/documents/",
        "list: matching documents with document_view",
    ),
    (
        "GET /api/v4/search/metadata/",
        "list: matching values with document_view, and document_metadata_view on the document and on the type",
    ),
    (
        "GET /api/v5/objects/{app_label}/{model_name}/{object_id}/acls/",
        "acls.acl_view on the object (403/404); list: all its ACLs",
    ),
    (
        "POST /api/v5/objects/{app_label}/{model_name}/{object_id}/acls/",
        "acls.acl_edit on the object (403/404)",
    ),
    (
        "GET /api/v5/objects/{app_label}/{model_name}/{object_id}/explain/",
        "about oneself: acls.acl_view or view on the object (404); about another user: acls.acl_view on the object (403/404)",
    ),
    (
        "GET /api/v5/objects/{app_label}/{model_name}/{object_id}/acls/{acl_id}/",
        "acls.acl_view on the object (403/404); an ACL of another object 404",
    ),
    (
        "DELETE /api/v5/objects/{app_label}/{model_name}/{object_id}/acls/{acl_id}/",
        "acls.acl_edit on the object (403/404); holding each of its permissions there (403)",
    ),
    (
        "POST /api/v5/objects/{app_label}/{model_name}/{object_id}/acls/{acl_id}/permissions/add/",
        "acls.acl_edit on the object (403/404); an ACL of another object 404; the role visible (400); holding the permission there (403)",
    ),
    (
        "POST /api/v5/objects/{app_label}/{model_name}/{object_id}/acls/{acl_id}/permissions/remove/",
        "acls.acl_edit on the object (403/404); an ACL of another object 404; the role visible (400); holding the permission there (403)",
    ),
    (
        "GET /api/v4/webhooks/",
        "list: every webhook for a superuser; the caller's own with global webhook_view; else 403",
    ),
    (
        "POST /api/v4/webhooks/",
        "global webhook_create (403); the webhook is the caller's",
    ),
    (
        "GET /api/v4/webhooks/{webhook_id}/",
        "another user's webhook 404 (a superuser: any); global webhook_view (403)",
    ),
    (
        "PATCH /api/v4/webhooks/{webhook_id}/",
        "another user's webhook 404 (a superuser: any); global webhook_edit (403)",
    ),
    (
        "DELETE /api/v4/webhooks/{webhook_id}/",
        "another user's webhook 404 (a superuser: any); global webhook_delete (403)",
    ),
    (
        "GET /api/v4/webhooks/{webhook_id}/deliveries/",
        "another user's webhook 404 (a superuser: any); global webhook_view (403)",
    ),
    (
        "POST /api/v4/webhooks/{webhook_id}/deliveries/{delivery_id}/retry/",
        "another user's webhook 404 (a superuser: any); global webhook_edit (403)",
    ),
    (
        "POST /api/v4/devices/",
        "public: the body's username and password (401 when wrong); the device is that user's",
    ),
    (
        "GET /api/v4/devices/",
        "one's own; another user's with global user_view, else that user 404",
    ),
    (
        "DELETE /api/v4/devices/{device_id}/",
        "one's own; another user's: user_view (404), global user_edit (403), a superuser's only by a superuser (403), holding everything its user holds (403)",
    ),
    (
        "GET /api/v4/sync/",
        "one's own device (another user's 404); sends exactly the documents, values and files the caller may view",
    ),
    (
        "POST /api/v4/sync/push/",
        "one's own device (another user's 404); each write as the same write online",
    ),
    (
        "POST /api/v4/sync/push/file/",
        "one's own device (another user's 404); refused before its bytes as POST /api/v4/documents/{document_id}/files/ (200 with the refusal: not_found for a document the caller may not view, permission_denied without document_file_new); allowed, it needs the bytes (400 without them)",
    ),
];

/// The answer for an object named in a request body: one the caller cannot see is invalid
/// input (400 naming the field), never a 404, which is kept for the URL's objects.
fn body_ref(e: Exp) -> Exp {
    match e {
        Exp::No(404) => Exp::No(400),
        e => e,
    }
}

fn acls_path(o: Obj) -> String {
    let (a, m) = o.0.names();
    format!("/api/v5/objects/{a}/{m}/{}/acls/", o.1)
}

// ----- JSON helpers ------------------------------------------------------------------------------

fn items(v: &Value) -> Vec<Value> {
    if let Some(r) = v.get("results").and_then(Value::as_array) {
        r.clone()
    } else {
        v.as_array().cloned().unwrap_or_default()
    }
}

fn id(v: &Value) -> i64 {
    v["id"].as_i64().unwrap_or_else(|| panic!("no id in {v}"))
}

fn ids(v: &Value) -> BTreeSet<String> {
    items(v).iter().map(|x| x["id"].to_string()).collect()
}

fn pks(v: &Value) -> BTreeSet<String> {
    (items(v).iter())
        .map(|x| x["pk"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn strs(v: &Value) -> BTreeSet<String> {
    (items(v).iter())
        .filter_map(|x| x.as_str().map(str::to_owned))
        .collect()
}

fn set<I: IntoIterator<Item = i64>>(i: I) -> BTreeSet<String> {
    i.into_iter().map(|x| x.to_string()).collect()
}

/// What an action (its `action` object) does, as far as access goes.
fn action_model(a: &Value) -> ActM {
    let kind = a["type"].as_str().unwrap_or_default().to_owned();
    match kind.as_str() {
        "grant_document_access" | "revoke_document_access" => {
            ActM::Access(a["permission"].as_str().unwrap_or_default().to_owned())
        }
        _ => {
            let mts = match a.get("metadata_type_ids") {
                Some(ids) => ids
                    .as_array()
                    .map(|v| v.iter().filter_map(Value::as_i64).collect())
                    .unwrap_or_default(),
                None => a["metadata_type_id"].as_i64().into_iter().collect(),
            };
            ActM::Metadata(kind, mts)
        }
    }
}

fn id_set(v: &Value) -> BTreeSet<i64> {
    items(v).iter().map(id).collect()
}

// ----- the run -----------------------------------------------------------------------------------

#[derive(Clone, Debug)]
struct Caller {
    id: Option<i64>,
    name: String,
    password: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Cat {
    /// The server let a caller do or see what the evaluator refuses.
    AllowsRefused,
    /// A list showed items the evaluator says are hidden.
    ListShowsHidden,
    /// A call the evaluator refuses was answered with a refusal but changed something anyway.
    RefusedChanged,
    /// A call the evaluator allows was carried out but answered 403/404 (the caller is told it
    /// failed).
    DoneButRefused,
    /// 403 where the caller may not even see the object (existence revealed).
    RevealsExistence,
    /// The server refused what the evaluator allows.
    RefusesAllowed,
    /// A list missed items the evaluator says are visible.
    ListMissesVisible,
    /// 404 where the caller may view the object, or 403 for an object that no longer exists
    /// (api.md says 403 and 404): a deviation from the contract that reveals nothing; reported as
    /// a note, it does not fail the test.
    WrongRefusalCode,
    /// A call the server answered 2xx had no visible effect.
    AllowedNoEffect,
    /// The permission check passed as the evaluator says, but the answer is another success or a
    /// 400 (a lifecycle or validation rule, not access control): a note, it does not fail the
    /// test.
    OtherOutcome,
    /// Any other difference (success code, a 400 or 500, `count`, the model after a phase).
    Other,
}

type Check<'a> = &'a dyn Fn(&Model, i64) -> Exp;
/// Whether the user may see a target (to pick targets a user may act on).
type Seen<T> = fn(&Model, i64, &T) -> bool;
type ListCheck<'a> = &'a dyn Fn(&Model, i64) -> Result<BTreeSet<String>, u16>;
type Restore<'a> = &'a dyn Fn(&mut Ctx, &[Value], &[Value]) -> bool;
/// A creation of a global thing: operation, collection, the global permission, a body.
type Creation = (&'static str, &'static str, &'static str, fn(u64) -> Value);

/// One write to try as every caller.
struct Change<'a> {
    op: &'static str,
    target: String,
    method: &'static str,
    path: String,
    body: Option<Value>,
    /// A multipart upload instead of a JSON body.
    upload: bool,
    /// Admin GETs whose answers the call may change.
    probe: Vec<String>,
    /// Whether an allowed call must change what the probes show.
    change: bool,
    exp: Check<'a>,
    /// Puts back what the probes showed before (`before`, `after`); `false` when it cannot and
    /// has updated the model instead.
    restore: Restore<'a>,
}

struct Ctx {
    s: Server,
    /// Without a connection pool (requests with a body, uploads).
    agent: ureq::Agent,
    /// With one (requests without a body).
    pooled: ureq::Agent,
    m: Model,
    callers: Vec<Caller>,
    dice: Dice,
    seq: u64,
    requests: usize,
    comparisons: usize,
    problems: Vec<(Cat, &'static str, String)>,
    exercised: BTreeSet<&'static str>,
    /// The roles and groups the deletions may delete.
    spare_roles: Vec<i64>,
    spare_groups: Vec<i64>,
    /// Objects given to [`Ctx::destroy`] so far.
    destroyed: usize,
    /// Operation -> (allowed for a non-superuser, refused for an authenticated user).
    stats: BTreeMap<&'static str, (usize, usize)>,
}

impl Ctx {
    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// One exchange. A request with a body goes on a fresh connection: a refusal may leave the
    /// body unread, after which the server closes the connection, and a pooled one would then
    /// fail the next request.
    fn raw(
        &mut self,
        method: &str,
        path: &str,
        user: Option<(&str, &str)>,
        body: Option<&Value>,
    ) -> (u16, Value) {
        self.requests += 1;
        let agent = if matches!(method, "GET" | "DELETE") {
            &self.pooled
        } else {
            &self.agent
        };
        support::request(agent, &self.s.base, method, path, user, body)
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
    }

    fn call(&mut self, c: &Caller, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        let user = c.id.map(|_| (c.name.as_str(), c.password.as_str()));
        self.raw(method, path, user, body)
    }

    fn upload(&mut self, c: &Caller, path: &str) -> (u16, Value) {
        match c.id {
            // The credentials are checked before the body is read.
            None => self.raw("POST", path, None, Some(&json!({}))),
            Some(_) => {
                self.requests += 1;
                support::upload(
                    &self.agent,
                    &self.s.base,
                    path,
                    (c.name.as_str(), c.password.as_str()),
                    "matrix.txt",
                    b"access matrix upload",
                )
                .unwrap_or_else(|e| panic!("upload {path}: {e}"))
            }
        }
    }

    fn admin(&mut self, method: &str, path: &str, body: Option<Value>) -> Value {
        let (st, v) = self.raw(method, path, Some(ADMIN), body.as_ref());
        assert!(
            (200..300).contains(&st),
            "as admin: {method} {path} {} -> {st} {v}",
            body.unwrap_or_default()
        );
        v
    }

    fn admin_get(&mut self, path: &str) -> Value {
        self.admin("GET", path, None)
    }

    /// Every item of a paginated list, as the administrator.
    fn admin_list(&mut self, path: &str) -> Vec<Value> {
        let sep = if path.contains('?') { '&' } else { '?' };
        let v = self.admin_get(&format!("{path}{sep}page_size=500"));
        assert!(v["next"].is_null(), "{path}: more than 500 items");
        items(&v)
    }

    fn problem(&mut self, cat: Cat, op: &'static str, detail: String) {
        self.problems.push((cat, op, detail));
    }

    fn expect(&self, c: &Caller, f: Check) -> Exp {
        match c.id {
            None => Exp::No(401),
            Some(u) => f(&self.m, u),
        }
    }

    fn judge(&mut self, op: &'static str, c: &Caller, target: &str, exp: Exp, got: u16) {
        self.comparisons += 1;
        if let Some(u) = c.id {
            let sup = self.m.sup(u);
            let s = self.stats.entry(op).or_default();
            match exp {
                Exp::Ok(_) if !sup => s.0 += 1,
                Exp::No(_) | Exp::Refused | Exp::Gone => s.1 += 1,
                Exp::Ok(_) => {}
            }
        }
        let cat = match (exp, got) {
            (Exp::Ok(a), b) | (Exp::No(a), b) if a == b => return,
            (Exp::Refused, 403 | 404) | (Exp::Gone, 404) => return,
            (Exp::Gone, 403) => Cat::WrongRefusalCode,
            (Exp::Ok(_), b) if (200..300).contains(&b) || b == 400 => Cat::OtherOutcome,
            (Exp::Refused, b) if (200..300).contains(&b) => Cat::AllowsRefused,
            (Exp::No(_), b) if (200..300).contains(&b) => Cat::AllowsRefused,
            (Exp::Ok(_), 403 | 404) => Cat::RefusesAllowed,
            (Exp::No(404), 403) => Cat::RevealsExistence,
            (Exp::No(403), 404) => Cat::WrongRefusalCode,
            _ => Cat::Other,
        };
        let who = &c.name;
        self.problem(
            cat,
            op,
            format!("{who} on {target}: expected {exp:?}, got {got}"),
        );
    }

    /// Calls GET `path` as every caller and compares the status.
    fn read(&mut self, op: &'static str, path: &str, target: &str, f: Check) {
        self.exercised.insert(op);
        for c in self.callers.clone() {
            let exp = self.expect(&c, f);
            let (st, _) = self.call(&c, "GET", path, None);
            self.judge(op, &c, target, exp, st);
        }
    }

    /// Calls POST `path` with `body`, which changes nothing, as every caller and compares the
    /// status.
    fn post_read(&mut self, op: &'static str, path: &str, body: &Value, target: &str, f: Check) {
        self.exercised.insert(op);
        for c in self.callers.clone() {
            let exp = self.expect(&c, f);
            let (st, _) = self.call(&c, "POST", path, Some(body));
            self.judge(op, &c, target, exp, st);
        }
    }

    /// Calls GET `path` as every caller and compares the status and the items listed.
    fn read_list(
        &mut self,
        op: &'static str,
        path: &str,
        target: &str,
        f: ListCheck,
        extract: fn(&Value) -> BTreeSet<String>,
    ) {
        self.exercised.insert(op);
        for c in self.callers.clone() {
            let exp = match c.id {
                None => Err(401),
                Some(u) => f(&self.m, u),
            };
            let (st, body) = self.call(&c, "GET", path, None);
            match exp {
                Err(code) => self.judge(op, &c, target, Exp::No(code), st),
                Ok(want) => {
                    self.judge(op, &c, target, Exp::Ok(200), st);
                    if st == 200 {
                        self.compare_items(op, &c, target, &want, &body, extract);
                    }
                }
            }
        }
    }

    fn compare_items(
        &mut self,
        op: &'static str,
        c: &Caller,
        target: &str,
        want: &BTreeSet<String>,
        body: &Value,
        extract: fn(&Value) -> BTreeSet<String>,
    ) {
        self.comparisons += 1;
        let got = extract(body);
        let extra: Vec<&String> = got.difference(want).collect();
        let missing: Vec<&String> = want.difference(&got).collect();
        let who = &c.name;
        if !extra.is_empty() {
            self.problem(
                Cat::ListShowsHidden,
                op,
                format!("{who} on {target}: lists {extra:?}, which the evaluator hides"),
            );
        }
        if !missing.is_empty() {
            self.problem(
                Cat::ListMissesVisible,
                op,
                format!("{who} on {target}: misses {missing:?}"),
            );
        }
        if let Some(n) = body.get("count").and_then(Value::as_u64) {
            let listed = items(body).len() as u64;
            let same = extra.is_empty() && missing.is_empty();
            if (same && n != want.len() as u64) || n != listed || !body["next"].is_null() {
                self.problem(
                    Cat::Other,
                    op,
                    format!(
                        "{who} on {target}: count {n}, {listed} listed, next {}, evaluator {}",
                        body["next"],
                        want.len()
                    ),
                );
            }
        }
    }

    fn probe(&mut self, paths: &[String]) -> Vec<Value> {
        let mut out = Vec::new();
        for p in paths {
            let (st, body) = self.raw("GET", p, Some(ADMIN), None);
            out.push(json!({"status": st, "body": body}));
        }
        out
    }

    /// Runs one write as `c`: compares the status, checks what changed, restores.
    /// One half of an add/remove pair (`{path}{sub}/add/`, `{path}{sub}/remove/`) with `body`,
    /// undone by the other half; `probe` is the admin listing it changes.
    #[allow(clippy::too_many_arguments)]
    fn toggle(
        &mut self,
        c: &Caller,
        op: &'static str,
        target: String,
        (path, sub, verb): (&str, &str, &str),
        body: Value,
        probe: String,
        exp: Check<'_>,
    ) {
        let undo = if verb == "add" { "remove" } else { "add" };
        let undo_path = format!("{path}{sub}/{undo}/");
        let undo_body = body.clone();
        self.write(
            c,
            &Change {
                op,
                target,
                method: "POST",
                path: format!("{path}{sub}/{verb}/"),
                body: Some(body),
                upload: false,
                probe: vec![probe],
                change: true,
                exp,
                restore: &|x, _, _| {
                    x.admin("POST", &undo_path, Some(undo_body.clone()));
                    true
                },
            },
        );
    }

    fn write(&mut self, c: &Caller, w: &Change) {
        self.exercised.insert(w.op);
        let exp = self.expect(c, w.exp);
        let before = self.probe(&w.probe);
        let (st, _) = if w.upload {
            self.upload(c, &w.path)
        } else {
            self.call(c, w.method, &w.path, w.body.as_ref())
        };
        let mark = self.problems.len();
        self.judge(w.op, c, &w.target, exp, st);
        let after = self.probe(&w.probe);
        let passed = (200..300).contains(&st);
        if after != before {
            if !passed {
                self.changed_anyway(w.op, &w.target, c, exp, mark);
                let (b, a) = (Value::from(before.clone()), Value::from(after.clone()));
                if let Some((_, _, last)) = self.problems.last_mut() {
                    last.push_str(&format!(" ({st}); {:?}: {b} -> {a}", w.probe));
                }
            }
            if (w.restore)(self, &before, &after) {
                let back = self.probe(&w.probe);
                assert_eq!(
                    back, before,
                    "{}: could not restore after {} on {}",
                    w.op, c.name, w.target
                );
            }
        } else if passed && w.change {
            let who = &c.name;
            self.problem(
                Cat::AllowedNoEffect,
                w.op,
                format!("{who} on {}: answered {st} but nothing changed", w.target),
            );
        }
    }

    /// A call answered with a refusal changed what its probes show: a hole when the evaluator
    /// refuses it too, else a wrong answer (which replaces the "refuses what is allowed" report
    /// `judge` has just made, from `mark` on).
    fn changed_anyway(
        &mut self,
        op: &'static str,
        target: &str,
        c: &Caller,
        exp: Exp,
        mark: usize,
    ) {
        let who = &c.name;
        let cat = if matches!(exp, Exp::Ok(_)) {
            self.problems.truncate(mark);
            Cat::DoneButRefused
        } else {
            Cat::RefusedChanged
        };
        self.problem(
            cat,
            op,
            format!("{who} on {target}: answered a refusal but did it"),
        );
    }

    /// Which of `all` `c` tries: one for anonymous calls, all for the users of the edge cases,
    /// else three: one the caller may see (`seen`), when there is one, and two others.
    fn pick<T: Clone>(&mut self, c: &Caller, all: &[T], seen: Seen<T>) -> Vec<T> {
        let indices: Vec<usize> = (0..all.len()).collect();
        let picked = match c.id {
            None => self.dice.sample(&indices, 1),
            Some(_) if c.name.starts_with("edge") => indices,
            Some(u) => {
                let visible: Vec<usize> = (indices.iter().copied())
                    .filter(|i| seen(&self.m, u, &all[*i]))
                    .collect();
                let mut out = self.dice.sample(&visible, 1);
                let others: Vec<usize> = (indices.iter().copied())
                    .filter(|i| !out.contains(i))
                    .collect();
                out.extend(self.dice.sample(&others, 3 - out.len()));
                out
            }
        };
        picked.into_iter().map(|i| all[i].clone()).collect()
    }

    /// Runs `run(caller, target)` for every caller on a few of `targets` (see [`Ctx::pick`]).
    fn writes<T: Clone>(
        &mut self,
        targets: &[T],
        seen: Seen<T>,
        mut run: impl FnMut(&mut Ctx, &Caller, T),
    ) {
        for c in self.callers.clone() {
            for t in self.pick(&c, targets, seen) {
                run(self, &c, t);
            }
        }
    }

    /// A deletion (or any change that is not undone) tried by every caller in a random order;
    /// the first allowed one happens, `apply` updates the model, later callers see its effect.
    fn destroy(&mut self, w: &Change, apply: &dyn Fn(&mut Ctx)) {
        self.exercised.insert(w.op);
        // Anonymous first, the users in a random order, the administrator last and only for
        // every other object (so that users get their chance, and some objects survive).
        let mut order = self.callers.clone();
        let anon = order.remove(0);
        let admin = order.remove(0);
        self.dice.shuffle(&mut order);
        order.insert(0, anon);
        self.destroyed += 1;
        if self.destroyed.is_multiple_of(2) {
            order.push(admin);
        }
        let mut gone = false;
        for c in order {
            let exp = match self.expect(&c, w.exp) {
                Exp::No(404) if gone => Exp::Gone,
                e => e,
            };
            let before = self.probe(&w.probe);
            let (st, _) = self.call(&c, w.method, &w.path, w.body.as_ref());
            let mark = self.problems.len();
            self.judge(w.op, &c, &w.target, exp, st);
            let after = self.probe(&w.probe);
            let passed = (200..300).contains(&st);
            if after != before {
                if !passed {
                    self.changed_anyway(w.op, &w.target, &c, exp, mark);
                }
                apply(self);
                gone = true;
            } else if passed && w.change {
                let who = &c.name;
                self.problem(
                    Cat::AllowedNoEffect,
                    w.op,
                    format!("{who} on {}: answered {st} but nothing changed", w.target),
                );
            }
        }
    }

    /// [`Ctx::destroy`] for `DELETE path`, watching `probe` (by default the object itself).
    fn delete(
        &mut self,
        op: &'static str,
        target: String,
        path: String,
        probe: Option<String>,
        exp: Check,
        apply: &dyn Fn(&mut Ctx),
    ) {
        let probe = vec![probe.unwrap_or_else(|| path.clone())];
        let change = Change {
            op,
            target,
            method: "DELETE",
            path,
            body: None,
            upload: false,
            probe,
            change: true,
            exp,
            restore: &|_, _, _| false,
        };
        self.destroy(&change, apply);
    }

    /// Waits until no background task is pending (spec 2.4 tasks).
    fn wait_tasks(&mut self) {
        let started = Instant::now();
        loop {
            let tasks = self.admin_get("/api/v4/tasks/?page_size=500");
            let open = items(&tasks)
                .iter()
                .filter(|t| t["state"] != "failed")
                .count();
            if open == 0 {
                return;
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "tasks still pending: {tasks}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    // ----- the model, as the administrator sees it ----------------------------------------------

    fn load_model(&mut self) -> Model {
        let mut m = Model::default();
        for u in self.admin_list("/api/v4/users/") {
            m.users.insert(
                id(&u),
                UserM {
                    name: u["username"].as_str().unwrap_or_default().to_owned(),
                    superuser: u["is_superuser"] == true,
                    active: u["is_active"] == true,
                },
            );
        }
        for g in self.admin_list("/api/v4/groups/") {
            let g = id(&g);
            let members = self.admin_list(&format!("/api/v4/groups/{g}/users/"));
            m.groups.insert(g, members.iter().map(id).collect());
        }
        for r in self.admin_list("/api/v4/roles/") {
            let r = id(&r);
            let groups = self.admin_list(&format!("/api/v4/roles/{r}/groups/"));
            let perms = self.admin_list(&format!("/api/v4/roles/{r}/permissions/"));
            m.roles.insert(
                r,
                RoleM {
                    groups: groups.iter().map(id).collect(),
                    global: pks(&Value::from(perms)),
                },
            );
        }
        for t in self.admin_list("/api/v4/documents/types/") {
            let dt = id(&t);
            m.dts.insert(dt);
            for a in self.admin_list(&format!("/api/v4/documents/types/{dt}/metadata-types/")) {
                m.assocs.insert(
                    id(&a),
                    AssocM {
                        dt,
                        mt: id(&a["metadata_type"]),
                        required: a["required"] == true,
                    },
                );
            }
        }
        for t in self.admin_list("/api/v4/metadata/metadata-types/") {
            m.mts.insert(id(&t));
        }
        for d in self.admin_list("/api/v4/documents/") {
            let doc = id(&d);
            m.docs.insert(doc, id(&d["document_type"]));
            self.load_document(&mut m, doc);
        }
        for c in self.admin_list("/api/v4/cabinets/") {
            let cab = id(&c);
            let docs = self.admin_list(&format!("/api/v4/cabinets/{cab}/documents/"));
            m.cabs.insert(
                cab,
                CabM {
                    parent: c["parent_id"].as_i64(),
                    docs: docs.iter().map(id).collect(),
                },
            );
        }
        for w in self.admin_list("/api/v4/workflow-templates/") {
            let wf = id(&w);
            let mut model = self.load_workflow(wf);
            model.dts = (w["document_type_ids"]
                .as_array()
                .cloned()
                .unwrap_or_default())
            .iter()
            .filter_map(Value::as_i64)
            .collect();
            m.wfs.insert(wf, model);
        }
        let mut objects: Vec<Obj> = Vec::new();
        objects.extend(m.dts.iter().map(|x| (K::DocType, *x)));
        objects.extend(m.docs.keys().map(|x| (K::Doc, *x)));
        objects.extend(m.mts.iter().map(|x| (K::MetaType, *x)));
        objects.extend(m.cabs.keys().map(|x| (K::Cabinet, *x)));
        objects.extend(m.roles.keys().map(|x| (K::Role, *x)));
        objects.extend(m.wfs.keys().map(|x| (K::Workflow, *x)));
        for o in objects {
            let acls = self.admin_list(&acls_path(o));
            if !acls.is_empty() {
                m.acls.insert(o, acl_map(&acls));
            }
        }
        m
    }

    /// The values, files and workflow instances of document `doc`.
    fn load_document(&mut self, m: &mut Model, doc: i64) {
        m.values.retain(|_, v| v.doc != doc);
        m.files.retain(|_, d| *d != doc);
        m.insts.retain(|_, i| i.doc != doc);
        for v in self.admin_list(&format!("/api/v4/documents/{doc}/metadata/")) {
            m.values.insert(
                id(&v),
                ValM {
                    doc,
                    mt: id(&v["metadata_type"]),
                },
            );
        }
        for f in items(&self.admin_get(&format!("/api/v4/documents/{doc}/files/?page_size=500"))) {
            m.files.insert(id(&f), doc);
        }
        for i in
            items(&self.admin_get(&format!("/api/v4/documents/{doc}/workflows/?page_size=500")))
        {
            m.insts.insert(
                id(&i),
                InstM {
                    doc,
                    wf: i["workflow_id"].as_i64().unwrap_or_default(),
                    state: i["current_state_id"].as_i64(),
                },
            );
        }
    }

    fn load_workflow(&mut self, wf: i64) -> WfM {
        let mut model = WfM::default();
        for s in items(&self.admin_get(&format!(
            "/api/v4/workflow-templates/{wf}/states/?page_size=500"
        ))) {
            let state = id(&s);
            let actions = self.admin_get(&format!(
                "/api/v4/workflow-templates/{wf}/states/{state}/actions/?page_size=500"
            ));
            for a in items(&actions) {
                model.actions.insert(id(&a), action_model(&a["action"]));
            }
            model.states.insert(state, id_set(&actions));
        }
        for t in items(&self.admin_get(&format!(
            "/api/v4/workflow-templates/{wf}/transitions/?page_size=500"
        ))) {
            model.transitions.insert(
                id(&t),
                TrM {
                    from: t["origin_state_id"].as_i64().unwrap_or_default(),
                    to: t["destination_state_id"].as_i64().unwrap_or_default(),
                    triggers: strs(&t["triggers"]),
                },
            );
        }
        model
    }

    fn resync_document(&mut self, doc: i64) {
        let mut m = std::mem::take(&mut self.m);
        let (st, d) = self.raw(
            "GET",
            &format!("/api/v4/documents/{doc}/"),
            Some(ADMIN),
            None,
        );
        if st == 200 {
            m.docs.insert(doc, id(&d["document_type"]));
            self.load_document(&mut m, doc);
        } else {
            m.remove_doc(doc);
        }
        self.m = m;
    }

    fn resync_workflow(&mut self, wf: i64) {
        let dts = self
            .m
            .wfs
            .get(&wf)
            .map(|w| w.dts.clone())
            .unwrap_or_default();
        let mut model = self.load_workflow(wf);
        model.dts = dts;
        self.m.wfs.insert(wf, model);
    }

    /// Compares the model with what the administrator sees; reports and adopts a difference.
    fn verify_model(&mut self, phase: &str) {
        let fresh = self.load_model();
        if fresh != self.m {
            let a = format!("{:#?}", self.m);
            let b = format!("{fresh:#?}");
            let diff: Vec<String> = (a.lines().zip(b.lines()))
                .filter(|(x, y)| x != y)
                .take(12)
                .map(|(x, y)| format!("model {x} / server {y}"))
                .collect();
            self.problem(
                Cat::Other,
                "model",
                format!("after {phase} the server differs from the model: {diff:#?}"),
            );
            self.m = fresh;
        }
    }

    // ----- ACL state helpers ---------------------------------------------------------------

    fn grant(&mut self, o: Obj, role: i64, perms: &[&str]) {
        let path = acls_path(o);
        let existing = acl_map(&self.admin_list(&path));
        let acl = match existing.get(&role) {
            Some(a) => a.id,
            None => id(&self.admin("POST", &path, Some(json!({ "role_id": role })))),
        };
        for p in perms {
            self.admin(
                "POST",
                &format!("{path}{acl}/permissions/add/"),
                Some(json!({ "permission": p })),
            );
        }
    }

    /// Makes the ACLs of `o` what `want` (an admin ACL list body) shows; `false` if an ACL had
    /// to be created again (its id changed).
    fn set_acls(&mut self, o: Obj, want: &Value) -> bool {
        let path = acls_path(o);
        let want = acl_map(&items(want));
        let cur = acl_map(&self.admin_list(&path));
        let mut same_ids = true;
        for (role, a) in &cur {
            match want.get(role) {
                None => {
                    self.admin("DELETE", &format!("{path}{}/", a.id), None);
                }
                Some(w) => {
                    for p in w.perms.difference(&a.perms) {
                        self.admin(
                            "POST",
                            &format!("{path}{}/permissions/add/", a.id),
                            Some(json!({ "permission": p })),
                        );
                    }
                    for p in a.perms.difference(&w.perms) {
                        self.admin(
                            "POST",
                            &format!("{path}{}/permissions/remove/", a.id),
                            Some(json!({ "permission": p })),
                        );
                    }
                }
            }
        }
        for (role, w) in &want {
            if !cur.contains_key(role) {
                let perms: Vec<&str> = w.perms.iter().map(String::as_str).collect();
                self.grant(o, *role, &perms);
                same_ids = false;
            }
        }
        if !same_ids {
            let acls = self.admin_list(&path);
            self.m.acls.insert(o, acl_map(&acls));
        }
        same_ids
    }

    /// Deletes, as the administrator, the items `after` lists and `before` does not.
    fn delete_new(&mut self, before: &Value, after: &Value, item: &dyn Fn(i64) -> String) {
        let old = id_set(&before["body"]);
        for n in id_set(&after["body"]).difference(&old) {
            self.admin("DELETE", &item(*n), None);
        }
    }
}

fn acl_map(list: &[Value]) -> BTreeMap<i64, AclM> {
    (list.iter())
        .map(|a| {
            (
                id(&a["role"]),
                AclM {
                    id: id(a),
                    perms: pks(&a["permissions"]),
                },
            )
        })
        .collect()
}

// ----- building the world ------------------------------------------------------------------------

const SEED: u64 = 0x0011_ACCE_55ED;

fn build_world(x: &mut Ctx) {
    // The keys the world grants must be grantable where they are granted (spec 5.3).
    for k in ACL_KINDS {
        let (a, m) = k.names();
        let grantable = pks(&x.admin_get(&format!(
            "/api/v5/objects/{a}/{m}/permissions/?page_size=500"
        )));
        for p in k.pool() {
            assert!(grantable.contains(*p), "{p} is not grantable on {a}.{m}");
        }
    }
    let me = x.admin_get("/api/v4/users/current/");
    x.callers.push(Caller {
        id: Some(id(&me)),
        name: ADMIN.0.to_owned(),
        password: ADMIN.1.to_owned(),
    });
    let mut regular = Vec::new();
    for n in 1..=7 {
        let (name, password) = (format!("user{n}"), format!("password-of-user{n}"));
        let u = x.admin(
            "POST",
            "/api/v4/users/",
            Some(json!({"username": name, "password": password})),
        );
        regular.push(id(&u));
        x.callers.push(Caller {
            id: Some(id(&u)),
            name,
            password,
        });
    }
    // Targets of user edits and deletions (never callers).
    let mut targets = Vec::new();
    for n in 1..=4 {
        let t = x.admin(
            "POST",
            "/api/v4/users/",
            Some(json!({"username": format!("target{n}"), "password": format!("password-of-target{n}")})),
        );
        targets.push(id(&t));
    }
    x.admin(
        "POST",
        "/api/v4/users/",
        Some(json!({"username": "target_super", "password": "password-of-target-super", "is_superuser": true})),
    );
    let sleeper = x.admin(
        "POST",
        "/api/v4/users/",
        Some(json!({"username": "sleeper", "password": "password-of-sleeper"})),
    );
    x.admin(
        "PATCH",
        &format!("/api/v4/users/{}/", id(&sleeper)),
        Some(json!({"is_active": false})),
    );
    // edge1 and edge2 hold only the grants of the edge cases (role6 and role7, below).
    let mut edge_users = Vec::new();
    for n in 1..=2 {
        let (name, password) = (format!("edge{n}"), format!("password-of-edge{n}"));
        let u = id(&x.admin(
            "POST",
            "/api/v4/users/",
            Some(json!({"username": name, "password": password})),
        ));
        edge_users.push(u);
        x.callers.push(Caller {
            id: Some(u),
            name,
            password,
        });
    }
    let mut groups = Vec::new();
    for n in 1..=5 {
        let g = x.admin(
            "POST",
            "/api/v4/groups/",
            Some(json!({ "name": format!("group{n}") })),
        );
        groups.push(id(&g));
    }
    // user(k+1) is in group(k+1) and sometimes in another; user6 is in two random groups;
    // user7 stays in no group (it may see itself and nothing else).
    let mut membership: BTreeSet<(i64, i64)> = BTreeSet::new();
    for (k, g) in groups.iter().enumerate() {
        membership.insert((*g, regular[k]));
        if x.dice.chance(30) {
            membership.insert((groups[x.dice.below(groups.len())], regular[k]));
        }
    }
    for g in x.dice.sample(&groups, 2) {
        membership.insert((g, regular[5]));
    }
    // target2 and target3 hold what group1's roles grant: editing or deleting them needs
    // holding that too; target1 and target4 hold nothing.
    membership.insert((groups[0], targets[1]));
    membership.insert((groups[0], targets[2]));
    for (g, u) in membership {
        x.admin(
            "POST",
            &format!("/api/v4/groups/{g}/users/add/"),
            Some(json!({ "user_id": u })),
        );
    }
    let mut roles = Vec::new();
    for n in 1..=5 {
        let r = x.admin(
            "POST",
            "/api/v4/roles/",
            Some(json!({ "label": format!("role{n}") })),
        );
        let r = id(&r);
        roles.push(r);
        // role(k+1) is assigned to group(k+1), and sometimes to another.
        let mut to = BTreeSet::from([groups[n - 1]]);
        if x.dice.chance(25) {
            to.insert(groups[x.dice.below(groups.len())]);
        }
        for g in to {
            x.admin(
                "POST",
                &format!("/api/v4/roles/{r}/groups/add/"),
                Some(json!({ "group_id": g })),
            );
        }
    }
    // Each global key goes to one random role, or to none (jobs below add more).
    for p in GLOBAL_POOL {
        if x.dice.chance(15) {
            let r = roles[x.dice.below(roles.len())];
            x.admin(
                "POST",
                &format!("/api/v4/roles/{r}/permissions/add/"),
                Some(json!({ "permission": p })),
            );
        }
    }
    // Spare principals, the only ones deleted (so deletions never change who may do what): a
    // group with a member and a role assigned to it, an empty group, a role without a group.
    for n in 1..=2 {
        let g = id(&x.admin(
            "POST",
            "/api/v4/groups/",
            Some(json!({ "name": format!("spare group{n}") })),
        ));
        let r = id(&x.admin(
            "POST",
            "/api/v4/roles/",
            Some(json!({ "label": format!("spare role{n}") })),
        ));
        if n == 1 {
            let users = x.admin_list("/api/v4/users/");
            let t = id(users
                .iter()
                .find(|u| u["username"] == "target3")
                .expect("target3"));
            x.admin(
                "POST",
                &format!("/api/v4/groups/{g}/users/add/"),
                Some(json!({ "user_id": t })),
            );
            x.admin(
                "POST",
                &format!("/api/v4/roles/{r}/groups/add/"),
                Some(json!({ "group_id": g })),
            );
        }
        x.spare_groups.push(g);
        x.spare_roles.push(r);
    }
    let mut dts = Vec::new();
    for label in ["Invoice", "Contract", "Memo", "Spare"] {
        dts.push(id(&x.admin(
            "POST",
            "/api/v4/documents/types/",
            Some(json!({ "label": label })),
        )));
    }
    let mut mts = Vec::new();
    for (name, default) in [
        ("m_number", ""),
        ("m_party", ""),
        ("m_note", "common default"),
    ] {
        mts.push(id(&x.admin(
            "POST",
            "/api/v4/metadata/metadata-types/",
            Some(json!({"name": name, "label": name, "default": default})),
        )));
    }
    // Invoices require m_note (its default is added to every new invoice).
    x.admin(
        "POST",
        &format!("/api/v4/documents/types/{}/metadata-types/", dts[0]),
        Some(json!({"metadata_type_id": mts[2], "required": true})),
    );
    for (i, dt) in dts.iter().enumerate() {
        for (j, mt) in mts.iter().enumerate() {
            let wanted = if i == 3 {
                j == 1
            } else {
                x.dice.chance(60) || j == i
            };
            if wanted && !(i == 0 && j == 2) {
                x.admin(
                    "POST",
                    &format!("/api/v4/documents/types/{dt}/metadata-types/"),
                    Some(json!({"metadata_type_id": mt, "required": false})),
                );
            }
        }
    }
    // Two workflows with a reachable cycle and an unreachable state that carries the actions
    // and the trigger (so nothing the test does sets them off).
    for (label, dt, names) in [
        ("Review", dts[0], ["draft", "review", "archive"]),
        ("Approval", dts[1], ["open", "approved", "frozen"]),
    ] {
        let wf = id(&x.admin(
            "POST",
            "/api/v4/workflow-templates/",
            Some(json!({"label": label, "document_type_ids": [dt]})),
        ));
        let base = format!("/api/v4/workflow-templates/{wf}");
        let mut states = Vec::new();
        for (n, s) in names.iter().enumerate() {
            states.push(id(&x.admin(
                "POST",
                &format!("{base}/states/"),
                Some(json!({"label": s, "initial": n == 0})),
            )));
        }
        for (l, a, b) in [("go", 0, 1), ("back", 1, 0), ("thaw", 2, 0)] {
            let t = id(&x.admin(
                "POST",
                &format!("{base}/transitions/"),
                Some(json!({"label": l, "origin_state_id": states[a], "destination_state_id": states[b]})),
            ));
            if l == "thaw" {
                x.admin(
                    "POST",
                    &format!("{base}/transitions/{t}/triggers/"),
                    Some(json!({"event_type": "document_metadata_removed"})),
                );
            }
        }
        for n in 0..2 {
            x.admin(
                "POST",
                &format!("{base}/states/{}/actions/", states[2]),
                Some(json!({"label": format!("stamp {n}"), "when": "entry",
                    "action": {"type": "add_metadata", "metadata_type_ids": [mts[0]]}})),
            );
        }
    }
    let mut docs = Vec::new();
    for n in 1..=10 {
        let dt = dts[x.dice.below(3)];
        docs.push(id(&x.admin(
            "POST",
            "/api/v4/documents/",
            Some(json!({"document_type_id": dt, "label": format!("alpha doc {n}")})),
        )));
    }
    x.m = x.load_model();
    for d in docs.clone() {
        let dt = x.m.docs[&d];
        let have: BTreeSet<i64> =
            x.m.values
                .values()
                .filter(|v| v.doc == d)
                .map(|v| v.mt)
                .collect();
        let mine: Vec<i64> = (x.m.assocs.values())
            .filter(|a| a.dt == dt && !have.contains(&a.mt))
            .map(|a| a.mt)
            .collect();
        for mt in mine {
            if x.dice.chance(60) {
                let n = x.next_seq();
                x.admin(
                    "POST",
                    &format!("/api/v4/documents/{d}/metadata/"),
                    Some(json!({"metadata_type_id": mt, "value": format!("common value {n}")})),
                );
            }
        }
        if x.dice.chance(50) {
            let (st, f) = support::upload(
                &x.agent,
                &x.s.base,
                &format!("/api/v4/documents/{d}/files/"),
                ADMIN,
                "scan.txt",
                b"scanned",
            )
            .expect("upload");
            assert_eq!(st, 201, "{f}");
        }
    }
    // One instance of each workflow moves on, so instances differ in their current state.
    x.m = x.load_model();
    let mut moved = BTreeSet::new();
    for (i, inst) in x.m.insts.clone() {
        if moved.insert(inst.wf) {
            let wf = &x.m.wfs[&inst.wf];
            if let Some((t, _)) = wf
                .transitions
                .iter()
                .find(|(_, t)| Some(t.from) == inst.state)
            {
                x.admin(
                    "POST",
                    &format!("/api/v4/documents/{}/workflows/{i}/transitions/", inst.doc),
                    Some(json!({"transition_id": t, "comment": "setup"})),
                );
            }
        }
    }
    // A cabinet tree (A > A1 > A2) and another root (B).
    let a = id(&x.admin(
        "POST",
        "/api/v4/cabinets/",
        Some(json!({"label": "Cabinet A"})),
    ));
    let a1 = id(&x.admin(
        "POST",
        "/api/v4/cabinets/",
        Some(json!({"label": "Cabinet A1", "parent_id": a})),
    ));
    let a2 = id(&x.admin(
        "POST",
        "/api/v4/cabinets/",
        Some(json!({"label": "Cabinet A2", "parent_id": a1})),
    ));
    let b = id(&x.admin(
        "POST",
        "/api/v4/cabinets/",
        Some(json!({"label": "Cabinet B"})),
    ));
    for c in [a, a1, a2, b] {
        let k = 1 + x.dice.below(3);
        for d in x.dice.sample(&docs, k) {
            x.admin(
                "POST",
                &format!("/api/v4/cabinets/{c}/documents/add/"),
                Some(json!({ "document_id": d })),
            );
        }
    }
    // Object ACLs: for each object, some roles get a few keys grantable there, most often with
    // the key that lets them see it.
    x.m = x.load_model();
    let mut objects: Vec<Obj> = Vec::new();
    objects.extend(x.m.dts.iter().map(|o| (K::DocType, *o)));
    objects.extend(x.m.docs.keys().map(|o| (K::Doc, *o)));
    objects.extend(x.m.mts.iter().map(|o| (K::MetaType, *o)));
    objects.extend(x.m.cabs.keys().map(|o| (K::Cabinet, *o)));
    objects.extend(x.m.roles.keys().map(|o| (K::Role, *o)));
    objects.extend(x.m.wfs.keys().map(|o| (K::Workflow, *o)));
    for o in objects {
        for r in roles.clone() {
            if !x.dice.chance(25) {
                continue;
            }
            let k = 1 + x.dice.below(4);
            let mut perms = x.dice.sample(o.0.pool(), k);
            if x.dice.chance(70) {
                perms.push(o.0.view());
            }
            if o.0 == K::DocType && x.dice.chance(50) {
                perms.push(DOC_VIEW);
            }
            if (perms.contains(&ACL_EDIT) || perms.contains(&DM_ADD)) && x.dice.chance(70) {
                perms.push(if perms.contains(&ACL_EDIT) {
                    ACL_VIEW
                } else {
                    DM_VIEW
                });
            }
            perms.sort_unstable();
            perms.dedup();
            x.grant(o, r, &perms);
        }
    }
    // Each role also has a job: coherent grants, so that most operations have callers who may
    // do them without being superusers.
    let wfs: Vec<i64> = x.m.wfs.keys().copied().collect();
    let r = &roles;
    let jobs: Vec<(i64, &str)> = vec![
        (r[2], MT_CREATE),
        (r[2], DT_CREATE),
        (r[2], WF_CREATE),
        (r[3], USER_VIEW),
        (r[3], GROUP_VIEW),
        (r[4], USER_VIEW),
        (r[4], USER_CREATE),
        (r[4], USER_EDIT),
        (r[4], USER_DELETE),
        (r[4], GROUP_VIEW),
        (r[4], GROUP_EDIT),
        (r[4], GROUP_CREATE),
        (r[4], GROUP_DELETE),
        (r[4], ROLE_CREATE),
    ];
    for (role, p) in jobs {
        x.admin(
            "POST",
            &format!("/api/v4/roles/{role}/permissions/add/"),
            Some(json!({ "permission": p })),
        );
    }
    let dm_all = [DM_VIEW, DM_ADD, DM_EDIT, DM_REMOVE];
    let mut edge: Vec<(Obj, i64, Vec<&str>)> = vec![
        // Accounting: invoices and their metadata.
        (
            (K::DocType, dts[0]),
            r[0],
            vec![
                DT_VIEW,
                DOC_VIEW,
                DOC_CREATE,
                DOC_EDIT,
                FILE_NEW,
                WF_TRANSITION,
            ],
        ),
        ((K::DocType, dts[0]), r[0], dm_all.to_vec()),
        (
            (K::MetaType, mts[0]),
            r[0],
            [&[MT_VIEW][..], &dm_all].concat(),
        ),
        (
            (K::MetaType, mts[2]),
            r[0],
            [&[MT_VIEW][..], &dm_all].concat(),
        ),
        ((K::Workflow, wfs[0]), r[0], vec![WF_VIEW]),
        // Records: the cabinet tree A and contracts.
        (
            (K::Cabinet, a),
            r[1],
            vec![
                CAB_VIEW,
                CAB_CREATE,
                CAB_EDIT,
                CAB_DELETE,
                CAB_ADD_DOC,
                CAB_REMOVE_DOC,
            ],
        ),
        (
            (K::DocType, dts[1]),
            r[1],
            vec![
                DOC_VIEW,
                CAB_ADD_DOC,
                CAB_REMOVE_DOC,
                DOC_DELETE,
                DOC_CHANGE_TYPE,
            ],
        ),
        ((K::DocType, dts[2]), r[1], vec![DT_VIEW]),
        // Design: a workflow, a metadata type, the spare document type.
        (
            (K::Workflow, wfs[1]),
            r[2],
            vec![WF_VIEW, WF_EDIT, WF_DELETE],
        ),
        (
            (K::MetaType, mts[1]),
            r[2],
            vec![MT_VIEW, MT_EDIT, MT_DELETE, DM_VIEW],
        ),
        (
            (K::DocType, dts[3]),
            r[2],
            vec![DT_VIEW, DT_EDIT, DT_DELETE],
        ),
        // Security: two roles and the ACLs of a document.
        (
            (K::Role, r[4]),
            r[3],
            vec![ROLE_VIEW, ROLE_EDIT, ACL_VIEW, ACL_EDIT],
        ),
        (
            (K::Role, x.spare_roles[0]),
            r[3],
            vec![ROLE_VIEW, ROLE_DELETE],
        ),
        ((K::Role, x.spare_roles[1]), r[3], vec![ROLE_VIEW]),
        // The spare roles' own grants: the ACLs the deletions delete (no caller holds them),
        // on objects whose ACLs some callers may edit.
        ((K::DocType, dts[0]), x.spare_roles[0], vec![DOC_VIEW]),
        ((K::Cabinet, b), x.spare_roles[1], vec![CAB_VIEW]),
        ((K::Cabinet, a), x.spare_roles[0], vec![CAB_VIEW]),
        ((K::Role, r[4]), x.spare_roles[0], vec![ROLE_VIEW]),
        ((K::Role, r[4]), x.spare_roles[1], vec![ROLE_EDIT]),
        ((K::Doc, docs[3]), x.spare_roles[0], vec![DOC_VIEW]),
        ((K::Doc, docs[0]), x.spare_roles[1], vec![DOC_EDIT]),
        ((K::Workflow, wfs[0]), x.spare_roles[1], vec![WF_VIEW]),
        ((K::Doc, docs[3]), r[3], vec![DOC_VIEW, ACL_VIEW, ACL_EDIT]),
    ];
    // The edge cases, each on a role of its own user (so no other grant shadows it).
    let mut edge_roles = Vec::new();
    for (n, u) in edge_users.iter().enumerate() {
        let g = id(&x.admin(
            "POST",
            "/api/v4/groups/",
            Some(json!({ "name": format!("edge group{}", n + 1) })),
        ));
        x.admin(
            "POST",
            &format!("/api/v4/groups/{g}/users/add/"),
            Some(json!({ "user_id": u })),
        );
        let role = id(&x.admin(
            "POST",
            "/api/v4/roles/",
            Some(json!({ "label": format!("edge role{}", n + 1) })),
        ));
        x.admin(
            "POST",
            &format!("/api/v4/roles/{role}/groups/add/"),
            Some(json!({ "group_id": g })),
        );
        edge_roles.push(role);
    }
    let (e1, e2) = (edge_roles[0], edge_roles[1]);
    let valued: Vec<i64> = (x.m.values.values().map(|v| v.doc))
        .filter(|d| *d != docs[1])
        .collect::<BTreeSet<i64>>()
        .into_iter()
        .collect();
    x.admin(
        "POST",
        &format!("/api/v4/roles/{e2}/permissions/add/"),
        Some(json!({ "permission": GROUP_VIEW })),
    );
    x.admin(
        "POST",
        &format!("/api/v4/roles/{e2}/permissions/add/"),
        Some(json!({ "permission": GROUP_EDIT })),
    );
    edge.extend([
        // edge1: ACLs it may edit but not list.
        ((K::Doc, docs[0]), e1, vec![DOC_VIEW, ACL_EDIT]),
        // edge1: a role it may edit but not see; its own role, which it sees (and the role's
        // groups, though it may not see groups).
        ((K::Role, e2), e1, vec![ROLE_EDIT]),
        ((K::Role, e1), e1, vec![ROLE_VIEW, ROLE_EDIT]),
        // edge1: values it may add and edit but not see.
        ((K::DocType, dts[2]), e1, vec![DOC_VIEW, DM_ADD, DM_EDIT]),
        ((K::MetaType, mts[0]), e1, vec![DM_ADD, DM_EDIT]),
        ((K::MetaType, mts[1]), e1, vec![DM_ADD, DM_EDIT]),
        ((K::MetaType, mts[2]), e1, vec![DM_ADD, DM_EDIT]),
        // edge2 (global group_view and group_edit): a document it may act on but not see.
        ((K::Doc, docs[1]), e2, vec![DOC_EDIT, DOC_DELETE, FILE_NEW]),
        // edge2: a document type it may edit but not see, with a metadata type it sees.
        ((K::DocType, dts[1]), e2, vec![DT_EDIT]),
        ((K::MetaType, mts[0]), e2, vec![MT_VIEW]),
        ((K::MetaType, mts[1]), e2, vec![MT_VIEW]),
        ((K::MetaType, mts[2]), e2, vec![MT_VIEW]),
        // edge2: an intermediate cabinet (covers A1 only, not A2).
        ((K::Cabinet, a1), e2, vec![CAB_VIEW, CAB_EDIT]),
        // edge2: metadata it may view on documents it may not see (search must not list them).
        ((K::Doc, valued[0]), e2, vec![DM_VIEW]),
        ((K::Doc, valued[1]), e2, vec![DM_VIEW]),
        ((K::MetaType, mts[0]), e2, vec![DM_VIEW]),
        ((K::MetaType, mts[1]), e2, vec![DM_VIEW]),
        ((K::MetaType, mts[2]), e2, vec![DM_VIEW]),
        // edge2: transitions of a workflow it may not see.
        ((K::Workflow, wfs[0]), e2, vec![WF_TRANSITION]),
    ]);
    for (o, role, perms) in edge {
        x.grant(o, role, &perms);
    }
    x.wait_tasks();
    x.m = x.load_model();
}

// ----- phase A: reads ----------------------------------------------------------------------------

fn reads(x: &mut Ctx) {
    let m = x.m.clone();
    // Public operations, and the inactive user and a wrong password (401 everywhere else).
    let sleeper = Caller {
        id: None,
        name: "sleeper".into(),
        password: "password-of-sleeper".into(),
    };
    for (op, path) in [
        ("GET /api/v4/health/", "/api/v4/health/"),
        ("GET /api/v4/openapi.json", "/api/v4/openapi.json"),
    ] {
        x.exercised.insert(op);
        for c in x.callers.clone() {
            let (st, _) = x.call(&c, "GET", path, None);
            x.judge(op, &c, "-", Exp::Ok(200), st);
        }
    }
    for (who, password) in [
        ("sleeper", "password-of-sleeper"),
        ("user1", "wrong-password"),
    ] {
        let (st, _) = x.raw("GET", "/api/v4/users/current/", Some((who, password)), None);
        let c = Caller {
            name: format!("{who} ({password})"),
            ..sleeper.clone()
        };
        x.judge(
            "GET /api/v4/users/current/",
            &c,
            "inactive or wrong password",
            Exp::No(401),
            st,
        );
    }
    x.read("GET /api/v4/tasks/", "/api/v4/tasks/", "-", &|m, u| {
        if m.sup(u) { Exp::Ok(200) } else { Exp::No(403) }
    });
    x.read(
        "GET /api/v4/permissions/",
        "/api/v4/permissions/",
        "-",
        &|_, _| Exp::Ok(200),
    );
    for k in ACL_KINDS {
        let (a, mo) = k.names();
        x.read(
            "GET /api/v5/objects/{app_label}/{model_name}/permissions/",
            &format!("/api/v5/objects/{a}/{mo}/permissions/?page_size=500"),
            mo,
            &|_, _| Exp::Ok(200),
        );
    }
    // Users and groups.
    x.read_list(
        "GET /api/v4/users/",
        "/api/v4/users/?page_size=500",
        "-",
        &|m, u| {
            Ok(set(m
                .users
                .keys()
                .copied()
                .filter(|t| m.user_visible(u, *t))))
        },
        ids,
    );
    {
        let op = "GET /api/v4/users/current/";
        x.exercised.insert(op);
        for c in x.callers.clone() {
            let (st, body) = x.call(&c, "GET", "/api/v4/users/current/", None);
            x.judge(
                op,
                &c,
                "-",
                if c.id.is_some() {
                    Exp::Ok(200)
                } else {
                    Exp::No(401)
                },
                st,
            );
            if st == 200 && body["id"].as_i64() != c.id {
                x.problem(Cat::Other, op, format!("{} got {body}", c.name));
            }
        }
    }
    for t in m.users.keys().copied() {
        x.read(
            "GET /api/v4/users/{user_id}/",
            &format!("/api/v4/users/{t}/"),
            &format!("user {t}"),
            &|m, u| {
                if m.user_visible(u, t) {
                    Exp::Ok(200)
                } else {
                    Exp::No(404)
                }
            },
        );
    }
    x.read_list(
        "GET /api/v4/groups/",
        "/api/v4/groups/?page_size=500",
        "-",
        &|m, u| {
            Ok(if m.glob(u, GROUP_VIEW) {
                set(m.groups.keys().copied())
            } else {
                BTreeSet::new()
            })
        },
        ids,
    );
    for &g in m.groups.keys() {
        let target = format!("group {g}");
        x.read(
            "GET /api/v4/groups/{group_id}/",
            &format!("/api/v4/groups/{g}/"),
            &target,
            &|m, u| {
                if m.glob(u, GROUP_VIEW) {
                    Exp::Ok(200)
                } else {
                    Exp::No(404)
                }
            },
        );
        x.read_list(
            "GET /api/v4/groups/{group_id}/users/",
            &format!("/api/v4/groups/{g}/users/?page_size=500"),
            &target,
            &|m, u| {
                if !m.glob(u, GROUP_VIEW) {
                    return Err(404);
                }
                Ok(set(m.groups[&g]
                    .iter()
                    .copied()
                    .filter(|t| m.user_visible(u, *t))))
            },
            ids,
        );
    }
    // Roles.
    x.read_list(
        "GET /api/v4/roles/",
        "/api/v4/roles/?page_size=500",
        "-",
        &|m, u| {
            Ok(set(m
                .roles
                .keys()
                .copied()
                .filter(|r| m.seen(u, (K::Role, *r)))))
        },
        ids,
    );
    for r in m.roles.keys().copied() {
        let target = format!("role {r}");
        let o = (K::Role, r);
        x.read(
            "GET /api/v4/roles/{role_id}/",
            &format!("/api/v4/roles/{r}/"),
            &target,
            &|m, u| {
                if m.seen(u, o) {
                    Exp::Ok(200)
                } else {
                    Exp::No(404)
                }
            },
        );
        x.read_list(
            "GET /api/v4/roles/{role_id}/groups/",
            &format!("/api/v4/roles/{r}/groups/?page_size=500"),
            &target,
            &|m, u| {
                if !m.seen(u, o) {
                    return Err(404);
                }
                let groups = m.roles[&r].groups.iter().copied();
                Ok(if m.glob(u, GROUP_VIEW) {
                    set(groups)
                } else {
                    BTreeSet::new()
                })
            },
            ids,
        );
        x.read_list(
            "GET /api/v4/roles/{role_id}/permissions/",
            &format!("/api/v4/roles/{r}/permissions/?page_size=500"),
            &target,
            &|m, u| {
                if !m.seen(u, o) {
                    return Err(404);
                }
                Ok(m.roles[&r].global.clone())
            },
            pks,
        );
    }
    // Metadata types, document types, associations.
    x.read_list(
        "GET /api/v4/metadata/metadata-types/",
        "/api/v4/metadata/metadata-types/?page_size=500",
        "-",
        &|m, u| {
            Ok(set(m
                .mts
                .iter()
                .copied()
                .filter(|t| m.seen(u, (K::MetaType, *t)))))
        },
        ids,
    );
    for t in m.mts.iter().copied() {
        x.read(
            "GET /api/v4/metadata/metadata-types/{metadata_type_id}/",
            &format!("/api/v4/metadata/metadata-types/{t}/"),
            &format!("metadata type {t}"),
            &|m, u| {
                if m.seen(u, (K::MetaType, t)) {
                    Exp::Ok(200)
                } else {
                    Exp::No(404)
                }
            },
        );
        x.read(
            "GET /api/v4/metadata/metadata-types/{metadata_type_id}/value-type-check/",
            &format!("/api/v4/metadata/metadata-types/{t}/value-type-check/?value_type=text"),
            &format!("metadata type {t}, value type check"),
            &|m, u| {
                let o = (K::MetaType, t);
                if !m.seen(u, o) {
                    Exp::No(404)
                } else if m.has(u, MT_EDIT, o) {
                    Exp::Ok(200)
                } else {
                    Exp::No(403)
                }
            },
        );
    }
    // A preview of templates: for a new type (global metadata_type_create), for a type being
    // edited (metadata_type_edit on it), for a document (document_view on it).
    let preview = "POST /api/v4/metadata/metadata-types/preview/";
    let preview_path = "/api/v4/metadata/metadata-types/preview/";
    x.post_read(
        preview,
        preview_path,
        &json!({"default": "{{ 1 }}", "lookup": "a, b"}),
        "a new type's templates",
        &|m, u| {
            if m.glob(u, MT_CREATE) {
                Exp::Ok(200)
            } else {
                Exp::No(403)
            }
        },
    );
    for t in m.mts.clone() {
        x.post_read(
            preview,
            preview_path,
            &json!({"default": "{{ 1 }}", "metadata_type_id": t}),
            &format!("metadata type {t}'s templates"),
            &|m, u| {
                let o = (K::MetaType, t);
                if !m.seen(u, o) {
                    Exp::No(404)
                } else if m.has(u, MT_EDIT, o) {
                    Exp::Ok(200)
                } else {
                    Exp::No(403)
                }
            },
        );
    }
    for d in m.docs.keys().copied().take(3).collect::<Vec<_>>() {
        x.post_read(
            preview,
            preview_path,
            &json!({"default": "{{ document.label }}", "document_id": d}),
            &format!("templates for document {d}"),
            &|m, u| {
                if !m.glob(u, MT_CREATE) {
                    Exp::No(403)
                } else if !m.seen(u, (K::Doc, d)) {
                    Exp::No(404)
                } else {
                    Exp::Ok(200)
                }
            },
        );
    }
    x.read_list(
        "GET /api/v4/documents/types/",
        "/api/v4/documents/types/?page_size=500",
        "-",
        &|m, u| {
            Ok(set(m
                .dts
                .iter()
                .copied()
                .filter(|t| m.seen(u, (K::DocType, *t)))))
        },
        ids,
    );
    for dt in m.dts.iter().copied() {
        let target = format!("document type {dt}");
        x.read(
            "GET /api/v4/documents/types/{document_type_id}/",
            &format!("/api/v4/documents/types/{dt}/"),
            &target,
            &|m, u| {
                if m.seen(u, (K::DocType, dt)) {
                    Exp::Ok(200)
                } else {
                    Exp::No(404)
                }
            },
        );
        x.read_list(
            "GET /api/v4/documents/types/{document_type_id}/metadata-types/",
            &format!("/api/v4/documents/types/{dt}/metadata-types/?page_size=500"),
            &target,
            &|m, u| {
                // Viewers of the type, and those who may fill in its documents.
                let o = (K::DocType, dt);
                if !(m.seen(u, o) || m.has(u, DOC_CREATE, o) || m.has(u, DM_ADD, o)) {
                    return Err(404);
                }
                Ok(set((m.assocs.iter())
                    .filter(|(_, a)| a.dt == dt && m.seen(u, (K::MetaType, a.mt)))
                    .map(|(i, _)| *i)))
            },
            ids,
        );
    }
    let other_dt = |dt: i64| m.dts.iter().copied().find(|d| *d != dt).unwrap_or(dt);
    for (a, assoc) in m.assocs.clone() {
        let op = "GET /api/v4/documents/types/{document_type_id}/metadata-types/{association_id}/";
        x.read(
            op,
            &format!("/api/v4/documents/types/{}/metadata-types/{a}/", assoc.dt),
            &format!("association {a}"),
            &|m, u| {
                let o = (K::DocType, assoc.dt);
                let fills_in = m.has(u, DOC_CREATE, o) || m.has(u, DM_ADD, o);
                if (m.seen(u, o) || fills_in) && m.seen(u, (K::MetaType, assoc.mt)) {
                    Exp::Ok(200)
                } else {
                    Exp::No(404)
                }
            },
        );
        // Under another document type it does not exist.
        let dt = other_dt(assoc.dt);
        x.read(
            op,
            &format!("/api/v4/documents/types/{dt}/metadata-types/{a}/"),
            &format!("association {a} under type {dt}"),
            &|_, _| Exp::No(404),
        );
    }
    // Documents and what hangs from them.
    x.read_list(
        "GET /api/v4/documents/",
        "/api/v4/documents/?page_size=500",
        "-",
        &|m, u| {
            Ok(set(m
                .docs
                .keys()
                .copied()
                .filter(|d| m.seen(u, (K::Doc, *d)))))
        },
        ids,
    );
    x.read_list(
        "GET /api/v4/search/documents/",
        "/api/v4/search/documents/?q=alpha&page_size=500",
        "q=alpha",
        &|m, u| {
            Ok(set(m
                .docs
                .keys()
                .copied()
                .filter(|d| m.seen(u, (K::Doc, *d)))))
        },
        ids,
    );
    x.read_list(
        "GET /api/v4/search/metadata/",
        "/api/v4/search/metadata/?q=common&page_size=500",
        "q=common",
        &|m, u| {
            Ok(set(m
                .values
                .keys()
                .copied()
                .filter(|v| m.value_visible(u, *v))))
        },
        ids,
    );
    let other_doc = |d: i64| m.docs.keys().copied().find(|o| *o != d).unwrap_or(d);
    for d in m.docs.keys().copied() {
        let target = format!("document {d}");
        let o = (K::Doc, d);
        let doc_seen = move |m: &Model, u: i64| {
            if m.seen(u, o) {
                Exp::Ok(200)
            } else {
                Exp::No(404)
            }
        };
        x.read(
            "GET /api/v4/documents/{document_id}/",
            &format!("/api/v4/documents/{d}/"),
            &target,
            &doc_seen,
        );
        x.read_list(
            "GET /api/v4/documents/{document_id}/metadata/",
            &format!("/api/v4/documents/{d}/metadata/?page_size=500"),
            &target,
            &|m, u| {
                if !m.seen(u, o) {
                    return Err(404);
                }
                if !m.has(u, DM_VIEW, o) {
                    return Ok(BTreeSet::new());
                }
                Ok(set((m.values.iter())
                    .filter(|(_, v)| v.doc == d && m.has(u, DM_VIEW, (K::MetaType, v.mt)))
                    .map(|(i, _)| *i)))
            },
            ids,
        );
        let dt = x.m.docs[&d];
        let associated: Vec<i64> = (x.m.assocs.values())
            .filter(|a| a.dt == dt)
            .map(|a| a.mt)
            .collect();
        x.read(
            "GET /api/v4/documents/{document_id}/metadata/history/",
            &format!("/api/v4/documents/{d}/metadata/history/"),
            &target,
            &|m, u| {
                if m.seen(u, o) {
                    Exp::Ok(200)
                } else {
                    Exp::No(404)
                }
            },
        );
        for mt in associated {
            x.read(
                "GET /api/v4/documents/{document_id}/metadata/history/",
                &format!("/api/v4/documents/{d}/metadata/history/?metadata_type_id={mt}"),
                &format!("{target}, history of metadata type {mt}"),
                &|m, u| {
                    if m.seen(u, o) && m.seen(u, (K::MetaType, mt)) {
                        Exp::Ok(200)
                    } else {
                        Exp::No(404)
                    }
                },
            );
            x.read(
                "GET /api/v4/documents/{document_id}/metadata/{metadata_type_id}/lookup/",
                &format!("/api/v4/documents/{d}/metadata/{mt}/lookup/"),
                &format!("{target}, metadata type {mt}"),
                &|m, u| {
                    let t = (K::MetaType, mt);
                    if m.seen(u, o) && (m.seen(u, t) || m.has(u, DM_VIEW, t)) {
                        Exp::Ok(200)
                    } else {
                        Exp::No(404)
                    }
                },
            );
        }
        x.read_list(
            "GET /api/v4/documents/{document_id}/files/",
            &format!("/api/v4/documents/{d}/files/?page_size=500"),
            &target,
            &|m, u| {
                if !m.seen(u, o) {
                    return Err(404);
                }
                Ok(set(m
                    .files
                    .iter()
                    .filter(|(_, doc)| **doc == d)
                    .map(|(f, _)| *f)))
            },
            ids,
        );
        x.read_list(
            "GET /api/v4/documents/{document_id}/workflows/",
            &format!("/api/v4/documents/{d}/workflows/?page_size=500"),
            &target,
            &|m, u| {
                if !m.seen(u, o) {
                    return Err(404);
                }
                Ok(set((m.insts.iter())
                    .filter(|(i, inst)| inst.doc == d && m.has(u, WF_VIEW, (K::Instance, **i)))
                    .map(|(i, _)| *i)))
            },
            ids,
        );
    }
    for (v, val) in m.values.clone() {
        let op = "GET /api/v4/documents/{document_id}/metadata/{metadata_id}/";
        x.read(
            op,
            &format!("/api/v4/documents/{}/metadata/{v}/", val.doc),
            &format!("value {v}"),
            &|m, u| {
                if m.value_visible(u, v) {
                    Exp::Ok(200)
                } else {
                    Exp::No(404)
                }
            },
        );
        let d = other_doc(val.doc);
        x.read(
            op,
            &format!("/api/v4/documents/{d}/metadata/{v}/"),
            &format!("value {v} under document {d}"),
            &|_, _| Exp::No(404),
        );
    }
    for (f, d) in m.files.clone() {
        let o = (K::Doc, d);
        let doc_seen = move |m: &Model, u: i64| {
            if m.seen(u, o) {
                Exp::Ok(200)
            } else {
                Exp::No(404)
            }
        };
        let target = format!("file {f}");
        x.read(
            "GET /api/v4/documents/{document_id}/files/{file_id}/",
            &format!("/api/v4/documents/{d}/files/{f}/"),
            &target,
            &doc_seen,
        );
        x.read(
            "GET /api/v4/documents/{document_id}/files/{file_id}/download/",
            &format!("/api/v4/documents/{d}/files/{f}/download/"),
            &target,
            &doc_seen,
        );
        let other = other_doc(d);
        x.read(
            "GET /api/v4/documents/{document_id}/files/{file_id}/",
            &format!("/api/v4/documents/{other}/files/{f}/"),
            &format!("file {f} under document {other}"),
            &|_, _| Exp::No(404),
        );
    }
    for (i, inst) in m.insts.clone() {
        let target = format!("instance {i}");
        let base = format!("/api/v4/documents/{}/workflows/{i}/", inst.doc);
        let visible = move |m: &Model, u: i64| {
            if m.inst_visible(u, i) {
                Exp::Ok(200)
            } else {
                Exp::No(404)
            }
        };
        x.read(
            "GET /api/v4/documents/{document_id}/workflows/{instance_id}/",
            &base,
            &target,
            &visible,
        );
        x.read(
            "GET /api/v4/documents/{document_id}/workflows/{instance_id}/log/",
            &format!("{base}log/?page_size=500"),
            &target,
            &visible,
        );
        x.read_list(
            "GET /api/v4/documents/{document_id}/workflows/{instance_id}/transitions/",
            &format!("{base}transitions/?page_size=500"),
            &target,
            &|m, u| {
                if !m.inst_visible(u, i) {
                    return Err(404);
                }
                let inst = &m.insts[&i];
                Ok(set((m.wfs[&inst.wf].transitions.iter())
                    .filter(|(_, t)| Some(t.from) == inst.state)
                    .map(|(t, _)| *t)))
            },
            ids,
        );
        let d = other_doc(inst.doc);
        x.read(
            "GET /api/v4/documents/{document_id}/workflows/{instance_id}/",
            &format!("/api/v4/documents/{d}/workflows/{i}/"),
            &format!("instance {i} under document {d}"),
            &|_, _| Exp::No(404),
        );
    }
    // Workflow templates.
    x.read_list(
        "GET /api/v4/workflow-templates/",
        "/api/v4/workflow-templates/?page_size=500",
        "-",
        &|m, u| {
            Ok(set(m
                .wfs
                .keys()
                .copied()
                .filter(|w| m.seen(u, (K::Workflow, *w)))))
        },
        ids,
    );
    for (w, wf) in m.wfs.clone() {
        let o = (K::Workflow, w);
        let target = format!("workflow {w}");
        let base = format!("/api/v4/workflow-templates/{w}/");
        x.read(
            "GET /api/v4/workflow-templates/{workflow_id}/",
            &base,
            &target,
            &|m, u| {
                if m.seen(u, o) {
                    Exp::Ok(200)
                } else {
                    Exp::No(404)
                }
            },
        );
        x.read_list(
            "GET /api/v4/workflow-templates/{workflow_id}/states/",
            &format!("{base}states/?page_size=500"),
            &target,
            &|m, u| {
                if m.seen(u, o) {
                    Ok(set(m.wfs[&w].states.keys().copied()))
                } else {
                    Err(404)
                }
            },
            ids,
        );
        x.read_list(
            "GET /api/v4/workflow-templates/{workflow_id}/transitions/",
            &format!("{base}transitions/?page_size=500"),
            &target,
            &|m, u| {
                if m.seen(u, o) {
                    Ok(set(m.wfs[&w].transitions.keys().copied()))
                } else {
                    Err(404)
                }
            },
            ids,
        );
        for &s in wf.states.keys() {
            x.read(
                "GET /api/v4/workflow-templates/{workflow_id}/states/{state_id}/",
                &format!("{base}states/{s}/"),
                &format!("state {s}"),
                &|m, u| {
                    if m.seen(u, o) {
                        Exp::Ok(200)
                    } else {
                        Exp::No(404)
                    }
                },
            );
            x.read_list(
                "GET /api/v4/workflow-templates/{workflow_id}/states/{state_id}/actions/",
                &format!("{base}states/{s}/actions/?page_size=500"),
                &format!("state {s}"),
                &|m, u| {
                    if m.seen(u, o) {
                        Ok(set(m.wfs[&w].states[&s].iter().copied()))
                    } else {
                        Err(404)
                    }
                },
                ids,
            );
        }
        for &t in wf.transitions.keys() {
            x.read(
                "GET /api/v4/workflow-templates/{workflow_id}/transitions/{transition_id}/",
                &format!("{base}transitions/{t}/"),
                &format!("transition {t}"),
                &|m, u| {
                    if m.seen(u, o) {
                        Exp::Ok(200)
                    } else {
                        Exp::No(404)
                    }
                },
            );
            x.read_list("GET /api/v4/workflow-templates/{workflow_id}/transitions/{transition_id}/triggers/", &format!("{base}transitions/{t}/triggers/?page_size=500"), &format!("transition {t}"), &|m, u| {
                if m.seen(u, o) { Ok(m.wfs[&w].transitions[&t].triggers.clone()) } else { Err(404) }
            }, strs);
        }
    }
    // Cabinets.
    x.read_list(
        "GET /api/v4/cabinets/",
        "/api/v4/cabinets/?page_size=500",
        "-",
        &|m, u| {
            Ok(set(m
                .cabs
                .keys()
                .copied()
                .filter(|c| m.seen(u, (K::Cabinet, *c)))))
        },
        ids,
    );
    for c in m.cabs.keys().copied() {
        let o = (K::Cabinet, c);
        let target = format!("cabinet {c}");
        x.read(
            "GET /api/v4/cabinets/{cabinet_id}/",
            &format!("/api/v4/cabinets/{c}/"),
            &target,
            &|m, u| {
                if m.seen(u, o) {
                    Exp::Ok(200)
                } else {
                    Exp::No(404)
                }
            },
        );
        x.read_list(
            "GET /api/v4/cabinets/{cabinet_id}/documents/",
            &format!("/api/v4/cabinets/{c}/documents/?page_size=500"),
            &target,
            &|m, u| {
                if !m.seen(u, o) {
                    return Err(404);
                }
                Ok(set(m.cabs[&c]
                    .docs
                    .iter()
                    .copied()
                    .filter(|d| m.seen(u, (K::Doc, *d)))))
            },
            ids,
        );
    }
    // ACLs.
    let acl_objects: Vec<Obj> = acl_objects(&m);
    for o in acl_objects.clone() {
        let target = format!("ACLs of {o:?}");
        x.read_list(
            "GET /api/v5/objects/{app_label}/{model_name}/{object_id}/acls/",
            &format!("{}?page_size=500", acls_path(o)),
            &target,
            &|m, u| match m.act(u, ACL_VIEW, o, 200) {
                Exp::Ok(_) => Ok(set(m
                    .acls
                    .get(&o)
                    .map(|a| a.values().map(|a| a.id).collect::<Vec<_>>())
                    .unwrap_or_default())),
                Exp::No(c) => Err(c),
                Exp::Refused | Exp::Gone => Err(404),
            },
            ids,
        );
    }
    // Why a user may or may not (asked about user 1, the administrator): the caller's own
    // reasons are theirs to know; another user's need acl_view on the object.
    for o in acl_objects.clone() {
        x.read(
            "GET /api/v5/objects/{app_label}/{model_name}/{object_id}/explain/",
            &format!(
                "{}?user_id=1&permission=documents.document_view",
                acls_path(o).trim_end_matches("acls/").to_owned() + "explain/"
            ),
            &format!("explain {o:?}"),
            &|m, u| {
                if u == 1 {
                    Exp::Ok(200)
                } else {
                    m.act(u, ACL_VIEW, o, 200)
                }
            },
        );
    }
    let all_acls: Vec<(Obj, i64)> = (m.acls.iter())
        .flat_map(|(o, a)| a.values().map(move |a| (*o, a.id)))
        .collect();
    for (n, (o, acl)) in all_acls.iter().copied().enumerate() {
        let op = "GET /api/v5/objects/{app_label}/{model_name}/{object_id}/acls/{acl_id}/";
        x.read(
            op,
            &format!("{}{acl}/", acls_path(o)),
            &format!("ACL {acl} of {o:?}"),
            &|m, u| m.act(u, ACL_VIEW, o, 200),
        );
        // The same ACL addressed through another object.
        let (other, _) = all_acls[(n + 1) % all_acls.len()];
        if other != o {
            x.read(
                op,
                &format!("{}{acl}/", acls_path(other)),
                &format!("ACL {acl} of {o:?} under {other:?}"),
                &|m, u| match m.act(u, ACL_VIEW, other, 200) {
                    Exp::No(403) => Exp::Refused,
                    _ => Exp::No(404),
                },
            );
        }
    }
    events(x);
}

fn acl_objects(m: &Model) -> Vec<Obj> {
    let mut objects: Vec<Obj> = Vec::new();
    objects.extend(m.dts.iter().map(|o| (K::DocType, *o)));
    objects.extend(m.docs.keys().map(|o| (K::Doc, *o)));
    objects.extend(m.mts.iter().map(|o| (K::MetaType, *o)));
    objects.extend(m.cabs.keys().map(|o| (K::Cabinet, *o)));
    objects.extend(m.roles.keys().map(|o| (K::Role, *o)));
    objects.extend(m.wfs.keys().map(|o| (K::Workflow, *o)));
    objects
}

/// Every event of `base` the caller is shown, through pages and windows of 1,000.
fn fetch_events(x: &mut Ctx, c: &Caller, base: &str) -> Result<Vec<Value>, u16> {
    let mut out = Vec::new();
    let mut before: Option<i64> = None;
    loop {
        let mut window = 0;
        let mut oldest = i64::MAX;
        for page in 1.. {
            let older = before.map(|b| format!("&before={b}")).unwrap_or_default();
            let (st, body) = x.call(
                c,
                "GET",
                &format!("{base}?page_size=500&page={page}{older}"),
                None,
            );
            if st != 200 {
                return Err(st);
            }
            for e in items(&body) {
                window += 1;
                oldest = oldest.min(id(&e));
                out.push(e);
            }
            if body["next"].is_null() {
                break;
            }
        }
        if window < 1000 {
            return Ok(out);
        }
        before = Some(oldest);
    }
}

fn events(x: &mut Ctx) {
    let admin = x.callers[1].clone(); // [0] is the anonymous caller
    let all = fetch_events(x, &admin, "/api/v4/events/").expect("admin events");
    let target = |e: &Value| {
        let t = &e["target"];
        (
            format!(
                "{}.{}",
                t["app_label"].as_str().unwrap_or_default(),
                t["model_name"].as_str().unwrap_or_default()
            ),
            t["id"].as_i64().unwrap_or_default(),
        )
    };
    let about = |e: &Value, d: i64| {
        let is_doc = |o: &Value| {
            o["app_label"] == "documents" && o["model_name"] == "document" && o["id"] == d
        };
        is_doc(&e["target"]) || is_doc(&e["action_object"])
    };
    let op = "GET /api/v4/events/";
    x.exercised.insert(op);
    for c in x.callers.clone() {
        let got = fetch_events(x, &c, "/api/v4/events/");
        match c.id {
            None => x.judge(op, &c, "-", Exp::No(401), got.err().unwrap_or(200)),
            Some(u) => {
                let want: BTreeSet<String> = (all.iter())
                    .filter(|e| {
                        let (k, i) = target(e);
                        x.m.event_visible(u, &k, i)
                    })
                    .map(|e| e["id"].to_string())
                    .collect();
                match got {
                    Err(st) => x.judge(op, &c, "-", Exp::Ok(200), st),
                    Ok(list) => {
                        x.judge(op, &c, "-", Exp::Ok(200), 200);
                        // The actor is named only to the actor and to user_view holders, as
                        // GET /api/v4/users/{id}/ would show them.
                        for e in &list {
                            let actor = (all.iter())
                                .find(|a| a["id"] == e["id"])
                                .and_then(|a| a["actor"]["id"].as_i64());
                            let shown = e["actor"]["id"].as_i64();
                            let want = actor.filter(|a| *a == u || x.m.glob(u, USER_VIEW));
                            if shown != want {
                                x.problem(
                                    if shown.is_some() {
                                        Cat::ListShowsHidden
                                    } else {
                                        Cat::ListMissesVisible
                                    },
                                    op,
                                    format!(
                                        "{} sees actor {shown:?} in event {} (expected {want:?})",
                                        c.name, e["id"]
                                    ),
                                );
                            }
                        }
                        // A second object is named only when the reader may view it.
                        for e in &list {
                            let o = &e["action_object"];
                            let kind = format!(
                                "{}.{}",
                                o["app_label"].as_str().unwrap_or_default(),
                                o["model_name"].as_str().unwrap_or_default()
                            );
                            let known = K::parse(&kind).is_some()
                                || kind == "user_management.user"
                                || kind == "user_management.group";
                            if !o.is_null()
                                && known
                                && !x.m.event_visible(u, &kind, o["id"].as_i64().unwrap_or(0))
                            {
                                x.problem(
                                    Cat::ListShowsHidden,
                                    op,
                                    format!(
                                        "{} sees {kind} {} in event {}",
                                        c.name, o["id"], e["id"]
                                    ),
                                );
                            }
                        }
                        // A value's before and after are shown only to who may list that
                        // value (document_metadata_view on the document and on its type); the
                        // field is always named.
                        for e in &list {
                            let name = e["name"].as_str().unwrap_or_default();
                            let Some(whole) = (all.iter()).find(|a| a["id"] == e["id"]) else {
                                continue;
                            };
                            if !name.starts_with("metadata.document_metadata_") {
                                continue;
                            }
                            let d = whole["target"]["id"].as_i64().unwrap_or(0);
                            let mt = whole["action_object"]["id"].as_i64().unwrap_or(0);
                            let may = x.m.has(u, DM_VIEW, (K::Doc, d))
                                && x.m.has(u, DM_VIEW, (K::MetaType, mt));
                            let want = if may {
                                whole["changes"].clone()
                            } else {
                                let hidden: Vec<Value> = (whole["changes"].as_array())
                                    .into_iter()
                                    .flatten()
                                    .map(|c| json!({"field": c["field"], "before": null, "after": null}))
                                    .collect();
                                Value::from(hidden)
                            };
                            if e["changes"] != want {
                                x.problem(
                                    if may {
                                        Cat::ListMissesVisible
                                    } else {
                                        Cat::ListShowsHidden
                                    },
                                    op,
                                    format!(
                                        "{} sees changes {} in event {} (expected {want})",
                                        c.name, e["changes"], e["id"]
                                    ),
                                );
                            }
                        }
                        x.compare_items(
                            op,
                            &c,
                            &format!("{} events", all.len()),
                            &want,
                            &Value::from(list),
                            ids,
                        );
                    }
                }
            }
        }
    }
    let op = "GET /api/v4/documents/{document_id}/events/";
    x.exercised.insert(op);
    for d in x.m.docs.keys().copied().collect::<Vec<_>>() {
        for c in x.callers.clone() {
            let got = fetch_events(x, &c, &format!("/api/v4/documents/{d}/events/"));
            let exp = match c.id {
                None => Err(401),
                Some(u) if !x.m.seen(u, (K::Doc, d)) => Err(404),
                Some(u) => Ok((all.iter())
                    .filter(|e| {
                        about(e, d) && {
                            let (k, i) = target(e);
                            x.m.event_visible(u, &k, i)
                        }
                    })
                    .map(|e| e["id"].to_string())
                    .collect::<BTreeSet<String>>()),
            };
            let target = format!("document {d}");
            match (exp, got) {
                (Err(code), got) => {
                    x.judge(op, &c, &target, Exp::No(code), got.err().unwrap_or(200))
                }
                (Ok(_), Err(st)) => x.judge(op, &c, &target, Exp::Ok(200), st),
                (Ok(want), Ok(list)) => {
                    x.judge(op, &c, &target, Exp::Ok(200), 200);
                    x.compare_items(op, &c, &target, &want, &Value::from(list), ids);
                }
            }
        }
    }
}

// ----- phase B: writes that are undone -----------------------------------------------------------

fn label_back(field: &'static str) -> impl Fn(&mut Ctx, &[Value], &[Value]) -> bool {
    move |x: &mut Ctx, before: &[Value], _after: &[Value]| {
        let path = before[0]["body"]["url"].as_str().expect("url").to_owned();
        x.admin(
            "PATCH",
            &path,
            Some(json!({ field: before[0]["body"][field] })),
        );
        true
    }
}

fn writes(x: &mut Ctx) {
    let m = x.m.clone();
    // Creations of global things: deleted again by the administrator.
    let creations: [Creation; 6] = [
        (
            "POST /api/v4/metadata/metadata-types/",
            "/api/v4/metadata/metadata-types/",
            MT_CREATE,
            |n| json!({"name": format!("m_new_{n}"), "label": format!("New {n}")}),
        ),
        (
            "POST /api/v4/documents/types/",
            "/api/v4/documents/types/",
            DT_CREATE,
            |n| json!({ "label": format!("New type {n}") }),
        ),
        (
            "POST /api/v4/roles/",
            "/api/v4/roles/",
            ROLE_CREATE,
            |n| json!({ "label": format!("new role {n}") }),
        ),
        (
            "POST /api/v4/groups/",
            "/api/v4/groups/",
            GROUP_CREATE,
            |n| json!({ "name": format!("new group {n}") }),
        ),
        (
            "POST /api/v4/workflow-templates/",
            "/api/v4/workflow-templates/",
            WF_CREATE,
            |n| json!({"label": format!("new workflow {n}"), "document_type_ids": []}),
        ),
        (
            "POST /api/v4/cabinets/",
            "/api/v4/cabinets/",
            CAB_CREATE,
            |n| json!({ "label": format!("new root {n}") }),
        ),
    ];
    for (op, path, perm, body) in creations {
        for c in x.callers.clone() {
            let n = x.next_seq();
            let item = move |i: i64| format!("{path}{i}/");
            x.write(
                &c,
                &Change {
                    op,
                    target: "-".into(),
                    method: "POST",
                    path: path.into(),
                    body: Some(body(n)),
                    upload: false,
                    probe: vec![format!("{path}?page_size=500")],
                    change: true,
                    exp: &|m, u| {
                        if m.glob(u, perm) {
                            Exp::Ok(201)
                        } else {
                            Exp::No(403)
                        }
                    },
                    restore: &|x, b, a| {
                        x.delete_new(&b[0], &a[0], &item);
                        true
                    },
                },
            );
        }
    }
    // Users.
    for c in x.callers.clone() {
        for superuser in [false, true] {
            let n = x.next_seq();
            x.write(&c, &Change {
                op: "POST /api/v4/users/",
                target: format!("superuser {superuser}"),
                method: "POST",
                path: "/api/v4/users/".into(),
                body: Some(json!({"username": format!("new_user_{n}"), "password": "a new password", "is_superuser": superuser})),
                upload: false,
                probe: vec!["/api/v4/users/?page_size=500".into()],
                change: true,
                exp: &|m, u| if m.glob(u, USER_CREATE) && (!superuser || m.sup(u)) { Exp::Ok(201) } else { Exp::No(403) },
                restore: &|x, b, a| { x.delete_new(&b[0], &a[0], &|i| format!("/api/v4/users/{i}/")); true },
            });
        }
    }
    let by_name = |name: &str| {
        m.users
            .iter()
            .find(|(_, u)| u.name == name)
            .map(|(i, _)| *i)
            .expect(name)
    };
    let (t1, t2, tsuper) = (
        by_name("target1"),
        by_name("target2"),
        by_name("target_super"),
    );
    for c in x.callers.clone() {
        let me = c.id.unwrap_or(t1);
        let n = x.next_seq();
        let cases: [(i64, Value, bool, &str); 5] = [
            (
                t1,
                json!({ "username": format!("renamed_{n}") }),
                true,
                "username",
            ),
            (me, json!({ "password": c.password }), false, "own password"),
            (
                t2,
                json!({ "password": "password-of-target2" }),
                false,
                "password",
            ),
            (t2, json!({ "is_superuser": false }), false, "is_superuser"),
            (tsuper, json!({ "is_active": true }), false, "is_active"),
        ];
        for (t, body, change, what) in cases {
            let own_password = what == "own password";
            let flag = what == "is_superuser";
            x.write(
                &c,
                &Change {
                    op: "PATCH /api/v4/users/{user_id}/",
                    target: format!("user {t} {what}"),
                    method: "PATCH",
                    path: format!("/api/v4/users/{t}/"),
                    body: Some(body),
                    upload: false,
                    probe: vec![format!("/api/v4/users/{t}/")],
                    change,
                    exp: &|m, u| {
                        if !m.user_visible(u, t) {
                            Exp::No(404)
                        } else if own_password && u == t {
                            Exp::Ok(200)
                        } else if !m.glob(u, USER_EDIT)
                            || (flag && !m.sup(u))
                            || (m.users.get(&t).is_some_and(|x| x.superuser) && !m.sup(u))
                            || (u != t && !m.holds_user(u, t))
                        {
                            // Only a superuser changes a superuser, and only one holding
                            // everything another user holds changes them.
                            Exp::No(403)
                        } else {
                            Exp::Ok(200)
                        }
                    },
                    restore: &label_back("username"),
                },
            );
        }
    }
    // Metadata types.
    let mts: Vec<i64> = m.mts.iter().copied().collect();
    x.writes(
        &mts,
        |m, u, t| m.seen(u, (K::MetaType, *t)),
        |x, c, t| {
            let path = format!("/api/v4/metadata/metadata-types/{t}/");
            let current = x.admin_get(&path);
            let n = x.next_seq();
            let mut put = current.clone();
            put["label"] = json!(format!("Relabelled {n}"));
            for (op, method, body) in [
                (
                    "PATCH /api/v4/metadata/metadata-types/{metadata_type_id}/",
                    "PATCH",
                    json!({ "label": format!("Relabelled {n}") }),
                ),
                (
                    "PUT /api/v4/metadata/metadata-types/{metadata_type_id}/",
                    "PUT",
                    put.clone(),
                ),
            ] {
                x.write(
                    c,
                    &Change {
                        op,
                        target: format!("metadata type {t}"),
                        method,
                        path: path.clone(),
                        body: Some(body),
                        upload: false,
                        probe: vec![path.clone()],
                        change: true,
                        exp: &|m, u| {
                            let o = (K::MetaType, t);
                            if !m.seen(u, o) {
                                Exp::No(404)
                            } else if m.has(u, MT_EDIT, o) {
                                Exp::Ok(200)
                            } else {
                                Exp::No(403)
                            }
                        },
                        restore: &label_back("label"),
                    },
                );
            }
        },
    );
    // Document types and associations.
    let dts: Vec<i64> = m.dts.iter().copied().collect();
    x.writes(
        &dts,
        |m, u, t| m.seen(u, (K::DocType, *t)),
        |x, c, t| {
            let path = format!("/api/v4/documents/types/{t}/");
            let n = x.next_seq();
            for (op, method) in [
                ("PATCH /api/v4/documents/types/{document_type_id}/", "PATCH"),
                ("PUT /api/v4/documents/types/{document_type_id}/", "PUT"),
            ] {
                x.write(
                    c,
                    &Change {
                        op,
                        target: format!("document type {t}"),
                        method,
                        path: path.clone(),
                        body: Some(json!({ "label": format!("Type {n} {method}") })),
                        upload: false,
                        probe: vec![path.clone()],
                        change: true,
                        exp: &|m, u| m.act(u, DT_EDIT, (K::DocType, t), 200),
                        restore: &label_back("label"),
                    },
                );
            }
            x.write(
                c,
                &Change {
                    op: "POST /api/v4/documents/",
                    target: format!("document type {t}"),
                    method: "POST",
                    path: "/api/v4/documents/".into(),
                    body: Some(
                        json!({"document_type_id": t, "label": format!("alpha created {n}")}),
                    ),
                    upload: false,
                    probe: vec!["/api/v4/documents/?page_size=500".into()],
                    change: true,
                    exp: &|m, u| body_ref(m.act(u, DOC_CREATE, (K::DocType, t), 201)),
                    restore: &|x, b, a| {
                        x.delete_new(&b[0], &a[0], &|i| format!("/api/v4/documents/{i}/"));
                        true
                    },
                },
            );
            x.write(
                c,
                &Change {
                    op: "POST /api/v4/documents/batch/",
                    target: format!("document type {t}"),
                    method: "POST",
                    path: "/api/v4/documents/batch/".into(),
                    body: Some(json!({"documents": [
                        {"document_type_id": t, "label": format!("alpha batch {n}")}
                    ]})),
                    upload: false,
                    probe: vec!["/api/v4/documents/?page_size=500".into()],
                    change: true,
                    exp: &|m, u| body_ref(m.act(u, DOC_CREATE, (K::DocType, t), 201)),
                    restore: &|x, b, a| {
                        x.delete_new(&b[0], &a[0], &|i| format!("/api/v4/documents/{i}/"));
                        true
                    },
                },
            );
        },
    );
    let pairs: Vec<(i64, i64)> = (m.dts.iter())
        .flat_map(|dt| m.mts.iter().map(move |mt| (*dt, *mt)))
        .filter(|(dt, mt)| !m.assocs.values().any(|a| a.dt == *dt && a.mt == *mt))
        .collect();
    x.writes(
        &pairs,
        |m, u, (dt, _)| m.seen(u, (K::DocType, *dt)),
        |x, c, (dt, mt)| {
            let path = format!("/api/v4/documents/types/{dt}/metadata-types/");
            x.write(
                c,
                &Change {
                    op: "POST /api/v4/documents/types/{document_type_id}/metadata-types/",
                    target: format!("document type {dt}, metadata type {mt}"),
                    method: "POST",
                    path: path.clone(),
                    body: Some(json!({"metadata_type_id": mt, "required": false})),
                    upload: false,
                    probe: vec![format!("{path}?page_size=500")],
                    change: true,
                    exp: &|m, u| match m.act(u, DT_EDIT, (K::DocType, dt), 201) {
                        Exp::Ok(_) if !m.seen(u, (K::MetaType, mt)) => Exp::No(400),
                        e => e,
                    },
                    restore: &|x, b, a| {
                        x.delete_new(&b[0], &a[0], &|i| format!("{path}{i}/"));
                        true
                    },
                },
            );
        },
    );
    let assocs: Vec<(i64, AssocM)> = m.assocs.clone().into_iter().collect();
    x.writes(&assocs, |m, u, (_, a)| m.has(u, DT_EDIT, (K::DocType, a.dt)) && m.seen(u, (K::MetaType, a.mt)), |x, c, (a, assoc)| {
        let path = format!("/api/v4/documents/types/{}/metadata-types/{a}/", assoc.dt);
        for (op, method, body) in [
            (
                "PATCH /api/v4/documents/types/{document_type_id}/metadata-types/{association_id}/",
                "PATCH",
                json!({ "required": assoc.required }),
            ),
            (
                "PUT /api/v4/documents/types/{document_type_id}/metadata-types/{association_id}/",
                "PUT",
                json!({"metadata_type_id": assoc.mt, "required": assoc.required}),
            ),
        ] {
            x.write(
                c,
                &Change {
                    op,
                    target: format!("association {a}"),
                    method,
                    path: path.clone(),
                    body: Some(body),
                    upload: false,
                    probe: vec![path.clone()],
                    change: false,
                    exp: &|m, u| {
                        if !(m.seen(u, (K::DocType, assoc.dt))
                            && m.seen(u, (K::MetaType, assoc.mt)))
                        {
                            Exp::No(404)
                        } else if m.has(u, DT_EDIT, (K::DocType, assoc.dt)) {
                            Exp::Ok(200)
                        } else {
                            Exp::No(403)
                        }
                    },
                    restore: &label_back("required"),
                },
            );
        }
    });
    // Documents, their values and files.
    let docs: Vec<i64> = m.docs.keys().copied().collect();
    x.writes(
        &docs,
        |m, u, d| m.seen(u, (K::Doc, *d)),
        |x, c, d| {
            let o = (K::Doc, d);
            let n = x.next_seq();
            let path = format!("/api/v4/documents/{d}/");
            x.write(
                c,
                &Change {
                    op: "PATCH /api/v4/documents/{document_id}/",
                    target: format!("document {d}"),
                    method: "PATCH",
                    path: path.clone(),
                    body: Some(json!({ "label": format!("alpha renamed {n}") })),
                    upload: false,
                    probe: vec![path.clone()],
                    change: true,
                    exp: &|m, u| m.act(u, DOC_EDIT, o, 200),
                    restore: &label_back("label"),
                },
            );
            let files = format!("/api/v4/documents/{d}/files/");
            x.write(
                c,
                &Change {
                    op: "POST /api/v4/documents/{document_id}/files/",
                    target: format!("document {d}"),
                    method: "POST",
                    path: files.clone(),
                    body: None,
                    upload: true,
                    probe: vec![format!("{files}?page_size=500")],
                    change: true,
                    exp: &|m, u| m.act(u, FILE_NEW, o, 201),
                    restore: &|x, b, a| {
                        x.delete_new(&b[0], &a[0], &|i| format!("{files}{i}/"));
                        true
                    },
                },
            );
            let dt = x.m.docs[&d];
            let present: BTreeSet<i64> =
                x.m.values
                    .values()
                    .filter(|v| v.doc == d)
                    .map(|v| v.mt)
                    .collect();
            let addable: Vec<i64> = (x.m.assocs.values())
                .filter(|a| a.dt == dt && !present.contains(&a.mt))
                .map(|a| a.mt)
                .collect();
            if let Some(mt) = addable.first().copied() {
                let values = format!("/api/v4/documents/{d}/metadata/");
                x.write(
                    c,
                    &Change {
                        op: "POST /api/v4/documents/{document_id}/metadata/",
                        target: format!("document {d}, metadata type {mt}"),
                        method: "POST",
                        path: values.clone(),
                        body: Some(
                            json!({"metadata_type_id": mt, "value": format!("common added {n}")}),
                        ),
                        upload: false,
                        probe: vec![format!("{values}?page_size=500")],
                        change: true,
                        exp: &|m, u| {
                            let t = (K::MetaType, mt);
                            if !m.seen(u, o) {
                                Exp::No(404)
                            } else if !m.has(u, DM_ADD, o) {
                                Exp::No(403)
                            } else if m.has(u, DM_ADD, t) {
                                Exp::Ok(201)
                            } else if m.seen(u, t) || m.has(u, DM_VIEW, t) {
                                Exp::No(403)
                            } else {
                                Exp::No(400)
                            }
                        },
                        restore: &|x, b, a| {
                            x.delete_new(&b[0], &a[0], &|i| format!("{values}{i}/"));
                            true
                        },
                    },
                );
            }
        },
    );
    let values: Vec<(i64, ValM)> = m.values.clone().into_iter().collect();
    x.writes(
        &values,
        |m, u, (v, _)| m.value_visible(u, *v),
        |x, c, (v, val)| {
            let path = format!("/api/v4/documents/{}/metadata/{v}/", val.doc);
            let n = x.next_seq();
            for (op, method, body) in [
                (
                    "PATCH /api/v4/documents/{document_id}/metadata/{metadata_id}/",
                    "PATCH",
                    json!({ "value": format!("common changed {n}") }),
                ),
                (
                    "PUT /api/v4/documents/{document_id}/metadata/{metadata_id}/",
                    "PUT",
                    json!({"metadata_type_id": val.mt, "value": format!("common put {n}")}),
                ),
            ] {
                x.write(
                    c,
                    &Change {
                        op,
                        target: format!("value {v}"),
                        method,
                        path: path.clone(),
                        body: Some(body),
                        upload: false,
                        probe: vec![path.clone()],
                        change: true,
                        exp: &|m, u| {
                            if !m.value_visible(u, v) {
                                Exp::No(404)
                            } else if m.has(u, DM_EDIT, (K::Doc, val.doc))
                                && m.has(u, DM_EDIT, (K::MetaType, val.mt))
                            {
                                Exp::Ok(200)
                            } else {
                                Exp::No(403)
                            }
                        },
                        restore: &label_back("value"),
                    },
                );
            }
        },
    );
    // Workflow instances: a transition and back.
    let insts: Vec<(i64, InstM)> = m.insts.clone().into_iter().collect();
    x.writes(
        &insts,
        |m, u, (i, _)| m.inst_visible(u, *i),
        |x, c, (i, inst)| {
            let wf = &x.m.wfs[&inst.wf];
            let Some((t, _)) = wf
                .transitions
                .iter()
                .find(|(_, t)| Some(t.from) == inst.state)
            else {
                return;
            };
            let t = *t;
            let path = format!("/api/v4/documents/{}/workflows/{i}/", inst.doc);
            x.write(
                c,
                &Change {
                    op: "POST /api/v4/documents/{document_id}/workflows/{instance_id}/transitions/",
                    target: format!("instance {i}, transition {t}"),
                    method: "POST",
                    path: format!("{path}transitions/"),
                    body: Some(json!({"transition_id": t, "comment": "matrix"})),
                    upload: false,
                    probe: vec![path.clone()],
                    change: true,
                    exp: &|m, u| {
                        if !m.inst_visible(u, i) {
                            Exp::No(404)
                        } else if m.has(u, WF_TRANSITION, (K::Instance, i))
                            || m.has(u, WF_TRANSITION, (K::Doc, inst.doc))
                        {
                            Exp::Ok(201)
                        } else {
                            Exp::No(403)
                        }
                    },
                    restore: &|x, b, a| {
                        let (from, to) = (
                            b[0]["body"]["current_state_id"].as_i64(),
                            a[0]["body"]["current_state_id"].as_i64(),
                        );
                        let back = (x.m.wfs[&inst.wf].transitions.iter())
                            .find(|(_, t)| Some(t.from) == to && Some(t.to) == from)
                            .map(|(t, _)| *t)
                            .expect("a way back");
                        x.admin(
                            "POST",
                            &format!("{path}transitions/"),
                            Some(json!({"transition_id": back, "comment": "undo"})),
                        );
                        true
                    },
                },
            );
        },
    );
    // Workflow templates.
    let wfs: Vec<(i64, WfM)> = m.wfs.clone().into_iter().collect();
    x.writes(&wfs, |m, u, (w, _)| m.seen(u, (K::Workflow, *w)), |x, c, (w, wf)| {
        let o = (K::Workflow, w);
        let base = format!("/api/v4/workflow-templates/{w}/");
        let n = x.next_seq();
        // Every change of a workflow's definition (labels included: its templates read them)
        // needs what its actions do.
        let rewire = move |m: &Model, u: i64, ok: u16| match m.act(u, WF_EDIT, o, ok) {
            Exp::Ok(_) if !m.may_rewire(u, w) => Exp::No(403),
            e => e,
        };
        let edit = move |m: &Model, u: i64| rewire(m, u, 200);
        let create = move |m: &Model, u: i64| rewire(m, u, 201);
        let delete = move |m: &Model, u: i64| rewire(m, u, 204);
        // The unreachable state (no transition leads to it) carries the actions and the trigger.
        let unreachable = *(wf.states.keys())
            .find(|s| !wf.transitions.values().any(|t| t.to == **s))
            .expect("an unreachable state");
        let initial = *(wf.states.keys()).find(|s| **s != unreachable).expect("a state");
        let (thaw, _) = (wf.transitions.iter())
            .find(|(_, t)| t.from == unreachable)
            .expect("a transition from the unreachable state");
        let thaw = *thaw;
        x.write(c, &Change {
            op: "PATCH /api/v4/workflow-templates/{workflow_id}/",
            target: format!("workflow {w}"),
            method: "PATCH",
            path: base.clone(),
            body: Some(json!({ "label": format!("workflow {n}") })),
            upload: false,
            probe: vec![base.clone()],
            change: true,
            exp: &edit,
            restore: &label_back("label"),
        });
        let resync = move |x: &mut Ctx, _: &[Value], _: &[Value]| {
            x.resync_workflow(w);
            false
        };
        x.write(c, &Change {
            op: "POST /api/v4/workflow-templates/{workflow_id}/states/",
            target: format!("workflow {w}"),
            method: "POST",
            path: format!("{base}states/"),
            body: Some(json!({"label": format!("state {n}"), "initial": false})),
            upload: false,
            probe: vec![format!("{base}states/")],
            change: true,
            exp: &create,
            restore: &resync,
        });
        x.write(c, &Change {
            op: "POST /api/v4/workflow-templates/{workflow_id}/transitions/",
            target: format!("workflow {w}"),
            method: "POST",
            path: format!("{base}transitions/"),
            body: Some(json!({"label": format!("transition {n}"), "origin_state_id": unreachable, "destination_state_id": initial})),
            upload: false,
            probe: vec![format!("{base}transitions/")],
            change: true,
            exp: &create,
            restore: &resync,
        });
        let actions = format!("{base}states/{unreachable}/actions/");
        let mt = x.m.mts.iter().next().copied().unwrap_or_default();
        // An action names its metadata types (unseen: like unknown ones, 400) and needs what it
        // does on every bound type.
        let add = ActM::Metadata("add_metadata".into(), vec![mt]);
        let dts = wf.dts.clone();
        let create_action = move |m: &Model, u: i64| match m.act(u, WF_EDIT, o, 201) {
            Exp::Ok(_) if !m.seen(u, (K::MetaType, mt)) => Exp::No(400),
            Exp::Ok(_) if !m.may_do(u, &add, &dts) => Exp::No(403),
            e => e,
        };
        x.write(c, &Change {
            op: "POST /api/v4/workflow-templates/{workflow_id}/states/{state_id}/actions/",
            target: format!("workflow {w}, state {unreachable}"),
            method: "POST",
            path: actions.clone(),
            body: Some(json!({"label": format!("action {n}"), "when": "entry", "action": {"type": "add_metadata", "metadata_type_ids": [mt]}})),
            upload: false,
            probe: vec![actions.clone()],
            change: true,
            exp: &create_action,
            restore: &|x, b, a| { x.delete_new(&b[0], &a[0], &|i| format!("{actions}{i}/")); true },
        });
        let state = format!("{base}states/{unreachable}/");
        x.write(c, &Change {
            op: "PATCH /api/v4/workflow-templates/{workflow_id}/states/{state_id}/",
            target: format!("workflow {w}, state {unreachable}"),
            method: "PATCH",
            path: state.clone(),
            body: Some(json!({ "label": format!("state renamed {n}") })),
            upload: false,
            probe: vec![state.clone()],
            change: true,
            exp: &edit,
            restore: &label_back("label"),
        });
        let transition = format!("{base}transitions/{thaw}/");
        x.write(c, &Change {
            op: "PATCH /api/v4/workflow-templates/{workflow_id}/transitions/{transition_id}/",
            target: format!("workflow {w}, transition {thaw}"),
            method: "PATCH",
            path: transition.clone(),
            body: Some(json!({ "label": format!("transition renamed {n}") })),
            upload: false,
            probe: vec![transition.clone()],
            change: true,
            exp: &edit,
            restore: &label_back("label"),
        });
        // Deletes of a spare state and a spare transition the administrator adds first.
        let spare = id(&x.admin("POST", &format!("{base}states/"), Some(json!({"label": format!("spare {n}"), "initial": false}))));
        x.resync_workflow(w);
        let gone = move |x: &mut Ctx, _: &[Value], _: &[Value]| {
            x.raw("DELETE", &format!("/api/v4/workflow-templates/{w}/states/{spare}/"), Some(ADMIN), None);
            x.resync_workflow(w);
            false
        };
        x.write(c, &Change {
            op: "DELETE /api/v4/workflow-templates/{workflow_id}/states/{state_id}/",
            target: format!("workflow {w}, state {spare}"),
            method: "DELETE",
            path: format!("{base}states/{spare}/"),
            body: None,
            upload: false,
            probe: vec![format!("{base}states/?page_size=500")],
            change: true,
            exp: &delete,
            restore: &gone,
        });
        let spare_t = id(&x.admin("POST", &format!("{base}transitions/"), Some(json!({"label": format!("spare {n}"), "origin_state_id": unreachable, "destination_state_id": initial}))));
        x.resync_workflow(w);
        let gone_t = move |x: &mut Ctx, _: &[Value], _: &[Value]| {
            x.raw("DELETE", &format!("/api/v4/workflow-templates/{w}/transitions/{spare_t}/"), Some(ADMIN), None);
            x.resync_workflow(w);
            false
        };
        x.write(c, &Change {
            op: "DELETE /api/v4/workflow-templates/{workflow_id}/transitions/{transition_id}/",
            target: format!("workflow {w}, transition {spare_t}"),
            method: "DELETE",
            path: format!("{base}transitions/{spare_t}/"),
            body: None,
            upload: false,
            probe: vec![format!("{base}transitions/?page_size=500")],
            change: true,
            exp: &delete,
            restore: &gone_t,
        });
        let triggers = format!("{base}transitions/{thaw}/triggers/");
        x.write(c, &Change {
            op: "POST /api/v4/workflow-templates/{workflow_id}/transitions/{transition_id}/triggers/",
            target: format!("workflow {w}, transition {thaw}"),
            method: "POST",
            path: triggers.clone(),
            body: Some(json!({ "event_type": "document_metadata_edited" })),
            upload: false,
            probe: vec![triggers.clone()],
            change: true,
            exp: &create,
            restore: &|x, _, _| { x.admin("DELETE", &format!("{triggers}document_metadata_edited/"), None); true },
        });
        x.write(c, &Change {
            op: "DELETE /api/v4/workflow-templates/{workflow_id}/transitions/{transition_id}/triggers/{event_type}/",
            target: format!("workflow {w}, transition {thaw}"),
            method: "DELETE",
            path: format!("{triggers}document_metadata_removed/"),
            body: None,
            upload: false,
            probe: vec![triggers.clone()],
            change: true,
            exp: &delete,
            restore: &|x, _, _| { x.admin("POST", &triggers, Some(json!({ "event_type": "document_metadata_removed" }))); true },
        });
    });
    // Cabinets.
    let cabs: Vec<i64> = m.cabs.keys().copied().collect();
    x.writes(
        &cabs,
        |m, u, c| m.seen(u, (K::Cabinet, *c)),
        |x, c, cab| {
            let o = (K::Cabinet, cab);
            let n = x.next_seq();
            let path = format!("/api/v4/cabinets/{cab}/");
            x.write(
                c,
                &Change {
                    op: "POST /api/v4/cabinets/",
                    target: format!("under cabinet {cab}"),
                    method: "POST",
                    path: "/api/v4/cabinets/".into(),
                    body: Some(json!({"label": format!("sub {n}"), "parent_id": cab})),
                    upload: false,
                    probe: vec!["/api/v4/cabinets/?page_size=500".into()],
                    change: true,
                    exp: &|m, u| body_ref(m.act(u, CAB_CREATE, o, 201)),
                    restore: &|x, b, a| {
                        x.delete_new(&b[0], &a[0], &|i| format!("/api/v4/cabinets/{i}/"));
                        true
                    },
                },
            );
            x.write(
                c,
                &Change {
                    op: "PATCH /api/v4/cabinets/{cabinet_id}/",
                    target: format!("cabinet {cab}"),
                    method: "PATCH",
                    path: path.clone(),
                    body: Some(json!({ "label": format!("cabinet {n}") })),
                    upload: false,
                    probe: vec![path.clone()],
                    change: true,
                    exp: &|m, u| m.act(u, CAB_EDIT, o, 200),
                    restore: &label_back("label"),
                },
            );
            let inside: Vec<i64> = x.m.cabs[&cab].docs.iter().copied().collect();
            let outside: Vec<i64> =
                x.m.docs
                    .keys()
                    .copied()
                    .filter(|d| !inside.contains(d))
                    .collect();
            // A document the caller may add (remove) when there is one, else any.
            let mut choose = |docs: &[i64], perm: &str| {
                let mine: Vec<i64> = (docs.iter().copied())
                    .filter(|d| c.id.is_some_and(|u| x.m.has(u, perm, (K::Doc, *d))))
                    .collect();
                let from = if mine.is_empty() { docs } else { &mine[..] };
                from.get(x.dice.below(from.len())).copied()
            };
            let (outside, inside) = (
                choose(&outside, CAB_ADD_DOC),
                choose(&inside, CAB_REMOVE_DOC),
            );
            let docs_path = format!("{path}documents/?page_size=500");
            for (op, verb, perm, doc) in [
                (
                    "POST /api/v4/cabinets/{cabinet_id}/documents/add/",
                    "add",
                    CAB_ADD_DOC,
                    outside,
                ),
                (
                    "POST /api/v4/cabinets/{cabinet_id}/documents/remove/",
                    "remove",
                    CAB_REMOVE_DOC,
                    inside,
                ),
            ] {
                let Some(d) = doc else { continue };
                x.toggle(
                    c,
                    op,
                    format!("cabinet {cab}, document {d}"),
                    (&path, "documents", verb),
                    json!({ "document_id": d }),
                    docs_path.clone(),
                    &|m, u| match m.act(u, perm, o, 200) {
                        Exp::Ok(_) => body_ref(m.act(u, perm, (K::Doc, d), 200)),
                        refused => refused,
                    },
                );
            }
        },
    );
    // Roles: label, groups, global permissions.
    let roles: Vec<(i64, RoleM)> = m.roles.clone().into_iter().collect();
    let groups: Vec<i64> = m.groups.keys().copied().collect();
    x.writes(
        &roles,
        |m, u, (r, _)| m.seen(u, (K::Role, *r)),
        |x, c, (r, role)| {
            let o = (K::Role, r);
            let n = x.next_seq();
            let path = format!("/api/v4/roles/{r}/");
            let edit = move |m: &Model, u: i64| m.act(u, ROLE_EDIT, o, 200);
            // Renaming, and linking or unlinking groups, need holding what the role grants.
            let rename = move |m: &Model, u: i64| match edit(m, u) {
                Exp::Ok(_) if !m.holds_role(u, r) => Exp::No(403),
                e => e,
            };
            x.write(
                c,
                &Change {
                    op: "PATCH /api/v4/roles/{role_id}/",
                    target: format!("role {r}"),
                    method: "PATCH",
                    path: path.clone(),
                    body: Some(json!({ "label": format!("role {n}") })),
                    upload: false,
                    probe: vec![path.clone()],
                    change: true,
                    exp: &rename,
                    restore: &label_back("label"),
                },
            );
            let out = groups.iter().copied().find(|g| !role.groups.contains(g));
            let member = role.groups.iter().next().copied();
            for (op, verb, g) in [
                ("POST /api/v4/roles/{role_id}/groups/add/", "add", out),
                (
                    "POST /api/v4/roles/{role_id}/groups/remove/",
                    "remove",
                    member,
                ),
            ] {
                let Some(g) = g else { continue };
                // The group must be visible (an invisible one answers like an unknown one), and
                // assigning or removing needs holding what the role grants.
                let link = move |m: &Model, u: i64| match edit(m, u) {
                    Exp::Ok(_) if !m.glob(u, GROUP_VIEW) => Exp::No(400),
                    Exp::Ok(_) if !m.holds_role(u, r) => Exp::No(403),
                    e => e,
                };
                x.toggle(
                    c,
                    op,
                    format!("role {r}, group {g}"),
                    (&path, "groups", verb),
                    json!({ "group_id": g }),
                    format!("{path}groups/?page_size=500"),
                    &link,
                );
            }
            let missing = GLOBAL_POOL
                .iter()
                .find(|p| !role.global.contains(**p))
                .map(|p| p.to_string());
            let held = role.global.iter().next().cloned();
            for (op, verb, p) in [
                (
                    "POST /api/v4/roles/{role_id}/permissions/add/",
                    "add",
                    missing,
                ),
                (
                    "POST /api/v4/roles/{role_id}/permissions/remove/",
                    "remove",
                    held,
                ),
            ] {
                let Some(p) = p else { continue };
                // A global grant needs role_edit globally and holding the permission globally.
                let key = p.clone();
                let global = move |m: &Model, u: i64| match edit(m, u) {
                    Exp::Ok(_) if !m.glob(u, ROLE_EDIT) || !m.glob(u, &key) => Exp::No(403),
                    e => e,
                };
                x.toggle(
                    c,
                    op,
                    format!("role {r}, {p}"),
                    (&path, "permissions", verb),
                    json!({ "permission": p }),
                    format!("{path}permissions/?page_size=500"),
                    &global,
                );
            }
        },
    );
    // Groups.
    let users: Vec<i64> = m.users.keys().copied().collect();
    let groups2: Vec<(i64, BTreeSet<i64>)> = m.groups.clone().into_iter().collect();
    x.writes(
        &groups2,
        |m, u, _| m.glob(u, GROUP_VIEW),
        |x, c, (g, members)| {
            let n = x.next_seq();
            let path = format!("/api/v4/groups/{g}/");
            // Every change to a group needs holding what its roles grant.
            let edit = move |m: &Model, u: i64| {
                if !m.glob(u, GROUP_VIEW) {
                    Exp::No(404)
                } else if !m.glob(u, GROUP_EDIT) {
                    Exp::No(403)
                } else {
                    Exp::Ok(200)
                }
            };
            let rename = move |m: &Model, u: i64| match edit(m, u) {
                Exp::Ok(_) if !m.holds_group(u, g) => Exp::No(403),
                e => e,
            };
            x.write(
                c,
                &Change {
                    op: "PATCH /api/v4/groups/{group_id}/",
                    target: format!("group {g}"),
                    method: "PATCH",
                    path: path.clone(),
                    body: Some(json!({ "name": format!("group {n}") })),
                    upload: false,
                    probe: vec![path.clone()],
                    change: true,
                    exp: &rename,
                    restore: &label_back("name"),
                },
            );
            let out = users.iter().copied().find(|u| !members.contains(u));
            let member = members.iter().next().copied();
            for (op, verb, t) in [
                ("POST /api/v4/groups/{group_id}/users/add/", "add", out),
                (
                    "POST /api/v4/groups/{group_id}/users/remove/",
                    "remove",
                    member,
                ),
            ] {
                let Some(t) = t else { continue };
                // The user must be visible (an invisible one answers like an unknown one), and
                // adding or removing needs holding what the group's roles grant.
                let member = move |m: &Model, u: i64| match edit(m, u) {
                    Exp::Ok(_) if !m.user_visible(u, t) => Exp::No(400),
                    Exp::Ok(_) if !m.holds_group(u, g) => Exp::No(403),
                    e => e,
                };
                x.toggle(
                    c,
                    op,
                    format!("group {g}, user {t}"),
                    (&path, "users", verb),
                    json!({ "user_id": t }),
                    format!("{path}users/?page_size=500"),
                    &member,
                );
            }
        },
    );
    // ACLs: creation, and adding or removing a key, also through an ACL of another object.
    let objects = acl_objects(&m);
    let all_roles: Vec<i64> = m.roles.keys().copied().collect();
    x.writes(&objects, |m, u, o| m.has(u, ACL_EDIT, *o), |x, c, o| {
        let path = acls_path(o);
        let probe = format!("{path}?page_size=500");
        let mine = x.m.acls.get(&o).cloned().unwrap_or_default();
        let edit = move |m: &Model, u: i64| m.act(u, ACL_EDIT, o, 200);
        let restore = move |x: &mut Ctx, b: &[Value], _: &[Value]| x.set_acls(o, &b[0]["body"]);
        if let Some(r) = all_roles.iter().copied().find(|r| !mine.contains_key(r)) {
            x.write(c, &Change {
                op: "POST /api/v5/objects/{app_label}/{model_name}/{object_id}/acls/",
                target: format!("{o:?}, role {r}"),
                method: "POST",
                path: path.clone(),
                body: Some(json!({ "role_id": r })),
                upload: false,
                probe: vec![probe.clone()],
                change: true,
                // The role must be visible: an invisible one answers like an unknown one.
                exp: &|m, u| match m.act(u, ACL_EDIT, o, 201) {
                    Exp::Ok(_) if !m.seen(u, (K::Role, r)) => Exp::No(400),
                    e => e,
                },
                restore: &restore,
            });
        }
        let foreign: Vec<(Obj, i64)> = (x.m.acls.iter())
            .filter(|(other, _)| **other != o)
            .flat_map(|(other, a)| a.values().map(move |a| (*other, a.id)))
            .collect();
        let foreign = foreign.get(x.dice.below(foreign.len())).copied();
        // (ACL, verb, permission, whether the ACL is this object's, its role)
        let mut cases: Vec<(i64, &'static str, String, bool, i64)> = Vec::new();
        for (role, a) in &mine {
            if let Some(p) = o.0.pool().iter().find(|p| !a.perms.contains(**p)) {
                cases.push((a.id, "add", p.to_string(), true, *role));
            }
            if a.perms.len() >= 2 {
                let p = a.perms.iter().next().cloned().unwrap_or_default();
                cases.push((a.id, "remove", p, true, *role));
            }
        }
        if let Some((other, acl)) = foreign {
            let theirs = x.m.acls[&other].values().find(|a| a.id == acl).cloned().expect("acl");
            let p = o.0.pool().iter().find(|p| !theirs.perms.contains(**p)).unwrap_or(&ACL_VIEW).to_string();
            let role = (x.m.acls[&other].iter()).find(|(_, a)| a.id == acl).map_or(0, |(r, _)| *r);
            cases.push((acl, "add", p, false, role));
            let p = theirs.perms.iter().next().cloned().unwrap_or_default();
            cases.push((acl, "remove", p, false, role));
        }
        for (acl, verb, p, own, role) in cases {
            // Through this object's ACL: the role must be visible (else it answers like an
            // unknown one), and adding or removing needs holding the permission there.
            let key = p.clone();
            let own_exp = move |m: &Model, u: i64| match edit(m, u) {
                Exp::Ok(_) if !m.seen(u, (K::Role, role)) => Exp::No(400),
                Exp::Ok(_) if !m.has(u, &key, o) => Exp::No(403),
                e => e,
            };
            let op = if verb == "add" {
                "POST /api/v5/objects/{app_label}/{model_name}/{object_id}/acls/{acl_id}/permissions/add/"
            } else {
                "POST /api/v5/objects/{app_label}/{model_name}/{object_id}/acls/{acl_id}/permissions/remove/"
            };
            let mut probes = vec![probe.clone()];
            let other = foreign.map(|(other, _)| other);
            if !own {
                probes.push(format!("{}?page_size=500", acls_path(other.unwrap_or(o))));
            }
            x.write(c, &Change {
                op,
                target: format!("{o:?}, ACL {acl}{}, {p}", if own { "" } else { " of another object" }),
                method: "POST",
                path: format!("{path}{acl}/permissions/{verb}/"),
                body: Some(json!({ "permission": p })),
                upload: false,
                probe: probes,
                change: own,
                exp: &|m, u| if own { own_exp(m, u) } else { match edit(m, u) { Exp::No(403) => Exp::Refused, _ => Exp::No(404) } },
                restore: &|x, b, _| {
                    let mut same = x.set_acls(o, &b[0]["body"]);
                    if let (false, Some(other)) = (own, other) {
                        same &= x.set_acls(other, &b[1]["body"]);
                    }
                    same
                },
            });
        }
    });
}

// ----- phase D: deletions and type changes, in the model -----------------------------------------

fn deletions(x: &mut Ctx) {
    // Values (a required one: 400).
    for (v, val) in x.m.values.clone() {
        let dt = x.m.docs[&val.doc];
        let required = (x.m.assocs.values()).any(|a| a.dt == dt && a.mt == val.mt && a.required);
        x.delete(
            "DELETE /api/v4/documents/{document_id}/metadata/{metadata_id}/",
            format!("value {v}"),
            format!("/api/v4/documents/{}/metadata/{v}/", val.doc),
            None,
            &|m, u| {
                let remove = |o| m.has(u, DM_REMOVE, o);
                if !m.value_visible(u, v) {
                    Exp::No(404)
                } else if !(remove((K::Doc, val.doc)) && remove((K::MetaType, val.mt))) {
                    Exp::No(403)
                } else if required {
                    Exp::Ok(400)
                } else {
                    Exp::Ok(204)
                }
            },
            &|x| {
                x.m.values.remove(&v);
            },
        );
    }
    for (f, d) in x.m.files.clone() {
        x.delete(
            "DELETE /api/v4/documents/{document_id}/files/{file_id}/",
            format!("file {f}"),
            format!("/api/v4/documents/{d}/files/{f}/"),
            None,
            &|m, u| {
                if !m.files.contains_key(&f) || !m.seen(u, (K::Doc, d)) {
                    Exp::No(404)
                } else if m.has(u, DOC_EDIT, (K::File, f)) {
                    Exp::Ok(204)
                } else {
                    Exp::No(403)
                }
            },
            &|x| {
                x.m.files.remove(&f);
            },
        );
    }
    for (w, wf) in x.m.wfs.clone() {
        for (s, actions) in wf.states {
            for a in actions {
                let base = format!("/api/v4/workflow-templates/{w}/states/{s}/actions/");
                x.delete(
                    "DELETE /api/v4/workflow-templates/{workflow_id}/states/{state_id}/actions/{action_id}/",
                    format!("action {a}"),
                    format!("{base}{a}/"),
                    Some(base),
                    &|m, u| {
                        let exists = (m.wfs.get(&w))
                            .is_some_and(|wf| wf.states.get(&s).is_some_and(|x| x.contains(&a)));
                        // Deleting an action needs what it does.
                        let may = (m.wfs.get(&w)).is_none_or(|wf| {
                            wf.actions.get(&a).is_none_or(|act| m.may_do(u, act, &wf.dts))
                        });
                        match m.act(u, WF_EDIT, (K::Workflow, w), 204) {
                            Exp::Ok(_) if !exists => Exp::No(404),
                            Exp::Ok(_) if !may => Exp::No(403),
                            e => e,
                        }
                    },
                    &|x| {
                        if let Some(wf) = x.m.wfs.get_mut(&w) {
                            wf.actions.remove(&a);
                            if let Some(st) = wf.states.get_mut(&s) {
                                st.remove(&a);
                            }
                        }
                    },
                );
            }
        }
    }
    // Type changes: every allowed caller moves the document on to another type.
    let op = "POST /api/v4/documents/{document_id}/type/change/";
    x.exercised.insert(op);
    let docs: Vec<i64> = x.m.docs.keys().copied().collect();
    for d in docs {
        let mut order = x.callers.clone();
        let anon = order.remove(0);
        x.dice.shuffle(&mut order);
        order.insert(0, anon);
        for c in order {
            let Some(current) = x.m.docs.get(&d).copied() else {
                break;
            };
            let new =
                *x.m.dts
                    .iter()
                    .find(|t| **t != current && **t > current)
                    .or_else(|| x.m.dts.iter().find(|t| **t != current))
                    .expect("another type");
            let exp = x.expect(&c, &|m, u| m.change_type(u, d, new));
            let probe = vec![
                format!("/api/v4/documents/{d}/"),
                format!("/api/v4/documents/{d}/metadata/"),
            ];
            let before = x.probe(&probe);
            let (st, _) = x.call(
                &c,
                "POST",
                &format!("/api/v4/documents/{d}/type/change/"),
                Some(&json!({ "document_type_id": new })),
            );
            let target = format!("document {d} to type {new}");
            let mark = x.problems.len();
            x.judge(op, &c, &target, exp, st);
            let after = x.probe(&probe);
            let passed = (200..300).contains(&st);
            if after != before {
                if !passed {
                    x.changed_anyway(op, &target, &c, exp, mark);
                }
                x.resync_document(d);
            } else if passed {
                x.problem(
                    Cat::AllowedNoEffect,
                    op,
                    format!("{} on {target}: answered {st}, nothing changed", c.name),
                );
            }
        }
    }
    x.wait_tasks();
    // Associations (their values go in a background task).
    for (a, assoc) in x.m.assocs.clone() {
        x.delete(
            "DELETE /api/v4/documents/types/{document_type_id}/metadata-types/{association_id}/",
            format!("association {a}"),
            format!("/api/v4/documents/types/{}/metadata-types/{a}/", assoc.dt),
            None,
            &|m, u| {
                let (dt, mt) = ((K::DocType, assoc.dt), (K::MetaType, assoc.mt));
                if !(m.assocs.contains_key(&a) && m.seen(u, dt) && m.seen(u, mt)) {
                    Exp::No(404)
                } else if m.has(u, DT_EDIT, dt) {
                    Exp::Ok(204)
                } else {
                    Exp::No(403)
                }
            },
            &|x| {
                x.m.assocs.remove(&a);
                x.wait_tasks();
                let docs: Vec<i64> = (x.m.docs.iter())
                    .filter(|(_, dt)| **dt == assoc.dt)
                    .map(|(d, _)| *d)
                    .collect();
                for d in docs {
                    x.resync_document(d);
                }
            },
        );
    }
    // The ACLs of the spare roles.
    let acls: Vec<(Obj, i64, i64)> = (x.m.acls.iter())
        .flat_map(|(o, a)| a.iter().map(move |(r, a)| (*o, *r, a.id)))
        .filter(|(_, r, _)| x.spare_roles.contains(r))
        .collect();
    for (o, role, acl) in acls {
        x.delete(
            "DELETE /api/v5/objects/{app_label}/{model_name}/{object_id}/acls/{acl_id}/",
            format!("ACL {acl} of {o:?}"),
            format!("{}{acl}/", acls_path(o)),
            Some(format!("{}?page_size=500", acls_path(o))),
            &|m, u| {
                let exists =
                    (m.acls.get(&o)).is_some_and(|a| a.get(&role).is_some_and(|a| a.id == acl));
                match m.act(u, ACL_EDIT, o, 204) {
                    Exp::Ok(_) if !exists => Exp::No(404),
                    // Holding each of its permissions there.
                    Exp::Ok(_) if !(m.acls[&o][&role].perms.iter()).all(|p| m.has(u, p, o)) => {
                        Exp::No(403)
                    }
                    e => e,
                }
            },
            &|x| {
                if let Some(a) = x.m.acls.get_mut(&o) {
                    a.remove(&role);
                }
                x.m.acls.retain(|_, a| !a.is_empty());
            },
        );
    }
    for d in x.m.docs.keys().copied().collect::<Vec<_>>() {
        x.delete(
            "DELETE /api/v4/documents/{document_id}/",
            format!("document {d}"),
            format!("/api/v4/documents/{d}/"),
            None,
            &|m, u| match m.docs.contains_key(&d) {
                true => m.act(u, DOC_DELETE, (K::Doc, d), 204),
                false => Exp::No(404),
            },
            &|x| x.m.remove_doc(d),
        );
    }
    // Cabinets, leaves first (a cabinet goes with its sub-cabinets).
    for c in x.m.cabs.keys().rev().copied().collect::<Vec<_>>() {
        x.delete(
            "DELETE /api/v4/cabinets/{cabinet_id}/",
            format!("cabinet {c}"),
            format!("/api/v4/cabinets/{c}/"),
            Some("/api/v4/cabinets/?page_size=500".into()),
            &|m, u| match m.cabs.contains_key(&c) {
                true => m.act(u, CAB_DELETE, (K::Cabinet, c), 204),
                false => Exp::No(404),
            },
            &|x| x.m.remove_cab(c),
        );
    }
    for w in x.m.wfs.keys().copied().collect::<Vec<_>>() {
        x.delete(
            "DELETE /api/v4/workflow-templates/{workflow_id}/",
            format!("workflow {w}"),
            format!("/api/v4/workflow-templates/{w}/"),
            None,
            &|m, u| match m.wfs.contains_key(&w) {
                // Deleting it stops its actions: it needs what they do.
                true => match m.act(u, WF_DELETE, (K::Workflow, w), 204) {
                    Exp::Ok(_) if !m.may_rewire(u, w) => Exp::No(403),
                    e => e,
                },
                false => Exp::No(404),
            },
            &|x| x.m.remove_wf(w),
        );
    }
    // Document types (400 while they have documents), metadata types, users, roles, groups.
    for dt in x.m.dts.iter().copied().collect::<Vec<_>>() {
        x.delete(
            "DELETE /api/v4/documents/types/{document_type_id}/",
            format!("document type {dt}"),
            format!("/api/v4/documents/types/{dt}/"),
            None,
            &|m, u| {
                if !m.dts.contains(&dt) {
                    return Exp::No(404);
                }
                match m.act(u, DT_DELETE, (K::DocType, dt), 204) {
                    Exp::Ok(_) if m.docs.values().any(|t| *t == dt) => Exp::Ok(400),
                    e => e,
                }
            },
            &|x| x.m.remove_dt(dt),
        );
    }
    for mt in x.m.mts.iter().copied().collect::<Vec<_>>() {
        x.delete(
            "DELETE /api/v4/metadata/metadata-types/{metadata_type_id}/",
            format!("metadata type {mt}"),
            format!("/api/v4/metadata/metadata-types/{mt}/"),
            None,
            &|m, u| match m.mts.contains(&mt) {
                true => m.act(u, MT_DELETE, (K::MetaType, mt), 204),
                false => Exp::No(404),
            },
            &|x| x.m.remove_mt(mt),
        );
    }
    let targets: Vec<i64> = (x.m.users.iter())
        .filter(|(_, u)| u.name.starts_with("target"))
        .map(|(i, _)| *i)
        .collect();
    for t in targets {
        x.delete(
            "DELETE /api/v4/users/{user_id}/",
            format!("user {t}"),
            format!("/api/v4/users/{t}/"),
            None,
            &|m, u| {
                if !m.user_visible(u, t) {
                    Exp::No(404)
                } else if !m.glob(u, USER_DELETE)
                    || (m.users[&t].superuser && !m.sup(u))
                    || (u != t && !m.holds_user(u, t))
                {
                    Exp::No(403)
                } else {
                    Exp::Ok(204)
                }
            },
            &|x| x.m.remove_user(t),
        );
    }
    for r in x.spare_roles.clone() {
        x.delete(
            "DELETE /api/v4/roles/{role_id}/",
            format!("role {r}"),
            format!("/api/v4/roles/{r}/"),
            None,
            &|m, u| match m.roles.contains_key(&r) {
                true => match m.act(u, ROLE_DELETE, (K::Role, r), 204) {
                    Exp::Ok(_) if !m.holds_role(u, r) => Exp::No(403),
                    e => e,
                },
                false => Exp::No(404),
            },
            &|x| x.m.remove_role(r),
        );
    }
    for g in x.spare_groups.clone() {
        x.delete(
            "DELETE /api/v4/groups/{group_id}/",
            format!("group {g}"),
            format!("/api/v4/groups/{g}/"),
            None,
            &|m, u| {
                if !m.groups.contains_key(&g) || !m.glob(u, GROUP_VIEW) {
                    Exp::No(404)
                } else if m.glob(u, GROUP_DELETE) && m.holds_group(u, g) {
                    Exp::Ok(204)
                } else {
                    Exp::No(403)
                }
            },
            &|x| x.m.remove_group(g),
        );
    }
}

// ----- the tests ---------------------------------------------------------------------------------

// ----- webhooks ----------------------------------------------------------------------------------

const WH_CREATE: &str = "webhooks.webhook_create";
const WH_VIEW: &str = "webhooks.webhook_view";
const WH_EDIT: &str = "webhooks.webhook_edit";
const WH_DELETE: &str = "webhooks.webhook_delete";

/// Webhooks belong to their creator: every webhook operation as every caller, on every
/// caller's webhook. Runs last, on the world the other phases left: it gives the webhook keys
/// globally to some roles (each role a different set), so that callers hold every combination.
fn webhooks(x: &mut Ctx) {
    let roles: Vec<i64> = x.admin_list("/api/v4/roles/").iter().map(id).collect();
    let sets: [&[&str]; 5] = [
        &[WH_CREATE, WH_VIEW, WH_EDIT, WH_DELETE],
        &[WH_CREATE, WH_VIEW],
        &[WH_CREATE, WH_EDIT],
        &[WH_CREATE, WH_DELETE],
        &[WH_VIEW],
    ];
    for (r, keys) in roles.iter().zip(sets) {
        for key in keys {
            x.admin(
                "POST",
                &format!("/api/v4/roles/{r}/permissions/add/"),
                Some(json!({ "permission": key })),
            );
        }
    }
    x.m = x.load_model();
    // Each caller creates one (nothing listens on the discard port: deliveries stay pending).
    let mut owner: BTreeMap<i64, i64> = BTreeMap::new();
    let op = "POST /api/v4/webhooks/";
    x.exercised.insert(op);
    for c in x.callers.clone() {
        let exp = x.expect(&c, &|m, u| {
            if m.glob(u, WH_CREATE) {
                Exp::Ok(201)
            } else {
                Exp::No(403)
            }
        });
        let body = json!({
            "url": format!("http://127.0.0.1:9/{}", c.name),
            "events": ["user_management.user_edited"],
        });
        let (st, created) = x.call(&c, "POST", "/api/v4/webhooks/", Some(&body));
        x.judge(op, &c, "-", exp, st);
        if st == 201 {
            if created["owner_id"].as_i64() != c.id || !created["secret"].is_string() {
                x.problem(Cat::Other, op, format!("{} got {created}", c.name));
            }
            owner.insert(id(&created), c.id.unwrap_or_default());
        }
    }
    let hooks: Vec<i64> = owner.keys().copied().collect();
    // The rule of every operation on one webhook: someone else's is not found (but to a
    // superuser), one's own needs the key.
    let rule = |m: &Model, u: i64, owner: i64, key: &str, ok: u16| {
        if owner != u && !m.sup(u) {
            Exp::No(404)
        } else if m.glob(u, key) {
            Exp::Ok(ok)
        } else {
            Exp::No(403)
        }
    };
    // An event each owner sees (an edit of themselves), so that each webhook has a delivery.
    for o in owner.values().copied().collect::<BTreeSet<_>>() {
        x.admin(
            "PATCH",
            &format!("/api/v4/users/{o}/"),
            Some(json!({ "is_active": true })),
        );
    }
    let mut delivery: BTreeMap<i64, i64> = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    for h in &hooks {
        loop {
            let listed = x.admin_list(&format!("/api/v4/webhooks/{h}/deliveries/"));
            if let Some(d) = listed.first() {
                delivery.insert(*h, id(d));
                break;
            }
            assert!(Instant::now() < deadline, "no delivery for webhook {h}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    let all: BTreeSet<String> = set(hooks.iter().copied());
    let listed_owner = owner.clone();
    x.read_list(
        "GET /api/v4/webhooks/",
        "/api/v4/webhooks/?page_size=500",
        "-",
        &|m, u| {
            if m.sup(u) {
                Ok(all.clone())
            } else if m.glob(u, WH_VIEW) {
                Ok(set(listed_owner
                    .iter()
                    .filter(|(_, o)| **o == u)
                    .map(|(h, _)| *h)))
            } else {
                Err(403)
            }
        },
        ids,
    );
    for (&h, &o) in &owner {
        x.read(
            "GET /api/v4/webhooks/{webhook_id}/",
            &format!("/api/v4/webhooks/{h}/"),
            &format!("webhook {h}"),
            &|m, u| rule(m, u, o, WH_VIEW, 200),
        );
        x.read(
            "GET /api/v4/webhooks/{webhook_id}/deliveries/",
            &format!("/api/v4/webhooks/{h}/deliveries/"),
            &format!("webhook {h}"),
            &|m, u| rule(m, u, o, WH_VIEW, 200),
        );
    }
    // Writes: a refused one changes nothing, an allowed one what it says.
    for (&h, &o) in &owner {
        let d = delivery[&h];
        for c in x.callers.clone() {
            let target = format!("webhook {h}");
            let op = "PATCH /api/v4/webhooks/{webhook_id}/";
            x.exercised.insert(op);
            let exp = x.expect(&c, &|m, u| rule(m, u, o, WH_EDIT, 200));
            let url = format!("http://127.0.0.1:9/{h}/by/{}", c.name);
            let before = x.admin_get(&format!("/api/v4/webhooks/{h}/"))["url"].clone();
            let (st, _) = x.call(
                &c,
                "PATCH",
                &format!("/api/v4/webhooks/{h}/"),
                Some(&json!({ "url": url })),
            );
            x.judge(op, &c, &target, exp, st);
            let after = x.admin_get(&format!("/api/v4/webhooks/{h}/"))["url"].clone();
            let changed = after != before;
            if changed != (st == 200) {
                let cat = if st == 200 {
                    Cat::AllowedNoEffect
                } else {
                    Cat::RefusedChanged
                };
                x.problem(
                    cat,
                    op,
                    format!("{} on {target}: {st}, url {after}", c.name),
                );
            }
            let op = "POST /api/v4/webhooks/{webhook_id}/deliveries/{delivery_id}/retry/";
            x.exercised.insert(op);
            let exp = x.expect(&c, &|m, u| rule(m, u, o, WH_EDIT, 200));
            let (st, _) = x.call(
                &c,
                "POST",
                &format!("/api/v4/webhooks/{h}/deliveries/{d}/retry/"),
                None,
            );
            x.judge(op, &c, &format!("delivery {d} of {target}"), exp, st);
        }
    }
    // Deletions, last: refused ones leave the webhook, the first allowed one deletes it.
    let op = "DELETE /api/v4/webhooks/{webhook_id}/";
    x.exercised.insert(op);
    // Superusers last, so that owners holding the key delete their own.
    let mut callers = x.callers.clone();
    callers.sort_by_key(|c| c.id.is_some_and(|u| x.m.sup(u)));
    for (&h, &o) in &owner {
        let mut gone = false;
        for c in callers.clone() {
            let exp = if gone && c.id.is_some() {
                Exp::Gone
            } else {
                x.expect(&c, &|m, u| rule(m, u, o, WH_DELETE, 204))
            };
            let (st, _) = x.call(&c, "DELETE", &format!("/api/v4/webhooks/{h}/"), None);
            x.judge(op, &c, &format!("webhook {h}"), exp, st);
            let (exists, _) = x.raw("GET", &format!("/api/v4/webhooks/{h}/"), Some(ADMIN), None);
            if (exists == 404) != (gone || st == 204) {
                x.problem(
                    Cat::RefusedChanged,
                    op,
                    format!("{} on webhook {h}: {st}, then {exists}", c.name),
                );
            }
            gone |= st == 204;
        }
    }
}

// ----- devices -----------------------------------------------------------------------------------

/// Devices belong to the user whose password signed them in: every caller signs one in, lists
/// every caller's devices, and tries to revoke every caller's device.
fn devices(x: &mut Ctx) {
    let op = "POST /api/v4/devices/";
    x.exercised.insert(op);
    let mut device_of: BTreeMap<i64, i64> = BTreeMap::new();
    for c in x.callers.clone() {
        let exp = x.expect(&c, &|_, _| Exp::Ok(201));
        let body = json!({"username": c.name, "password": c.password, "name": "phone"});
        let (st, created) = x.call(&c, "POST", "/api/v4/devices/", Some(&body));
        x.judge(op, &c, "-", exp, st);
        if st == 201 {
            if created["user_id"].as_i64() != c.id || !created["token"].is_string() {
                x.problem(Cat::Other, op, format!("{} got {created}", c.name));
            }
            device_of.insert(c.id.unwrap_or_default(), id(&created));
        }
    }
    for &owner in device_of.keys() {
        let device = device_of[&owner];
        x.read_list(
            "GET /api/v4/devices/",
            &format!("/api/v4/devices/?user_id={owner}"),
            &format!("user {owner}"),
            &move |m, u| {
                if u == owner || m.glob(u, USER_VIEW) {
                    Ok(set([device]))
                } else {
                    Err(404)
                }
            },
            ids,
        );
    }
    sync(x, &device_of);
    let op = "DELETE /api/v4/devices/{device_id}/";
    x.exercised.insert(op);
    // Other non-superusers first, then the owner, superusers last: everyone is judged on a
    // device that exists until one is allowed.
    for (&owner, &device) in &device_of {
        let mut callers = x.callers.clone();
        callers.sort_by_key(|c| (c.id.is_some_and(|u| x.m.sup(u)), c.id == Some(owner)));
        let mut gone = false;
        for c in callers {
            let exp = if gone && c.id.is_some() {
                Exp::Gone
            } else {
                x.expect(&c, &|m, u| {
                    if u == owner {
                        Exp::Ok(204)
                    } else if !m.glob(u, USER_VIEW) {
                        Exp::No(404)
                    } else if !m.glob(u, USER_EDIT)
                        || (m.sup(owner) && !m.sup(u))
                        || (!m.sup(u) && !m.holds_user(u, owner))
                    {
                        Exp::No(403)
                    } else {
                        Exp::Ok(204)
                    }
                })
            };
            let (st, _) = x.call(&c, "DELETE", &format!("/api/v4/devices/{device}/"), None);
            x.judge(op, &c, &format!("device {device} of user {owner}"), exp, st);
            gone |= st == 204;
        }
    }
}

/// Every caller syncs a replica with its own device (it must hold exactly the documents, values
/// and files the model shows the caller) and is refused another caller's device.
fn sync(x: &mut Ctx, device_of: &BTreeMap<i64, i64>) {
    let op = "GET /api/v4/sync/";
    x.exercised.insert(op);
    for c in x.callers.clone() {
        for (&owner, &device) in device_of {
            let exp = x.expect(&c, &|_, u| {
                if u == owner {
                    Exp::Ok(200)
                } else {
                    Exp::No(404)
                }
            });
            let mut cursor = String::new();
            let (mut docs, mut values, mut files) =
                (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
            loop {
                let path = format!("/api/v4/sync/?device={device}&limit=500&cursor={cursor}");
                let (st, batch) = x.call(&c, "GET", &path, None);
                x.judge(op, &c, &format!("device {device} of user {owner}"), exp, st);
                if st != 200 {
                    break;
                }
                for d in batch["documents"].as_array().into_iter().flatten() {
                    docs.insert(d["document"]["id"].to_string());
                    values.extend(
                        d["metadata"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .map(|v| v["id"].to_string()),
                    );
                    files.extend(
                        d["files"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .map(|f| f["id"].to_string()),
                    );
                }
                for r in batch["removed"].as_array().into_iter().flatten() {
                    x.problem(
                        Cat::Other,
                        op,
                        format!("{}: a first sync removed {r}", c.name),
                    );
                }
                cursor = batch["cursor"].as_str().unwrap_or_default().to_owned();
                if batch["more"] != true {
                    break;
                }
            }
            let push = "POST /api/v4/sync/push/";
            x.exercised.insert(push);
            let body = json!({"device": device, "writes": []});
            let (st, _) = x.call(&c, "POST", "/api/v4/sync/push/", Some(&body));
            x.judge(
                push,
                &c,
                &format!("device {device} of user {owner}"),
                exp,
                st,
            );
            let file_op = "POST /api/v4/sync/push/file/";
            x.exercised.insert(file_op);
            let documents: Vec<i64> = x.m.docs.keys().copied().collect();
            for d in documents {
                let exp = x.expect(&c, &|m, u| {
                    if u != owner {
                        Exp::No(404)
                    } else if m.seen(u, (K::Doc, d)) && m.has(u, FILE_NEW, (K::Doc, d)) {
                        // Allowed: its bytes are needed, and none were sent.
                        Exp::Ok(400)
                    } else {
                        // Refused in the answer, before any byte.
                        Exp::No(200)
                    }
                });
                let path =
                    format!("/api/v4/sync/push/file/?device={device}&key=matrix&document_id={d}");
                let (st, answer) = x.call(&c, "POST", &path, None);
                let target = format!("document {d}, device {device} of user {owner}");
                x.judge(file_op, &c, &target, exp, st);
                if st == 200 {
                    let u = c.id.unwrap_or_default();
                    let kind = answer["results"][0]["error"]["kind"].as_str().unwrap_or("");
                    let want = if x.m.seen(u, (K::Doc, d)) {
                        "permission_denied"
                    } else {
                        "not_found"
                    };
                    if kind != want {
                        x.problem(
                            Cat::Other,
                            file_op,
                            format!("{} on {target}: refused as {kind:?}, not {want:?}", c.name),
                        );
                    }
                }
            }
            let Some(u) = c.id.filter(|u| *u == owner) else {
                continue;
            };
            let m = &x.m;
            let seen = |d: i64| m.seen(u, (K::Doc, d));
            let want_docs = set(m.docs.keys().copied().filter(|d| seen(*d)));
            let want_values = set((m.values.iter())
                .filter(|(_, v)| {
                    seen(v.doc)
                        && m.has(u, DM_VIEW, (K::Doc, v.doc))
                        && m.has(u, DM_VIEW, (K::MetaType, v.mt))
                })
                .map(|(i, _)| *i));
            let want_files = set(m.files.iter().filter(|(_, d)| seen(**d)).map(|(f, _)| *f));
            let target = format!("user {u}'s replica");
            for (what, want, got) in [
                ("documents", want_docs, docs),
                ("values", want_values, values),
                ("files", want_files, files),
            ] {
                let body = json!({"results": got.iter().map(|i| json!({"id": i.parse::<i64>().unwrap_or_default()})).collect::<Vec<_>>()});
                x.compare_items(op, &c, &format!("{target}: {what}"), &want, &body, ids);
            }
        }
    }
}

fn openapi_operations(s: &Server) -> BTreeSet<String> {
    let (status, doc) = s.call("GET", "/api/v4/openapi.json", None, None);
    assert_eq!(status, 200);
    let mut ops = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in item.as_object().expect("path item").keys() {
            if ["get", "post", "put", "patch", "delete"].contains(&method.as_str()) {
                ops.insert(format!("{} {path}", method.to_uppercase()));
            }
        }
    }
    ops
}

#[test]
fn every_endpoint_as_every_user_agrees_with_the_reference_evaluator() {
    let started = Instant::now();
    let dir = tempfile::tempdir().expect("temp dir");
    // Webhooks on loopback (nothing listens there: their deliveries stay pending).
    support::prepare(dir.path(), false, "webhooks_allow_private_networks: true\n");
    let s = Server::start(dir.path());
    // Every operation of openapi.json has a rule, and every rule an operation.
    let ops = openapi_operations(&s);
    let table: BTreeSet<String> = RULES.iter().map(|(op, _)| (*op).to_owned()).collect();
    let missing: Vec<&String> = ops.difference(&table).collect();
    let stale: Vec<&String> = table.difference(&ops).collect();
    assert!(
        missing.is_empty(),
        "operations of openapi.json without a rule in the access matrix: {missing:#?}"
    );
    assert!(
        stale.is_empty(),
        "rules for operations openapi.json does not have: {stale:#?}"
    );
    let mut x = Ctx {
        s,
        agent: ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(60)))
            .max_idle_connections(0)
            .build()
            .into(),
        pooled: support::agent(),
        m: Model::default(),
        callers: vec![Caller {
            id: None,
            name: "anonymous".into(),
            password: String::new(),
        }],
        dice: Dice(SEED),
        seq: 0,
        requests: 0,
        comparisons: 0,
        problems: Vec::new(),
        exercised: BTreeSet::new(),
        spare_roles: Vec::new(),
        spare_groups: Vec::new(),
        destroyed: 0,
        stats: BTreeMap::new(),
    };
    build_world(&mut x);
    let built = x.requests;
    println!(
        "world (seed {SEED:#x}): {} users, {} groups, {} roles, {} objects with ACLs, {} documents, {} values, {} files, {} cabinets, {} workflow instances; {built} requests, {:.1?}",
        x.m.users.len(),
        x.m.groups.len(),
        x.m.roles.len(),
        x.m.acls.len(),
        x.m.docs.len(),
        x.m.values.len(),
        x.m.files.len(),
        x.m.cabs.len(),
        x.m.insts.len(),
        started.elapsed()
    );
    reads(&mut x);
    println!(
        "reads: {} requests, {:.1?}",
        x.requests - built,
        started.elapsed()
    );
    writes(&mut x);
    x.verify_model("the writes");
    println!("writes: {} requests, {:.1?}", x.requests, started.elapsed());
    deletions(&mut x);
    x.wait_tasks();
    x.verify_model("the deletions");
    reads(&mut x);
    x.verify_model("the second reads");
    webhooks(&mut x);
    println!(
        "webhooks: {} requests, {:.1?}",
        x.requests,
        started.elapsed()
    );
    devices(&mut x);
    println!(
        "devices: {} requests, {:.1?}",
        x.requests,
        started.elapsed()
    );
    let never: Vec<&str> = (RULES.iter())
        .map(|(op, _)| *op)
        .filter(|op| !x.exercised.contains(op))
        .collect();
    assert!(never.is_empty(), "rules never exercised: {never:#?}");
    println!("operation: allowed to a non-superuser / refused (authenticated)");
    for (op, _) in RULES {
        let (a, r) = x.stats.get(op).copied().unwrap_or_default();
        println!("  {a:5} / {r:5}  {op}");
    }
    println!(
        "access matrix: {} operations, {} requests, {} comparisons, {} differences, {:.1?}",
        RULES.len(),
        x.requests,
        x.comparisons,
        x.problems.len(),
        started.elapsed()
    );
    let (notes, problems): (Vec<_>, Vec<_>) = (x.problems.iter())
        .partition(|(cat, _, _)| matches!(cat, Cat::WrongRefusalCode | Cat::OtherOutcome));
    for (cat, op, detail) in &notes {
        println!("note ({cat:?}, not an access-control failure): {op}: {detail}");
    }
    if !problems.is_empty() {
        let mut grouped: BTreeMap<(Cat, &str), Vec<String>> = BTreeMap::new();
        for (cat, op, detail) in &problems {
            grouped.entry((*cat, op)).or_default().push(detail.clone());
        }
        let mut report = String::new();
        for ((cat, op), details) in &grouped {
            report.push_str(&format!(
                "\n{cat:?} — {op} ({} cases), e.g.:\n",
                details.len()
            ));
            for d in details.iter().take(3) {
                let short: String = d.chars().take(360).collect();
                report.push_str(&format!("    {short}\n"));
            }
        }
        panic!("the server disagrees with the reference evaluator:{report}");
    }
}

// ----- 401 timing --------------------------------------------------------------------------------

/// One GET from the local address `source`; the status, the body and the time from sending the
/// request to the end of the answer.
fn timed_get(
    rt: &tokio::runtime::Runtime,
    server: SocketAddr,
    source: IpAddr,
    path: &str,
    user: Option<(&str, &str)>,
) -> (u16, String, Duration) {
    let stream = rt
        .block_on(async {
            let socket = tokio::net::TcpSocket::new_v4()?;
            socket.bind(SocketAddr::new(source, 0))?;
            socket.connect(server).await
        })
        .expect("connect");
    let mut stream = stream.into_std().expect("std stream");
    stream.set_nonblocking(false).expect("blocking");
    let auth = user
        .map(|u| format!("Authorization: {}\r\n", support::basic(u)))
        .unwrap_or_default();
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: {server}\r\n{auth}Connection: close\r\n\r\n");
    let started = Instant::now();
    stream.write_all(request.as_bytes()).expect("send");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).expect("answer");
    let elapsed = started.elapsed();
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text.split("\r\n\r\n").nth(1).unwrap_or_default().to_owned();
    (status, body, elapsed)
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort_unstable();
    v[v.len() / 2]
}

#[test]
fn refused_logins_take_as_long_for_unknown_usernames_as_for_known_ones() {
    // Realistic but affordable hashing (a debug build verifies Argon2 slowly): verification must
    // dominate the time of a refused login, or the comparison would say nothing.
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        dir.path().join("config.yml"),
        "password_hash_memory_kib: 2048\npassword_hash_iterations: 1\n",
    )
    .expect("config");
    let s = Server::start(dir.path());
    // The limiter allows 10 failures a minute per username and per address: 25 known users take
    // 8 failures each, and every request comes from its own loopback address (127.0.x.y).
    const KNOWN: usize = 25;
    const ROUNDS: usize = 200;
    for n in 0..KNOWN {
        let (st, body) = s.call(
            "POST",
            "/api/v4/users/",
            Some(ADMIN),
            Some(&json!({"username": format!("known{n:02}"), "password": "the right password"})),
        );
        assert_eq!(st, 201, "{body}");
    }
    let server: SocketAddr = s
        .base
        .trim_start_matches("http://")
        .parse()
        .expect("server address");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .expect("runtime");
    let mut address = 0u32;
    let mut next_source = || {
        address += 1;
        let n = 2 + address % 250;
        IpAddr::V4(Ipv4Addr::new(
            127,
            0,
            (address / 250 % 250) as u8 + 1,
            n as u8,
        ))
    };
    // A known user with the right password is let in (and warms the connection path up).
    let (st, _, _) = timed_get(
        &rt,
        server,
        next_source(),
        "/api/v4/users/current/",
        Some(("known00", "the right password")),
    );
    assert_eq!(st, 200);
    // What a refusal costs without any password verification (no credentials at all).
    let mut bare: Vec<Duration> = (0..30)
        .map(|_| {
            let (st, _, took) =
                timed_get(&rt, server, next_source(), "/api/v4/users/current/", None);
            assert_eq!(st, 401);
            took
        })
        .collect();
    let bare = median(&mut bare);
    let (mut known, mut unknown) = (Vec::new(), Vec::new());
    let mut bodies = BTreeSet::new();
    for i in 0..ROUNDS {
        let password = format!("wrong password {i}");
        let known_name = format!("known{:02}", i % KNOWN);
        let unknown_name = format!("ghost{i:03}");
        // Interleaved, alternating which goes first.
        let mut pair = [(known_name.as_str(), true), (unknown_name.as_str(), false)];
        if i % 2 == 1 {
            pair.reverse();
        }
        for (name, is_known) in pair {
            let (st, body, took) = timed_get(
                &rt,
                server,
                next_source(),
                "/api/v4/users/current/",
                Some((name, &password)),
            );
            assert_eq!(st, 401, "{name}: {body}");
            bodies.insert(body);
            if is_known {
                known.push(took)
            } else {
                unknown.push(took)
            }
        }
    }
    assert_eq!(bodies.len(), 1, "the refusals differ: {bodies:?}");
    let (k, u) = (median(&mut known), median(&mut unknown));
    let ratio = u.as_secs_f64() / k.as_secs_f64();
    println!(
        "401 timing over {ROUNDS} refusals each: known usernames median {k:.2?}, unknown {u:.2?}, ratio {ratio:.2} (no credentials: {bare:.2?}); {} requests",
        2 * ROUNDS + KNOWN + 31
    );
    // The comparison means something only if verifying a password dominates a refusal: were
    // unknown usernames refused without a (dummy) verification, they would take about `bare`.
    assert!(
        k > bare * 4,
        "a refused login ({k:?}) barely costs more than a refusal without credentials ({bare:?}): the hashing is too cheap for this test"
    );
    assert!(
        (0.5..2.0).contains(&ratio),
        "refusing an unknown username takes {u:?}, a known one {k:?}: timing reveals which usernames exist"
    );
}
