//! Users: creation, reading, updates, passwords and deletion, and authentication by
//! username and password.
//!
//! Part of `session` (layer 6 of `scripts/check-structure`): it may import only what `session`
//! may (see `session`'s module documentation).

use super::access::USER;
use super::{Session, event_object, rename_conflict};
use crate::access::Permission as P;
use crate::access::password::{dummy_verify, hash_password, verify_password};
use crate::error::{Error, Result};
use crate::events::names;
use crate::kernel::{AccessChange, Docmeta};
use crate::model::*;

pub(super) fn check_username(username: &str) -> Result<()> {
    crate::model::check_no_nul("username", username)?;
    let ok = !username.is_empty()
        && username.chars().count() <= 150
        && username
            .chars()
            .all(|c| c.is_alphanumeric() || "@.+-_".contains(c));
    if ok {
        Ok(())
    } else {
        Err(Error::validation(
            "username",
            "Use 1 to 150 letters, digits and @/./+/-/_ characters.",
        ))
    }
}

impl Docmeta {
    /// The username of a user, for display (event actors); `None` when the user is gone.
    pub fn username(&self, id: UserId) -> Result<Option<String>> {
        Ok(self.read(|tx| tx.user(id))?.map(|u| u.username))
    }

    /// Checks a username and password; returns the active user they belong to. Unknown users
    /// cost the same time as known ones, so timing does not reveal which usernames exist.
    pub fn authenticate(&self, username: &str, password: &str) -> Result<Option<User>> {
        // No user has a NUL in their name (refused on creation); asking the store would be an
        // error, not a failed login.
        let user = if username.contains('\0') {
            None
        } else {
            self.read(|tx| tx.user_by_username(username))?
        };
        let cfg = self.config();
        match user {
            Some(u) if verify_password(password, &u.password_hash) && u.is_active => {
                Ok(Some(u.into()))
            }
            Some(_) => Ok(None),
            None => {
                dummy_verify(
                    password,
                    cfg.password_hash_memory_kib,
                    cfg.password_hash_iterations,
                );
                Ok(None)
            }
        }
    }
}

impl Session {
    fn hash(&self, password: &str) -> Result<String> {
        let cfg = self.db.config();
        hash_password(
            password,
            cfg.password_hash_memory_kib,
            cfg.password_hash_iterations,
        )
    }

    // ----- users -----------------------------------------------------------------------------

    /// Creates a user. Needs `user_management.user_create`; only a superuser creates superusers.
    pub fn create_user(&self, username: &str, password: &str, superuser: bool) -> Result<User> {
        self.require_global(P::UserCreate)?;
        if superuser && !self.is_superuser() {
            return Err(Error::PermissionDenied(
                "only a superuser may create a superuser".into(),
            ));
        }
        check_username(username)?;
        let hash = self.hash(password)?;
        self.write(|u| {
            let user = u.tx.insert_user(username, &hash, superuser).map_err(|e| {
                rename_conflict(e, "username", "A user with that username already exists.")
            })?;
            u.access.push(AccessChange::User {
                id: user.id,
                superuser,
                active: true,
            });
            u.event(
                names::USER_EDITED,
                event_object(USER, user.id.0, username),
                None,
                user_changes(None, Some(&user)),
            )?;
            Ok(user.into())
        })
    }

    /// Whether this session may view user `id`: itself, or `user_management.user_view`
    /// globally. The one rule for users, their names in events and their membership lists.
    pub(crate) fn may_view_user(&self, id: UserId) -> bool {
        self.actor == Actor::User(id) || self.can_globally(P::UserView)
    }

    /// One user. Needs `user_management.user_view`, or being that user.
    pub fn user(&self, id: UserId) -> Result<User> {
        if !self.may_view_user(id) {
            return Err(Error::not_found(format!("user {id}")));
        }
        self.read(|tx| tx.user(id))?
            .map(User::from)
            .ok_or_else(|| Error::not_found(format!("user {id}")))
    }

    /// The users this session may view.
    pub fn users(&self) -> Result<Vec<User>> {
        let all = self.read(|tx| tx.users())?;
        Ok(all
            .into_iter()
            .filter(|u| self.may_view_user(u.id))
            .map(User::from)
            .collect())
    }

    /// Changes a user (spec 5.4 `user_management.user_edit`). The rules, all checked before
    /// anything is written:
    /// - a user may set their own password without any permission;
    /// - every other change (another user's password, any username or activity) needs
    ///   `user_management.user_edit` globally;
    /// - changing another user needs holding everything that user holds: each global
    ///   permission of each of their roles globally, each permission of their roles' ACLs on
    ///   that ACL's object (whether or not they are active: reactivating them gives it back).
    ///   `user_edit` must not be a way to take over an account stronger than its holder's
    ///   (reset its password, then log in as it);
    /// - only a superuser may change superuser status, and only a superuser may change a
    ///   superuser at all (password, name, activity).
    ///
    /// A new username whose key (its case-folded confusable skeleton, Unicode Technical
    /// Standard 39) equals another user's is a `Conflict` on `username`.
    pub fn update_user(&self, id: UserId, update: UserUpdate) -> Result<User> {
        let own = self.actor == Actor::User(id);
        if !own && !self.may_view_user(id) {
            return Err(Error::not_found(format!("user {id}")));
        }
        if let Some(name) = &update.username {
            check_username(name)?;
        }
        let only_own_password = own
            && update.username.is_none()
            && update.is_superuser.is_none()
            && update.is_active.is_none();
        if !only_own_password {
            self.require_global(P::UserEdit)?;
        }
        if update.is_superuser.is_some() && !self.is_superuser() {
            return Err(Error::PermissionDenied(
                "only a superuser may change superuser status".into(),
            ));
        }
        // Argon2 takes tens of milliseconds: never inside the write transaction.
        let hash = update
            .password
            .as_deref()
            .map(|p| self.hash(p))
            .transpose()?;
        self.write(|u| {
            let mut user =
                u.tx.user(id)?
                    .ok_or_else(|| Error::not_found(format!("user {id}")))?;
            if user.is_superuser && !self.is_superuser() {
                return Err(Error::PermissionDenied(
                    "only a superuser may change a superuser".into(),
                ));
            }
            if !own {
                self.require_holds_user(&mut u.tx, id)?;
            }
            let before = user.clone();
            user.username = update.username.clone().unwrap_or(user.username);
            user.is_superuser = update.is_superuser.unwrap_or(user.is_superuser);
            user.is_active = update.is_active.unwrap_or(user.is_active);
            if let Some(hash) = &hash {
                user.password_hash = hash.clone();
            }
            u.tx.update_user(&user).map_err(|e| {
                rename_conflict(e, "username", "A user with that username already exists.")
            })?;
            u.access.push(AccessChange::User {
                id,
                superuser: user.is_superuser,
                active: user.is_active,
            });
            u.event(
                names::USER_EDITED,
                event_object(USER, id.0, &user.username),
                None,
                user_changes(Some(&before), Some(&user)),
            )?;
            Ok(user.into())
        })
    }

    /// Sets a user's password: [`update_user`](Self::update_user) with only a password (a user
    /// may set their own; another's needs `user_management.user_edit` and holding everything
    /// that user holds, and a superuser's only a superuser).
    pub fn set_password(&self, id: UserId, password: &str) -> Result<()> {
        self.update_user(
            id,
            UserUpdate {
                password: Some(password.to_owned()),
                ..UserUpdate::default()
            },
        )
        .map(|_| ())
    }

    /// Deletes a user. Needs `user_management.user_delete` and holding everything that user
    /// holds (see [`update_user`](Self::update_user)); a superuser only a superuser.
    pub fn delete_user(&self, id: UserId) -> Result<()> {
        self.write(|u| {
            // A user that does not exist is a 404 for everyone, a user the caller may not see
            // too; only then is the missing permission a 403.
            let user =
                u.tx.user(id)?
                    .filter(|_| self.may_view_user(id))
                    .ok_or_else(|| Error::not_found(format!("user {id}")))?;
            self.require_global(P::UserDelete)?;
            if user.is_superuser && !self.is_superuser() {
                return Err(Error::PermissionDenied(
                    "only a superuser may delete a superuser".into(),
                ));
            }
            self.require_holds_user(&mut u.tx, id)?;
            u.tx.delete_user(id)?;
            u.access.push(AccessChange::UserRemoved(id));
            u.event(
                names::USER_EDITED,
                event_object(USER, id.0, &user.username),
                None,
                user_changes(Some(&user), None),
            )
        })
    }
}

/// What changed of a user between `before` and `after` (`None`: not created yet, or deleted):
/// its username, superuser status and activity. Never its password.
fn user_changes(
    before: Option<&crate::store::records::UserRow>,
    after: Option<&crate::store::records::UserRow>,
) -> Changes {
    Changes::new()
        .set(
            "username",
            before.map(|u| &u.username),
            after.map(|u| &u.username),
        )
        .set(
            "is_superuser",
            before.map(|u| u.is_superuser),
            after.map(|u| u.is_superuser),
        )
        .set(
            "is_active",
            before.map(|u| u.is_active),
            after.map(|u| u.is_active),
        )
}
