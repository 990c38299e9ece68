"""Webhooks from Python: a user's own webhook receives the events they may see, signed as
Standard Webhooks says; its deliveries are listed and retried; others' webhooks are not found;
private addresses are refused unless the data directory allows them."""

from __future__ import annotations

import base64
import hashlib
import hmac
import http.server
import json
import threading
import time
from pathlib import Path
from typing import Iterator, List, Tuple

import pytest

import docmeta

CONFIG = "password_hash_memory_kib: 64\npassword_hash_iterations: 1\n"
KEYS = [
    "webhooks.webhook_create",
    "webhooks.webhook_view",
    "webhooks.webhook_edit",
    "webhooks.webhook_delete",
]


class Receiver(http.server.ThreadingHTTPServer):
    """Records every POST (headers and body) and answers 204."""

    def __init__(self) -> None:
        self.got: List[Tuple[dict[str, str], bytes]] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["content-length"]))
                outer.got.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(204)
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/hook"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()


def open_db(path: Path, allow_private: bool) -> docmeta.Docmeta:
    allowed = "true" if allow_private else "false"
    (path / "config.yml").write_text(f"{CONFIG}webhooks_allow_private_networks: {allowed}\n")
    return docmeta.Docmeta.open(path)


def webhook_user(admin: docmeta.Session, name: str) -> int:
    user = admin.create_user(name, "a long password")
    group = admin.create_group(f"{name}'s")
    role = admin.create_role(f"{name}'s role")
    admin.set_group_member(group.id, user.id)
    admin.set_role_group(role.id, group.id)
    for key in KEYS + ["documents.document_type_view"]:
        admin.grant_global(key, role.id)
    return user.id


def signed(headers: dict[str, str], body: bytes, secret: str) -> bool:
    key = base64.b64decode(secret.removeprefix("whsec_"))
    content = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.".encode() + body
    expected = "v1," + base64.b64encode(hmac.new(key, content, hashlib.sha256).digest()).decode()
    return expected in headers["webhook-signature"].split(" ")


def wait_for(what: str, done: "object") -> None:
    deadline = time.monotonic() + 120
    while not done():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.02)


def test_a_webhook_receives_signed_events_and_lists_its_deliveries(
    tmp_path: Path, receiver: Receiver
) -> None:
    with open_db(tmp_path, True) as db:
        admin = db.system()
        alice = db.session(webhook_user(admin, "alice"))
        created = alice.create_webhook(
            receiver.url, events=["documents.document_type_created"]
        )
        assert created.secret.startswith("whsec_")
        hook = created.webhook
        assert (hook.url, hook.events, hook.active) == (
            receiver.url,
            ["documents.document_type_created"],
            True,
        )
        admin.create_document_type("Invoice")
        wait_for("the delivery", lambda: len(receiver.got) == 1)
        headers, body = receiver.got[0]
        assert signed(headers, body, created.secret)
        payload = json.loads(body)
        assert payload["type"] == "documents.document_type_created"
        assert payload["data"]["target"]["label"] == "Invoice"
        wait_for(
            "the delivered status",
            lambda: [d.status for d in alice.webhook_deliveries(hook.id)] == ["delivered"],
        )
        delivery = alice.webhook_deliveries(hook.id)[0]
        assert delivery.message_id == headers["webhook-id"]
        assert (delivery.attempts, delivery.last_status_code) == (1, 204)
        # Delivered: not retried.
        with pytest.raises(docmeta.ValidationError):
            alice.retry_webhook_delivery(hook.id, delivery.id)
        # PATCH semantics, and the list.
        changed = alice.update_webhook(hook.id, active=False)
        assert (changed.url, changed.active) == (receiver.url, False)
        assert [w.id for w in alice.webhooks()] == [hook.id]
        assert alice.webhook(hook.id).active is False
        # Someone else's webhook is not found; field errors name the field.
        bob = db.session(webhook_user(admin, "bob"))
        with pytest.raises(docmeta.NotFound):
            bob.webhook(hook.id)
        with pytest.raises(docmeta.NotFound):
            bob.delete_webhook(hook.id)
        with pytest.raises(docmeta.ValidationError) as refused:
            alice.create_webhook(receiver.url, events=["no.such_event"])
        assert refused.value.field == "events"
        alice.delete_webhook(hook.id)
        assert alice.webhooks() == []


def test_a_private_address_is_refused_unless_allowed(tmp_path: Path, receiver: Receiver) -> None:
    with open_db(tmp_path, False) as db:
        alice = db.session(webhook_user(db.system(), "alice"))
        with pytest.raises(docmeta.ValidationError) as refused:
            alice.create_webhook(receiver.url)
        assert refused.value.field == "url"
        with pytest.raises(docmeta.ValidationError) as refused:
            alice.create_webhook("ftp://example.com/")
        assert refused.value.field == "url"
    assert receiver.got == []
