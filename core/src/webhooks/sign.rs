//! Webhook secrets and signatures as Standard Webhooks defines them: a secret is `whsec_` and
//! the base64 of its key; a delivery is signed `v1,` and the base64 of
//! HMAC-SHA256(key, `{webhook-id}.{webhook-timestamp}.{body}`).
//!
//! Part of `webhooks` (layer 7 of `scripts/check-structure`): it may import only what
//! `webhooks` may (see `webhooks`' module documentation).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use crate::error::{Error, Result};

/// What every secret starts with.
const PREFIX: &str = "whsec_";
/// Bytes of a generated key.
const GENERATED_KEY_BYTES: usize = 32;
/// The shortest and longest key a given secret may hold (Standard Webhooks: 24 to 64).
const KEY_BYTES: std::ops::RangeInclusive<usize> = 24..=64;

/// A new secret: 32 random bytes.
pub(crate) fn generate_secret() -> Result<String> {
    let mut key = [0u8; GENERATED_KEY_BYTES];
    getrandom::fill(&mut key)
        .map_err(|e| Error::storage("generating a webhook secret", e.to_string()))?;
    Ok(format!("{PREFIX}{}", STANDARD.encode(key)))
}

/// The key of `secret`; a secret of another form is a validation error on `secret`.
pub(crate) fn secret_key(secret: &str) -> Result<Vec<u8>> {
    let invalid = || {
        Error::validation(
            "secret",
            format!(
                "Enter a secret of the form {PREFIX}<base64>, holding {} to {} bytes.",
                KEY_BYTES.start(),
                KEY_BYTES.end()
            ),
        )
    };
    let key = secret
        .strip_prefix(PREFIX)
        .and_then(|b64| STANDARD.decode(b64).ok())
        .ok_or_else(invalid)?;
    if KEY_BYTES.contains(&key.len()) {
        Ok(key)
    } else {
        Err(invalid())
    }
}

/// The `webhook-signature` header of a delivery.
pub(crate) fn signature(key: &[u8], message_id: &str, timestamp: i64, body: &[u8]) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, key);
    let mut context = ring::hmac::Context::with_key(&key);
    context.update(message_id.as_bytes());
    context.update(b".");
    context.update(timestamp.to_string().as_bytes());
    context.update(b".");
    context.update(body);
    format!("v1,{}", STANDARD.encode(context.sign().as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_secrets_are_valid_and_distinct() {
        let a = generate_secret().expect("a");
        let b = generate_secret().expect("b");
        assert_ne!(a, b);
        assert_eq!(secret_key(&a).expect("key").len(), 32);
        assert!(secret_key("whsec_short").is_err());
        assert!(secret_key("no prefix").is_err());
    }

    #[test]
    fn the_signature_is_standard_webhooks_one() {
        // The example of the Standard Webhooks specification's reference libraries.
        let key = secret_key("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").expect("key");
        let signature = signature(
            &key,
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1614265330,
            br#"{"test": 2432232314}"#,
        );
        assert_eq!(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }
}
