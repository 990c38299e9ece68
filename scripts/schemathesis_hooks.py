"""A check of scripts/schemathesis: no valid-by-schema request is refused for its shape; and a
hook that keeps every webhook on this machine.

positive_data_acceptance fails any `400` to a request the schema allows; scripts/schemathesis.toml
accepts a `400` on the operations where a business rule the schema cannot state answers with
one (a duplicate name, an id of no such object, a cross-field rule). On those, this check still
fails a `400` whose messages are the server's refusals of a field's type, presence or text
rule: those rules are in the schema, so a request the schema allows must never get them.
"""

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


@schemathesis.hook
def before_call(ctx, case, **kwargs):
    """A webhook's `url`, when the request gives one as a string, becomes LOOPBACK_URL."""
    if (
        case.path.startswith("/api/v4/webhooks/")
        and isinstance(case.body, dict)
        and isinstance(case.body.get("url"), str)
    ):
        case.body["url"] = LOOPBACK_URL
