"""Through Python: documents created with their first file, lookup choices, and the
detail, update and delete of workflow states and transitions."""

from __future__ import annotations

from typing import Iterator

import pytest

import docmeta


@pytest.fixture
def db() -> Iterator[docmeta.Docmeta]:
    with docmeta.Docmeta.in_memory() as handle:
        yield handle


def test_a_document_is_created_with_its_first_file(db: docmeta.Docmeta) -> None:
    admin = db.system()
    invoice = admin.create_document_type("Invoice")
    created = admin.create_document_with_file(invoice.id, "INV-1", "scan.txt", b"hello")
    assert created.file.document_id == created.document.id
    assert admin.read_file(created.file.id) == b"hello"


def test_a_refused_document_with_a_file_creates_nothing(db: docmeta.Docmeta) -> None:
    admin = db.system()
    invoice = admin.create_document_type("Invoice")
    number = admin.create_metadata_type("number", "Number")
    admin.associate(invoice.id, number.id, required=True)
    with pytest.raises(docmeta.ValidationError):
        admin.create_document_with_file(invoice.id, "INV-1", "scan.txt", b"hello")
    assert list(admin.documents()) == []


def test_lookup_choices_are_rendered_for_a_document(db: docmeta.Docmeta) -> None:
    admin = db.system()
    invoice = admin.create_document_type("Invoice")
    status = admin.create_metadata_type("status", "Status", lookup="open,paid")
    free = admin.create_metadata_type("note", "Note")
    admin.associate(invoice.id, status.id)
    admin.associate(invoice.id, free.id)
    doc = admin.create_document(invoice.id, "INV-1")
    assert admin.document_lookup_choices(doc.id, status.id) == ["open", "paid"]
    assert admin.document_lookup_choices(doc.id, free.id) is None


def test_workflow_states_and_transitions_are_read_updated_and_deleted(
    db: docmeta.Docmeta,
) -> None:
    admin = db.system()
    flow = admin.create_workflow("Approval")
    draft = admin.create_workflow_state(flow.id, "Draft", initial=True)
    done = admin.create_workflow_state(flow.id, "Done")
    approve = admin.create_workflow_transition(flow.id, "Approve", draft.id, done.id)
    assert admin.workflow_state(flow.id, done.id).label == "Done"
    assert admin.update_workflow_state(flow.id, done.id, label="Approved").label == "Approved"
    renamed = admin.update_workflow_transition(flow.id, approve.id, label="Accept")
    assert admin.workflow_transition(flow.id, approve.id).label == renamed.label == "Accept"
    with pytest.raises(docmeta.ValidationError):
        admin.delete_workflow_state(flow.id, done.id)  # a transition ends there
    admin.delete_workflow_transition(flow.id, approve.id)
    admin.delete_workflow_state(flow.id, done.id)
    with pytest.raises(docmeta.NotFound):
        admin.workflow_state(flow.id, done.id)
