//! Tokens signed with the data directory's secret key (`system/SECRET_KEY`), so that a face can
//! bind a value to this installation (the HTTP server's credential cache keys, say) without
//! ever holding the key: HMAC-SHA256 over the fields, each separated from the next by a NUL
//! byte. The key itself stays inside the crate.
//!
//! Layer 6 (beside `session`): imports only the kernel's `Docmeta` handle (for its key).

use crate::kernel::Docmeta;

/// Length in bytes of a token ([`Docmeta::sign_token`]).
pub const TOKEN_LEN: usize = 32;

fn message(fields: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(fields.iter().map(|f| f.len() + 1).sum());
    for (i, field) in fields.iter().enumerate() {
        if i > 0 {
            out.push(0);
        }
        out.extend_from_slice(field);
    }
    out
}

impl Docmeta {
    /// HMAC-SHA256, with this installation's secret key, of `fields` joined by NUL bytes
    /// (`sign_token(&[b"ann", b"pw"])` signs `ann\0pw`). Equal fields give equal tokens for as
    /// long as the data directory keeps its key.
    pub fn sign_token(&self, fields: &[&[u8]]) -> [u8; TOKEN_LEN] {
        let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, self.secret_key());
        let tag = ring::hmac::sign(&key, &message(fields));
        let mut out = [0; TOKEN_LEN];
        out.copy_from_slice(tag.as_ref());
        out
    }

    /// Whether `token` is [`sign_token`](Self::sign_token) of `fields` (compared in constant
    /// time).
    pub fn verify_token(&self, fields: &[&[u8]], token: &[u8]) -> bool {
        let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, self.secret_key());
        ring::hmac::verify(&key, &message(fields), token).is_ok()
    }
}
