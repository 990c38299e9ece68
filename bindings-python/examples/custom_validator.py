#!/usr/bin/env python3
"""docmeta from Python: a validator of the application, a value checked without a database and
through the pipeline, and a grant with its explanation.

Run: pip install ./bindings-python && python3 bindings-python/examples/custom_validator.py
"""

import docmeta


class Even:
    """Accepts even numbers. Called with the metadata type's YAML arguments as keywords."""

    def __init__(self, **arguments: object) -> None:
        if arguments:
            raise TypeError(f"Even takes no arguments, got {sorted(arguments)}")

    def validate(self, value: str) -> None:
        if int(value) % 2:
            raise ValueError(f"{value} is not an even number")


classes = docmeta.Classes()  # the built-in classes, plus the application's:
classes.register_validator("myapp.validators.Even", "Even number", Even)

# Without a database: a form field checked before anything is stored.
seats = docmeta.MetadataProcessor("seats", "Seats", validation="myapp.validators.Even",
                                  classes=classes)
print("offline:", seats.process("4", required=True))

with docmeta.Docmeta.in_memory(classes=classes) as db:
    admin = db.system()
    invoice = admin.create_document_type("Invoice")
    seat_type = admin.create_metadata_type("seats", "Seats", validation="myapp.validators.Even")
    admin.associate(invoice.id, seat_type.id)
    doc = admin.create_document(invoice.id, "INV-1", values={seat_type.id: "4"})
    try:
        admin.create_document(invoice.id, "INV-2", values={seat_type.id: "3"})
    except docmeta.ValidationError as e:
        print("refused:", e.field, "-", e.message)  # value - 3 is not an even number

    ann = admin.create_user("ann", "a long password")
    group = admin.create_group("Accounting")
    role = admin.create_role("Accountant")
    admin.set_group_member(group.id, ann.id)
    admin.set_role_group(role.id, group.id)
    admin.grant("documents.document_view", role.id, "documents.documenttype", invoice.id)
    why = db.explain(ann.id, "documents.document_view", "documents.document", doc.id)
    assert why.granted and why.grant is not None
    print(why.grant.kind, [f"{o.kind} {o.id}" for o in why.grant.path])
    print(why.sentence)
