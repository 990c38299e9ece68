"""A value's history and point-in-time reads, and the tamper-evident event log, through
Python: history pages with before and after, values at a past time, hidden values as None for
a narrow reader, verification naming an edited event, checkpoints kept outside, a prune."""

from __future__ import annotations

import datetime
import json
import sqlite3
import time
from pathlib import Path
from typing import Iterator

import pytest

import docmeta

CONFIG = "password_hash_memory_kib: 64\npassword_hash_iterations: 1\n"


@pytest.fixture
def db() -> Iterator[docmeta.Docmeta]:
    with docmeta.Docmeta.in_memory() as handle:
        yield handle


def test_history_value_at_and_metadata_at(db: docmeta.Docmeta) -> None:
    admin = db.system()
    invoice = admin.create_document_type("Invoice")
    amount = admin.create_metadata_type("amount", "Amount")
    secret = admin.create_metadata_type("secret", "Secret")
    admin.associate(invoice.id, amount.id)
    admin.associate(invoice.id, secret.id)
    doc = admin.create_document(invoice.id, "March")
    value = admin.add_document_metadata(doc.id, amount.id, "100")
    admin.add_document_metadata(doc.id, secret.id, "canary-1234")
    time.sleep(0.01)
    then = datetime.datetime.now(datetime.timezone.utc)
    time.sleep(0.01)
    admin.edit_document_metadata(doc.id, value.id, "120")

    page = admin.history(doc.id, amount.id)
    assert page.count == 2
    newest = page.results[0]
    assert (newest.action, newest.before, newest.after) == ("edited", "100", "120")
    assert newest.metadata_type_label == "Amount" and not newest.hidden
    assert admin.history(doc.id, page=2, page_size=2).results[0].after == "100"
    assert admin.value_at(doc.id, amount.id, then) == "100"
    past = admin.metadata_at(doc.id, then)
    assert [(v.metadata_type.name, v.value) for v in past] == [
        ("amount", "100"),
        ("secret", "canary-1234"),
    ]

    # A reader of the document who may view only the amount's values.
    clerk = admin.create_user("clerk", "a long password")
    group = admin.create_group("Clerks")
    role = admin.create_role("Clerks")
    admin.set_group_member(group.id, clerk.id)
    admin.set_role_group(role.id, group.id)
    admin.grant("documents.document_view", role.id, "documents.document", doc.id)
    admin.grant("metadata.document_metadata_view", role.id, "documents.document", doc.id)
    admin.grant("metadata.document_metadata_view", role.id, "metadata.metadatatype", amount.id)
    admin.grant("metadata.metadata_type_view", role.id, "metadata.metadatatype", amount.id)
    admin.grant("metadata.metadata_type_view", role.id, "metadata.metadatatype", secret.id)
    session = db.session(clerk.id)
    seen = session.history(doc.id)
    assert "canary" not in repr(seen)
    hidden = [c for c in seen.results if c.metadata_type_id == secret.id]
    assert len(hidden) == 1 and hidden[0].hidden and hidden[0].after is None
    assert [v.value for v in session.metadata_at(doc.id, then)] == ["100"]
    assert session.value_at(doc.id, secret.id, then) is None
    with pytest.raises(docmeta.NotFound):
        session.history(doc.id, secret.id + 1000)


def test_the_log_verifies_and_an_edited_event_is_named(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "config.yml").write_text(CONFIG)
    with docmeta.Docmeta.open(data, worker=False) as db:
        admin = db.system()
        for i in range(5):
            admin.create_document_type(f"Type {i}")
        checkpoint = db.audit_checkpoint()
        assert json.loads(checkpoint)["public_key"] == db.audit_public_key()
        # A third party checks it with the public key alone.
        assert docmeta.checkpoint_signed_by(checkpoint, db.audit_public_key())
        forged = json.loads(checkpoint)
        forged["seq"] -= 1
        assert not docmeta.checkpoint_signed_by(json.dumps(forged), db.audit_public_key())
        other = "00" * 32
        assert not docmeta.checkpoint_signed_by(checkpoint, other)
        with pytest.raises(docmeta.InvalidInput):
            docmeta.checkpoint_signed_by("{not json", db.audit_public_key())
        steps = []
        report = db.verify_events(checkpoint, progress=lambda done, total: steps.append(done))
        assert report.intact and report.verified == 5 and report.checkpoints == 2
        assert steps[-1] == 5
        with pytest.raises(docmeta.InvalidInput):
            db.verify_events("{not json")
    with sqlite3.connect(data / "db.sqlite3") as conn:
        conn.execute("UPDATE events SET target_label = 'Type X' WHERE seq = 3")
    with docmeta.Docmeta.open(data, worker=False) as db:
        report = db.verify_events(checkpoint)
        assert not report.intact and report.failed_seq == 3
        assert report.reason is not None and "does not match its hash" in report.reason
        with pytest.raises(docmeta.Conflict):
            db.prune_events(datetime.datetime.now(datetime.timezone.utc))


def test_a_prune_keeps_the_chain_verifiable(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "config.yml").write_text(CONFIG)
    with docmeta.Docmeta.open(data, worker=False) as db:
        admin = db.system()
        for i in range(4):
            admin.create_document_type(f"Type {i}")
        time.sleep(0.01)
        removed = db.prune_events(datetime.datetime.now(datetime.timezone.utc))
        assert removed == 4
        admin.create_document_type("After")
        report = db.verify_events()
        assert report.intact and (report.start, report.head) == (4, 5)
