//! Standard Webhooks signing (<https://www.standardwebhooks.com/>): secrets are
//! `whsec_` + base64 of the key bytes; a signature is `v1,` + base64 of
//! HMAC-SHA256(key, "{id}.{timestamp}.{body}"); the `webhook-signature` header carries
//! one, space-separated, per live secret so a receiver holding either the old or the
//! new secret verifies during a rotation.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use rand::RngCore;
use sha2::{Digest, Sha256};

/// The prefix of every secret.
pub const SECRET_PREFIX: &str = "whsec_";
/// Fewest key bytes a secret may carry (the contract's 24; generated ones have 32).
pub const MIN_KEY_BYTES: usize = 24;
/// Most key bytes accepted (HMAC would hash a longer key anyway).
pub const MAX_KEY_BYTES: usize = 64;

/// Why a secret was refused (the text names no part of the secret).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    #[error("a secret is `whsec_` followed by base64")]
    Format,
    #[error("a secret's key must be {MIN_KEY_BYTES}..{MAX_KEY_BYTES} bytes")]
    Length,
}

/// The key bytes of `secret` (`whsec_` + standard base64, padding optional).
pub fn key_of(secret: &str) -> Result<Vec<u8>, SecretError> {
    let encoded = secret
        .strip_prefix(SECRET_PREFIX)
        .ok_or(SecretError::Format)?;
    let key = STANDARD
        .decode(encoded)
        .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(encoded))
        .map_err(|_| SecretError::Format)?;
    if !(MIN_KEY_BYTES..=MAX_KEY_BYTES).contains(&key.len()) {
        return Err(SecretError::Length);
    }
    Ok(key)
}

/// A new secret: `whsec_` + base64 of 32 random bytes.
pub fn generate_secret() -> String {
    let mut key = [0u8; 32];
    rand::rng().fill_bytes(&mut key);
    format!("{SECRET_PREFIX}{}", STANDARD.encode(key))
}

/// HMAC-SHA256 (RFC 2104) of `message` under `key`.
pub fn hmac_sha256(key: &[u8], message: &[&[u8]]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut block = [0u8; BLOCK];
    if key.len() > BLOCK {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let mut inner = Sha256::new();
    inner.update(block.map(|b| b ^ 0x36));
    for part in message {
        inner.update(part);
    }
    let mut outer = Sha256::new();
    outer.update(block.map(|b| b ^ 0x5c));
    outer.update(inner.finalize());
    outer.finalize().into()
}

/// One `v1,` signature of `body` for message `id` sent at `timestamp` (Unix seconds).
pub fn sign(key: &[u8], id: &str, timestamp: i64, body: &[u8]) -> String {
    let timestamp = timestamp.to_string();
    let mac = hmac_sha256(
        key,
        &[id.as_bytes(), b".", timestamp.as_bytes(), b".", body],
    );
    format!("v1,{}", STANDARD.encode(mac))
}

/// The `webhook-signature` header: one signature per key, space-separated.
pub fn signature_header(keys: &[Vec<u8>], id: &str, timestamp: i64, body: &[u8]) -> String {
    keys.iter()
        .map(|key| sign(key, id, timestamp, body))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether `header` carries a valid signature of the message under `key` (what a
/// receiver does; the tests' receiver uses it).
pub fn verify(key: &[u8], header: &str, id: &str, timestamp: i64, body: &[u8]) -> bool {
    let wanted = sign(key, id, timestamp, body);
    header.split(' ').any(|candidate| {
        candidate.len() == wanted.len()
            && bool::from(subtle::ConstantTimeEq::ct_eq(
                candidate.as_bytes(),
                wanted.as_bytes(),
            ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Standard Webhooks reference vector.
    #[test]
    fn signs_the_standard_webhooks_test_vector() {
        let key = key_of("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let body = br#"{"test": 2432232314}"#;
        let signature = sign(&key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body);
        assert_eq!(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
        assert!(verify(
            &key,
            &format!("v1,bm90IGl0 {signature}"),
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1614265330,
            body
        ));
        assert!(!verify(&key, &signature, "msg_other", 1614265330, body));
    }

    /// RFC 4231 test case 6: a key longer than the block is hashed first.
    #[test]
    fn hmac_matches_rfc_4231_for_long_keys() {
        let key = [0xaa_u8; 131];
        let mac = hmac_sha256(
            &key,
            &[b"Test Using Larger Than Block-Size Key - Hash Key First"],
        );
        let hex: String = mac.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    fn secrets_are_checked_and_generated_valid() {
        assert_eq!(
            key_of("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
            Err(SecretError::Format)
        );
        assert_eq!(key_of("whsec_!!!"), Err(SecretError::Format));
        assert_eq!(key_of("whsec_c2hvcnQ="), Err(SecretError::Length));
        let generated = generate_secret();
        assert_eq!(key_of(&generated).unwrap().len(), 32);
        assert_ne!(generated, generate_secret());
    }

    #[test]
    fn the_header_carries_one_signature_per_key() {
        let keys = vec![vec![1u8; 32], vec![2u8; 32]];
        let header = signature_header(&keys, "id", 5, b"{}");
        assert_eq!(header.split(' ').count(), 2);
        for key in &keys {
            assert!(verify(key, &header, "id", 5, b"{}"));
        }
        assert!(!verify(&[3u8; 32], &header, "id", 5, b"{}"));
    }
}
