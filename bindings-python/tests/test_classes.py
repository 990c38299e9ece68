"""Applications' own validators and parsers written in Python: registered on a docmeta.Classes,
named by metadata types, run inside the value pipeline."""

from __future__ import annotations

import subprocess
import sys
import threading
from typing import Iterator, List, Tuple

import pytest

import docmeta

EVEN = "myapp.validators.Even"
UPPER = "myapp.parsers.Upper"


class Even:
    """Accepts even numbers; `offset` (an argument) is added first."""

    def __init__(self, offset: int = 0) -> None:
        if not isinstance(offset, int):
            raise TypeError("offset must be a whole number")
        self.offset = offset

    def validate(self, value: str) -> None:
        if (int(value) + self.offset) % 2:
            raise ValueError(f"{value} is not even")


def upper(value: str) -> str:
    return value.upper()


@pytest.fixture
def classes() -> docmeta.Classes:
    c = docmeta.Classes()
    c.register_validator(EVEN, "Even number", Even)
    c.register_parser(UPPER, "Upper case", upper)
    return c


@pytest.fixture
def db(classes: docmeta.Classes) -> Iterator[docmeta.Docmeta]:
    with docmeta.Docmeta.in_memory(classes=classes) as handle:
        yield handle


def document_with(
    db: docmeta.Docmeta, **definition: str
) -> Tuple[docmeta.Session, int, int]:
    """A document whose type has one optional metadata type `field` defined by `definition`."""
    admin = db.system()
    t = admin.create_document_type("Form")
    field = admin.create_metadata_type("field", "Field", **definition)
    admin.associate(t.id, field.id)
    return admin, admin.create_document(t.id, "Form 1").id, field.id


def test_the_registered_classes_are_listed(classes: docmeta.Classes) -> None:
    assert classes.validators()[EVEN] == "Even number"
    assert classes.parsers()[UPPER] == "Upper case"


def test_a_python_validator_refuses_a_value_through_add_document_metadata(db: docmeta.Docmeta) -> None:
    admin, doc, field = document_with(db, validation=EVEN)
    with pytest.raises(docmeta.ValidationError) as refused:
        admin.add_document_metadata(doc, field, "3")
    assert refused.value.field == "value"


def test_the_refusal_carries_the_exception_text(db: docmeta.Docmeta) -> None:
    admin, doc, field = document_with(db, validation=EVEN)
    with pytest.raises(docmeta.ValidationError) as refused:
        admin.add_document_metadata(doc, field, "3")
    assert "3 is not even" in refused.value.message


def test_a_python_validator_accepts_a_value(db: docmeta.Docmeta) -> None:
    admin, doc, field = document_with(db, validation=EVEN)
    assert admin.add_document_metadata(doc, field, "4").value == "4"


def test_any_exception_of_a_validator_is_a_refusal(db: docmeta.Docmeta) -> None:
    # int("four") raises ValueError inside the validator: a refusal, not a crash.
    admin, doc, field = document_with(db, validation=EVEN)
    with pytest.raises(docmeta.ValidationError) as refused:
        admin.add_document_metadata(doc, field, "four")
    assert refused.value.field == "value"


def test_a_validator_returning_false_refuses(classes: docmeta.Classes) -> None:
    classes.register_validator("myapp.validators.Short", "Short", lambda value: len(value) < 4)
    with pytest.raises(docmeta.ValidationError):
        classes.validate("myapp.validators.Short", "", "too long")


def test_a_python_parser_rewrites_the_stored_value(db: docmeta.Docmeta) -> None:
    admin, doc, field = document_with(db, parser=UPPER)
    admin.add_document_metadata(doc, field, "inv-7")
    assert admin.metadata_value_of(doc, "field") == "INV-7"


def test_a_parser_exception_is_a_refusal_of_the_value(classes: docmeta.Classes) -> None:
    def strict(value: str) -> str:
        raise LookupError("no such code")

    classes.register_parser("myapp.parsers.Strict", "Strict", strict)
    with pytest.raises(docmeta.ValidationError) as refused:
        classes.parse("myapp.parsers.Strict", "", "x")
    assert (refused.value.field, refused.value.message.endswith("no such code")) == ("value", True)


def test_the_factory_receives_the_yaml_arguments(db: docmeta.Docmeta) -> None:
    admin, doc, field = document_with(db, validation=EVEN, validation_arguments="offset: 1")
    assert admin.add_document_metadata(doc, field, "3").value == "3"


def test_a_factory_refusing_its_arguments_refuses_the_type(db: docmeta.Docmeta) -> None:
    with pytest.raises(docmeta.ValidationError) as refused:
        db.system().create_metadata_type(
            "field", "Field", validation=EVEN, validation_arguments="offset: odd"
        )
    assert refused.value.field == "validation_arguments"


def test_a_function_refuses_arguments(db: docmeta.Docmeta) -> None:
    with pytest.raises(docmeta.ValidationError) as refused:
        db.system().create_metadata_type("field", "Field", parser=UPPER, parser_arguments="x: 1")
    assert refused.value.field == "parser_arguments"


def test_a_processor_runs_application_classes(classes: docmeta.Classes) -> None:
    code = docmeta.MetadataProcessor("code", "Code", validation=EVEN, parser=UPPER, classes=classes)
    assert code.process("10") == "10"


def test_an_instance_without_the_classes_refuses_their_paths() -> None:
    with docmeta.Docmeta.in_memory() as plain:
        with pytest.raises(docmeta.ValidationError) as refused:
            plain.system().create_metadata_type("field", "Field", validation=EVEN)
    assert refused.value.field == "validation"


def test_the_instance_reports_the_classes_it_uses(db: docmeta.Docmeta) -> None:
    assert EVEN in db.classes().validators()


def test_two_python_threads_run_python_validators_without_deadlock(
    db: docmeta.Docmeta,
) -> None:
    admin, _, field = document_with(db, validation=EVEN)
    t = admin.create_document_type("Batch")
    admin.associate(t.id, field)
    errors: List[BaseException] = []
    refused: List[int] = []

    def work(n: int) -> None:
        try:
            s = db.system()
            for i in range(40):
                doc = s.create_document(t.id, f"doc {n}-{i}")
                try:
                    s.add_document_metadata(doc.id, field, str(i))
                except docmeta.ValidationError:
                    refused.append(i)
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=60)
    assert not any(th.is_alive() for th in threads) and not errors
    assert sorted(refused) == sorted(i for i in range(40) if i % 2 for _ in range(2))


# Run in a child process: were the GIL held while waiting, it would hang, not fail.
BUSY_WRITER_AND_CHECKS = """
import threading, time, docmeta

def busy(value):
    started = time.monotonic()
    while time.monotonic() - started < 0.005:  # Python work, holding the GIL
        pass

classes = docmeta.Classes()
classes.register_validator("myapp.validators.Busy", "Busy", busy)
db = docmeta.Docmeta.in_memory(classes=classes)
admin = db.system()
t = admin.create_document_type("Form")
field = admin.create_metadata_type("field", "Field", validation="myapp.validators.Busy")
admin.associate(t.id, field.id)
f = admin.add_file(admin.create_document(t.id, "Form 1").id, "a.txt", b"abc")
user = admin.create_user("ann", "a long password").id

def write():
    for i in range(20):
        admin.add_document_metadata(admin.create_document(t.id, f"d{i}").id, field.id, "x")

writer = threading.Thread(target=write)
writer.start()
session = db.session(user)
while writer.is_alive():
    db.check(user, "documents.document_view", "documents.documentfile", f.id)
    session.can("documents.document_view", "documents.documentfile", f.id)
writer.join()
print("done")
"""


def test_checks_on_files_go_on_while_a_python_validator_runs() -> None:
    # Deciding access to a file reads the store, which waits for the writer; the writer runs a
    # Python validator, which waits for the GIL: the check must not hold the GIL meanwhile.
    child = subprocess.run(
        [sys.executable, "-c", BUSY_WRITER_AND_CHECKS],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (child.returncode, child.stdout.strip()) == (0, "done"), child.stderr
