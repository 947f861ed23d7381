//! The receiving side of callbacks and webhooks: Standard Webhooks signatures checked, then the
//! payload read into its generated type.
//!
//! A request is genuine when `webhook-signature` holds a `v1,<base64>` HMAC-SHA256, under the
//! endpoint's secret (`whsec_<base64>`), of `<webhook-id>.<webhook-timestamp>.<body>`, and its
//! timestamp is within the tolerance of now (a replayed request is refused).

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::HeaderMap;

/// Why a received webhook is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WebhookError {
    /// `webhook-id`, `webhook-timestamp` or `webhook-signature` is absent or not text.
    MissingHeader(&'static str),
    /// The timestamp is not a number of seconds.
    BadTimestamp,
    /// Further from now than the tolerance (seconds off, signed: negative is the past).
    OutsideTolerance(i64),
    /// No `v1` signature matches.
    BadSignature,
    /// The signature holds, but the body does not match the payload's type.
    BadPayload(String),
}

impl std::fmt::Display for WebhookError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WebhookError::MissingHeader(h) => write!(f, "header `{h}` is missing"),
            WebhookError::BadTimestamp => f.write_str("`webhook-timestamp` is not a number"),
            WebhookError::OutsideTolerance(s) => {
                write!(f, "the timestamp is {s} s from now, outside the tolerance")
            }
            WebhookError::BadSignature => f.write_str("no signature matches"),
            WebhookError::BadPayload(e) => write!(f, "the payload does not match: {e}"),
        }
    }
}

impl std::error::Error for WebhookError {}

/// Checks requests signed with one endpoint's secret.
#[derive(Clone)]
pub struct Verifier {
    key: Vec<u8>,
    tolerance: Duration,
}

impl Verifier {
    /// The secret as the sender shows it: `whsec_` and base64 (or the base64 alone). `None`
    /// when it is not base64.
    pub fn new(secret: &str) -> Option<Self> {
        let encoded = secret.strip_prefix("whsec_").unwrap_or(secret);
        Some(Verifier {
            key: STANDARD.decode(encoded).ok()?,
            tolerance: Duration::from_secs(300),
        })
    }

    /// How far from now a timestamp may be (5 minutes by default).
    pub fn tolerance(mut self, tolerance: Duration) -> Self {
        self.tolerance = tolerance;
        self
    }

    /// Checks the signature of a request received now.
    pub fn verify(&self, headers: &HeaderMap, body: &[u8]) -> Result<(), WebhookError> {
        self.verify_at(headers, body, chrono::Utc::now().timestamp())
    }

    /// Checks the signature, then reads the body as JSON of type `T`.
    pub fn receive<T: serde::de::DeserializeOwned>(
        &self,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<T, WebhookError> {
        self.verify(headers, body)?;
        serde_json::from_slice(body).map_err(|e| WebhookError::BadPayload(e.to_string()))
    }

    /// [`Verifier::verify`] as of `now` (seconds since the epoch).
    pub fn verify_at(
        &self,
        headers: &HeaderMap,
        body: &[u8],
        now: i64,
    ) -> Result<(), WebhookError> {
        let header = |name: &'static str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .ok_or(WebhookError::MissingHeader(name))
        };
        let id = header("webhook-id")?;
        let timestamp = header("webhook-timestamp")?;
        let signatures = header("webhook-signature")?;
        let at: i64 = timestamp
            .trim()
            .parse()
            .map_err(|_| WebhookError::BadTimestamp)?;
        let off = at - now;
        if off.unsigned_abs() > self.tolerance.as_secs() {
            return Err(WebhookError::OutsideTolerance(off));
        }
        for entry in signatures.split(' ') {
            let Some(("v1", signature)) = entry.split_once(',') else {
                continue;
            };
            let Ok(signature) = STANDARD.decode(signature) else {
                continue;
            };
            let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).expect("any key length");
            mac.update(id.as_bytes());
            mac.update(b".");
            mac.update(timestamp.trim().as_bytes());
            mac.update(b".");
            mac.update(body);
            if mac.verify_slice(&signature).is_ok() {
                return Ok(());
            }
        }
        Err(WebhookError::BadSignature)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of the Standard Webhooks specification's reference implementations.
    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const TIMESTAMP: i64 = 1614265330;
    const BODY: &[u8] = br#"{"test": 2432232314}"#;
    const SIGNATURE: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

    fn headers(signature: &str, timestamp: i64) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("webhook-id", ID.parse().unwrap());
        h.insert("webhook-timestamp", timestamp.to_string().parse().unwrap());
        h.insert("webhook-signature", signature.parse().unwrap());
        h
    }

    #[test]
    fn a_genuine_request_passes_and_anything_changed_fails() {
        let v = Verifier::new(SECRET).unwrap();
        let genuine = headers(&format!("v1,bm90IGl0 {SIGNATURE}"), TIMESTAMP);
        assert_eq!(v.verify_at(&genuine, BODY, TIMESTAMP + 10), Ok(()));
        assert_eq!(
            v.verify_at(&genuine, br#"{"test": 2432232315}"#, TIMESTAMP),
            Err(WebhookError::BadSignature)
        );
        assert_eq!(
            v.verify_at(&headers(SIGNATURE, TIMESTAMP + 1), BODY, TIMESTAMP),
            Err(WebhookError::BadSignature)
        );
        assert_eq!(
            v.verify_at(&genuine, BODY, TIMESTAMP + 301),
            Err(WebhookError::OutsideTolerance(-301))
        );
        let mut missing = genuine.clone();
        missing.remove("webhook-id");
        assert_eq!(
            v.verify_at(&missing, BODY, TIMESTAMP),
            Err(WebhookError::MissingHeader("webhook-id"))
        );
        assert!(Verifier::new("whsec_not base64!").is_none());
    }
}
