#!/usr/bin/env python3
"""Python bindings overhead (the targets: a metadata value add through Python costs at most
2x the same operation in Rust; `check` from Python at most 2 us).

Runs the Rust baseline (`cargo bench -p docmeta-benches --bench python_baseline`) and the same
workload through the installed `docmeta` package, then prints both and the ratio.
Usage: python3 benches/python/compare.py   (after `pip install ./bindings-python`)
"""

import os
import re
import subprocess
import time

import docmeta

P = "svc.apps.metadata.metadata_parsers."
V = "svc.apps.metadata.metadata_validators."
N = int(os.environ.get("DOCUMENTS", "20000"))


def python_side() -> "tuple[float, float]":
    db = docmeta.Docmeta.in_memory()
    admin = db.system()
    t = admin.create_document_type("Invoice").id
    due = admin.create_metadata_type(
        "due", "Due", parser=P + "DateParser", validation=V + "DateValidator"
    ).id
    admin.associate(t, due)
    docs = [admin.create_document(t, f"doc {i}").id for i in range(N)]
    started = time.perf_counter()
    for d in docs:
        admin.add_document_metadata(d, due, "31/12/2024")
    add_ns = (time.perf_counter() - started) * 1e9 / N
    user = admin.create_user("ann", "a long password").id
    group = admin.create_group("g").id
    role = admin.create_role("r").id
    admin.set_group_member(group, user)
    admin.set_role_group(role, group)
    admin.grant("documents.document_view", role, "documents.documenttype", t)
    checks = 1_000_000
    check = db.check
    started = time.perf_counter()
    allowed = 0
    for i in range(checks):
        allowed += check(user, "documents.document_view", "documents.document", docs[i % N])
    check_ns = (time.perf_counter() - started) * 1e9 / checks
    assert allowed == checks
    return add_ns, check_ns


def main() -> None:
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run(
        ["cargo", "bench", "-q", "-p", "docmeta-benches", "--bench", "python_baseline"],
        cwd=root, check=True, capture_output=True, text=True,
        env={**os.environ, "DOCUMENTS": str(N)},
    ).stdout
    m = re.search(r"add_ns=(\d+) check_ns=(\d+)", out)
    assert m, out
    rust_add, rust_check = float(m.group(1)), float(m.group(2))
    py_add, py_check = python_side()
    print(f"metadata value add: Rust {rust_add / 1000:.1f} us, Python {py_add / 1000:.1f} us "
          f"({py_add / rust_add:.2f}x; target <= 2x)")
    print(f"check: Rust {rust_check:.0f} ns, Python {py_check:.0f} ns (target <= 2000 ns)")


if __name__ == "__main__":
    main()
