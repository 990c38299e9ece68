//! Devices: a user's sign-in for an application on a device, by a token exchanged once for the
//! password (an offline replica keeps the token, never the password).
//!
//! Who may: a user signs in their own devices (no permission: it is their password that is
//! exchanged), lists them and revokes them. Another user's devices are listed with
//! `user_management.user_view` and revoked with `user_management.user_edit` by someone who holds
//! everything that user holds (a superuser's only by a superuser), as changing the user would
//! need. Every token is checked against the store when it is presented, so a revoke or a
//! deactivation takes effect at once in every process.
//!
//! Part of `session` (layer 6 of `scripts/check-structure`): it may import only what `session`
//! may (see `session`'s module documentation).

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::{Session, event_object};
use crate::access::Permission as P;
use crate::error::{Error, NON_FIELD_ERRORS, Result};
use crate::events::names;
use crate::kernel::Docmeta;
use crate::model::*;

/// How long a device's token is accepted unless asked otherwise: 90 days.
pub const DEFAULT_DEVICE_LIFETIME: Duration = Duration::from_secs(90 * 24 * 3600);

/// The longest a device's token may be accepted: a year; then the device signs in again.
pub const MAX_DEVICE_LIFETIME: Duration = Duration::from_secs(365 * 24 * 3600);

/// The most devices one user may have signed in at once (expired ones do not count).
pub const MAX_DEVICES_PER_USER: usize = 50;

/// The longest name of a device.
const MAX_DEVICE_NAME_LEN: usize = 100;

/// What every device token starts with (so that a leaked one is recognisable).
const TOKEN_PREFIX: &str = "dmd_";

/// A device's last use is written again only after this long: a busy device does not write on
/// every request.
const TOUCH_EVERY: chrono::TimeDelta = chrono::TimeDelta::minutes(1);

const USER: &str = "user_management.user";

/// The SHA-256 of a token, in hex: what the store keeps.
fn token_hash(token: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

fn generate_token() -> Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|e| Error::storage("generating a device token", e.to_string()))?;
    Ok(format!("{TOKEN_PREFIX}{}", URL_SAFE_NO_PAD.encode(bytes)))
}

impl Session {
    /// The devices signed in as `user` (`None`: this session's user), by id, expired ones
    /// included until their user signs another device in. One's own need no permission;
    /// another user's need `user_management.user_view` (else that user is `NotFound`).
    pub fn devices(&self, user: Option<UserId>, page: PageRequest) -> Result<Page<Device>> {
        let user = match (user, self.actor) {
            (Some(user), _) => user,
            (None, Actor::User(own)) => own,
            (None, Actor::System) => {
                return Err(Error::InvalidInput(
                    "docmeta itself has no devices: name the user".into(),
                ));
            }
        };
        if !self.may_view_user(user) {
            return Err(Error::not_found(format!("user {user}")));
        }
        self.read(|tx| {
            if tx.user(user)?.is_none() {
                return Err(Error::not_found(format!("user {user}")));
            }
            let count = tx.count_devices(user)?;
            let range = page.range(count);
            let items = tx.devices(user, range.start, range.len())?;
            Ok(Page { count, items })
        })
    }

    /// Revokes a device: its token is refused from then on, by every process. One's own needs
    /// no permission; another user's needs `user_management.user_edit` and holding everything
    /// that user holds (a superuser's: being a superuser). A device this session may not see is
    /// `NotFound`.
    pub fn revoke_device(&self, id: DeviceId) -> Result<()> {
        let not_found = || Error::not_found(format!("device {id}"));
        self.write(|u| {
            let device = u.tx.device(id)?.ok_or_else(not_found)?;
            let own = self.actor == Actor::User(device.user);
            if !own {
                if !self.may_view_user(device.user) {
                    return Err(not_found());
                }
                self.require_global(P::UserEdit)?;
                let owner = u.tx.user(device.user)?.ok_or_else(not_found)?;
                if owner.is_superuser && !self.is_superuser() {
                    return Err(Error::PermissionDenied(
                        "only a superuser may revoke a superuser's device".into(),
                    ));
                }
                self.require_holds_user(&mut u.tx, device.user)?;
            }
            u.tx.delete_device(id)?;
            let username =
                u.tx.user(device.user)?
                    .map(|u| u.username)
                    .unwrap_or_default();
            u.event(
                names::DEVICE_REVOKED,
                event_object(USER, device.user.0, &username),
                None,
                Changes::new().removed("device", &device.name),
            )
        })
    }
}

impl Docmeta {
    /// Signs a device in: exchanges `username` and `password` for a token accepted in their
    /// place for `lifetime` (`None`: [`DEFAULT_DEVICE_LIFETIME`]; at most
    /// [`MAX_DEVICE_LIFETIME`]), until it expires or is revoked, so that the device never keeps
    /// the password. `None` when the credentials are not an active user's (as
    /// [`authenticate`](Self::authenticate), in the same time whether or not the user exists).
    /// Only a password signs a device in: a device's token cannot make another. The answer is
    /// the only one that holds the token; a user may have [`MAX_DEVICES_PER_USER`] devices.
    ///
    /// ```
    /// use docmeta_core::{Docmeta, PageRequest};
    ///
    /// let db = Docmeta::in_memory()?;
    /// let ann = db.system().create_user("ann", "a long password", false)?;
    /// let phone = db
    ///     .sign_in_device("ann", "a long password", "Ann's phone", None)?
    ///     .expect("the right password");
    /// // The device keeps the token, never the password.
    /// let user = db.authenticate_device(&phone.token)?.expect("the token signs in");
    /// assert_eq!(user.id, ann.id);
    /// db.session(ann.id).revoke_device(phone.device.id)?;
    /// assert!(db.authenticate_device(&phone.token)?.is_none());
    /// assert_eq!(db.session(ann.id).devices(None, PageRequest::ALL)?.count, 0);
    /// # Ok::<(), docmeta_core::Error>(())
    /// ```
    pub fn sign_in_device(
        &self,
        username: &str,
        password: &str,
        name: &str,
        lifetime: Option<Duration>,
    ) -> Result<Option<NewDevice>> {
        let name = crate::model::check_text("name", name, MAX_DEVICE_NAME_LEN)?;
        if name.trim().is_empty() {
            return Err(Error::validation("name", "This field may not be blank."));
        }
        let lifetime = lifetime.unwrap_or(DEFAULT_DEVICE_LIFETIME);
        if lifetime.is_zero() || lifetime > MAX_DEVICE_LIFETIME {
            return Err(Error::validation(
                "lifetime",
                format!(
                    "Ensure this value is between 1 second and {} days.",
                    MAX_DEVICE_LIFETIME.as_secs() / 86_400
                ),
            ));
        }
        let Some(user) = self.authenticate(username, password)? else {
            return Ok(None);
        };
        let token = generate_token()?;
        let hash = token_hash(&token);
        let device = self.session(user.id).write(|u| {
            // As the store keeps it (to the microsecond): the answer equals what is read back.
            let created = chrono::SubsecRound::trunc_subsecs(u.now(), 6);
            u.tx.delete_expired_devices(user.id, created)?;
            if u.tx.count_devices(user.id)? >= MAX_DEVICES_PER_USER {
                return Err(Error::validation(
                    NON_FIELD_ERRORS,
                    format!(
                        "A user may have at most {MAX_DEVICES_PER_USER} devices signed in; \
                         revoke one first."
                    ),
                ));
            }
            let expires = created
                + chrono::TimeDelta::from_std(lifetime).unwrap_or(chrono::TimeDelta::days(90));
            let id = u.tx.insert_device(user.id, name, &hash, created, expires)?;
            u.event(
                names::DEVICE_CREATED,
                event_object(USER, user.id.0, &user.username),
                None,
                Changes::new().created("device", name),
            )?;
            Ok(Device {
                id,
                user: user.id,
                name: name.to_owned(),
                created,
                expires,
                last_used: None,
                last_sync: None,
            })
        })?;
        Ok(Some(NewDevice { device, token }))
    }

    /// The active user a device token signs in as, `None` for a token that is unknown, revoked
    /// or expired, or whose user is deactivated or gone. Read from the store every time, so a
    /// revoke or a deactivation committed by any process is seen at once; the device's
    /// [`last_used`](Device::last_used) is written at most once a minute.
    pub fn authenticate_device(&self, token: &str) -> Result<Option<User>> {
        if !token.starts_with(TOKEN_PREFIX) || token.len() > 100 {
            return Ok(None);
        }
        let hash = token_hash(token);
        let now = crate::model::now();
        let found = self.read(|tx| {
            let Some(device) = tx.device_by_token_hash(&hash)? else {
                return Ok(None);
            };
            Ok(tx.user(device.user)?.map(|user| (device, user)))
        })?;
        let Some((device, user)) = found else {
            return Ok(None);
        };
        if device.expires <= now || !user.is_active {
            return Ok(None);
        }
        if device.last_used.is_none_or(|t| t + TOUCH_EVERY <= now) {
            self.write_system(|tx| tx.touch_device(device.id, now, now - TOUCH_EVERY))?;
        }
        Ok(Some(user.into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_recognisable_and_only_its_hash_is_kept() {
        let token = generate_token().expect("token");
        assert!(token.starts_with(TOKEN_PREFIX));
        assert_eq!(token.len(), TOKEN_PREFIX.len() + 43);
        let hash = token_hash(&token);
        assert_eq!(hash.len(), 64);
        assert!(!hash.contains(&token[TOKEN_PREFIX.len()..]));
        assert_ne!(generate_token().expect("token"), token);
    }
}
