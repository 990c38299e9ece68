//! Devices: a password exchanged once for a token that signs in until it is revoked, expires,
//! or its user is deactivated, in every process at once; who may list and revoke another
//! user's devices (never over a stronger principal); the bounds of a sign-in.

use std::time::Duration;

use docmeta_core::{
    Config, Docmeta, Error, Event, EventQuery, MAX_DEVICES_PER_USER, PageRequest, Permission as P,
    Result, RoleId, Session, UserId, UserUpdate,
};

fn open(dir: &std::path::Path) -> Result<Docmeta> {
    Docmeta::builder()
        .data_dir(dir)
        .config(Config {
            password_hash_memory_kib: 64,
            password_hash_iterations: 1,
            ..Config::default()
        })
        .worker(false)
        .open()
}

const PASSWORD: &str = "a long password";

/// A user with a role of their own holding `permissions` globally.
fn user_holding(admin: &Session, name: &str, permissions: &[P]) -> Result<(UserId, RoleId)> {
    let user = admin.create_user(name, PASSWORD, false)?.id;
    let group = admin.create_group(&format!("{name}'s"))?.id;
    let role = admin.create_role(&format!("{name}'s role"))?.id;
    admin.set_group_member(group, user, true)?;
    admin.set_role_group(role, group, true)?;
    for p in permissions {
        admin.grant_global(*p, role)?;
    }
    Ok((user, role))
}

#[test]
fn a_token_signs_in_until_revoked_and_is_never_kept() -> Result<()> {
    let dir = tempfile::tempdir().expect("dir");
    let db = open(dir.path())?;
    let (ann, _) = user_holding(&db.system(), "ann", &[])?;
    assert!(
        db.sign_in_device("ann", "wrong password", "phone", None)?
            .is_none()
    );
    let phone = db
        .sign_in_device("ann", PASSWORD, "phone", None)?
        .expect("signed in");
    assert_eq!(phone.device.user, ann);
    assert_eq!(
        phone.device.expires - phone.device.created,
        chrono::TimeDelta::days(90)
    );
    assert_eq!(
        db.authenticate_device(&phone.token)?.map(|u| u.id),
        Some(ann)
    );
    // What the session lists equals what was answered, but for its first use.
    let listed = db.session(ann).devices(None, PageRequest::ALL)?;
    assert_eq!(listed.count, 1);
    assert_eq!(listed.items[0].name, phone.device.name);
    assert_eq!(listed.items[0].expires, phone.device.expires);
    assert!(listed.items[0].last_used.is_some());
    // Only its hash is stored: the database does not hold the token.
    drop(db);
    let bytes = std::fs::read(dir.path().join("db.sqlite3")).expect("db");
    let wal = std::fs::read(dir.path().join("db.sqlite3-wal")).unwrap_or_default();
    let token = phone.token.as_bytes();
    for file in [&bytes, &wal] {
        assert!(!file.windows(token.len()).any(|w| w == token));
    }
    let db = open(dir.path())?;
    // A second process of the same data directory refuses it as soon as it is revoked.
    let other = open(dir.path())?;
    assert!(other.authenticate_device(&phone.token)?.is_some());
    db.session(ann).revoke_device(phone.device.id)?;
    assert!(other.authenticate_device(&phone.token)?.is_none());
    assert!(db.authenticate_device(&phone.token)?.is_none());
    // The log says so, without the token.
    let events = db.system().events(&EventQuery {
        limit: Some(2),
        ..EventQuery::default()
    })?;
    let names: Vec<&str> = events.iter().map(|e| e.event.name.as_str()).collect();
    assert_eq!(names, [Event::DEVICE_REVOKED, Event::DEVICE_CREATED]);
    assert_eq!(events[0].event.changes[0].before.as_deref(), Some("phone"));
    Ok(())
}

#[test]
fn an_expired_token_or_a_deactivated_user_signs_nothing_in() -> Result<()> {
    let dir = tempfile::tempdir().expect("dir");
    let db = open(dir.path())?;
    let admin = db.system();
    let (ann, _) = user_holding(&admin, "ann", &[])?;
    let brief = db
        .sign_in_device("ann", PASSWORD, "brief", Some(Duration::from_secs(1)))?
        .expect("signed in");
    let lasting = db
        .sign_in_device("ann", PASSWORD, "lasting", None)?
        .expect("signed in");
    std::thread::sleep(Duration::from_millis(1100));
    assert!(db.authenticate_device(&brief.token)?.is_none(), "expired");
    let off = UserUpdate {
        is_active: Some(false),
        ..UserUpdate::default()
    };
    admin.update_user(ann, off)?;
    assert!(
        db.authenticate_device(&lasting.token)?.is_none(),
        "deactivated"
    );
    // Nor may a deactivated user sign a new device in.
    assert!(db.sign_in_device("ann", PASSWORD, "new", None)?.is_none());
    let on = UserUpdate {
        is_active: Some(true),
        ..UserUpdate::default()
    };
    admin.update_user(ann, on)?;
    assert!(db.authenticate_device(&lasting.token)?.is_some());
    // Deleting the user deletes their devices.
    admin.delete_user(ann)?;
    assert!(db.authenticate_device(&lasting.token)?.is_none());
    Ok(())
}

#[test]
fn a_sign_in_is_bounded_and_its_fields_checked() -> Result<()> {
    let dir = tempfile::tempdir().expect("dir");
    let db = open(dir.path())?;
    let (ann, _) = user_holding(&db.system(), "ann", &[])?;
    let field = |r: Result<_>| match r {
        Err(Error::Validation { field, .. }) => field,
        other => panic!("not a validation error: {other:?}"),
    };
    assert_eq!(field(db.sign_in_device("ann", PASSWORD, " ", None)), "name");
    assert_eq!(
        field(db.sign_in_device("ann", PASSWORD, &"n".repeat(101), None)),
        "name"
    );
    let year_and_a_day = Duration::from_secs(366 * 86_400);
    assert_eq!(
        field(db.sign_in_device("ann", PASSWORD, "phone", Some(year_and_a_day))),
        "lifetime"
    );
    for i in 0..MAX_DEVICES_PER_USER {
        db.sign_in_device("ann", PASSWORD, &format!("device {i}"), None)?
            .expect("signed in");
    }
    assert!(matches!(
        db.sign_in_device("ann", PASSWORD, "one too many", None),
        Err(Error::Validation { .. })
    ));
    assert_eq!(
        db.session(ann)
            .devices(None, PageRequest::new(2, 20))?
            .items
            .len(),
        20
    );
    // docmeta itself has no devices of its own.
    assert!(matches!(
        db.system().devices(None, PageRequest::ALL),
        Err(Error::InvalidInput(_))
    ));
    Ok(())
}

#[test]
fn another_users_devices_need_view_to_list_and_edit_over_a_weaker_user_to_revoke() -> Result<()> {
    let dir = tempfile::tempdir().expect("dir");
    let db = open(dir.path())?;
    let admin = db.system();
    let (ann, _) = user_holding(&admin, "ann", &[P::DocumentTypeCreate])?;
    let (viewer, _) = user_holding(&admin, "viewer", &[P::UserView])?;
    let (weak_editor, _) = user_holding(&admin, "weak", &[P::UserView, P::UserEdit])?;
    let (editor, _) = user_holding(
        &admin,
        "editor",
        &[P::UserView, P::UserEdit, P::DocumentTypeCreate],
    )?;
    let (nobody, _) = user_holding(&admin, "nobody", &[])?;
    let root = admin.create_user("root", PASSWORD, true)?.id;
    let phone = db
        .sign_in_device("ann", PASSWORD, "phone", None)?
        .expect("signed in");
    let roots = db
        .sign_in_device("root", PASSWORD, "root's laptop", None)?
        .expect("signed in");
    // Without user_view, another user's devices do not exist.
    assert!(matches!(
        db.session(nobody).devices(Some(ann), PageRequest::ALL),
        Err(Error::NotFound(_))
    ));
    assert!(matches!(
        db.session(nobody).revoke_device(phone.device.id),
        Err(Error::NotFound(_))
    ));
    assert_eq!(
        db.session(viewer)
            .devices(Some(ann), PageRequest::ALL)?
            .count,
        1
    );
    assert!(matches!(
        db.session(viewer).revoke_device(phone.device.id),
        Err(Error::PermissionDenied(_))
    ));
    // user_edit alone does not reach over a user who holds more.
    assert!(matches!(
        db.session(weak_editor).revoke_device(phone.device.id),
        Err(Error::PermissionDenied(_))
    ));
    assert!(matches!(
        db.session(editor).revoke_device(roots.device.id),
        Err(Error::PermissionDenied(_))
    ));
    assert!(db.authenticate_device(&phone.token)?.is_some());
    db.session(editor).revoke_device(phone.device.id)?;
    assert!(db.authenticate_device(&phone.token)?.is_none());
    db.session(root).revoke_device(roots.device.id)?;
    assert!(db.authenticate_device(&roots.token)?.is_none());
    Ok(())
}
