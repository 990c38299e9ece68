"""Validation and parsing without a database: docmeta.validate, docmeta.parse and
MetadataProcessor refuse what the pipeline refuses, naming the same fields."""

from __future__ import annotations

import pytest

import docmeta

P = "svc.apps.metadata.metadata_parsers."
V = "svc.apps.metadata.metadata_validators."


def test_validate_accepts_a_real_date() -> None:
    docmeta.validate(V + "DateValidator", "", "2026-11-24")


def test_validate_refuses_an_impossible_date_on_the_value_field() -> None:
    with pytest.raises(docmeta.ValidationError) as refused:
        docmeta.validate(V + "DateValidator", "", "2026-02-30")
    assert refused.value.field == "value"


def test_validate_names_the_validation_field_for_an_unknown_class() -> None:
    with pytest.raises(docmeta.ValidationError) as refused:
        docmeta.validate(V + "NoSuchValidator", "", "x")
    assert refused.value.field == "validation"


def test_validate_names_the_arguments_field_for_missing_arguments() -> None:
    with pytest.raises(docmeta.ValidationError) as refused:
        docmeta.validate(V + "RegularExpressionValidator", "", "INV-1")
    assert refused.value.field == "validation_arguments"


def test_parse_returns_the_value_a_store_would_keep() -> None:
    assert docmeta.parse(P + "DateParser", "", "24/11/2026") == "2026-11-24"


def test_parse_uses_its_yaml_arguments() -> None:
    arguments = "pattern: '([0-9]+)'\nreplacement: 'n=\\1'"
    assert docmeta.parse(P + "RegularExpressionParser", arguments, "a 42") == "a n=42"


def test_parse_refuses_an_unreadable_value_on_the_value_field() -> None:
    with pytest.raises(docmeta.ValidationError) as refused:
        docmeta.parse(P + "DateParser", "", "yesterday")
    assert refused.value.field == "value"


def test_processor_validates_then_parses() -> None:
    due = docmeta.MetadataProcessor(
        "due", "Due date", validation=V + "DateValidator", parser=P + "DateParser"
    )
    assert due.process("31/12/2026", required=True) == "2026-12-31"


def test_processor_refuses_an_empty_required_value() -> None:
    reference = docmeta.MetadataProcessor("reference", "Reference")
    with pytest.raises(docmeta.ValidationError) as refused:
        reference.process("  ", required=True)
    assert refused.value.field == "value"


def test_processor_keeps_an_empty_optional_value_empty() -> None:
    assert docmeta.MetadataProcessor("reference", "Reference").process("") == ""


def test_processor_renders_its_default_for_an_empty_value() -> None:
    year = docmeta.MetadataProcessor("year", "Year", default="{{ now.year }}")
    assert year.process("").isdigit()


def test_processor_refuses_a_bad_definition_naming_the_field() -> None:
    with pytest.raises(docmeta.ValidationError) as refused:
        docmeta.MetadataProcessor("bad name!", "Bad")
    assert refused.value.field == "name"


def test_processor_lists_its_lookup_choices() -> None:
    colour = docmeta.MetadataProcessor("colour", "Colour", lookup="red, green")
    assert colour.lookup_choices() == ["red", "green"]


def test_processor_without_lookup_has_no_choices() -> None:
    assert docmeta.MetadataProcessor("free", "Free").lookup_choices() is None


def test_processor_refuses_a_value_outside_its_lookup() -> None:
    colour = docmeta.MetadataProcessor("colour", "Colour", lookup="red,green")
    with pytest.raises(docmeta.ValidationError):
        colour.process("blue")


def test_processor_refuses_what_the_pipeline_refuses() -> None:
    # The same definition and value, with and without a database: the same error.
    validation = V + "RegularExpressionValidator"
    arguments = "pattern: 'INV-[0-9]+'"
    offline = docmeta.MetadataProcessor(
        "number", "Number", validation=validation, validation_arguments=arguments
    )
    with pytest.raises(docmeta.ValidationError) as without_db:
        offline.process("nope")
    with docmeta.Docmeta.in_memory() as db:
        admin = db.system()
        invoice = admin.create_document_type("Invoice")
        number = admin.create_metadata_type(
            "number", "Number", validation=validation, validation_arguments=arguments
        )
        admin.associate(invoice.id, number.id)
        doc = admin.create_document(invoice.id, "INV-1")
        with pytest.raises(docmeta.ValidationError) as with_db:
            admin.add_document_metadata(doc.id, number.id, "nope")
    assert (without_db.value.field, without_db.value.message) == (
        with_db.value.field,
        with_db.value.message,
    )
