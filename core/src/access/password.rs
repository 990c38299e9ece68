//! Password hashing with Argon2id (PHC strings); only hashes are ever stored.
//!
//! Part of `access` (layer 4 of `scripts/check-structure`): it may import only what `access`
//! may (see `access`'s module documentation).

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};

use crate::error::{Error, Result};

/// Shortest accepted password.
pub const MIN_PASSWORD_LEN: usize = 8;

/// Hashes `password` with Argon2id at the given cost.
pub fn hash_password(password: &str, memory_kib: u32, iterations: u32) -> Result<String> {
    if password.chars().count() < MIN_PASSWORD_LEN {
        return Err(Error::validation(
            "password",
            format!("Use at least {MIN_PASSWORD_LEN} characters."),
        ));
    }
    if password.len() > 4096 {
        return Err(Error::validation("password", "Use at most 4096 bytes."));
    }
    let params = Params::new(memory_kib.max(8), iterations.max(1), 1, None)
        .map_err(|e| Error::InvalidInput(format!("password hash parameters: {e}")))?;
    let mut salt = [0u8; 16];
    getrandom::fill(&mut salt).map_err(|e| Error::storage("generating a salt", e.to_string()))?;
    let salt = SaltString::encode_b64(&salt)
        .map_err(|e| Error::storage("encoding a salt", e.to_string()))?;
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| Error::storage("hashing a password", e.to_string()))
}

/// Whether `password` matches the stored PHC `hash` (with the parameters stored in it).
pub fn verify_password(password: &str, hash: &str) -> bool {
    PasswordHash::new(hash).is_ok_and(|parsed| {
        Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok()
    })
}

/// A fixed hash verified against when a username is unknown, so that unknown and known users
/// take the same time to refuse.
pub fn dummy_verify(password: &str, memory_kib: u32, iterations: u32) {
    static DUMMY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let hash = DUMMY.get_or_init(|| {
        hash_password("dummy-password", memory_kib, iterations).unwrap_or_default()
    });
    let _ = verify_password(password, hash);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let h = hash_password("correct horse", 64, 1).expect("hash");
        assert!(h.starts_with("$argon2id$"));
        assert!(verify_password("correct horse", &h));
        assert!(!verify_password("wrong horse!", &h));
        assert!(hash_password("short", 64, 1).is_err());
        assert!(!verify_password("x", "not a hash"));
    }
}
