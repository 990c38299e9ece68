"""Access control through Python: ACL management, explain as a record, filter,
application kinds and their parents, and the single-record getters of users, groups and roles."""

from __future__ import annotations

import pathlib
from typing import Iterator, List, Tuple

import pytest

import docmeta

VIEW = "documents.document_view"
DOCUMENT = "documents.document"
DOCUMENT_TYPE = "documents.documenttype"


@pytest.fixture
def db() -> Iterator[docmeta.Docmeta]:
    with docmeta.Docmeta.in_memory() as handle:
        yield handle


class Clerk:
    """A user in a group holding one role, and a document type with two documents."""

    def __init__(self, db: docmeta.Docmeta) -> None:
        admin = db.system()
        self.admin = admin
        self.type = admin.create_document_type("Invoice")
        self.docs = [admin.create_document(self.type.id, f"INV-{i}") for i in range(2)]
        self.user = admin.create_user("ann", "a long password")
        self.group = admin.create_group("Accounting")
        self.role = admin.create_role("Accountant")
        admin.set_group_member(self.group.id, self.user.id)
        admin.set_role_group(self.role.id, self.group.id)


def test_an_acl_is_created_empty_then_filled(db: docmeta.Docmeta) -> None:
    c = Clerk(db)
    acl = c.admin.create_acl(DOCUMENT, c.docs[0].id, c.role.id)
    assert acl.permissions == []
    filled = c.admin.acl_add_permission(DOCUMENT, c.docs[0].id, acl.id, VIEW)
    assert filled.permissions == [VIEW]


def test_an_acl_carries_its_role(db: docmeta.Docmeta) -> None:
    c = Clerk(db)
    acl = c.admin.create_acl(DOCUMENT, c.docs[0].id, c.role.id)
    assert c.admin.acl(DOCUMENT, c.docs[0].id, acl.id).role == c.role


def test_an_acl_permission_grants_access(db: docmeta.Docmeta) -> None:
    c = Clerk(db)
    acl = c.admin.create_acl(DOCUMENT, c.docs[0].id, c.role.id)
    c.admin.acl_add_permission(DOCUMENT, c.docs[0].id, acl.id, VIEW)
    assert db.check(c.user.id, VIEW, DOCUMENT, c.docs[0].id)


def test_removing_the_last_permission_deletes_the_acl(db: docmeta.Docmeta) -> None:
    c = Clerk(db)
    acl = c.admin.create_acl(DOCUMENT, c.docs[0].id, c.role.id)
    c.admin.acl_add_permission(DOCUMENT, c.docs[0].id, acl.id, VIEW)
    assert c.admin.acl_remove_permission(DOCUMENT, c.docs[0].id, acl.id, VIEW) is None
    assert c.admin.acls(DOCUMENT, c.docs[0].id) == []


def test_a_deleted_acl_is_not_found(db: docmeta.Docmeta) -> None:
    c = Clerk(db)
    acl = c.admin.create_acl(DOCUMENT, c.docs[0].id, c.role.id)
    c.admin.delete_acl(DOCUMENT, c.docs[0].id, acl.id)
    with pytest.raises(docmeta.NotFound):
        c.admin.acl(DOCUMENT, c.docs[0].id, acl.id)


def test_an_acl_refuses_a_permission_foreign_to_its_kind(db: docmeta.Docmeta) -> None:
    c = Clerk(db)
    acl = c.admin.create_acl(DOCUMENT, c.docs[0].id, c.role.id)
    with pytest.raises(docmeta.ValidationError) as refused:
        c.admin.acl_add_permission(DOCUMENT, c.docs[0].id, acl.id, "cabinets.cabinet_create")
    assert refused.value.field == "permission"


def test_grantable_permissions_of_a_document_type_include_document_ones(
    db: docmeta.Docmeta,
) -> None:
    assert VIEW in db.system().grantable_permissions(DOCUMENT_TYPE)


def test_explain_names_the_acl_and_its_inheritance_path(db: docmeta.Docmeta) -> None:
    c = Clerk(db)
    acl = c.admin.grant(VIEW, c.role.id, DOCUMENT_TYPE, c.type.id)
    e = db.explain(c.user.id, VIEW, DOCUMENT, c.docs[0].id)
    assert e.granted and e.grant is not None
    assert (e.grant.kind, e.grant.acl_id, e.grant.role_id) == ("acl", acl.id, c.role.id)
    assert e.grant.object is not None
    assert (e.grant.object.kind, e.grant.object.id) == (DOCUMENT_TYPE, c.type.id)
    assert [(o.kind, o.id) for o in e.grant.path] == [
        (DOCUMENT, c.docs[0].id),
        (DOCUMENT_TYPE, c.type.id),
    ]


def test_explain_lists_every_other_grant_that_applies(db: docmeta.Docmeta) -> None:
    c = Clerk(db)
    c.admin.grant(VIEW, c.role.id, DOCUMENT_TYPE, c.type.id)
    c.admin.grant(VIEW, c.role.id, DOCUMENT, c.docs[0].id)
    e = db.explain(c.user.id, VIEW, DOCUMENT, c.docs[0].id)
    assert len(e.also) == 1 and e.also[0].kind == "acl"


def test_explain_of_a_global_grant_names_role_and_group(db: docmeta.Docmeta) -> None:
    c = Clerk(db)
    c.admin.grant_global(VIEW, c.role.id)
    grant = db.explain(c.user.id, VIEW, DOCUMENT, c.docs[0].id).grant
    assert grant is not None
    assert (grant.kind, grant.role_id, grant.group_id, grant.acl_id) == (
        "global",
        c.role.id,
        c.group.id,
        None,
    )


def test_explain_of_a_refusal_lists_what_was_checked(db: docmeta.Docmeta) -> None:
    c = Clerk(db)
    e = db.explain(c.user.id, VIEW, DOCUMENT, c.docs[0].id)
    assert not e.granted and e.grant is None
    assert [o.kind for o in e.checked] == [DOCUMENT, DOCUMENT_TYPE]
    assert e.sentence.startswith("refused")


def test_explain_of_a_superuser_says_so(db: docmeta.Docmeta) -> None:
    root = db.system().create_user("root", "root password", superuser=True)
    e = db.explain(root.id, VIEW, DOCUMENT, 1)
    assert e.grant is not None and e.grant.kind == "superuser"
    assert "superuser" in e.sentence


def test_a_user_may_explain_their_own_access_through_a_session(db: docmeta.Docmeta) -> None:
    c = Clerk(db)
    c.admin.grant(VIEW, c.role.id, DOCUMENT_TYPE, c.type.id)
    e = db.session(c.user.id).explain(c.user.id, VIEW, DOCUMENT, c.docs[0].id)
    assert e == db.explain(c.user.id, VIEW, DOCUMENT, c.docs[0].id)


def test_explaining_another_user_needs_acl_view(db: docmeta.Docmeta) -> None:
    c = Clerk(db)
    c.admin.grant(VIEW, c.role.id, DOCUMENT_TYPE, c.type.id)
    other = c.admin.create_user("bob", "a long password")
    with pytest.raises((docmeta.PermissionDenied, docmeta.NotFound)):
        db.session(other.id).explain(c.user.id, VIEW, DOCUMENT, c.docs[0].id)


def test_filter_keeps_the_objects_the_user_may_act_on(db: docmeta.Docmeta) -> None:
    c = Clerk(db)
    c.admin.grant(VIEW, c.role.id, DOCUMENT, c.docs[1].id)
    ids = [d.id for d in c.docs]
    assert db.filter(c.user.id, VIEW, DOCUMENT, ids) == [c.docs[1].id]


def test_can_globally_follows_global_grants(db: docmeta.Docmeta) -> None:
    c = Clerk(db)
    session = db.session(c.user.id)
    assert not session.can_globally(VIEW)
    c.admin.grant_global(VIEW, c.role.id)
    assert session.can_globally(VIEW)


def test_set_role_permission_returns_the_global_permissions(db: docmeta.Docmeta) -> None:
    c = Clerk(db)
    assert c.admin.set_role_permission(c.role.id, VIEW) == [VIEW]
    assert c.admin.set_role_permission(c.role.id, VIEW, granted=False) == []


def test_an_application_kind_inherits_from_its_parents(db: docmeta.Docmeta) -> None:
    c = Clerk(db)
    kind = db.register_kind("shop", "order", parents=[DOCUMENT], permissions=[VIEW])
    db.set_object_parents(kind, 7, [(DOCUMENT, c.docs[0].id)])
    c.admin.grant(VIEW, c.role.id, DOCUMENT, c.docs[0].id)
    assert db.check(c.user.id, VIEW, kind, 7)


def test_a_registered_kind_is_listed(db: docmeta.Docmeta) -> None:
    kind = db.register_kind("shop", "order")
    assert kind == "shop.order" and kind in db.kinds()


def test_an_existence_check_refuses_acls_on_missing_objects(db: docmeta.Docmeta) -> None:
    c = Clerk(db)
    asked: List[int] = []

    def exists(object_id: int) -> bool:
        asked.append(object_id)
        return object_id < 100

    kind = db.register_kind("shop", "order", permissions=[VIEW], exists=exists)
    with pytest.raises(docmeta.NotFound):
        c.admin.create_acl(kind, 500, c.role.id)
    assert 500 in asked


def test_docmeta_keeps_the_links_of_its_own_kinds(db: docmeta.Docmeta) -> None:
    with pytest.raises(docmeta.InvalidInput):
        db.set_object_parents(DOCUMENT, 1, [(DOCUMENT_TYPE, 1)])


def test_an_unknown_kind_is_not_found(db: docmeta.Docmeta) -> None:
    with pytest.raises(docmeta.NotFound):
        db.parse_kind("shop.nothing")


def test_users_groups_and_roles_are_read_one_by_one(db: docmeta.Docmeta) -> None:
    c = Clerk(db)
    assert (c.admin.user(c.user.id), c.admin.group(c.group.id), c.admin.role(c.role.id)) == (
        c.user,
        c.group,
        c.role,
    )


def test_members_and_role_groups_are_records(db: docmeta.Docmeta) -> None:
    c = Clerk(db)
    pairs: Tuple[List[docmeta.User], List[docmeta.Group]] = (
        c.admin.group_members(c.group.id),
        c.admin.role_groups(c.role.id),
    )
    assert pairs == ([c.user], [c.group])


def test_a_session_knows_its_actor(db: docmeta.Docmeta) -> None:
    c = Clerk(db)
    assert (db.session(c.user.id).actor(), db.system().actor()) == (c.user.id, None)


def test_object_ref_checks_the_kind(db: docmeta.Docmeta) -> None:
    ref = db.system().object_ref("documents", "document", 3)
    assert (ref.kind, ref.id) == (DOCUMENT, 3)


def test_another_process_grant_and_revoke_are_honoured_at_the_next_call(tmp_path: pathlib.Path) -> None:
    """Two handles on one data directory, as a command beside a server: no follower runs, yet
    each call of the second handle's session answers with the first's last change."""
    with docmeta.Docmeta.open(tmp_path, worker=False) as server:
        c = Clerk(server)
        reader = server.session(c.user.id)
        with docmeta.Docmeta.open(tmp_path, worker=False) as command:
            admin = command.system()
            acl = admin.create_acl(DOCUMENT, c.docs[0].id, c.role.id)
            admin.acl_add_permission(DOCUMENT, c.docs[0].id, acl.id, VIEW)
            assert reader.document(c.docs[0].id).label == "INV-0"
            admin.acl_remove_permission(DOCUMENT, c.docs[0].id, acl.id, VIEW)
            with pytest.raises(docmeta.NotFound):
                reader.document(c.docs[0].id)
            server.catch_up()
