"""The docmeta spec through Python: value pipeline, lifecycle tasks, ACL rules, events, files,
search, workflows, backup round trip, exceptions and threads sharing one handle."""

from __future__ import annotations

import os
import threading
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import Iterator, List

import pytest

import docmeta

P = "svc.apps.metadata.metadata_parsers."
V = "svc.apps.metadata.metadata_validators."


@pytest.fixture
def db() -> Iterator[docmeta.Docmeta]:
    with docmeta.Docmeta.in_memory() as handle:
        yield handle


def test_value_pipeline_rows(db: docmeta.Docmeta) -> None:
    admin = db.system()
    invoice = admin.create_document_type("Invoice")
    due = admin.create_metadata_type(
        "due", "Due date", parser=P + "DateParser", validation=V + "DateValidator"
    )
    number = admin.create_metadata_type(
        "number", "Number", validation=V + "RegularExpressionValidator",
        validation_arguments="pattern: 'INV-[0-9]+'",
    )
    admin.associate(invoice.id, due.id, required=True)
    admin.associate(invoice.id, number.id)
    doc = admin.create_document(invoice.id, "INV-1", values={due.id: "31/12/2024"})
    assert admin.metadata_value_of(doc.id, "due") == "2024-12-31"
    assert isinstance(doc.created, datetime) and doc.created.tzinfo is not None
    with pytest.raises(docmeta.ValidationError) as bad:
        admin.add_document_metadata(doc.id, number.id, "nope")
    assert bad.value.field == "value"
    assert "nope" not in (admin.metadata_value_of(doc.id, "number") or "")
    value = admin.add_document_metadata(doc.id, number.id, "INV-42")
    with pytest.raises(docmeta.Conflict):
        admin.add_document_metadata(doc.id, number.id, "INV-43")
    edited = admin.edit_document_metadata(doc.id, value.id, "INV-7")
    assert edited.value == "INV-7" and edited.id == value.id
    assert repr(edited).startswith("DocumentMetadata(id=")
    assert edited == admin.document_metadata(doc.id)[1]


def test_required_association_is_a_durable_task(db: docmeta.Docmeta) -> None:
    admin = db.system()
    t = admin.create_document_type("Letter")
    docs = [admin.create_document(t.id, f"Letter {i}") for i in range(3)]
    kind = admin.create_metadata_type("kind", "Kind", default="plain")
    admin.associate(t.id, kind.id, required=True)
    assert db.run_pending_tasks() >= 1
    assert all(admin.metadata_value_of(d.id, "kind") == "plain" for d in docs)
    assert [d.id for d in admin.documents(document_type=t.id)] == [d.id for d in docs]


def test_acl_rules_and_check(db: docmeta.Docmeta) -> None:
    admin = db.system()
    t = admin.create_document_type("Invoice")
    doc = admin.create_document(t.id, "INV-1")
    ann = admin.create_user("ann", "a long password")
    group = admin.create_group("Accounting")
    role = admin.create_role("Accountant")
    admin.set_group_member(group.id, ann.id)
    admin.set_role_group(role.id, group.id)
    s = db.session(ann.id)
    with pytest.raises(docmeta.NotFound):
        s.document(doc.id)
    assert not db.check(ann.id, "documents.document_view", "documents.document", doc.id)
    acl = admin.grant("documents.document_view", role.id, "documents.documenttype", t.id)
    assert acl.permissions == ["documents.document_view"]
    assert db.check(ann.id, "documents.document_view", "documents.document", doc.id)
    assert s.document(doc.id).label == "INV-1"
    with pytest.raises(docmeta.PermissionDenied):
        s.delete_document(doc.id)
    assert admin.revoke("documents.document_view", role.id, "documents.documenttype", t.id) is None
    with pytest.raises(docmeta.NotFound):
        s.document(doc.id)
    with pytest.raises(docmeta.Error):
        db.check(ann.id, "no.such_permission", "documents.document", doc.id)


def test_events_and_subscription(db: docmeta.Docmeta) -> None:
    seen: List[docmeta.Event] = []
    sub = db.subscribe(seen.append)
    admin = db.system()
    t = admin.create_document_type("Memo")
    admin.create_document(t.id, "Memo 1")
    names = [e.name for e in seen]
    assert names == ["documents.document_type_created", "documents.document_created"]
    assert seen[1].target_label == "Memo 1"
    db.unsubscribe(sub)
    admin.create_document(t.id, "Memo 2")
    assert len(seen) == 2
    assert db.events(limit=1)[0].target_label == "Memo 2"


def test_events_after_follows_the_log_and_wakes_on_a_commit(db: docmeta.Docmeta) -> None:
    admin = db.system()
    t = admin.create_document_type("Memo")
    admin.create_document(t.id, "Memo 1")
    start = admin.events_after()
    assert [e.name for e in start.events] == [
        "documents.document_type_created",
        "documents.document_created",
    ]
    assert start.cursor == start.events[-1].id
    empty = admin.events_after(start.cursor, wait=0.2)
    assert (empty.events, empty.cursor) == ([], start.cursor)

    # Another thread's commit wakes the waiter, which holds no GIL while it waits.
    def write() -> None:
        time.sleep(0.2)
        admin.create_document(t.id, "Memo 2")

    writer = threading.Thread(target=write)
    began = time.monotonic()
    writer.start()
    woken = admin.events_after(start.cursor, wait=30, limit=10)
    took = time.monotonic() - began
    writer.join()
    assert [e.target_label for e in woken.events] == ["Memo 2"]
    assert took < 15, f"woken by the commit, not the deadline: {took:.1f} s"

    # A user who may see nothing but herself is shown nothing else, but her cursor moves past
    # it all.
    ann = admin.create_user("ann", "a long password")
    hers = db.session(ann.id).events_after(None, wait=0, limit=100)
    assert [(e.target_kind, e.target_id) for e in hers.events] == [
        ("user_management.user", ann.id)
    ]
    assert hers.cursor == admin.events_after(woken.cursor, limit=100).cursor
    with pytest.raises(docmeta.ValidationError) as refused:
        admin.events_after(None, wait=61)
    assert refused.value.field == "wait"
    with pytest.raises(docmeta.ValidationError) as refused:
        admin.events_after(None, wait=-1)
    assert refused.value.field == "wait"


def test_files_search_and_workflow(db: docmeta.Docmeta, tmp_path: Path) -> None:
    admin = db.system()
    t = admin.create_document_type("Invoice")
    status = admin.create_metadata_type("status", "Status", default="draft")
    admin.associate(t.id, status.id, required=True)
    flow = admin.create_workflow("Approval", document_types=[t.id])
    draft = admin.create_workflow_state(flow.id, "draft", initial=True)
    done = admin.create_workflow_state(flow.id, "approved")
    go = admin.create_workflow_transition(
        flow.id, "approve", draft.id, done.id,
        condition="{% if workflow_instance.document.metadata_value_of.status == 'ok' %}True{% endif %}",
    )
    admin.add_workflow_trigger(flow.id, go.id, "document_metadata_edited")
    admin.create_workflow_action(
        flow.id, done.id, "stamp",
        {"type": "add_metadata", "metadata_type_ids": [status.id]},
    )
    doc = admin.create_document(t.id, "Invoice 7")
    f = admin.add_file(doc.id, "scan.pdf", b"%PDF-1.7 hello")
    assert (f.filename, f.size, f.mimetype) == ("scan.pdf", 14, "application/pdf")
    assert admin.read_file(f.id) == b"%PDF-1.7 hello"
    out = tmp_path / "copy.pdf"
    assert admin.save_file(f.id, out) == 14 and out.read_bytes() == b"%PDF-1.7 hello"
    page = admin.search_documents("label:invoice")
    assert page.count == 1 and page.results[0].id == doc.id
    with pytest.raises(docmeta.InvalidInput):
        admin.search_documents("label:(")
    value = admin.document_metadata(doc.id)[0]
    admin.edit_document_metadata(doc.id, value.id, "ok")
    instance = admin.workflow_instances(doc.id)[0]
    assert instance.state_id == done.id
    assert admin.workflow_log(doc.id, instance.id)[0].transition_id == go.id


def test_backup_round_trip(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "config.yml").write_text("password_hash_memory_kib: 64\npassword_hash_iterations: 1\n")
    archive = tmp_path / "backup.tar.zst"
    with docmeta.Docmeta.open(data, worker=False) as db:
        admin = db.system()
        t = admin.create_document_type("Invoice")
        doc = admin.create_document(t.id, "INV-1")
        admin.add_file(doc.id, "a.txt", b"abc")
        progress: List[int] = []
        backup_id = db.backup(archive, progress=lambda done, total: progress.append(done))
        assert progress == [1]
    assert docmeta.verify_backup(archive) == backup_id
    report = docmeta.restore([archive], tmp_path / "restored")
    assert report["documents"] == 1 and report["search_answers"] is True
    assert report["file_checked"] is not None
    with docmeta.Docmeta.open(tmp_path / "restored", worker=False) as db:
        assert db.system().document(doc.id).label == "INV-1"
        calls: List[int] = []
        assert db.search_reindex(progress=lambda done, total: calls.append(total)) == 1
        assert calls and calls[-1] == 1
        assert db.search_status()["documents"] == 1
    with pytest.raises(docmeta.Error):
        db.system()


def test_threads_share_one_handle(db: docmeta.Docmeta) -> None:
    admin = db.system()
    t = admin.create_document_type("Memo")
    errors: List[BaseException] = []

    def work(n: int) -> None:
        try:
            s = db.system()
            for i in range(50):
                s.create_document(t.id, f"memo {n}-{i}")
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    assert sum(1 for _ in admin.documents(document_type=t.id)) == 200


def test_administration_schema_and_authentication(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "config.yml").write_text("password_hash_memory_kib: 64\npassword_hash_iterations: 1\n")
    with docmeta.Docmeta.open(data, worker=False) as db:
        admin = db.system()
        t = admin.create_document_type("Invoice")
        kind = admin.create_metadata_type("kind", "Kind", lookup="a,b,c")
        assoc = admin.associate(t.id, kind.id)
        assert [(a.id, a.metadata_type, a.required) for a in admin.associations(t.id)] == [
            (assoc.id, kind, False)
        ]
        assert admin.lookup_choices(kind.id) == ["a", "b", "c"]
        assert admin.update_document_type(t.id, "Bill").label == "Bill"
        yaml = db.export_schema()
        assert "kind" in yaml and "Bill" in yaml
        assert db.apply_schema(yaml, dry_run=True) == []
        user = admin.create_user("bob", "a long password")
        assert db.authenticate("bob", "a long password") == admin.users()[0]
        assert db.authenticate("bob", "wrong") is None
        admin.update_user(user.id, is_active=False)
        assert db.authenticate("bob", "a long password") is None
        role = admin.create_role("Clerk")
        admin.grant_global("documents.document_view", role.id)
        assert admin.role_permissions(role.id) == ["documents.document_view"]
        assert db.explain(user.id, "documents.document_view", "documents.document", 1).grant is None
        doc = admin.create_document(t.id, "B-1")
        assert db.search_index_objects("documents.document", ids=[doc.id]) == 1
        with pytest.raises(docmeta.InvalidInput):
            db.search_index_objects("nope.nope")


def test_user_update_is_all_or_nothing_and_protects_superusers(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "config.yml").write_text("password_hash_memory_kib: 64\npassword_hash_iterations: 1\n")
    with docmeta.Docmeta.open(data, worker=False) as db:
        admin = db.system()
        root = admin.create_user("root", "root password", superuser=True)
        clerk = admin.create_user("clerk", "clerk password")
        helpdesk = admin.create_user("helpdesk", "helpdesk password")
        group = admin.create_group("Helpdesk")
        role = admin.create_role("Helpdesk")
        admin.set_group_member(group.id, helpdesk.id, member=True)
        admin.set_role_group(role.id, group.id, assigned=True)
        admin.grant_global("user_management.user_view", role.id)
        admin.grant_global("user_management.user_edit", role.id)
        session = db.session(helpdesk.id)
        with pytest.raises(docmeta.PermissionDenied):
            session.update_user(root.id, password="taken over")
        with pytest.raises(docmeta.PermissionDenied):
            session.update_user(clerk.id, password="changed", is_superuser=True)
        assert db.authenticate("root", "root password") is not None
        assert db.authenticate("clerk", "clerk password") is not None
        session.update_user(clerk.id, password="reset by helpdesk")
        assert db.authenticate("clerk", "reset by helpdesk") is not None


@pytest.mark.skipif(
    not os.environ.get("DOCMETA_TEST_POSTGRES_URL"),
    reason="DOCMETA_TEST_POSTGRES_URL is not set (no PostgreSQL to test against; .ci/run starts one)",
)
def test_postgres_store(tmp_path: Path) -> None:
    url = os.environ["DOCMETA_TEST_POSTGRES_URL"]
    with docmeta.Docmeta.open(tmp_path, database_url=url, worker=False) as db:
        admin = db.system()
        t = admin.create_document_type(f"Python {uuid.uuid4().hex}")
        doc = admin.create_document(t.id, "PG-1")
        assert admin.document(doc.id).label == "PG-1"
        with pytest.raises(docmeta.Conflict):
            admin.create_document_type(admin.document_types()[0].label)


def test_busy_is_caught_as_a_storage_error() -> None:
    # A change that kept conflicting on PostgreSQL raises Busy; StorageError handlers catch it.
    assert issubclass(docmeta.Busy, docmeta.StorageError)
    assert not issubclass(docmeta.Busy, docmeta.StorageFull)


def test_storage_full_is_caught_as_a_storage_error() -> None:
    # A full disk raises StorageFull; code written for StorageError keeps catching it.
    assert issubclass(docmeta.StorageFull, docmeta.StorageError)
    try:
        raise docmeta.StorageFull("storing a document file failed: no space left")
    except docmeta.StorageError as e:
        assert isinstance(e, docmeta.StorageFull)
