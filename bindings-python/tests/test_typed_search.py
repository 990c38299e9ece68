"""Typed metadata types and search by field through Python: a value refused for its type, a
change of value type checked against the stored values (and the dry-run check), field-bound
terms and `has:`, documents sorted by a typed value in a search and a list, a hidden type
matching nothing."""

from __future__ import annotations

from typing import Iterator, List, Tuple

import pytest

import docmeta


@pytest.fixture
def world() -> Iterator[Tuple[docmeta.Docmeta, List[int]]]:
    with docmeta.Docmeta.in_memory() as db:
        admin = db.system()
        invoice = admin.create_document_type("Invoice")
        amount = admin.create_metadata_type("amount", "Amount", value_type="decimal")
        due = admin.create_metadata_type(
            "due",
            "Due",
            parser="svc.apps.metadata.metadata_parsers.DateParser",
            value_type="date",
        )
        po = admin.create_metadata_type("po_number", "PO number")
        for t in (amount, due, po):
            admin.associate(invoice.id, t.id)
        docs = []
        for label, values in [
            ("small", {amount.id: "95.50", due.id: "15/03/2024", po.id: "PO-1"}),
            ("large", {amount.id: "1200", due.id: "2024-01-31"}),
            ("none", {}),
        ]:
            docs.append(admin.create_document(invoice.id, label, values=values).id)
        yield db, docs


def labels(page: docmeta.DocumentPage) -> List[str]:
    return [d.label for d in page.results]


def test_values_are_checked_against_their_type(
    world: Tuple[docmeta.Docmeta, List[int]],
) -> None:
    db, docs = world
    admin = db.system()
    amount = admin.metadata_type_by_name("amount")
    assert amount.value_type == "decimal"
    with pytest.raises(docmeta.ValidationError) as refused:
        admin.add_document_metadata(docs[2], amount.id, "twelve")
    assert refused.value.field == "value"
    with pytest.raises(docmeta.ValidationError) as unknown:
        admin.create_metadata_type("x", "X", value_type="money")
    assert unknown.value.field == "value_type"


def test_a_change_of_value_type_is_checked_first(
    world: Tuple[docmeta.Docmeta, List[int]],
) -> None:
    db, _ = world
    admin = db.system()
    po = admin.metadata_type_by_name("po_number")
    check = admin.check_value_type(po.id, "integer")
    assert (check.value_type, check.checked, check.count) == ("integer", 1, 1)
    assert [m.value for m in check.misfits] == ["PO-1"]
    with pytest.raises(docmeta.ValidationError) as refused:
        admin.update_metadata_type(po.id, po.name, po.label, value_type="integer")
    assert refused.value.field == "value_type"
    assert admin.metadata_type(po.id).value_type == "text"
    assert admin.check_value_type(po.id, "text").count == 0


def test_field_bound_terms_and_sorting(world: Tuple[docmeta.Docmeta, List[int]]) -> None:
    db, _ = world
    admin = db.system()
    # As numbers 95.50 < 100 < 1200; as text "95.50" would be above "100".
    assert labels(admin.search_documents("amount:>100")) == ["large"]
    assert labels(admin.search_documents("due:[2024-03-01 TO 2024-03-31]")) == ["small"]
    # An order by a name that is no type is ignored: the search keeps its relevance order.
    assert labels(admin.search_documents("NOT has:po_number", ordering="nosuch")) == labels(
        admin.search_documents("NOT has:po_number")
    )
    everything = "label:small OR label:large OR label:none"
    assert labels(admin.search_documents(everything, ordering="-amount")) == [
        "large",
        "small",
        "none",
    ]
    assert [d.label for d in admin.documents(ordering="due")] == ["large", "small", "none"]
    assert [d.label for d in admin.documents(ordering="-amount")] == ["large", "small", "none"]
    with pytest.raises(docmeta.InvalidInput):
        admin.search_documents("amount:[a TO b]")


def test_a_hidden_type_matches_nothing(world: Tuple[docmeta.Docmeta, List[int]]) -> None:
    db, _ = world
    admin = db.system()
    clerk = admin.create_user("clerk", "a long password")
    group = admin.create_group("clerks")
    role = admin.create_role("clerks")
    admin.set_group_member(group.id, clerk.id, member=True)
    admin.set_role_group(role.id, group.id, assigned=True)
    admin.grant_global("documents.document_view", role.id)
    admin.grant_global("metadata.document_metadata_view", role.id)
    amount = admin.metadata_type_by_name("amount")
    session = db.session(clerk.id)
    # Every value is visible to the clerk: the type is found.
    assert labels(session.search_documents("amount:>100")) == ["large"]
    admin.revoke_global("metadata.document_metadata_view", role.id)
    due = admin.metadata_type_by_name("due")
    admin.grant("metadata.document_metadata_view", role.id, "metadata.metadatatype", due.id)
    invoice = next(t for t in admin.document_types() if t.label == "Invoice")
    admin.grant("metadata.document_metadata_view", role.id, "documents.documenttype", invoice.id)
    # Now `amount` is unknown to the clerk: an unknown field, worded as for a type that does
    # not exist; an order by it is an order by no value.
    for query, absent in [("amount:>100", "nosuch:>100"), ("has:amount", "has:nosuch")]:
        with pytest.raises(docmeta.InvalidInput) as hidden:
            session.search_documents(query)
        with pytest.raises(docmeta.InvalidInput) as missing:
            session.search_documents(absent)
        assert str(hidden.value).replace("amount", "nosuch") == str(missing.value)
    assert [d.label for d in session.documents(ordering="-amount")] == ["small", "large", "none"]
    assert labels(session.search_documents("due:<2024-02-01")) == ["large"]
    # Known (its definition may be viewed) but its values hidden: its terms match nothing.
    admin.grant("metadata.metadata_type_view", role.id, "metadata.metadatatype", amount.id)
    assert session.search_documents("amount:>100").count == 0
    assert session.search_documents("NOT has:amount").count == 3


def test_templates_preview_before_they_are_saved(
    world: Tuple[docmeta.Docmeta, List[int]],
) -> None:
    db, docs = world
    admin = db.system()
    preview = admin.preview_templates(
        default="{{ document.label }}-{{ 6 * 7 }}", lookup="a, b, {{ 'c' }}", document=docs[0]
    )
    assert preview.default == "small-42"
    assert preview.lookup_choices == ["a", "b", "c"]
    assert preview.default_error is None and preview.lookup_error is None
    broken = admin.preview_templates(default="{{ oops")
    assert broken.default is None and broken.default_error
    assert broken.lookup_choices is None
    ann = admin.create_user("ann", "a long password")
    with pytest.raises(docmeta.PermissionDenied):
        db.session(ann.id).preview_templates(default="{{ 1 }}")
