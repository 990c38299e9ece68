#!/usr/bin/env python3
"""The example every face shows (core/examples/own_validator.rs in Rust): an
application's own validator, checked offline first, then a value through the pipeline of
spec 2.10, a grant and its explanation.

Run: pip install ./bindings-python && python3 bindings-python/examples/custom_validator.py
"""

import docmeta


class Even:
    """Accepts even numbers only. Called with the metadata type's YAML arguments as keywords."""

    def __init__(self, **arguments: object) -> None:
        if arguments:
            raise TypeError(f"Even takes no arguments, got {sorted(arguments)}")

    def validate(self, value: str) -> None:
        if int(value) % 2:
            raise ValueError(f"'{value}' is not an even number")


classes = docmeta.Classes()  # the built-in classes, plus the application's:
classes.register_validator("myapp.validators.Even", "Even number", Even)

# Offline: no database, the same errors as the pipeline.
form = docmeta.MetadataProcessor("pairs", "Pairs", validation="myapp.validators.Even",
                                 classes=classes)
assert form.process("42", required=True) == "42"
try:
    form.process("7", required=True)
except docmeta.ValidationError as e:
    print("offline:", e.field, "-", e.message)

# The same type in a store.
with docmeta.Docmeta.in_memory(classes=classes) as db:  # Docmeta.open(path, classes=...) for files
    admin = db.system()
    box = admin.create_document_type("Box")
    pairs = admin.create_metadata_type("pairs", "Pairs", validation="myapp.validators.Even")
    admin.associate(box.id, pairs.id, required=True)
    doc = admin.create_document(box.id, "Box 1", values={pairs.id: "12"})
    print("stored:", admin.metadata_value_of(doc.id, "pairs"))
    try:
        admin.create_document(box.id, "Box 2", values={pairs.id: "13"})
    except docmeta.ValidationError as e:
        print("pipeline:", e.field, "-", e.message)

    # A grant, and why it applies.
    clerk = admin.create_user("clerk", "correct horse battery")
    role = admin.create_role("Box readers")
    group = admin.create_group("Warehouse")
    admin.set_group_member(group.id, clerk.id)
    admin.set_role_group(role.id, group.id)
    admin.grant("documents.document_view", role.id, "documents.documenttype", box.id)
    why = db.explain(clerk.id, "documents.document_view", "documents.document", doc.id)
    assert why.granted and why.grant is not None
    print("explain:", why.sentence)
    print("  grant:", why.grant.kind, [f"{o.kind} {o.id}" for o in why.grant.path])
