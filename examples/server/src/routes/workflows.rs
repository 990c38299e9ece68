//! Workflows (api.md "Workflows"): templates with nested states, transitions, state actions and
//! transition triggers; instances of a document, their log, and taking a transition.

use std::collections::HashMap;

use crate::body::Json;
use axum::extract::{Query, State};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use docmeta_core::{
    DocumentId, DocumentTypeId, Session, WorkflowId, WorkflowInstanceId, WorkflowStateId,
    WorkflowTransitionId,
};
use docmeta_core::{
    TransitionUpdate, Workflow, WorkflowAction, WorkflowInstance, WorkflowLogEntry, WorkflowState,
    WorkflowTransition,
};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::body::JsonBody;
use crate::body::fields::IdList;
use crate::dto::{ErrorOut, PageOut};
use crate::error::ApiResult;
use crate::page::{ListQuery, Page};
use crate::requests::{
    ActionBody, ActionIn, StateIn, StatePatchIn, TakeTransitionIn, TransitionIn, TransitionPatchIn,
    TriggerIn, When, WorkflowIn, WorkflowPatchIn,
};
use crate::state::{AppState, CurrentUser, Ids};

pub fn register(router: OpenApiRouter<AppState>) -> OpenApiRouter<AppState> {
    router
        .routes(routes!(list_workflows, create_workflow))
        .routes(routes!(get_workflow, patch_workflow, delete_workflow))
        .routes(routes!(list_states, create_state))
        .routes(routes!(get_state, patch_state, delete_state))
        .routes(routes!(list_transitions, create_transition))
        .routes(routes!(get_transition, patch_transition, delete_transition))
        .routes(routes!(list_actions, create_action))
        .routes(routes!(delete_action))
        .routes(routes!(list_triggers, create_trigger))
        .routes(routes!(delete_trigger))
        .routes(routes!(list_instances))
        .routes(routes!(get_instance))
        .routes(routes!(instance_log))
        .routes(routes!(available_transitions, take_transition))
}

/// A workflow template.
#[derive(Debug, Serialize, ToSchema)]
pub struct WorkflowOut {
    pub id: i64,
    pub label: String,
    pub document_type_ids: Vec<i64>,
    pub url: String,
}

impl From<&Workflow> for WorkflowOut {
    fn from(w: &Workflow) -> Self {
        WorkflowOut {
            id: w.id.0,
            label: w.label.clone(),
            document_type_ids: w.document_type_ids.iter().map(|t| t.0).collect(),
            url: format!("/api/v4/workflow-templates/{}/", w.id),
        }
    }
}

/// A state.
#[derive(Debug, Serialize, ToSchema)]
pub struct StateOut {
    pub id: i64,
    pub label: String,
    pub initial: bool,
    pub url: String,
}

impl From<&WorkflowState> for StateOut {
    fn from(s: &WorkflowState) -> Self {
        StateOut {
            id: s.id.0,
            label: s.label.clone(),
            initial: s.initial,
            url: format!(
                "/api/v4/workflow-templates/{}/states/{}/",
                s.workflow_id, s.id
            ),
        }
    }
}

/// A transition with its triggers (full event names).
#[derive(Debug, Serialize, ToSchema)]
pub struct TransitionOut {
    pub id: i64,
    pub label: String,
    pub origin_state_id: i64,
    pub destination_state_id: i64,
    /// Allows the transition when it renders to `True`; empty: always.
    pub condition: String,
    pub triggers: Vec<String>,
    pub url: String,
}

impl From<&WorkflowTransition> for TransitionOut {
    fn from(t: &WorkflowTransition) -> Self {
        TransitionOut {
            id: t.id.0,
            label: t.label.clone(),
            origin_state_id: t.origin_state_id.0,
            destination_state_id: t.destination_state_id.0,
            condition: t.condition.clone(),
            triggers: t.triggers.clone(),
            url: format!(
                "/api/v4/workflow-templates/{}/transitions/{}/",
                t.workflow_id, t.id
            ),
        }
    }
}

/// A state action. `action` is one of `{"type": "add_metadata", "metadata_type_ids": [..]}`,
/// `{"type": "edit_metadata", "metadata_type_id": .., "value": "template"}`,
/// `{"type": "remove_metadata", "metadata_type_ids": [..]}`,
/// `{"type": "grant_document_access", "role_id": .., "permission": "namespace.key"}`,
/// `{"type": "revoke_document_access", "role_id": .., "permission": "namespace.key"}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ActionOut {
    pub id: i64,
    pub label: String,
    /// `entry` or `exit`.
    pub when: String,
    pub critical: bool,
    pub action: ActionBody,
}

impl From<&WorkflowAction> for ActionOut {
    fn from(a: &WorkflowAction) -> Self {
        ActionOut {
            id: a.id.0,
            label: a.label.clone(),
            when: if a.on_entry { "entry" } else { "exit" }.to_owned(),
            critical: a.critical,
            action: (&a.action).into(),
        }
    }
}

/// A workflow running on a document.
#[derive(Debug, Serialize, ToSchema)]
pub struct InstanceOut {
    pub id: i64,
    pub workflow_id: i64,
    pub document_id: i64,
    pub current_state_id: Option<i64>,
    #[schema(value_type = Object)]
    pub context: serde_json::Value,
    pub url: String,
    pub log_url: String,
    pub transitions_url: String,
}

impl From<&WorkflowInstance> for InstanceOut {
    fn from(i: &WorkflowInstance) -> Self {
        let url = format!("/api/v4/documents/{}/workflows/{}/", i.document_id, i.id);
        InstanceOut {
            id: i.id.0,
            workflow_id: i.workflow_id.0,
            document_id: i.document_id.0,
            current_state_id: i.state_id.map(|s| s.0),
            context: i.context.clone(),
            log_url: format!("{url}log/"),
            transitions_url: format!("{url}transitions/"),
            url,
        }
    }
}

/// An entry of an instance's log: a transition taken, or an error.
#[derive(Debug, Serialize, ToSchema)]
pub struct LogEntryOut {
    pub id: i64,
    pub transition_id: Option<i64>,
    pub user_id: Option<i64>,
    pub comment: String,
    pub error: bool,
    pub datetime_created: String,
}

impl From<&WorkflowLogEntry> for LogEntryOut {
    fn from(e: &WorkflowLogEntry) -> Self {
        LogEntryOut {
            id: e.id.0,
            transition_id: e.transition_id.map(|t| t.0),
            user_id: e.user_id.map(|u| u.0),
            comment: e.comment.clone(),
            error: e.error,
            datetime_created: e
                .created
                .to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        }
    }
}

fn type_ids(ids: Option<IdList>) -> Option<Vec<DocumentTypeId>> {
    ids.map(|ids| ids.0.into_iter().map(DocumentTypeId).collect())
}

#[utoipa::path(get, path = "/api/v4/workflow-templates/", tag = "workflows",
    params(crate::page::PageParams, ("ordering" = Option<String>, Query, description = "label or id")),
    responses((status = 200, body = crate::dto::PageOut)))]
async fn list_workflows(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Query(q): Query<HashMap<String, String>>,
    uri: Uri,
) -> ApiResult<Response> {
    let q = ListQuery::parse(q)?;
    app.run(user, move |s| {
        q.respond(
            &uri,
            s.workflows()?,
            &[
                ("label", |a, b| a.label.cmp(&b.label)),
                ("id", |a, b| a.id.cmp(&b.id)),
            ],
            |w| WorkflowOut::from(&w),
        )
    })
    .await
    .map(IntoResponse::into_response)
}

#[utoipa::path(post, path = "/api/v4/workflow-templates/", tag = "workflows", request_body = WorkflowIn,
    responses((status = 201, body = WorkflowOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut)))]
async fn create_workflow(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    JsonBody(body): JsonBody<WorkflowIn>,
) -> ApiResult<(StatusCode, Json<WorkflowOut>)> {
    let label = body.label;
    let types = type_ids(body.document_type_ids).unwrap_or_default();
    app.run(user, move |s| {
        let w = s.create_workflow(&label, &types)?;
        Ok((StatusCode::CREATED, Json((&w).into())))
    })
    .await
}

#[utoipa::path(get, path = "/api/v4/workflow-templates/{workflow_id}/", tag = "workflows",
    params(("workflow_id" = i64, Path)), responses((status = 200, body = WorkflowOut), (status = 404, body = ErrorOut)))]
async fn get_workflow(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
) -> ApiResult<Json<WorkflowOut>> {
    app.run(user, move |s| {
        Ok(Json((&s.workflow(WorkflowId(id))?).into()))
    })
    .await
}

#[utoipa::path(patch, path = "/api/v4/workflow-templates/{workflow_id}/", tag = "workflows", request_body = WorkflowPatchIn,
    params(("workflow_id" = i64, Path)),
    responses((status = 200, body = WorkflowOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn patch_workflow(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    JsonBody(body): JsonBody<WorkflowPatchIn>,
) -> ApiResult<Json<WorkflowOut>> {
    let label = body.label;
    let types = type_ids(body.document_type_ids);
    app.run(user, move |s| {
        let w = s.update_workflow(WorkflowId(id), label.as_deref(), types.as_deref())?;
        Ok(Json((&w).into()))
    })
    .await
}

#[utoipa::path(delete, path = "/api/v4/workflow-templates/{workflow_id}/", tag = "workflows",
    params(("workflow_id" = i64, Path)), responses((status = 204), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn delete_workflow(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
) -> ApiResult<StatusCode> {
    app.run(user, move |s| {
        s.delete_workflow(WorkflowId(id))?;
        Ok(StatusCode::NO_CONTENT)
    })
    .await
}

#[utoipa::path(get, path = "/api/v4/workflow-templates/{workflow_id}/states/", tag = "workflows",
    params(crate::page::PageParams, ("workflow_id" = i64, Path)), responses((status = 200, body = PageOut), (status = 404, body = ErrorOut)))]
async fn list_states(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    Query(q): Query<HashMap<String, String>>,
    uri: Uri,
) -> ApiResult<Page<StateOut>> {
    let q = ListQuery::parse(q)?;
    app.run(user, move |s| {
        let states = s.workflow_states(WorkflowId(id))?;
        q.page(&uri, docmeta_core::Page::of(states, q.request()), |x| {
            StateOut::from(&x)
        })
    })
    .await
}

#[utoipa::path(post, path = "/api/v4/workflow-templates/{workflow_id}/states/", tag = "workflows", request_body = StateIn,
    params(("workflow_id" = i64, Path)),
    responses((status = 201, body = StateOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn create_state(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    JsonBody(body): JsonBody<StateIn>,
) -> ApiResult<(StatusCode, Json<StateOut>)> {
    let label = body.label;
    let initial = body.initial.is_some_and(|f| f.0);
    app.run(user, move |s| {
        let s = s.create_workflow_state(WorkflowId(id), &label, initial)?;
        Ok((StatusCode::CREATED, Json((&s).into())))
    })
    .await
}

#[utoipa::path(get, path = "/api/v4/workflow-templates/{workflow_id}/transitions/", tag = "workflows",
    params(crate::page::PageParams, ("workflow_id" = i64, Path)), responses((status = 200, body = PageOut), (status = 404, body = ErrorOut)))]
async fn list_transitions(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    Query(q): Query<HashMap<String, String>>,
    uri: Uri,
) -> ApiResult<Page<TransitionOut>> {
    let q = ListQuery::parse(q)?;
    app.run(user, move |s| {
        let all = s.workflow_transitions(WorkflowId(id))?;
        q.page(&uri, docmeta_core::Page::of(all, q.request()), |x| {
            TransitionOut::from(&x)
        })
    })
    .await
}

#[utoipa::path(post, path = "/api/v4/workflow-templates/{workflow_id}/transitions/", tag = "workflows", request_body = TransitionIn,
    params(("workflow_id" = i64, Path)),
    responses((status = 201, body = TransitionOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn create_transition(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(id): Ids<i64>,
    JsonBody(body): JsonBody<TransitionIn>,
) -> ApiResult<(StatusCode, Json<TransitionOut>)> {
    let label = body.label;
    let origin = WorkflowStateId(body.origin_state_id.0);
    let destination = WorkflowStateId(body.destination_state_id.0);
    let condition = body.condition.unwrap_or_default();
    app.run(user, move |s| {
        let t =
            s.create_workflow_transition(WorkflowId(id), &label, origin, destination, &condition)?;
        Ok((StatusCode::CREATED, Json((&t).into())))
    })
    .await
}

#[utoipa::path(get, path = "/api/v4/workflow-templates/{workflow_id}/states/{state_id}/actions/", tag = "workflows",
    params(crate::page::PageParams, ("workflow_id" = i64, Path), ("state_id" = i64, Path)),
    responses((status = 200, body = PageOut), (status = 404, body = ErrorOut)))]
async fn list_actions(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids((id, state)): Ids<(i64, i64)>,
    Query(q): Query<HashMap<String, String>>,
    uri: Uri,
) -> ApiResult<Page<ActionOut>> {
    let q = ListQuery::parse(q)?;
    app.run(user, move |s| {
        let all = s.workflow_actions(WorkflowId(id), WorkflowStateId(state))?;
        q.page(&uri, docmeta_core::Page::of(all, q.request()), |x| {
            ActionOut::from(&x)
        })
    })
    .await
}

#[utoipa::path(post, path = "/api/v4/workflow-templates/{workflow_id}/states/{state_id}/actions/", tag = "workflows", request_body = ActionIn,
    description = "Adds an action. Besides `workflow_template_edit`, the caller must hold, on every document type the workflow is bound to, what the action does (a grant or revoke: `acls.acl_edit` and the permission; a metadata action: the `metadata.document_metadata_*` permissions on the type and the metadata types): `403` otherwise. The caller is stored as its author: each time it runs, it does only what the author could do directly then.",
    params(("workflow_id" = i64, Path), ("state_id" = i64, Path)),
    responses((status = 201, body = ActionOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn create_action(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids((id, state)): Ids<(i64, i64)>,
    JsonBody(body): JsonBody<ActionIn>,
) -> ApiResult<(StatusCode, Json<ActionOut>)> {
    let label = body.label;
    let on_entry = body.when != Some(When::Exit);
    let critical = body.critical.is_some_and(|f| f.0);
    let action = body.action.0;
    app.run(user, move |s| {
        let a = s.create_workflow_action(
            WorkflowId(id),
            WorkflowStateId(state),
            &label,
            on_entry,
            critical,
            action,
        )?;
        Ok((StatusCode::CREATED, Json((&a).into())))
    })
    .await
}

#[utoipa::path(delete, path = "/api/v4/workflow-templates/{workflow_id}/states/{state_id}/actions/{action_id}/", tag = "workflows",
    params(("workflow_id" = i64, Path), ("state_id" = i64, Path), ("action_id" = i64, Path)),
    responses((status = 204), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn delete_action(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids((id, state, action)): Ids<(i64, i64, i64)>,
) -> ApiResult<StatusCode> {
    app.run(user, move |s| {
        s.delete_workflow_action(
            WorkflowId(id),
            WorkflowStateId(state),
            docmeta_core::WorkflowActionId(action),
        )?;
        Ok(StatusCode::NO_CONTENT)
    })
    .await
}

#[utoipa::path(delete, path = "/api/v4/workflow-templates/{workflow_id}/transitions/{transition_id}/triggers/{event_type}/", tag = "workflows",
    params(("workflow_id" = i64, Path), ("transition_id" = i64, Path), TriggerPath),
    responses((status = 204), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn delete_trigger(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids((id, transition, event)): Ids<(i64, i64, String)>,
) -> ApiResult<StatusCode> {
    app.run(user, move |s| {
        s.remove_workflow_trigger(WorkflowId(id), WorkflowTransitionId(transition), &event)?;
        Ok(StatusCode::NO_CONTENT)
    })
    .await
}

/// The trigger a path names (for the OpenAPI description): an event, by its short or full
/// name.
struct TriggerPath;

impl utoipa::IntoParams for TriggerPath {
    fn into_params(
        _: impl Fn() -> Option<utoipa::openapi::path::ParameterIn>,
    ) -> Vec<utoipa::openapi::path::Parameter> {
        vec![
            utoipa::openapi::path::ParameterBuilder::new()
                .name("event_type")
                .parameter_in(utoipa::openapi::path::ParameterIn::Path)
                .required(utoipa::openapi::Required::True)
                .schema(Some(crate::requests::trigger_event()))
                .build(),
        ]
    }
}

fn transition_of(
    s: &Session,
    workflow: WorkflowId,
    transition: WorkflowTransitionId,
) -> ApiResult<WorkflowTransition> {
    Ok(s.workflow_transition(workflow, transition)?)
}

#[utoipa::path(get, path = "/api/v4/workflow-templates/{workflow_id}/transitions/{transition_id}/triggers/", tag = "workflows",
    params(crate::page::PageParams, ("workflow_id" = i64, Path), ("transition_id" = i64, Path)),
    responses((status = 200, body = PageOut, description = "The event names that trigger the transition"), (status = 404, body = ErrorOut)))]
async fn list_triggers(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids((id, transition)): Ids<(i64, i64)>,
    Query(q): Query<HashMap<String, String>>,
    uri: Uri,
) -> ApiResult<Page<String>> {
    let q = ListQuery::parse(q)?;
    app.run(user, move |s| {
        let t = transition_of(s, WorkflowId(id), WorkflowTransitionId(transition))?;
        q.page(&uri, docmeta_core::Page::of(t.triggers, q.request()), |e| e)
    })
    .await
}

#[utoipa::path(post, path = "/api/v4/workflow-templates/{workflow_id}/transitions/{transition_id}/triggers/", tag = "workflows", request_body = TriggerIn,
    description = "Makes an event fire the transition. Like every change of when the workflow's actions run (states, transitions, conditions, triggers), it needs, besides `workflow_template_edit`, what every action of the workflow does on its bound document types (`403` otherwise).",
    params(("workflow_id" = i64, Path), ("transition_id" = i64, Path)),
    responses((status = 201, body = TransitionOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn create_trigger(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids((id, transition)): Ids<(i64, i64)>,
    JsonBody(TriggerIn { event_type: event }): JsonBody<TriggerIn>,
) -> ApiResult<(StatusCode, Json<TransitionOut>)> {
    app.run(user, move |s| {
        let t = s.add_workflow_trigger(WorkflowId(id), WorkflowTransitionId(transition), &event)?;
        Ok((StatusCode::CREATED, Json((&t).into())))
    })
    .await
}

#[utoipa::path(get, path = "/api/v4/documents/{document_id}/workflows/", tag = "workflows",
    params(crate::page::PageParams, ("document_id" = i64, Path)), responses((status = 200, body = PageOut), (status = 404, body = ErrorOut)))]
async fn list_instances(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids(document): Ids<i64>,
    Query(q): Query<HashMap<String, String>>,
    uri: Uri,
) -> ApiResult<Page<InstanceOut>> {
    let q = ListQuery::parse(q)?;
    app.run(user, move |s| {
        let all = s.workflow_instances(DocumentId(document))?;
        q.page(&uri, docmeta_core::Page::of(all, q.request()), |x| {
            InstanceOut::from(&x)
        })
    })
    .await
}

#[utoipa::path(get, path = "/api/v4/documents/{document_id}/workflows/{instance_id}/", tag = "workflows",
    params(("document_id" = i64, Path), ("instance_id" = i64, Path)),
    responses((status = 200, body = InstanceOut), (status = 404, body = ErrorOut)))]
async fn get_instance(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids((document, instance)): Ids<(i64, i64)>,
) -> ApiResult<Json<InstanceOut>> {
    app.run(user, move |s| {
        let i = s.workflow_instance(DocumentId(document), WorkflowInstanceId(instance))?;
        Ok(Json((&i).into()))
    })
    .await
}

#[utoipa::path(get, path = "/api/v4/documents/{document_id}/workflows/{instance_id}/log/", tag = "workflows",
    params(crate::page::PageParams, ("document_id" = i64, Path), ("instance_id" = i64, Path)),
    responses((status = 200, body = PageOut), (status = 404, body = ErrorOut)))]
async fn instance_log(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids((document, instance)): Ids<(i64, i64)>,
    Query(q): Query<HashMap<String, String>>,
    uri: Uri,
) -> ApiResult<Page<LogEntryOut>> {
    let q = ListQuery::parse(q)?;
    app.run(user, move |s| {
        let log = s.workflow_log(DocumentId(document), WorkflowInstanceId(instance))?;
        q.page(&uri, docmeta_core::Page::of(log, q.request()), |x| {
            LogEntryOut::from(&x)
        })
    })
    .await
}

#[utoipa::path(get, path = "/api/v4/documents/{document_id}/workflows/{instance_id}/transitions/", tag = "workflows",
    params(crate::page::PageParams, ("document_id" = i64, Path), ("instance_id" = i64, Path)),
    responses((status = 200, description = "The transitions the instance may take now", body = PageOut), (status = 404, body = ErrorOut)))]
async fn available_transitions(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids((document, instance)): Ids<(i64, i64)>,
    Query(q): Query<HashMap<String, String>>,
    uri: Uri,
) -> ApiResult<Page<TransitionOut>> {
    let q = ListQuery::parse(q)?;
    app.run(user, move |s| {
        let all = s.available_transitions(DocumentId(document), WorkflowInstanceId(instance))?;
        q.page(&uri, docmeta_core::Page::of(all, q.request()), |x| {
            TransitionOut::from(&x)
        })
    })
    .await
}

#[utoipa::path(post, path = "/api/v4/documents/{document_id}/workflows/{instance_id}/transitions/", tag = "workflows", request_body = TakeTransitionIn,
    params(("document_id" = i64, Path), ("instance_id" = i64, Path)),
    responses((status = 201, body = LogEntryOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn take_transition(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids((document, instance)): Ids<(i64, i64)>,
    JsonBody(body): JsonBody<TakeTransitionIn>,
) -> ApiResult<(StatusCode, Json<LogEntryOut>)> {
    let transition = WorkflowTransitionId(body.transition_id.0);
    let comment = body.comment.unwrap_or_default();
    app.run(user, move |s| {
        let entry = s.transition_workflow(
            DocumentId(document),
            WorkflowInstanceId(instance),
            transition,
            &comment,
        )?;
        Ok((StatusCode::CREATED, Json((&entry).into())))
    })
    .await
}

#[utoipa::path(get, path = "/api/v4/workflow-templates/{workflow_id}/states/{state_id}/", tag = "workflows",
    params(("workflow_id" = i64, Path), ("state_id" = i64, Path)),
    responses((status = 200, body = StateOut), (status = 404, body = ErrorOut)))]
async fn get_state(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids((id, state)): Ids<(i64, i64)>,
) -> ApiResult<Json<StateOut>> {
    app.run(user, move |s| {
        let st = s.workflow_state(WorkflowId(id), WorkflowStateId(state))?;
        Ok(Json((&st).into()))
    })
    .await
}

#[utoipa::path(patch, path = "/api/v4/workflow-templates/{workflow_id}/states/{state_id}/", tag = "workflows", request_body = StatePatchIn,
    params(("workflow_id" = i64, Path), ("state_id" = i64, Path)),
    responses((status = 200, body = StateOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn patch_state(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids((id, state)): Ids<(i64, i64)>,
    JsonBody(body): JsonBody<StatePatchIn>,
) -> ApiResult<Json<StateOut>> {
    let label = body.label;
    let initial = body.initial.map(|f| f.0);
    app.run(user, move |s| {
        let st = s.update_workflow_state(
            WorkflowId(id),
            WorkflowStateId(state),
            label.as_deref(),
            initial,
        )?;
        Ok(Json((&st).into()))
    })
    .await
}

#[utoipa::path(delete, path = "/api/v4/workflow-templates/{workflow_id}/states/{state_id}/", tag = "workflows",
    description = "Deletes the state with its actions. A state that instances are in, or that transitions start or end at, is refused (`400`, `non_field_errors` says why).",
    params(("workflow_id" = i64, Path), ("state_id" = i64, Path)),
    responses((status = 204), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn delete_state(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids((id, state)): Ids<(i64, i64)>,
) -> ApiResult<StatusCode> {
    app.run(user, move |s| {
        s.delete_workflow_state(WorkflowId(id), WorkflowStateId(state))?;
        Ok(StatusCode::NO_CONTENT)
    })
    .await
}

#[utoipa::path(get, path = "/api/v4/workflow-templates/{workflow_id}/transitions/{transition_id}/", tag = "workflows",
    params(("workflow_id" = i64, Path), ("transition_id" = i64, Path)),
    responses((status = 200, body = TransitionOut), (status = 404, body = ErrorOut)))]
async fn get_transition(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids((id, transition)): Ids<(i64, i64)>,
) -> ApiResult<Json<TransitionOut>> {
    app.run(user, move |s| {
        let t = s.workflow_transition(WorkflowId(id), WorkflowTransitionId(transition))?;
        Ok(Json((&t).into()))
    })
    .await
}

#[utoipa::path(patch, path = "/api/v4/workflow-templates/{workflow_id}/transitions/{transition_id}/", tag = "workflows", request_body = TransitionPatchIn,
    description = "Changes a transition. Like every change of a workflow's definition, it needs, besides `workflow_template_edit`, what every action of the workflow does on its bound document types (`403` otherwise). The condition renders with no more than what its creator and everyone who changed it may view.",
    params(("workflow_id" = i64, Path), ("transition_id" = i64, Path)),
    responses((status = 200, body = TransitionOut), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn patch_transition(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids((id, transition)): Ids<(i64, i64)>,
    JsonBody(body): JsonBody<TransitionPatchIn>,
) -> ApiResult<Json<TransitionOut>> {
    let update = TransitionUpdate {
        label: body.label,
        origin: body.origin_state_id.map(|s| WorkflowStateId(s.0)),
        destination: body.destination_state_id.map(|s| WorkflowStateId(s.0)),
        condition: body.condition,
    };
    app.run(user, move |s| {
        let t =
            s.update_workflow_transition(WorkflowId(id), WorkflowTransitionId(transition), update)?;
        Ok(Json((&t).into()))
    })
    .await
}

#[utoipa::path(delete, path = "/api/v4/workflow-templates/{workflow_id}/transitions/{transition_id}/", tag = "workflows",
    description = "Deletes the transition with its triggers. A transition that instance logs record is refused (`400`, `non_field_errors` says why).",
    params(("workflow_id" = i64, Path), ("transition_id" = i64, Path)),
    responses((status = 204), (status = 400, body = ErrorOut), (status = 403, body = ErrorOut), (status = 404, body = ErrorOut)))]
async fn delete_transition(
    State(app): State<AppState>,
    CurrentUser(user): CurrentUser,
    Ids((id, transition)): Ids<(i64, i64)>,
) -> ApiResult<StatusCode> {
    app.run(user, move |s| {
        s.delete_workflow_transition(WorkflowId(id), WorkflowTransitionId(transition))?;
        Ok(StatusCode::NO_CONTENT)
    })
    .await
}
