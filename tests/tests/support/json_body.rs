//! A JSON request body read by a generated crate's extractor, as a handler would get it: the
//! typed value, or every violation the validator named (field path → message).

use std::collections::BTreeMap;

use fixture_schemas::runtime::{ApiDocument, JsonBody, RequestError};
use poem::Request;
use poem_openapi::payload::ParsePayload;
use poem_openapi::types::{ParseFromJSON, Type};

pub async fn parse<T, D>(json: serde_json::Value) -> Result<T, BTreeMap<String, String>>
where
    T: Type + ParseFromJSON + 'static,
    D: ApiDocument,
{
    let (req, mut body) = Request::builder()
        .content_type("application/json")
        .body(json.to_string())
        .split();
    match JsonBody::<T, D>::from_request(&req, &mut body).await {
        Ok(b) => Ok(b.0),
        Err(e) => Err(e
            .downcast_ref::<RequestError>()
            .expect("a RequestError")
            .details
            .clone()),
    }
}
