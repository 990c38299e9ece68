"""A check of scripts/schemathesis: no valid-by-schema request is refused for its shape; a hook
that keeps every webhook on this machine; and test data for the rules a schema cannot state.

positive_data_acceptance fails any `400` to a request the schema allows; scripts/schemathesis.toml
accepts a `400` on the operations where a business rule the schema cannot state answers with
one (a duplicate name, an id of no such object, a cross-field rule). On those, this check still
fails a `400` whose messages are the server's refusals of a field's type, presence or text
rule: those rules are in the schema, so a request the schema allows must never get them.
"""

import base64
import itertools
import json
import os
import urllib.error
import urllib.request

import schemathesis

# The messages of the refusals the schema states (request body fields, query and path
# parameters): a valid request never gets one.
SHAPE_MESSAGES = (
    "This field is required.",
    "This parameter is required.",
    "Not a valid string.",
    "A valid integer is required.",
    "A positive integer is required.",
    "Must be a valid boolean.",
    "A list of valid integers is required.",
    "Unknown permission",
    "Invalid data. Expected a dictionary.",
    'Use "entry" or "exit".',
    "Not a valid action",
    "Expected a list of",
    "This field may not be blank.",
    "Text may not contain the NUL character.",
    "Use only letters, digits and underscores",
    "is a reserved word",
    "Use 1 to 150 letters",
    "Use at least 8 characters",
    "Use at most 4096 bytes",
    "JSON parse error",
    "is not a trigger",
    "Not valid JSON.",
    "Enter a secret of the form whsec_",
    "Ensure this value is between 1 and 365.",
    "Give at least one metadata type.",
)


def _messages(value):
    """Every string in a JSON error body."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _messages(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _messages(item)


@schemathesis.check
def no_shape_refusal(ctx, response, case):
    """A request generated as valid is not refused for a rule the schema states."""
    meta = case.meta
    if response.status_code != 400 or meta is None or not meta.generation.mode.is_positive:
        return None
    try:
        body = response.json()
    except ValueError:
        return None
    refused = [m for m in _messages(body) if any(s in m for s in SHAPE_MESSAGES)]
    if refused:
        raise AssertionError(
            "A request valid by the schema was refused for its shape: " + "; ".join(refused)
        )
    return None


# Where every webhook the fuzzer creates or changes points: the discard port on loopback, where
# nothing listens (scripts/schemathesis allows private networks for it). Whatever URL is drawn,
# the server never sends a request off this machine.
LOOPBACK_URL = "http://127.0.0.1:9/schemathesis"

# Where every call is logged as a line of JSON (operation, phase, mode, status, the answer's
# start), when set: to see which rule refused what in a run.
CALL_LOG = os.environ.get("DOCMETA_SCHEMATHESIS_LOG")

# The server under test and the administrator the run signs in as (scripts/schemathesis).
BASE_URL = os.environ.get("DOCMETA_FUZZ_BASE_URL", "")
ADMIN_PASSWORD = os.environ.get("DOCMETA_ADMIN_PASSWORD", "")

# A number no other generated request has used.
_SERIAL = itertools.count(1)


def _api(method, path, body=None):
    """The JSON answer of the server to a request of the run's administrator (`None` on an
    error status)."""
    token = base64.b64encode(f"admin:{ADMIN_PASSWORD}".encode()).decode()
    request = urllib.request.Request(
        BASE_URL + path,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Basic {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read() or b"null")
    except urllib.error.HTTPError:
        return None


def _results(answer):
    """The objects of a list's answer (a page's `results`, or a plain list)."""
    if isinstance(answer, dict):
        answer = answer.get("results")
    return [item for item in answer or [] if isinstance(item, dict)]


def _unique(value):
    """`value` made unlike any other drawn: a serial number at its end, in place of its last
    characters when it is long (so that it stays within the field's length and pattern)."""
    suffix = f"_{next(_SERIAL)}"
    if len(value) + len(suffix) <= 48:
        return value + suffix
    return value[: len(value) - len(suffix)] + suffix


def _is_positive(case):
    meta = case.meta
    return meta is not None and meta.generation.mode.is_positive


# Test data for the rules no schema states, applied to requests generated as valid: the fuzzer
# draws the same few names again and again (a taken one is refused), and ids of objects that the
# rules refuse (a state of another workflow, a document type that still has documents, a state
# that transitions start or end at, a document that already has a value of that type, a value
# its type's validator refuses, a metadata type an association or a value cannot change to, an
# action on a deleted type). Each substitution is to data the rule accepts, so that the run sees
# whether the schema's valid requests are served; the refusals themselves are tested in
# examples/server/tests. Only half of the deletions, of the values added or changed and of the
# state actions are redirected, so that generated ids are still sent the rest of the time. A
# workflow's transitions are redirected every time: the ids the fuzzer draws (1 to 6, and the
# objects it made) are hardly ever an instance of the document and a transition it can take.


# The operations whose `username`, `name` or `label` must be unique (by path; with POST, PUT or
# PATCH).
UNIQUE_NAMES = {
    "/api/v4/users/",
    "/api/v4/groups/",
    "/api/v4/groups/{group_id}/",
    "/api/v4/roles/",
    "/api/v4/roles/{role_id}/",
    "/api/v4/cabinets/",
    "/api/v4/cabinets/{cabinet_id}/",
    "/api/v4/documents/types/",
    "/api/v4/documents/types/{document_type_id}/",
    "/api/v4/metadata/metadata-types/",
    "/api/v4/metadata/metadata-types/{metadata_type_id}/",
    "/api/v4/workflow-templates/",
    "/api/v4/workflow-templates/{workflow_id}/",
    "/api/v4/workflow-templates/{workflow_id}/states/",
    "/api/v4/workflow-templates/{workflow_id}/states/{state_id}/",
    "/api/v4/workflow-templates/{workflow_id}/transitions/",
    "/api/v4/workflow-templates/{workflow_id}/transitions/{transition_id}/",
}

# Every other deletion of a document type, value added or changed, and state action made, is
# redirected.
_REDIRECT_DELETION = itertools.cycle((False, True))
_REDIRECT_VALUE = itertools.cycle((False, True))
_REDIRECT_ACTION = itertools.cycle((False, True))


def _names_made_unique(case):
    if (
        case.method in ("POST", "PUT", "PATCH")
        and case.path in UNIQUE_NAMES
        and isinstance(case.body, dict)
    ):
        for field in ("username", "name", "label"):
            if isinstance(case.body.get(field), str):
                case.body[field] = _unique(case.body[field])


def _states_of_its_workflow(case):
    if not (
        case.method in ("POST", "PATCH")
        and case.path.startswith("/api/v4/workflow-templates/{workflow_id}/transitions/")
        and isinstance(case.body, dict)
    ):
        return
    states = f"/api/v4/workflow-templates/{case.path_parameters.get('workflow_id')}/states/"
    ids = [state["id"] for state in _results(_api("GET", states + "?page_size=500"))]
    # A workflow without states (one the run made) gets two.
    while len(ids) < 2:
        made = _api("POST", states, {"label": f"state {next(_SERIAL)}"})
        if not made:
            return
        ids.append(made["id"])
    for field in ("origin_state_id", "destination_state_id"):
        if field in case.body:
            case.body[field] = ids[next(_SERIAL) % len(ids)]


# The objects the redirected requests use, made by the run's administrator: a document type with
# one optional metadata type without a validator, parser or lookup (its values are any text the
# schema allows), a workflow of two states and a transition between them for that type, a
# workflow of no document type to add state actions to, and a role. Made on first use; made
# again if the fuzzer deleted a part of it.
_FIXTURE = {}


def _make_fixture():
    n = next(_SERIAL)
    metadata_type = _api(
        "POST", "/api/v4/metadata/metadata-types/", {"name": f"free_text_{n}", "label": "Free text"}
    )
    document_type = _api("POST", "/api/v4/documents/types/", {"label": f"Fixture {n}"})
    role = _api("POST", "/api/v4/roles/", {"label": f"Fixture {n}"})
    if not (metadata_type and document_type and role):
        return None
    association = _api(
        "POST",
        f"/api/v4/documents/types/{document_type['id']}/metadata-types/",
        {"metadata_type_id": metadata_type["id"]},
    )
    workflow = _api(
        "POST",
        "/api/v4/workflow-templates/",
        {"label": f"Fixture {n}", "document_type_ids": [document_type["id"]]},
    )
    if not (association and workflow):
        return None
    states = f"/api/v4/workflow-templates/{workflow['id']}/states/"
    start = _api("POST", states, {"label": "start", "initial": True})
    end = _api("POST", states, {"label": "end"})
    if not (start and end):
        return None
    transition = _api(
        "POST",
        f"/api/v4/workflow-templates/{workflow['id']}/transitions/",
        {"label": "finish", "origin_state_id": start["id"], "destination_state_id": end["id"]},
    )
    if not transition:
        return None
    # State actions are added to a workflow of no document type, whose actions never run.
    actions = _api("POST", "/api/v4/workflow-templates/", {"label": f"Fixture actions {n}"})
    actions_state = actions and _api(
        "POST", f"/api/v4/workflow-templates/{actions['id']}/states/", {"label": "any"}
    )
    if not actions_state:
        return None
    return {
        "association_id": association["id"],
        "actions_workflow_id": actions["id"],
        "actions_state_id": actions_state["id"],
        "document_type_id": document_type["id"],
        "metadata_type_id": metadata_type["id"],
        "role_id": role["id"],
        "workflow_id": workflow["id"],
        "transition_id": transition["id"],
    }


def _fixture_is_whole():
    """Whether every object of the fixture is still there (the fuzzer deletes what it draws)."""
    paths = (
        f"/api/v4/documents/types/{_FIXTURE['document_type_id']}/metadata-types/"
        f"{_FIXTURE['association_id']}/",
        f"/api/v4/metadata/metadata-types/{_FIXTURE['metadata_type_id']}/",
        f"/api/v4/roles/{_FIXTURE['role_id']}/",
        f"/api/v4/workflow-templates/{_FIXTURE['workflow_id']}/transitions/"
        f"{_FIXTURE['transition_id']}/",
        f"/api/v4/workflow-templates/{_FIXTURE['actions_workflow_id']}/states/"
        f"{_FIXTURE['actions_state_id']}/",
    )
    return all(_api("GET", path) is not None for path in paths)


def _fixture():
    """The fixture, made if need be (`None` if it cannot be)."""
    if _FIXTURE and not _fixture_is_whole():
        _FIXTURE.clear()
    if not _FIXTURE:
        _FIXTURE.update(_make_fixture() or {})
    return _FIXTURE or None


def _a_fixture_document():
    """A new document of the fixture's type (without a value; its workflow instance in the
    start state), or `None`."""
    for _ in range(2):
        fixture = _fixture()
        if not fixture:
            return None
        document = _api(
            "POST",
            "/api/v4/documents/",
            {"document_type_id": fixture["document_type_id"], "label": "fixture"},
        )
        if document:
            return document
        _FIXTURE.clear()
    return None


def _a_transition_the_instance_can_take(case):
    if not (
        case.method == "POST"
        and case.path == "/api/v4/documents/{document_id}/workflows/{instance_id}/transitions/"
        and isinstance(case.body, dict)
    ):
        return
    document = _a_fixture_document()
    instances = document and _results(_api("GET", f"/api/v4/documents/{document['id']}/workflows/"))
    if instances:
        case.path_parameters["document_id"] = document["id"]
        case.path_parameters["instance_id"] = instances[0]["id"]
        case.body["transition_id"] = _FIXTURE["transition_id"]


def _an_action_the_rules_allow(case):
    if not (
        case.method == "POST"
        and case.path == "/api/v4/workflow-templates/{workflow_id}/states/{state_id}/actions/"
        and isinstance(case.body, dict)
        and isinstance(case.body.get("action"), dict)
        and next(_REDIRECT_ACTION)
    ):
        return
    fixture = _fixture()
    if not fixture:
        return
    case.path_parameters["workflow_id"] = fixture["actions_workflow_id"]
    case.path_parameters["state_id"] = fixture["actions_state_id"]
    action = case.body["action"]
    if "metadata_type_ids" in action:
        action["metadata_type_ids"] = [fixture["metadata_type_id"]]
    if "metadata_type_id" in action:
        action["metadata_type_id"] = fixture["metadata_type_id"]
    if "role_id" in action:
        action["role_id"] = fixture["role_id"]
        action["permission"] = "documents.document_view"


def _the_associations_own_type(case):
    if (
        case.method in ("PUT", "PATCH")
        and case.path
        == "/api/v4/documents/types/{document_type_id}/metadata-types/{association_id}/"
        and isinstance(case.body, dict)
        and "metadata_type_id" in case.body
    ):
        path = (
            f"/api/v4/documents/types/{case.path_parameters.get('document_type_id')}"
            f"/metadata-types/{case.path_parameters.get('association_id')}/"
        )
        association = _api("GET", path)
        if isinstance(association, dict):
            own = association.get("metadata_type_id")
            if own is None:
                own = (association.get("metadata_type") or {}).get("id")
            if own:
                case.body["metadata_type_id"] = own


def _room_for_a_webhook(case):
    if case.method == "POST" and case.path == "/api/v4/webhooks/":
        webhooks = _results(_api("GET", "/api/v4/webhooks/?page_size=500"))
        # A user may have twenty; the newest goes (the fuzzer draws the first few ids).
        if len(webhooks) >= 20:
            newest = max(webhook["id"] for webhook in webhooks)
            _api("DELETE", f"/api/v4/webhooks/{newest}/")


def _something_unused_to_delete(case):
    if case.method != "DELETE":
        return
    if case.path == "/api/v4/documents/types/{document_type_id}/":
        if next(_REDIRECT_DELETION):
            made = _api("POST", "/api/v4/documents/types/", {"label": f"unused {next(_SERIAL)}"})
            if made:
                case.path_parameters["document_type_id"] = made["id"]
    elif case.path == "/api/v4/workflow-templates/{workflow_id}/states/{state_id}/":
        # A new state of the workflow of no document type: no instance is in it, no transition
        # starts or ends at it.
        fixture = next(_REDIRECT_DELETION) and _fixture()
        if fixture:
            workflow = fixture["actions_workflow_id"]
            made = _api(
                "POST",
                f"/api/v4/workflow-templates/{workflow}/states/",
                {"label": f"unused {next(_SERIAL)}"},
            )
            if made:
                case.path_parameters["workflow_id"] = workflow
                case.path_parameters["state_id"] = made["id"]


def _a_value_the_rules_allow(case):
    values = "/api/v4/documents/{document_id}/metadata/"
    if not (
        isinstance(case.body, dict)
        and (
            (case.method == "POST" and case.path == values)
            or (case.method in ("PUT", "PATCH") and case.path == values + "{metadata_id}/")
        )
        and next(_REDIRECT_VALUE)
    ):
        return
    document = _a_fixture_document()
    if not document:
        return
    metadata_type = _FIXTURE["metadata_type_id"]
    case.path_parameters["document_id"] = document["id"]
    if case.method == "POST":
        case.body["metadata_type_id"] = metadata_type
        return
    # A value to change, of the free-text type (which a PUT names again: it cannot change).
    value = _api(
        "POST",
        f"/api/v4/documents/{document['id']}/metadata/",
        {"metadata_type_id": metadata_type, "value": "x"},
    )
    if value:
        case.path_parameters["metadata_id"] = value["id"]
        if case.method == "PUT":
            case.body["metadata_type_id"] = metadata_type


def _the_admins_credentials(case):
    if (
        case.method == "POST"
        and case.path == "/api/v4/devices/"
        and isinstance(case.body, dict)
        and case.body.get("username") == "admin"
    ):
        case.body["password"] = ADMIN_PASSWORD


@schemathesis.hook
def before_call(ctx, case, **kwargs):
    """A webhook's `url`, when the request gives one as a string, becomes LOOPBACK_URL; a
    request generated as valid gets the test data above."""
    if (
        case.path.startswith("/api/v4/webhooks/")
        and isinstance(case.body, dict)
        and isinstance(case.body.get("url"), str)
    ):
        case.body["url"] = LOOPBACK_URL
    if _is_positive(case):
        _names_made_unique(case)
        _states_of_its_workflow(case)
        _a_transition_the_instance_can_take(case)
        _an_action_the_rules_allow(case)
        _the_associations_own_type(case)
        _room_for_a_webhook(case)
        _something_unused_to_delete(case)
        _a_value_the_rules_allow(case)
        _the_admins_credentials(case)


if CALL_LOG:

    @schemathesis.hook
    def after_call(ctx, case, response):
        """Appends the call to CALL_LOG."""
        meta = case.meta
        line = {
            "operation": f"{case.method} {case.path}",
            "phase": meta.phase.name.value if meta else None,
            "mode": meta.generation.mode.value if meta else None,
            "path": case.path_parameters,
            "body": case.body if isinstance(case.body, (dict, list, str)) else None,
            "status": response.status_code,
            "answer": response.content[:300].decode("utf-8", "replace"),
        }
        with open(CALL_LOG, "a", encoding="utf-8") as log:
            log.write(json.dumps(line, default=str) + "\n")
