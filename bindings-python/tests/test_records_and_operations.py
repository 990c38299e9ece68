"""Every group of operations the Python face shares with the Rust API: metadata
(associations, single values, batches, details), cabinets, workflows, search, files and backup,
and the instance's own calls (tasks, tokens, deadlines, settings)."""

from __future__ import annotations

import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, List, Optional, Tuple

import pytest

import docmeta

P = "svc.apps.metadata.metadata_parsers."
CONFIG = "password_hash_memory_kib: 64\npassword_hash_iterations: 1\n"


@pytest.fixture
def db() -> Iterator[docmeta.Docmeta]:
    with docmeta.Docmeta.in_memory() as handle:
        yield handle


def invoice_with_due(
    db: docmeta.Docmeta,
) -> Tuple[docmeta.Session, docmeta.DocumentType, docmeta.MetadataType]:
    admin = db.system()
    invoice = admin.create_document_type("Invoice")
    due = admin.create_metadata_type("due", "Due date", parser=P + "DateParser")
    return admin, invoice, due


# ----- metadata -------------------------------------------------------------------------------


def test_an_association_carries_both_types(db: docmeta.Docmeta) -> None:
    admin, invoice, due = invoice_with_due(db)
    association = admin.associate(invoice.id, due.id, required=False)
    assert (association.document_type, association.metadata_type) == (invoice, due)


def test_an_association_is_read_by_id(db: docmeta.Docmeta) -> None:
    admin, invoice, due = invoice_with_due(db)
    association = admin.associate(invoice.id, due.id)
    assert admin.association(invoice.id, association.id) == association


def test_update_association_returns_the_changed_association(db: docmeta.Docmeta) -> None:
    admin, invoice, due = invoice_with_due(db)
    association = admin.associate(invoice.id, due.id)
    assert admin.update_association(invoice.id, association.id, True).required


def test_a_batch_of_values_goes_through_the_pipeline(db: docmeta.Docmeta) -> None:
    admin, invoice, due = invoice_with_due(db)
    admin.associate(invoice.id, due.id)
    docs = [admin.create_document(invoice.id, f"INV-{i}").id for i in range(3)]
    stored = admin.add_document_metadata_batch([(d, due.id, "31/12/2024") for d in docs])
    assert [v.value for v in stored] == ["2024-12-31"] * 3


def test_a_refused_batch_stores_nothing(db: docmeta.Docmeta) -> None:
    admin, invoice, due = invoice_with_due(db)
    admin.associate(invoice.id, due.id)
    docs = [admin.create_document(invoice.id, f"INV-{i}").id for i in range(2)]
    with pytest.raises(docmeta.ValidationError):
        admin.add_document_metadata_batch([(docs[0], due.id, "31/12/2024"), (docs[1], due.id, "soon")])
    assert admin.document_metadata(docs[0]) == []


def test_a_batch_of_documents_is_created_in_order_with_its_values(db: docmeta.Docmeta) -> None:
    admin, invoice, due = invoice_with_due(db)
    admin.associate(invoice.id, due.id)
    created = admin.create_documents(
        [(invoice.id, "first", {due.id: "31/12/2024"}), (invoice.id, "second", None)]
    )
    assert [d.label for d in created] == ["first", "second"]
    assert created[0].document_type == invoice
    assert admin.metadata_value_of(created[0].id, "due") == "2024-12-31"


def test_a_refused_document_in_a_batch_names_its_entry_and_creates_nothing(
    db: docmeta.Docmeta,
) -> None:
    admin, invoice, due = invoice_with_due(db)
    admin.associate(invoice.id, due.id)
    with pytest.raises(docmeta.ValidationError) as refused:
        admin.create_documents([(invoice.id, "fine", None), (invoice.id, "bad", {due.id: "soon"})])
    assert refused.value.field == "documents[1].metadata[0].value"
    assert admin.document_ids() == []


def test_a_batch_of_documents_above_the_bound_is_refused(db: docmeta.Docmeta) -> None:
    admin, invoice, _ = invoice_with_due(db)
    with pytest.raises(docmeta.ValidationError) as refused:
        admin.create_documents([(invoice.id, "many", None)] * 1001)
    assert refused.value.field == "documents"


def test_a_single_value_is_read_with_its_type(db: docmeta.Docmeta) -> None:
    admin, invoice, due = invoice_with_due(db)
    admin.associate(invoice.id, due.id)
    doc = admin.create_document(invoice.id, "INV-1")
    value = admin.add_document_metadata(doc.id, due.id, "01/02/2025")
    read = admin.metadata_value(doc.id, value.id)
    assert (read, read.metadata_type) == (value, due)


def test_a_write_answers_the_value_with_its_type(db: docmeta.Docmeta) -> None:
    admin, invoice, due = invoice_with_due(db)
    admin.associate(invoice.id, due.id)
    doc = admin.create_document(invoice.id, "INV-1")
    added = admin.add_document_metadata(doc.id, due.id, "01/02/2025")
    edited = admin.edit_document_metadata(doc.id, added.id, "03/04/2026")
    assert (added.metadata_type, edited.metadata_type) == (due, due)
    assert [v.value for v in admin.document_metadata(doc.id)] == ["2026-04-03"]


def test_a_value_keeps_its_metadata_type(db: docmeta.Docmeta) -> None:
    admin, invoice, due = invoice_with_due(db)
    admin.associate(invoice.id, due.id)
    other = admin.create_metadata_type("other", "Other")
    doc = admin.create_document(invoice.id, "INV-1", values={due.id: "01/02/2025"})
    value = admin.document_metadata(doc.id)[0]
    with pytest.raises(docmeta.ValidationError) as refused:
        admin.edit_document_metadata(doc.id, value.id, "03/04/2026", metadata_type=other.id)
    assert refused.value.field == "metadata_type_id"
    assert admin.metadata_value(doc.id, value.id).value == "2025-02-01"
    same = admin.edit_document_metadata(doc.id, value.id, "03/04/2026", metadata_type=due.id)
    assert same.value == "2026-04-03"


def test_document_metadata_details_pairs_values_with_types(db: docmeta.Docmeta) -> None:
    admin, invoice, due = invoice_with_due(db)
    admin.associate(invoice.id, due.id)
    doc = admin.create_document(invoice.id, "INV-1", values={due.id: "01/02/2025"})
    details = admin.document_metadata_details(doc.id)
    assert details.document == doc
    assert [(d.value.value, d.metadata_type) for d in details.values] == [("2025-02-01", due)]


def test_document_metadata_details_shows_an_edit_made_after_a_read(db: docmeta.Docmeta) -> None:
    # The first read keeps the document in the read cache; the edit must empty it.
    admin, invoice, due = invoice_with_due(db)
    admin.associate(invoice.id, due.id)
    doc = admin.create_document(invoice.id, "INV-1", values={due.id: "01/02/2025"})
    value = admin.document_metadata_details(doc.id).values[0].value
    admin.edit_document_metadata(doc.id, value.id, "03/04/2026")
    assert [d.value.value for d in admin.document_metadata_details(doc.id).values] == ["2026-04-03"]


def test_document_ids_lists_one_type(db: docmeta.Docmeta) -> None:
    admin, invoice, _ = invoice_with_due(db)
    memo = admin.create_document_type("Memo")
    mine = admin.create_document(invoice.id, "INV-1").id
    admin.create_document(memo.id, "Memo 1")
    assert admin.document_ids(document_type=invoice.id) == [mine]


def test_a_document_is_read_with_its_type(db: docmeta.Docmeta) -> None:
    admin, invoice, _ = invoice_with_due(db)
    doc = admin.create_document(invoice.id, "INV-1")
    assert admin.document(doc.id).document_type == invoice


# ----- cabinets -------------------------------------------------------------------------------


def test_a_cabinet_is_read_by_id(db: docmeta.Docmeta) -> None:
    admin = db.system()
    cabinet = admin.create_cabinet("2024")
    assert admin.cabinet(cabinet.id) == cabinet


def test_cabinet_documents_are_documents_with_their_type(db: docmeta.Docmeta) -> None:
    admin, invoice, _ = invoice_with_due(db)
    cabinet = admin.create_cabinet("2024")
    doc = admin.create_document(invoice.id, "INV-1")
    admin.set_cabinet_document(cabinet.id, doc.id)
    listed = admin.cabinet_documents(cabinet.id)
    assert listed == [doc] and listed[0].document_type == invoice


# ----- workflows ------------------------------------------------------------------------------


def test_workflow_getters_read_one_record(db: docmeta.Docmeta) -> None:
    admin, invoice, due = invoice_with_due(db)
    flow = admin.create_workflow("Approval", document_types=[invoice.id])
    admin.create_workflow_state(flow.id, "draft", initial=True)
    doc = admin.create_document(invoice.id, "INV-1")
    instance = admin.workflow_instances(doc.id)[0]
    assert (admin.workflow(flow.id), admin.workflow_instance(doc.id, instance.id)) == (flow, instance)


def test_workflow_actions_are_listed_with_their_definition(db: docmeta.Docmeta) -> None:
    admin, invoice, due = invoice_with_due(db)
    flow = admin.create_workflow("Approval", document_types=[invoice.id])
    state = admin.create_workflow_state(flow.id, "draft", initial=True)
    action = {"type": "add_metadata", "metadata_type_ids": [due.id]}
    action_id = admin.create_workflow_action(flow.id, state.id, "stamp", action)
    listed = admin.workflow_actions(flow.id, state.id)
    assert [(a.id, a.label, a.on_entry) for a in listed] == [(action_id, "stamp", True)]
    assert '"add_metadata"' in listed[0].action


# ----- search ---------------------------------------------------------------------------------


def test_search_results_carry_their_document_type(db: docmeta.Docmeta) -> None:
    admin, invoice, _ = invoice_with_due(db)
    admin.create_document(invoice.id, "Invoice 7")
    page = admin.search_documents("label:invoice")
    assert [d.document_type for d in page.results] == [invoice]


def test_metadata_search_results_carry_their_type(db: docmeta.Docmeta) -> None:
    admin, invoice, due = invoice_with_due(db)
    admin.associate(invoice.id, due.id)
    admin.create_document(invoice.id, "INV-1", values={due.id: "31/12/2024"})
    page = admin.search_metadata("metadata_value:2024")
    assert [m.metadata_type for m in page.results] == [due]


def test_an_instance_alone_writes_its_index_and_runs_search_work_itself(
    db: docmeta.Docmeta,
) -> None:
    admin, invoice, _ = invoice_with_due(db)
    admin.create_document(invoice.id, "INV-1")
    assert db.writes_search_index() and db.search_writer_pid() is None
    ran = db.search_work("index_objects", model="documents.document")
    assert (ran.done, ran.ticket) == (1, None)


# Holds the search index's writer of a data directory until its standard input closes.
INDEX_WRITER = """
import sys, docmeta
db = docmeta.Docmeta.open(sys.argv[1], worker=False)
assert db.writes_search_index()
print("ready", flush=True)
sys.stdin.read()
db.close()
"""


@contextmanager
def another_process_writes_the_index(data: Path) -> Iterator["subprocess.Popen[str]"]:
    """A child process holding the index writer of `data` until `communicate()` ends it."""
    writer = subprocess.Popen(
        [sys.executable, "-c", INDEX_WRITER, str(data)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
        yield writer
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()


def data_with_a_document(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    (data / "config.yml").write_text(CONFIG)
    with docmeta.Docmeta.open(data, worker=False) as db:
        t = db.system().create_document_type("Invoice")
        db.system().create_document(t.id, "INV-1")
    return data


def test_search_work_is_handed_to_the_index_writer_and_adopted_when_it_is_gone(
    tmp_path: Path,
) -> None:
    data = data_with_a_document(tmp_path)
    with another_process_writes_the_index(data) as writer:
        with docmeta.Docmeta.open(data, worker=False) as db:
            assert (db.writes_search_index(), db.search_writer_pid()) == (False, writer.pid)
            handed = db.search_work("reindex")
            assert handed.done is None and handed.ticket is not None
            assert db.search_work_state(handed.ticket).state == "pending"
            writer.communicate("", timeout=60)  # the writer goes away without running it
            assert db.adopt_search_work(handed.ticket) == 1
            assert db.search_work_state(handed.ticket).state == "done"


def test_handed_off_search_work_names_the_index_it_is_for(tmp_path: Path) -> None:
    data = data_with_a_document(tmp_path)
    with another_process_writes_the_index(data):
        with docmeta.Docmeta.open(data, worker=False) as db:
            ticket = db.search_work("reindex").ticket
            assert ticket is not None
            task = next(t for t in db.open_tasks() if t.id == ticket.task_id)
            assert task.target is not None and task.target != ""


def test_search_work_refuses_an_unknown_operation(db: docmeta.Docmeta) -> None:
    with pytest.raises(docmeta.InvalidInput):
        db.search_work("defragment")


def test_no_rebuild_runs_on_a_fresh_instance(db: docmeta.Docmeta) -> None:
    assert db.search_rebuilding() is False


# ----- files and backup -----------------------------------------------------------------------


def test_a_file_record_is_read_by_id(db: docmeta.Docmeta) -> None:
    admin, invoice, _ = invoice_with_due(db)
    doc = admin.create_document(invoice.id, "INV-1")
    f = admin.add_file(doc.id, "a.txt", b"abc")
    assert admin.file(f.id) == f


def test_check_add_file_refuses_a_user_without_permission(db: docmeta.Docmeta) -> None:
    admin, invoice, _ = invoice_with_due(db)
    doc = admin.create_document(invoice.id, "INV-1")
    admin.check_add_file(doc.id)
    ann = admin.create_user("ann", "a long password")
    with pytest.raises(docmeta.NotFound):
        db.session(ann.id).check_add_file(doc.id)


def test_check_create_document_refuses_before_any_content(db: docmeta.Docmeta) -> None:
    admin, invoice, _ = invoice_with_due(db)
    admin.check_create_document(invoice.id, with_file=True)
    ann = admin.create_user("ann", "a long password")
    with pytest.raises(docmeta.ValidationError) as e:
        db.session(ann.id).check_create_document(invoice.id, with_file=True)
    assert e.value.field == "document_type_id"
    assert len(list(admin.documents())) == 0


def test_prune_backups_keeps_the_newest_of_the_day(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "config.yml").write_text(CONFIG)
    backups = tmp_path / "backups"
    backups.mkdir()
    with docmeta.Docmeta.open(data, worker=False) as db:
        ids = [db.backup(backups / f"b{i}.tar.zst") for i in range(2)]
    decisions = docmeta.prune_backups(backups, keep_daily=1, keep_weekly=0)
    kept = [d.backup_id for d in decisions if d.kept]
    assert kept == [ids[1]] and sorted(p.name for p in backups.iterdir()) == ["b1.tar.zst"]


def test_prune_backups_dry_run_deletes_nothing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "config.yml").write_text(CONFIG)
    backups = tmp_path / "backups"
    backups.mkdir()
    with docmeta.Docmeta.open(data, worker=False) as db:
        for i in range(2):
            db.backup(backups / f"b{i}.tar.zst")
    decisions = docmeta.prune_backups(backups, keep_daily=1, keep_weekly=0, dry_run=True)
    assert sum(not d.kept for d in decisions) == 1 and len(list(backups.iterdir())) == 2


# ----- the instance ---------------------------------------------------------------------------


def test_wait_for_tasks_runs_a_lifecycle_task(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "config.yml").write_text(CONFIG)
    with docmeta.Docmeta.open(data) as db:
        admin = db.system()
        t = admin.create_document_type("Letter")
        doc = admin.create_document(t.id, "Letter 1")
        kind = admin.create_metadata_type("kind", "Kind", default="plain")
        admin.associate(t.id, kind.id, required=True)
        assert db.wait_for_tasks(30.0)
        assert db.open_tasks() == [] and admin.metadata_value_of(doc.id, "kind") == "plain"


def test_a_signed_token_verifies_and_a_changed_field_does_not(db: docmeta.Docmeta) -> None:
    token = db.sign_token([b"user", b"42"])
    assert db.verify_token([b"user", b"42"], token)
    assert not db.verify_token([b"user", b"43"], token)


def test_a_passed_deadline_refuses_a_change(db: docmeta.Docmeta) -> None:
    late = db.system().with_deadline(0.0)
    time.sleep(0.01)
    with pytest.raises(docmeta.DeadlineExceeded):
        late.create_document_type("Too late")
    assert db.system().document_types() == []


def test_a_handle_with_a_deadline_refuses_late_changes(db: docmeta.Docmeta) -> None:
    late = db.with_deadline(0.0)
    time.sleep(0.01)
    with pytest.raises(docmeta.DeadlineExceeded):
        late.system().create_document_type("Too late")


def test_config_reports_the_settings_in_force(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "config.yml").write_text(CONFIG)
    with docmeta.Docmeta.open(data, worker=False) as db:
        config = db.config()
        assert (config["password_hash_memory_kib"], config["documents_file_storage_backend"]) == (
            64,
            "plain",
        )
        assert db.data_dir() == data


def test_config_reports_the_read_cache_size(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "config.yml").write_text(CONFIG + "read_cache_documents: 0\n")
    with docmeta.Docmeta.open(data, worker=False) as db:
        assert db.config()["read_cache_documents"] == 0


def test_config_leaves_the_read_cache_size_to_the_store_by_default(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "config.yml").write_text(CONFIG)
    with docmeta.Docmeta.open(data, worker=False) as db:
        assert db.config()["read_cache_documents"] is None


def test_migrate_on_a_current_database_applies_nothing(db: docmeta.Docmeta) -> None:
    assert db.migrate() == []


def test_username_names_a_user(db: docmeta.Docmeta) -> None:
    ann = db.system().create_user("ann", "a long password")
    assert (db.username(ann.id), db.username(ann.id + 100)) == ("ann", None)


def test_credentials_epoch_moves_when_a_password_changes(db: docmeta.Docmeta) -> None:
    admin = db.system()
    ann = admin.create_user("ann", "a long password")
    before = db.credentials_epoch()
    admin.set_password(ann.id, "another long password")
    assert db.credentials_epoch() != before


def test_session_events_carry_their_actor_name(db: docmeta.Docmeta) -> None:
    admin = db.system()
    root = admin.create_user("root", "root password", superuser=True)
    db.session(root.id).create_document_type("Memo")
    events: List[docmeta.Event] = admin.events(limit=1)
    assert (events[0].actor_id, events[0].actor_username) == (root.id, "root")


def test_events_say_what_changed_and_hide_a_value_its_reader_may_not_view(
    db: docmeta.Docmeta,
) -> None:
    admin = db.system()
    employee = admin.create_document_type("Employee")
    note = admin.create_metadata_type("note", "Note")
    salary = admin.create_metadata_type("salary", "Salary")
    admin.associate(employee.id, note.id)
    admin.associate(employee.id, salary.id)
    doc = admin.create_document(employee.id, "E-1", values={note.id: "kind", salary.id: "73519"})
    values = {v.metadata_type_id: v for v in admin.document_metadata(doc.id)}
    admin.edit_document_metadata(doc.id, values[salary.id].id, "80000")
    admin.edit_document_metadata(doc.id, values[note.id].id, "kinder")
    ann = admin.create_user("ann", "a long password")
    group = admin.create_group("Clerks")
    role = admin.create_role("Clerk")
    admin.set_group_member(group.id, ann.id)
    admin.set_role_group(role.id, group.id)
    for permission in ["documents.document_view", "metadata.document_metadata_view"]:
        admin.grant(permission, role.id, "documents.documenttype", employee.id)
    admin.grant("metadata.document_metadata_view", role.id, "metadata.metadatatype", note.id)

    def edits(session: docmeta.Session) -> List[List[Tuple[str, Optional[str], Optional[str]]]]:
        return [
            [(c.field, c.before, c.after) for c in e.changes]
            for e in reversed(session.events(limit=100))
            if e.name == "metadata.document_metadata_edited"
        ]

    assert edits(admin) == [[("value", "73519", "80000")], [("value", "kind", "kinder")]]
    assert edits(db.session(ann.id)) == [[("value", None, None)], [("value", "kind", "kinder")]]
    newest_edit = next(
        e for e in admin.events(limit=100) if e.name == "metadata.document_metadata_edited"
    )
    change: docmeta.EventChange = newest_edit.changes[0]
    assert repr(change) == "EventChange(field='value', before='kind', after='kinder')"
    # A password never shows: a change of password alone changes no field an event shows.
    admin.set_password(ann.id, "cnry-password")
    event = admin.events(limit=1)[0]
    assert (event.name, event.changes) == ("user_management.user_edited", [])
    assert all("cnry" not in repr(e) for e in admin.events(limit=1000))
