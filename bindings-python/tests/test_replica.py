"""A replica from Python, against a running `docmeta serve` (the binary named by
DOCMETA_SERVER_BIN, which scripts/test sets): it signs in once, holds what its user sees on the
server, answers searches offline, reports progress, keeps no password, and is emptied when its
device is revoked."""

from __future__ import annotations

import base64
import os
import urllib.request
import subprocess
from pathlib import Path
from typing import Iterator, List

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
