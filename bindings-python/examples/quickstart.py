#!/usr/bin/env python3
"""docmeta from Python: metadata with a parser, an ACL, search, a file, events.

Run: pip install ./bindings-python && python3 bindings-python/examples/quickstart.py
"""

import docmeta

P = "svc.apps.metadata.metadata_parsers."

with docmeta.Docmeta.in_memory() as db:
    db.subscribe(lambda e: print(f"  event {e.name}: {e.target_label}"))
    admin = db.system()
    invoice = admin.create_document_type("Invoice")
    due = admin.create_metadata_type("due", "Due date", parser=P + "DateParser")
    admin.associate(invoice.id, due.id, required=True)
    doc = admin.create_document(invoice.id, "INV-2024-001", values={due.id: "31/12/2024"})
    print("due stored as", admin.metadata_value_of(doc.id, "due"))

    ann = admin.create_user("ann", "a long password")
    group = admin.create_group("Accounting")
    role = admin.create_role("Accountant")
    admin.set_group_member(group.id, ann.id)
    admin.set_role_group(role.id, group.id)
    admin.grant("documents.document_view", role.id, "documents.documenttype", invoice.id)
    print("ann sees:", [d.label for d in db.session(ann.id).documents()])

    admin.add_file(doc.id, "scan.txt", b"the scanned invoice")
    print("files:", [(f.filename, f.size) for f in admin.files(doc.id)])
    page = db.session(ann.id).search_documents("metadata_value:2024")
    print("search:", page.count, [d.label for d in page.results])
    try:
        admin.add_document_metadata(doc.id, due.id, "01/01/2025")
    except docmeta.Conflict as e:
        print("refused:", e.field, "-", e.message)
