"""A replica from Python, against a running `docmeta serve` (the binary named by
DOCMETA_SERVER_BIN, which scripts/test sets): it signs in once, holds what its user sees on the
server, answers searches offline, reports progress, keeps no password, and is emptied when its
device is revoked."""

from __future__ import annotations

import base64
import json
import os
import urllib.request
import subprocess
from pathlib import Path
from typing import Iterator, List, Tuple

import pytest

import docmeta

SERVER = os.environ.get("DOCMETA_SERVER_BIN", "")
CONFIG = "password_hash_memory_kib: 64\npassword_hash_iterations: 1\n"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    """The URL of a `docmeta serve` with the demo data."""
    if not SERVER:
        pytest.skip("DOCMETA_SERVER_BIN is not set (scripts/test sets it)")
    data = tmp_path / "server"
    data.mkdir()
    (data / "config.yml").write_text(CONFIG)
    env = {**os.environ, "DOCMETA_DATA": str(data), "DOCMETA_ADMIN_PASSWORD": "admin-password"}
    env.pop("DOCMETA_DATABASE_URL", None)
    subprocess.run([SERVER, "demo"], env=env, check=True, stdout=subprocess.DEVNULL)
    child = subprocess.Popen(
        [SERVER, "serve", "--bind", "127.0.0.1:0"], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        url = ""
        for line in child.stdout:
            if line.startswith("docmeta listening on "):
                url = line.removeprefix("docmeta listening on ").strip()
                break
        assert url, "the server did not start"
        yield url
    finally:
        child.kill()
        child.wait()


def test_a_replica_holds_what_its_user_sees_and_answers_offline(
    server: str, tmp_path: Path
) -> None:
    path = tmp_path / "replica"
    replica = docmeta.Replica.open(path, server, "alice", "demo-password")
    seen: List[docmeta.SyncProgress] = []
    done = replica.sync(progress=seen.append)
    assert not done.more and done.received > 0
    assert seen and seen[-1] == done
    session = replica.session()
    held = [d.id for d in session.documents()]
    assert held, "the demo shows alice documents"
    assert session.search_documents("invoice").count > 0
    # A file's bytes, fetched the first time (the demo's invoices have a scan each).
    with_file = next(d for d in held if session.files(d))
    scan = session.files(with_file)[0]
    assert replica.read_file(scan.id).startswith(b"Invoice")
    assert session.read_file(scan.id).startswith(b"Invoice"), "then read from the replica"
    # Every other file, fetched on request: then each reads from the replica.
    calls: List[Tuple[int, int]] = []
    fetched = replica.fetch_files(lambda done, total: calls.append((done, total)))
    assert fetched == len(calls) > 0 and calls[-1] == (fetched, fetched)
    assert replica.fetch_files() == 0
    for d in held:
        for f in session.files(d):
            assert session.read_file(f.id), "held offline"
    # Reads go through the same records as online; writes are refused for now.
    with pytest.raises(docmeta.PermissionDenied):
        session.update_document(held[0], "renamed offline")
    # The password is nowhere in the replica's directory.
    for file in path.rglob("*"):
        if file.is_file():
            assert b"demo-password" not in file.read_bytes(), file
    # Opened again: the device token is used, no password needed.
    del session, replica
    replica = docmeta.Replica.open(path, server, "alice")
    assert replica.sync().received == 0
    # Waiting for a change (none comes: the wait ends, and the sync finds nothing new).
    assert replica.sync_when_changed(1.0).received == 0
    with pytest.raises(docmeta.ValidationError):
        replica.sync_when_changed(-1.0)
    device = replica.device()
    assert device is not None
    listed = urllib.request.Request(
        f"{server}/api/v4/devices/",
        headers={"Authorization": "Basic " + base64.b64encode(b"alice:demo-password").decode()},
    )
    with urllib.request.urlopen(listed) as answer:
        devices = json.load(answer)["results"]
    assert [d["last_sync"] is not None for d in devices if d["id"] == device] == [True]
    local_events = [e.name for e in replica.local().events(limit=1000)]
    assert "replica.document_synced" in local_events
    # Alice revokes the device on the server: the next sync says so and empties the replica.
    revoke = urllib.request.Request(
        f"{server}/api/v4/devices/{device}/",
        method="DELETE",
        headers={"Authorization": "Basic " + base64.b64encode(b"alice:demo-password").decode()},
    )
    with urllib.request.urlopen(revoke) as answer:
        assert answer.status == 204
    with pytest.raises(docmeta.PermissionDenied):
        replica.sync()
    assert list(replica.session().documents()) == []
    assert replica.session().search_documents("invoice").count == 0
    assert replica.device() is None
    with pytest.raises(docmeta.ValidationError) as refused:
        docmeta.Replica.open(path, server, "bob", "demo-password")
    assert refused.value.field == "username"


def test_a_progress_callback_that_raises_stops_nothing_stored(server: str, tmp_path: Path) -> None:
    replica = docmeta.Replica.open(tmp_path / "replica", server, "alice", "demo-password")

    def fail(_: docmeta.SyncProgress) -> None:
        raise RuntimeError("the application's callback failed")

    with pytest.raises(RuntimeError):
        replica.sync(progress=fail)
    # What was stored stays; the next sync goes on.
    assert replica.sync().more is False
    assert len(list(replica.session().documents())) > 0


def test_a_write_made_offline_is_pushed_or_kept_as_a_conflict(server: str, tmp_path: Path) -> None:
    replica = docmeta.Replica.open(tmp_path / "replica", server, "admin", "admin-password")
    replica.sync()
    session = replica.session()
    document, value = next(
        (d.id, v)
        for d in session.documents()
        for v in session.document_metadata(d.id)
        if v.metadata_type is not None
        and not (v.metadata_type.validation or v.metadata_type.lookup or v.metadata_type.parser)
    )
    # Offline: stored at once, queued with the value it was based on.
    written = replica.set_value(document, value.metadata_type_id, "written offline")
    assert written.value == "written offline"
    [pending] = replica.pending()
    assert (pending.action, pending.value, pending.base) == ("set", "written offline", value.value)
    done = replica.sync()
    assert (done.pushed, done.rejected) == (1, 0)
    assert replica.pending() == []
    # A conflict: the server's value changed meanwhile (another device of the same user).
    other = docmeta.Replica.open(tmp_path / "other", server, "admin", "admin-password")
    other.sync()
    other.set_value(document, value.metadata_type_id, "theirs")
    replica.set_value(document, value.metadata_type_id, "mine")
    other.sync()
    done = replica.sync()
    assert done.rejected == 1
    [rejected] = replica.rejected()
    assert (rejected.status, rejected.server_value) == ("conflict", "theirs")
    shown = [v.value for v in replica.session().document_metadata(document)
             if v.metadata_type_id == value.metadata_type_id]
    assert shown == ["theirs"], "the server's value stands on the replica"
    replica.retry(rejected.write.key)
    assert replica.rejected() == []
    replica.sync()
    other.sync()
    mine = [v.value for v in other.session().document_metadata(document)
            if v.metadata_type_id == value.metadata_type_id]
    assert mine == ["mine"]
    with pytest.raises(docmeta.NotFound):
        replica.discard("no such key")


def test_a_document_created_offline_is_created_on_the_server(server: str, tmp_path: Path) -> None:
    replica = docmeta.Replica.open(tmp_path / "replica", server, "admin", "admin-password")
    replica.sync()
    session = replica.session()
    contract = next(t.id for t in session.document_types() if t.label == "Contract")
    party = next(t.id for t in session.metadata_types() if t.name == "party")
    # The same errors offline as online: a required value without a default.
    with pytest.raises(docmeta.ValidationError):
        replica.create_document(contract, "No party")
    made = replica.create_document(contract, "Signed offline", {party: "ACME"})
    assert made.id >= 2**50, "a local id until the server gives one"
    assert session.search_documents("offline").count == 1
    [pending] = replica.pending()
    assert (pending.action, pending.document_id, pending.label) == ("create", made.id, "Signed offline")
    assert (pending.document_type_id, pending.values) == (contract, {party: "ACME"})
    assert pending.metadata_type_id is None
    done = replica.sync()
    assert (done.pushed, done.rejected) == (1, 0)
    [created] = [d for d in replica.session().documents() if d.label == "Signed offline"]
    assert created.id < 2**50, "the server's document took the local one's place"
    values = {v.metadata_type_id: v.value for v in replica.session().document_metadata(created.id)}
    assert values[party] == "ACME"
    # Another replica of the server holds it too.
    other = docmeta.Replica.open(tmp_path / "other", server, "admin", "admin-password")
    other.sync()
    assert [d.id for d in other.session().documents() if d.label == "Signed offline"] == [created.id]


def test_a_push_names_its_writes_and_refuses_a_bad_one(server: str, tmp_path: Path) -> None:
    replica = docmeta.Replica.open(tmp_path / "replica", server, "admin", "admin-password")
    replica.sync()
    device = replica.device()
    assert device is not None
    # Through the local handle of the server's API: the replica's own database has no users of
    # the server, so sync_push is exercised through a Docmeta opened on the server's data in
    # test_devices.py; here, its refusals of malformed writes.
    session = replica.local().system()
    with pytest.raises(docmeta.ValidationError):
        session.sync_push(device, [{"key": "a", "action": "explode", "document_id": 1,
                                    "metadata_type_id": 1}])
    with pytest.raises(docmeta.ValidationError):
        session.sync_push(device, [{"key": "a", "action": "set", "document_id": 1,
                                    "metadata_type_id": 1}])
    with pytest.raises(docmeta.ValidationError):
        session.sync_push(device, [{"key": "a", "action": "create", "document_id": 1,
                                    "document_type_id": 1}])


def test_a_replica_follows_workflows_and_takes_transitions_offline(
    server: str, tmp_path: Path
) -> None:
    replica = docmeta.Replica.open(tmp_path / "replica", server, "admin", "admin-password")
    done = replica.sync()
    session = replica.session()
    [flow] = [w for w in session.workflows() if w.label == "Invoice approval"]
    states = {s.label: s.id for s in session.workflow_states(flow.id)}
    # A transition without a condition, added on the server: the next sync brings it.
    reopen = urllib.request.Request(
        f"{server}/api/v4/workflow-templates/{flow.id}/transitions/",
        method="POST",
        data=json.dumps({"label": "reopen", "origin_state_id": states["review"],
                         "destination_state_id": states["draft"]}).encode(),
        headers={"Authorization": "Basic " + base64.b64encode(b"admin:admin-password").decode(),
                 "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(reopen) as answer:
        assert answer.status == 201
    replica.sync()
    transitions = {t.label: t.id for t in session.workflow_transitions(flow.id)}
    assert "reopen" in transitions
    # An invoice made offline starts its workflow once the server created it.
    invoice = next(t.id for t in session.document_types() if t.label == "Invoice")
    kinds = {t.name: t.id for t in session.metadata_types()}
    made = replica.create_document(invoice, "Workflow offline", {
        kinds["invoice_number"]: "INV-4242", kinds["due_date"]: "2027-01-31",
        kinds["status"]: "draft"})
    with pytest.raises(docmeta.ValidationError) as refused:
        [local] = session.workflow_instances(made.id)
        replica.transition_workflow(made.id, local.id, transitions["submit"])
    assert refused.value.field == "document"
    replica.sync()
    [doc] = [d.id for d in session.documents() if d.label == "Workflow offline"]
    [instance] = session.workflow_instances(doc)
    assert instance.state_id == states["draft"]
    # The status edit fires the trigger offline, as it will on the server.
    replica.set_value(doc, kinds["status"], "review")
    assert session.workflow_instance(doc, instance.id).state_id == states["review"]
    # A condition that does not allow it: refused offline, as online.
    with pytest.raises(docmeta.ValidationError):
        replica.transition_workflow(doc, instance.id, transitions["approve"])
    entry = replica.transition_workflow(doc, instance.id, transitions["reopen"], comment="again")
    assert entry.comment == "again"
    pending = replica.pending()
    assert [p.action for p in pending] == ["set", "transition"]
    assert (pending[1].transition_id, pending[1].base_state_id) == (transitions["reopen"], states["review"])
    done = replica.sync()
    assert (done.pushed, done.rejected) == (2, 0)
    assert session.workflow_instance(doc, instance.id).state_id == states["draft"]
    log = session.workflow_log(doc, instance.id)
    assert [e.comment for e in log][-1] == "again"
    # The server's log: the same entries.
    other = docmeta.Replica.open(tmp_path / "other", server, "admin", "admin-password")
    other.sync()
    assert [e.id for e in other.session().workflow_log(doc, instance.id)] == [e.id for e in log]


def test_an_encrypted_replica_keeps_fetched_files_encrypted(server: str, tmp_path: Path) -> None:
    path = tmp_path / "replica"
    replica = docmeta.Replica.open(path, server, "alice", "demo-password",
                                   storage_password="the phone's secret")
    replica.sync()
    assert replica.fetch_files() > 0
    session = replica.session()
    contents = [session.read_file(f.id) for d in session.documents() for f in session.files(d.id)]
    assert contents and all(c.startswith(b"Invoice") for c in contents if c)
    for file in path.rglob("*"):
        if file.is_file():
            data = file.read_bytes()
            assert not any(c in data for c in contents if c), f"{file} holds a file's bytes"
    del replica, session
    with pytest.raises(docmeta.ValidationError) as refused:
        docmeta.Replica.open(path, server, "alice")
    assert refused.value.field == "storage_password"
    with pytest.raises(docmeta.DecryptionError):
        docmeta.Replica.open(path, server, "alice", storage_password="another")
    again = docmeta.Replica.open(path, server, "alice", storage_password="the phone's secret")
    assert again.session().read_file(
        next(f.id for d in again.session().documents() for f in again.session().files(d.id))
    ).startswith(b"Invoice")


def test_a_file_added_offline_is_pushed_with_its_bytes(server: str, tmp_path: Path) -> None:
    replica = docmeta.Replica.open(tmp_path / "replica", server, "admin", "admin-password")
    replica.sync()
    session = replica.session()
    doc = next(iter(session.documents())).id
    added = replica.add_file(doc, "field notes.txt", b"written on a train")
    assert added.id >= 2**50 and session.read_file(added.id) == b"written on a train"
    [pending] = replica.pending()
    assert (pending.action, pending.file_id, pending.filename) == ("file", added.id, "field notes.txt")
    done = replica.sync()
    assert (done.pushed, done.rejected) == (1, 0)
    [sent] = [f for f in session.files(doc) if f.filename == "field notes.txt"]
    assert sent.id < 2**50 and session.read_file(sent.id) == b"written on a train"
    other = docmeta.Replica.open(tmp_path / "other", server, "admin", "admin-password")
    other.sync()
    assert other.read_file(sent.id) == b"written on a train"
    # Alice may not add files to her invoices: refused as online, kept to retry or discard.
    alices = docmeta.Replica.open(tmp_path / "alice", server, "alice", "demo-password")
    alices.sync()
    hers = next(iter(alices.session().documents())).id
    alices.add_file(hers, "mine.txt", b"no")
    done = alices.sync()
    assert (done.pushed, done.rejected) == (0, 1)
    [refused] = alices.rejected()
    assert refused.error_kind == "permission_denied"
    alices.discard(refused.write.key)
    assert alices.rejected() == []
