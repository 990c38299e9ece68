"""Devices from Python: a password exchanged once for a token, which signs in until it is
revoked, expires, or its user is deactivated; devices listed for their user and for whoever may
view users; another user's device revoked only by someone who may change that user."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

import docmeta

CONFIG = "password_hash_memory_kib: 64\npassword_hash_iterations: 1\n"


def open_db(path: Path) -> docmeta.Docmeta:
    (path / "config.yml").write_text(CONFIG)
    return docmeta.Docmeta.open(path)


def test_a_password_is_exchanged_once_for_a_token_that_signs_in_until_revoked(
    tmp_path: Path,
) -> None:
    with open_db(tmp_path) as db:
        admin = db.system()
        ann = admin.create_user("ann", "a long password")
        assert db.sign_in_device("ann", "the wrong password", "Ann's phone") is None
        assert db.sign_in_device("nobody", "a long password", "Ann's phone") is None
        phone = db.sign_in_device("ann", "a long password", "Ann's phone", lifetime_seconds=3600)
        assert phone is not None
        assert phone.token.startswith("dmd_") and len(phone.token) == 47
        assert phone.device.user_id == ann.id and phone.device.name == "Ann's phone"
        lifetime = phone.device.expires - phone.device.created
        assert lifetime.total_seconds() == 3600
        assert phone.device.expires > datetime.now(timezone.utc)
        user = db.authenticate_device(phone.token)
        assert user is not None and user.id == ann.id
        assert db.authenticate_device(phone.token + "x") is None
        assert db.authenticate_device("not a token") is None
        # Listed for her, with its last use; never with the token.
        mine = db.session(ann.id).devices()
        assert [d.id for d in mine] == [phone.device.id]
        assert mine[0].last_used is not None
        assert phone.token not in repr(mine[0])
        db.session(ann.id).revoke_device(phone.device.id)
        assert db.authenticate_device(phone.token) is None
        assert db.session(ann.id).devices() == []


def test_a_deactivated_user_s_token_stops_and_others_devices_need_permissions(
    tmp_path: Path,
) -> None:
    with open_db(tmp_path) as db:
        admin = db.system()
        ann = admin.create_user("ann", "a long password")
        bob = admin.create_user("bob", "a long password")
        phone = db.sign_in_device("ann", "a long password", "phone")
        assert phone is not None
        with pytest.raises(docmeta.NotFound):
            db.session(bob.id).devices(ann.id)
        with pytest.raises(docmeta.NotFound):
            db.session(bob.id).revoke_device(phone.device.id)
        with pytest.raises(docmeta.ValidationError) as refused:
            db.sign_in_device("ann", "a long password", "")
        assert refused.value.field == "name"
        with pytest.raises(docmeta.ValidationError) as refused:
            db.sign_in_device("ann", "a long password", "laptop", lifetime_seconds=400 * 86400)
        assert refused.value.field == "lifetime"
        admin.update_user(ann.id, is_active=False)
        assert db.authenticate_device(phone.token) is None
        admin.update_user(ann.id, is_active=True)
        assert db.authenticate_device(phone.token) is not None
        assert [d.name for d in admin.devices(ann.id)] == ["phone"]
        admin.revoke_device(phone.device.id)
        assert db.authenticate_device(phone.token) is None


def test_a_replica_syncs_what_its_user_may_see(tmp_path: Path) -> None:
    with open_db(tmp_path) as db:
        admin = db.system()
        ann = admin.create_user("ann", "a long password")
        memo = admin.create_document_type("Memo")
        secret = admin.create_document_type("Secret")
        amount = admin.create_metadata_type("amount", "Amount")
        admin.associate(memo.id, amount.id)
        reader = admin.create_role("Reader")
        group = admin.create_group("Readers")
        admin.set_group_member(group.id, ann.id)
        admin.set_role_group(reader.id, group.id)
        viewing = ["documents.document_view", "documents.document_type_view"]
        for permission in [*viewing, "metadata.document_metadata_view"]:
            admin.grant(permission, reader.id, "documents.documenttype", memo.id)
        admin.grant("metadata.document_metadata_view", reader.id, "metadata.metadatatype", amount.id)
        note = admin.create_document(memo.id, "Note", values={amount.id: "12"})
        admin.create_document(secret.id, "Hidden")
        phone = db.sign_in_device("ann", "a long password", "phone")
        assert phone is not None
        session = db.session(ann.id)

        replica: dict[int, docmeta.SyncedDocument] = {}
        cursor = None
        while True:
            batch = session.sync_changes(phone.device.id, cursor, limit=1)
            replica.update({d.document.id: d for d in batch.documents})
            for gone in batch.removed:
                replica.pop(gone, None)
            cursor = batch.cursor
            if batch.schema is not None:
                assert [t.label for t in batch.schema.document_types] == ["Memo"]
            if not batch.more:
                break
        assert list(replica) == [note.id]
        assert [v.value for v in replica[note.id].values] == ["12"]

        admin.delete_document(note.id)
        batch = session.sync_changes(phone.device.id, cursor)
        assert batch.removed == [note.id] and batch.documents == []
        with pytest.raises(docmeta.ValidationError) as refused:
            session.sync_changes(phone.device.id, "not a cursor")
        assert refused.value.field == "cursor"
        bob = admin.create_user("bob", "a long password")
        with pytest.raises(docmeta.NotFound):
            db.session(bob.id).sync_changes(phone.device.id)


def test_a_push_applies_a_write_and_keeps_the_server_s_value_in_a_conflict(tmp_path: Path) -> None:
    with open_db(tmp_path) as db:
        admin = db.system()
        ann = admin.create_user("ann", "a long password", superuser=True)
        memo = admin.create_document_type("Memo")
        amount = admin.create_metadata_type("amount", "Amount")
        admin.associate(memo.id, amount.id)
        note = admin.create_document(memo.id, "Note", values={amount.id: "12"})
        phone = db.sign_in_device("ann", "a long password", "phone")
        assert phone is not None
        session = db.session(ann.id)
        write = {"key": "k1", "action": "set", "document_id": note.id,
                 "metadata_type_id": amount.id, "value": "13", "base": "12"}
        [applied] = session.sync_push(phone.device.id, [write])
        assert (applied.key, applied.status) == ("k1", "applied")
        assert applied.document is not None
        assert [v.value for v in applied.document.values] == ["13"]
        stale = {**write, "key": "k2", "value": "14"}
        [conflict] = session.sync_push(phone.device.id, [stale])
        assert (conflict.status, conflict.server_value) == ("conflict", "13")
        gone = {"key": "k3", "action": "remove", "document_id": 999_999,
                "metadata_type_id": amount.id, "base": None}
        [refused] = session.sync_push(phone.device.id, [gone])
        assert (refused.status, refused.error_kind) == ("refused", "not_found")
