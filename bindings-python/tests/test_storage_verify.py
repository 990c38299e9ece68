"""Damaged stored files are reported through Python too: verify_storage lists them, a backup
warns and its archive lists them, a restore reports them."""

from __future__ import annotations

from pathlib import Path
from typing import List

import pytest

import docmeta

CONFIG = "password_hash_memory_kib: 64\npassword_hash_iterations: 1\n"


def stored_files(data: Path) -> List[Path]:
    root = data / "document_file_storage"
    return [
        f
        for fan in root.iterdir()
        if not fan.name.startswith(".")
        for f in fan.iterdir()
    ]


def data_with_one_file(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    (data / "config.yml").write_text(CONFIG)
    with docmeta.Docmeta.open(data, worker=False) as db:
        admin = db.system()
        t = admin.create_document_type("Scan")
        doc = admin.create_document(t.id, "Scan 1")
        admin.add_file(doc.id, "scan.pdf", b"%PDF-1.7 " + bytes(range(256)) * 40)
    return data


def flip_a_byte(path: Path) -> None:
    content = bytearray(path.read_bytes())
    content[len(content) // 2] ^= 0x20
    path.write_bytes(bytes(content))


def test_verify_storage_reports_an_intact_store(tmp_path: Path) -> None:
    data = data_with_one_file(tmp_path)
    with docmeta.Docmeta.open(data, worker=False) as db:
        calls: List[int] = []
        report = db.verify_storage(progress=lambda done, total: calls.append(done))
    assert report["intact"] is True and report["files_checked"] == 1
    assert report["damaged"] == [] and calls == [1]


def test_verify_storage_lists_a_file_with_a_wrong_checksum(tmp_path: Path) -> None:
    data = data_with_one_file(tmp_path)
    flip_a_byte(stored_files(data)[0])
    with docmeta.Docmeta.open(data, worker=False) as db:
        report = db.verify_storage()
    assert report["intact"] is False
    [damaged] = report["damaged"]
    assert damaged["damage"] == "wrong_checksum" and damaged["filename"] == "scan.pdf"


def test_a_backup_with_a_damaged_file_warns_and_its_archive_lists_it(tmp_path: Path) -> None:
    data = data_with_one_file(tmp_path)
    path = stored_files(data)[0]
    path.unlink()
    archive = tmp_path / "full.tar.zst"
    with docmeta.Docmeta.open(data, worker=False) as db:
        with pytest.warns(UserWarning, match="could not be read intact"):
            db.backup(archive)
    [damaged] = docmeta.backup_damaged_files(archive)
    assert damaged["damage"] == "missing" and damaged["document_file_id"] is not None
    report = docmeta.restore([archive], tmp_path / "restored")
    assert [d["damage"] for d in report["damaged"]] == ["missing"]
