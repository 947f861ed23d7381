//! Webhook signatures, as Standard Webhooks (<https://www.standardwebhooks.com/>) defines its
//! symmetric scheme: `v1,` + base64(HMAC-SHA256(secret, "{id}.{timestamp}.{body}")).
//!
//! Why this scheme: receivers can verify with the published reference libraries instead of code
//! written for bankd, and the secret text (`whsec_` + base64) is the one those libraries read.
//! The signed content binds the message id and the timestamp as well as the body, so a captured
//! delivery cannot be replayed under another id or, past the receiver's tolerance, later.
//!
//! Choices:
//! - A secret is any non-empty byte string, because the reference libraries accept any length
//!   and a platform's receiver may already hold one; the secrets bankd makes are 32 bytes from
//!   the operating system, the size of the HMAC-SHA256 output.
//! - The `whsec_` prefix is optional and the base64 padding too when parsing, as in the
//!   reference libraries, so any secret they accept is accepted here.
//! - A signature header may carry several signatures separated by spaces: while a platform
//!   rotates its secret, the old and the new secret both sign, and its receiver keeps working
//!   with either.
//! - Verification compares in constant time and ignores versions other than `v1`, so that a
//!   later scheme (`v1a`, asymmetric) can be added beside it without breaking receivers.
//! - Freshness of the timestamp is not checked here: that is the receiver's rule, against its
//!   own clock.
//!
//! Message ids must contain no `.` (bankd's ids are `msg_` + letters and digits): the signed
//! content joins the parts with dots, and only an id without one keeps that join unambiguous.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use hmac::{Hmac, Mac as _};
use rand::RngCore as _;
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;

/// The prefix that marks webhook secret text.
const SECRET_PREFIX: &str = "whsec_";

/// The version tag of the symmetric scheme.
const VERSION: &str = "v1";

/// The number of random bytes in a secret that bankd makes.
const GENERATED_LEN: usize = 32;

/// SHA-256's block size: the HMAC key block (RFC 2104).
const BLOCK: usize = 64;

/// Standard base64 that reads a secret with or without its padding, as the reference libraries
/// do (Python appends `==`; others decode unpadded text), and still refuses other alphabets.
const LENIENT: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Why webhook secret text was refused. The text of each is safe to show to the client: none
/// repeats the secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    /// Nothing after the optional prefix, or base64 of no bytes.
    #[error("the webhook secret is empty")]
    Empty,
    /// The text after the optional `whsec_` prefix is not standard base64.
    #[error("the webhook secret is not standard base64 after its optional whsec_ prefix")]
    NotBase64,
}

/// The key of a platform's webhook endpoint. Its `Debug` prints no key bytes, so that a secret
/// in a struct that is logged does not reach the log.
#[derive(Clone)]
pub struct WebhookSecret {
    key: Vec<u8>,
}

impl std::fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WebhookSecret(..)")
    }
}

impl WebhookSecret {
    /// A new secret of 32 bytes from the operating system's generator: the bytes are the whole
    /// of a receiver's protection against forged deliveries, so they come from no seeded PRNG.
    pub fn generate() -> Self {
        let mut key = vec![0u8; GENERATED_LEN];
        rand::rngs::OsRng.fill_bytes(&mut key);
        WebhookSecret { key }
    }

    /// Reads secret text: `whsec_` + standard base64, the prefix and the padding optional.
    pub fn parse(s: &str) -> Result<Self, SecretError> {
        let encoded = s.strip_prefix(SECRET_PREFIX).unwrap_or(s);
        let key = LENIENT
            .decode(encoded)
            .map_err(|_| SecretError::NotBase64)?;
        if key.is_empty() {
            return Err(SecretError::Empty);
        }
        Ok(WebhookSecret { key })
    }

    /// The secret as text: `whsec_` + padded standard base64, what the API shows once and the
    /// store keeps, and what [`WebhookSecret::parse`] reads back.
    pub fn expose(&self) -> String {
        format!("{SECRET_PREFIX}{}", STANDARD.encode(&self.key))
    }

    /// HMAC-SHA256 keyed with this secret. The key block is made here by RFC 2104's rule (a key
    /// longer than the block is hashed, any key is padded with zeros to the block) so that keying
    /// cannot fail: `Mac::new_from_slice` returns a `Result` meant for fixed-size keys whose
    /// error HMAC never produces, and this module does not panic. The reference vectors in the
    /// tests cover keys shorter than, equal to and longer than the block.
    fn mac(&self) -> Hmac<Sha256> {
        let mut block = [0u8; BLOCK];
        if self.key.len() > BLOCK {
            let digest = Sha256::digest(&self.key);
            block[..digest.len()].copy_from_slice(&digest);
        } else {
            block[..self.key.len()].copy_from_slice(&self.key);
        }
        <Hmac<Sha256> as hmac::Mac>::new(&block.into())
    }
}

/// The raw HMAC of one message: over `"{msg_id}.{timestamp}."` and then the body bytes, which
/// are signed as sent (never re-serialized, so the receiver verifies the bytes it received).
fn digest(secret: &WebhookSecret, msg_id: &str, timestamp: i64, body: &[u8]) -> [u8; 32] {
    let mut mac = secret.mac();
    mac.update(format!("{msg_id}.{timestamp}.").as_bytes());
    mac.update(body);
    mac.finalize().into_bytes().into()
}

/// The signature of one message under one secret: `v1,` + standard base64 of the HMAC.
pub fn sign(secret: &WebhookSecret, msg_id: &str, timestamp: i64, body: &[u8]) -> String {
    format!(
        "{VERSION},{}",
        STANDARD.encode(digest(secret, msg_id, timestamp, body))
    )
}

/// The `webhook-signature` header value: each secret's signature, separated by one space (two
/// during a rotation, so the receiver verifies with whichever secret it holds).
pub fn signature_header(
    secrets: &[&WebhookSecret],
    msg_id: &str,
    timestamp: i64,
    body: &[u8],
) -> String {
    secrets
        .iter()
        .map(|secret| sign(secret, msg_id, timestamp, body))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether any `v1` signature in `header` is this secret's over this message. Entries of other
/// versions and entries that are not base64 are skipped, not errors: the header may carry
/// signatures of schemes this code does not know. Each comparison is constant-time, so the time
/// taken tells a forger nothing about how much of a guess was right.
pub fn verify(
    secret: &WebhookSecret,
    msg_id: &str,
    timestamp: i64,
    body: &[u8],
    header: &str,
) -> bool {
    let expected = digest(secret, msg_id, timestamp, body);
    header
        .split(' ')
        .filter_map(|entry| entry.split_once(','))
        .filter(|(version, _)| *version == VERSION)
        .filter_map(|(_, signature)| STANDARD.decode(signature).ok())
        .fold(false, |found, candidate| {
            // Every entry is compared (no early return), as the header's shape is not secret
            // but which entry matched need not show in the timing either.
            found | bool::from(candidate.as_slice().ct_eq(&expected))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    // Reference values computed with the official Python package `standardwebhooks` 1.1.0
    // (`Webhook(secret).sign(msg_id, datetime.fromtimestamp(ts, tz=timezone.utc), body)`).
    const REFERENCE_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const REFERENCE_ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const REFERENCE_TIMESTAMP: i64 = 1_614_265_330;
    const REFERENCE_BODY: &[u8] = br#"{"test": 2432232314}"#;
    const REFERENCE_SIGNATURE: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

    fn reference_secret() -> WebhookSecret {
        match WebhookSecret::parse(REFERENCE_SECRET) {
            Ok(secret) => secret,
            Err(e) => panic!("the reference secret does not parse: {e}"),
        }
    }

    fn secret_of(key: Vec<u8>) -> WebhookSecret {
        WebhookSecret { key }
    }

    #[test]
    fn the_standard_webhooks_reference_vector_signs_as_the_python_library_does() {
        let signature = sign(
            &reference_secret(),
            REFERENCE_ID,
            REFERENCE_TIMESTAMP,
            REFERENCE_BODY,
        );
        assert_eq!(signature, REFERENCE_SIGNATURE);
    }

    #[test]
    fn the_reference_signature_verifies() {
        assert!(verify(
            &reference_secret(),
            REFERENCE_ID,
            REFERENCE_TIMESTAMP,
            REFERENCE_BODY,
            REFERENCE_SIGNATURE,
        ));
    }

    #[test]
    fn keys_shorter_than_equal_to_and_longer_than_the_hmac_block_sign_as_the_python_library_does() {
        // Same library and call as the reference vector: msg_2, 1700000000, body "hello".
        let cases: [(Vec<u8>, &str); 4] = [
            (vec![7], "v1,1NqHxrOLzK13JkeaaQspM3Q7YOuCJYeHQ4fjPWNogIE="),
            (
                (0..32).collect(),
                "v1,nC2u59QUICY1hVVphSENxNLGjEL7/9PT5cv1HtWEHLY=",
            ),
            (
                (0..64).collect(),
                "v1,6CVpEceReji7WwCI0aokTjm2xI/OAK7T8qNuh01VUxs=",
            ),
            (
                (0..100).collect(),
                "v1,nheIpekJREMVBhl4tsp+hXhmk6PS0G4g9x6FlJwspxg=",
            ),
        ];
        for (key, expected) in cases {
            let len = key.len();
            assert_eq!(
                sign(&secret_of(key), "msg_2", 1_700_000_000, b"hello"),
                expected,
                "key of {len} bytes"
            );
        }
    }

    #[test]
    fn a_secret_without_its_prefix_or_padding_is_the_same_secret() {
        let bare = "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        assert_eq!(
            WebhookSecret::parse(bare).map(|s| s.expose()),
            Ok(REFERENCE_SECRET.to_owned())
        );
        let unpadded = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8";
        assert_eq!(
            WebhookSecret::parse(unpadded).map(|s| s.expose()),
            Ok("whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=".to_owned())
        );
    }

    #[test]
    fn a_generated_secret_is_32_random_bytes_that_round_trip_through_its_text() {
        let a = WebhookSecret::generate();
        let b = WebhookSecret::generate();
        assert_eq!(a.key.len(), 32);
        assert_ne!(a.key, b.key);
        let text = a.expose();
        assert!(text.starts_with("whsec_"), "{text}");
        assert_eq!(text.len(), "whsec_".len() + 44);
        let again = WebhookSecret::parse(&text).map(|s| s.key);
        assert_eq!(again, Ok(a.key.clone()));
    }

    #[test]
    fn text_that_is_not_standard_base64_is_refused() {
        for bad in [
            "whsec_not base64!",
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw==x",
            // URL-safe alphabet: the standard one is the contract.
            "whsec_-_-_",
            "whsec_A",
        ] {
            assert_eq!(
                WebhookSecret::parse(bad).map(|s| s.expose()),
                Err(SecretError::NotBase64),
                "{bad}"
            );
        }
    }

    #[test]
    fn an_empty_secret_is_refused() {
        for empty in ["", "whsec_"] {
            assert_eq!(
                WebhookSecret::parse(empty).map(|s| s.expose()),
                Err(SecretError::Empty),
                "{empty:?}"
            );
        }
    }

    #[test]
    fn a_secret_of_any_non_empty_length_is_accepted() {
        // One byte, and 100 bytes: the reference libraries accept both.
        assert_eq!(
            WebhookSecret::parse("whsec_Bw==").map(|s| s.key),
            Ok(vec![7])
        );
        let long = format!("whsec_{}", STANDARD.encode([1u8; 100]));
        assert_eq!(WebhookSecret::parse(&long).map(|s| s.key.len()), Ok(100));
    }

    #[test]
    fn debug_does_not_print_the_key() {
        let secret = reference_secret();
        let printed = format!("{secret:?} {:?}", Some(&secret));
        assert_eq!(printed, "WebhookSecret(..) Some(WebhookSecret(..))");
        assert!(!printed.contains("MfKQ"), "{printed}");
    }

    #[test]
    fn a_rotation_header_carries_both_signatures_and_verifies_with_either_secret() {
        let old = reference_secret();
        let new = WebhookSecret::generate();
        let header = signature_header(
            &[&new, &old],
            REFERENCE_ID,
            REFERENCE_TIMESTAMP,
            REFERENCE_BODY,
        );
        let entries: Vec<&str> = header.split(' ').collect();
        assert_eq!(entries.len(), 2, "{header}");
        assert_eq!(entries[1], REFERENCE_SIGNATURE);
        assert_eq!(
            entries[0],
            sign(&new, REFERENCE_ID, REFERENCE_TIMESTAMP, REFERENCE_BODY)
        );
        for secret in [&old, &new] {
            assert!(verify(
                secret,
                REFERENCE_ID,
                REFERENCE_TIMESTAMP,
                REFERENCE_BODY,
                &header
            ));
        }
        let stranger = WebhookSecret::generate();
        assert!(!verify(
            &stranger,
            REFERENCE_ID,
            REFERENCE_TIMESTAMP,
            REFERENCE_BODY,
            &header
        ));
    }

    #[test]
    fn a_header_of_one_secret_is_its_signature_alone() {
        let header = signature_header(
            &[&reference_secret()],
            REFERENCE_ID,
            REFERENCE_TIMESTAMP,
            REFERENCE_BODY,
        );
        assert_eq!(header, REFERENCE_SIGNATURE);
    }

    #[test]
    fn a_signature_over_another_body_does_not_verify() {
        assert!(!verify(
            &reference_secret(),
            REFERENCE_ID,
            REFERENCE_TIMESTAMP,
            br#"{"test": 2432232315}"#,
            REFERENCE_SIGNATURE,
        ));
    }

    #[test]
    fn a_signature_for_another_timestamp_does_not_verify() {
        assert!(!verify(
            &reference_secret(),
            REFERENCE_ID,
            REFERENCE_TIMESTAMP + 1,
            REFERENCE_BODY,
            REFERENCE_SIGNATURE,
        ));
    }

    #[test]
    fn a_signature_for_another_message_id_does_not_verify() {
        assert!(!verify(
            &reference_secret(),
            "msg_p5jXN8AQM9LWM0D4loKWxJeL",
            REFERENCE_TIMESTAMP,
            REFERENCE_BODY,
            REFERENCE_SIGNATURE,
        ));
    }

    #[test]
    fn other_versions_and_malformed_entries_are_skipped() {
        let secret = reference_secret();
        let base64_only = REFERENCE_SIGNATURE.trim_start_matches("v1,");
        let verifies = |header: &str| {
            verify(
                &secret,
                REFERENCE_ID,
                REFERENCE_TIMESTAMP,
                REFERENCE_BODY,
                header,
            )
        };
        // The right bytes under another version tag are not a v1 signature.
        assert!(!verifies(&format!("v2,{base64_only}")));
        assert!(!verifies(base64_only));
        assert!(!verifies(""));
        assert!(!verifies("v1,"));
        assert!(!verifies("v1,%%%"));
        // Unknown and broken entries around the right one do not hide it.
        assert!(verifies(&format!(
            "v1a,abc v1,%%% nonsense {REFERENCE_SIGNATURE}"
        )));
        // A truncated signature is not a match.
        assert!(!verifies(
            &REFERENCE_SIGNATURE[..REFERENCE_SIGNATURE.len() - 4]
        ));
    }
}
