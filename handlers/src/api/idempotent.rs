//! The idempotency inputs of a write, as the services take them (`crate::idempotency::write`
//! runs it): the `Idempotency-Key`, and the fingerprint of the request (method, path with ids,
//! body as received). A replay answers the committed value again; handlers add
//! `Idempotent-Replayed: true`.

use serde::Serialize;

use crate::idempotency::WriteRequest;

/// The `Idempotency-Key` and fingerprint of a `POST` to `path` with `body`, for a service.
pub fn write_request<'a>(key: Option<&'a str>, path: &'a str, body: &'a [u8]) -> WriteRequest<'a> {
    WriteRequest {
        key,
        method: "POST",
        path,
        body,
    }
}

/// The `Idempotent-Replayed` header value of a service's answer.
pub fn replayed_header(replayed: bool) -> Option<String> {
    replayed.then(|| "true".to_owned())
}

/// The fingerprint body of a typed request: its canonical JSON.
pub fn body_bytes<B: Serialize>(body: &B) -> Vec<u8> {
    serde_json::to_vec(body).unwrap_or_default()
}
