//! API keys and the authenticated principal.
//!
//! Keys are `test_` (sandbox) or `live_` followed by 32 base62 characters (≈190 bits from the
//! OS CSPRNG). Only the SHA-256 of a key is stored: a leaked database does not leak usable keys,
//! and since keys are long random strings a fast hash is enough (no salt or KDF needed, unlike
//! passwords). Lookup is by hash; the found hash is then compared to the computed one in
//! constant time so that no code path branches on secret-derived bytes beyond the index lookup.
//!
//! Secrets never reach logs: [`ApiKey`]'s `Debug` prints only the mode, and the only way to the
//! text is the explicit [`ApiKey::expose_secret`]. Nothing is cached, so a revoked key is refused
//! on the very next request, on every process sharing the database.

use std::fmt;

use chrono::{DateTime, Utc};
use rand::Rng;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::clock::Clock;
use crate::model::ids::PlatformId;
use crate::store::{Db, StoreError, api_keys, platforms};

const KEY_BODY_LEN: usize = 32;
const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Sandbox or production key. Both see the same platform data; only simulations are refused to
/// `live` keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyMode {
    Test,
    Live,
}

impl KeyMode {
    /// The stored and prefix spelling: `test` or `live`.
    pub fn as_str(self) -> &'static str {
        match self {
            KeyMode::Test => "test",
            KeyMode::Live => "live",
        }
    }

    pub fn parse(text: &str) -> Option<KeyMode> {
        match text {
            "test" => Some(KeyMode::Test),
            "live" => Some(KeyMode::Live),
            _ => None,
        }
    }
}

/// A well-formed API key (the secret itself).
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey {
    text: String,
    mode: KeyMode,
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ApiKey({}_<redacted>)", self.mode.as_str())
    }
}

impl ApiKey {
    /// A new random key.
    pub fn generate(mode: KeyMode) -> ApiKey {
        let mut rng = rand::thread_rng();
        let body: String = (0..KEY_BODY_LEN)
            .map(|_| char::from(BASE62[rng.gen_range(0..BASE62.len())]))
            .collect();
        ApiKey {
            text: format!("{}_{body}", mode.as_str()),
            mode,
        }
    }

    /// Checks the shape; `None` for anything that cannot be a key (answered like a wrong key).
    pub fn parse(text: &str) -> Option<ApiKey> {
        let (prefix, body) = text.split_once('_')?;
        let mode = KeyMode::parse(prefix)?;
        let well_formed =
            body.len() == KEY_BODY_LEN && body.bytes().all(|b| b.is_ascii_alphanumeric());
        well_formed.then(|| ApiKey {
            text: text.to_owned(),
            mode,
        })
    }

    pub fn mode(&self) -> KeyMode {
        self.mode
    }

    /// SHA-256 of the key, lower-case hex: what the database stores.
    pub fn hash(&self) -> String {
        hex::encode(Sha256::digest(self.text.as_bytes()))
    }

    /// The secret text, for showing it once to its owner.
    pub fn expose_secret(&self) -> &str {
        &self.text
    }
}

/// The HTTP Basic rule: the key is the password with an empty username (`curl -u :KEY`), or the
/// username with an empty password. Anything else carries no key.
pub fn key_from_basic<'a>(username: &'a str, password: &'a str) -> Option<&'a str> {
    match (username.is_empty(), password.is_empty()) {
        (true, false) => Some(password),
        (false, true) => Some(username),
        _ => None,
    }
}

/// Who is calling: the platform of the key, and the key's mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub platform_id: PlatformId,
    pub mode: KeyMode,
    /// The SHA-256 of the key (what the database keeps): the key's identity for its rate limit.
    pub key_hash: String,
}

impl Principal {
    /// Whether the key is a sandbox key (simulations are allowed).
    pub fn is_sandbox(&self) -> bool {
        self.mode == KeyMode::Test
    }
}

/// Failures of key management. HTTP-agnostic.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("platform not found")]
    PlatformNotFound,
    #[error("API key not found")]
    KeyNotFound,
    #[error(transparent)]
    Store(#[from] StoreError),
}

crate::store::wraps_store_error!(AuthError);

/// Resolves presented key text to a principal; `None` for malformed, unknown or revoked keys.
pub async fn authenticate(db: &Db, presented: &str) -> Result<Option<Principal>, StoreError> {
    let Some(key) = ApiKey::parse(presented) else {
        return Ok(None);
    };
    let hash = key.hash();
    authenticate_key(db, &key, hash).await
}

/// Resolves a well-formed key whose hash is `hash` to a principal; `None` for unknown or revoked
/// keys.
pub async fn authenticate_key(
    db: &Db,
    key: &ApiKey,
    hash: String,
) -> Result<Option<Principal>, StoreError> {
    // One statement is its own snapshot: no BEGIN/ROLLBACK around it (two round trips on
    // PostgreSQL, on every authenticated request). On SQLite, a GET's snapshot stays open for
    // its read (`store::request_snapshot`).
    let record = db
        .read_single_kept(|tx| {
            let hash = &hash;
            Box::pin(async move { api_keys::find_by_hash(tx, hash).await })
        })
        .await?;
    let Some(record) = record else {
        return Ok(None);
    };
    let same_hash: bool = record.key_hash.as_bytes().ct_eq(hash.as_bytes()).into();
    if !same_hash || record.revoked_at.is_some() || record.mode != key.mode().as_str() {
        return Ok(None);
    }
    Ok(Some(Principal {
        platform_id: record.platform_id,
        mode: key.mode(),
        key_hash: hash,
    }))
}

/// Stores a new key for the platform inside `tx` and answers the secret.
pub async fn insert_new_key(
    tx: &mut crate::store::Tx<'_>,
    platform_id: &PlatformId,
    mode: KeyMode,
    now: DateTime<Utc>,
) -> Result<ApiKey, StoreError> {
    let key = ApiKey::generate(mode);
    api_keys::insert(tx, platform_id, &key.hash(), mode.as_str(), now).await?;
    Ok(key)
}

/// Creates a key for an existing platform.
pub async fn create_api_key(
    db: &Db,
    clock: &dyn Clock,
    platform_id: &PlatformId,
    mode: KeyMode,
) -> Result<ApiKey, AuthError> {
    let now = clock.now();
    db.write(|tx| {
        Box::pin(async move {
            if platforms::get(tx, platform_id).await?.is_none() {
                return Err(AuthError::PlatformNotFound);
            }
            Ok(insert_new_key(tx, platform_id, mode, now).await?)
        })
    })
    .await
}

/// Revokes a key; effective for the next request (a key whose rate limit bucket is empty stays
/// refused with 429 until the bucket has room: `Services::admit`). Revoking an already revoked
/// key succeeds.
pub async fn revoke_api_key(db: &Db, clock: &dyn Clock, presented: &str) -> Result<(), AuthError> {
    let key = ApiKey::parse(presented).ok_or(AuthError::KeyNotFound)?;
    let hash = key.hash();
    let now = clock.now();
    db.write(|tx| {
        let hash = &hash;
        Box::pin(async move {
            if api_keys::find_by_hash(tx, hash).await?.is_none() {
                return Err(AuthError::KeyNotFound);
            }
            api_keys::revoke(tx, hash, now).await?;
            Ok(())
        })
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_parse_and_have_the_right_shape() {
        for mode in [KeyMode::Test, KeyMode::Live] {
            let key = ApiKey::generate(mode);
            let text = key.expose_secret();
            assert!(text.starts_with(&format!("{}_", mode.as_str())));
            assert_eq!(text.len(), 5 + KEY_BODY_LEN);
            assert_eq!(ApiKey::parse(text), Some(key.clone()));
            assert_eq!(key.hash().len(), 64);
        }
        assert_ne!(
            ApiKey::generate(KeyMode::Test),
            ApiKey::generate(KeyMode::Test)
        );
    }

    #[test]
    fn malformed_keys_are_rejected() {
        let body = "a".repeat(KEY_BODY_LEN);
        for bad in [
            String::new(),
            format!("prod_{body}"),
            format!("test_{}", &body[1..]),
            format!("test_{body}a"),
            format!("test_{}-", &body[1..]),
            format!("TEST_{body}"),
            format!("test{body}"),
        ] {
            assert!(ApiKey::parse(&bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn debug_output_never_contains_the_secret() {
        let key = ApiKey::generate(KeyMode::Live);
        let shown = format!("{key:?}");
        assert!(!shown.contains(&key.expose_secret()[5..]));
        assert_eq!(shown, "ApiKey(live_<redacted>)");
    }

    #[test]
    fn basic_credentials_carry_the_key_in_exactly_one_field() {
        assert_eq!(key_from_basic("", "k"), Some("k"));
        assert_eq!(key_from_basic("k", ""), Some("k"));
        assert_eq!(key_from_basic("u", "k"), None);
        assert_eq!(key_from_basic("", ""), None);
    }

    #[test]
    fn hash_is_sha256_hex() {
        let key = ApiKey::parse(&format!("test_{}", "0".repeat(32))).expect("well formed");
        // echo -n test_000...0 | sha256sum
        assert_eq!(
            key.hash(),
            hex::encode(Sha256::digest(key.expose_secret().as_bytes()))
        );
        assert!(
            key.hash()
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
    }
}
