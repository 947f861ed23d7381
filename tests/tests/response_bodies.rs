//! The generated responses write JSON straight from their typed values (`bank_api::Json`), not
//! through poem-openapi's `Json`, which builds a `serde_json::Value` first. The bytes on the wire
//! and the content type must be exactly what poem-openapi's path writes.

use std::collections::BTreeMap;

use bank_api::models::{BankAccountList, Error, RequirementValue};
use poem::IntoResponse;
use poem::http::header::CONTENT_TYPE;
use poem_openapi::types::{ToJSON, Type};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

/// Status, content type and body of a response.
async fn written(response: poem::Response) -> (u16, String, Vec<u8>) {
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let body = response.into_body().into_vec().await.expect("body");
    (status, content_type, body)
}

/// Writes `value` both ways and compares; answers the bytes for further checks.
async fn same_bytes<T>(value: T) -> Vec<u8>
where
    T: Type + ToJSON + Serialize + Clone,
{
    let ours = written(bank_api::Json(value.clone()).into_response()).await;
    let theirs = written(poem_openapi::payload::Json(value).into_response()).await;
    assert_eq!(ours.0, 200);
    assert_eq!(
        (ours.0, &ours.1, String::from_utf8_lossy(&ours.2)),
        (theirs.0, &theirs.1, String::from_utf8_lossy(&theirs.2))
    );
    ours.2
}

fn typed<T: DeserializeOwned>(value: serde_json::Value) -> T {
    serde_json::from_value(value).expect("a valid value of the model")
}

fn account(id: &str, display_name: Option<&str>, owners: &[&str]) -> serde_json::Value {
    json!({
        "id": id,
        "description": "Operating \"main\" \\ account — ünïcode \u{1F3E6}\n",
        "display_name": display_name,
        "type": "CHECKING",
        "status": "open",
        "currency_code": "USD",
        "balances": {
            "available_amount": i64::MAX,
            "pending_amount": 0,
            "holding_amount": -1,
            "locked_amount": 42
        },
        "is_overdraftable": false,
        "overdraft_reserve_account_id": null,
        "owners": owners,
        "created_at": "2026-11-24T05:10:00.123456Z",
        "updated_at": "2026-11-24T05:10:00Z"
    })
}

#[tokio::test]
async fn a_page_of_accounts_is_written_as_poem_openapi_writes_it() {
    let page: BankAccountList = typed(json!({
        "bank_accounts": [
            account("bacc_2Ks1MnvPLKTGvSG9QWJrCQPYqIM", Some("Acme"), &["enti_2Ks1MnvPLKTGvSG9QWJrCQPYqIM"]),
            account("bacc_2Ks1MnvPLKTGvSG9QWJrCQPYqIN", None, &[]),
        ],
        "has_more": true
    }));
    let bytes = same_bytes(page.clone()).await;
    // And it reads back as the same page (nothing dropped by either path).
    let back: BankAccountList = serde_json::from_slice(&bytes).expect("JSON");
    assert_eq!(back, page);
    let empty: BankAccountList = typed(json!({ "bank_accounts": [], "has_more": false }));
    assert_eq!(
        same_bytes(empty).await,
        br#"{"bank_accounts":[],"has_more":false}"#
    );
}

#[tokio::test]
async fn errors_with_and_without_details_are_written_as_poem_openapi_writes_them() {
    let with_details: Error = typed(json!({
        "type": "request_validation_error",
        "code": "invalid_request",
        "message": "2 fields are invalid",
        "documentation_url": "http://127.0.0.1/docs#errors",
        "details": { "limit": "must be at most 100", "address.country_code": "must be 2 letters" }
    }));
    same_bytes(with_details).await;
    let without: Error = typed(json!({
        "type": "server_error",
        "code": "internal_error",
        "message": "request 7f3c",
        "documentation_url": "http://127.0.0.1/docs#errors",
        "details": null
    }));
    let bytes = same_bytes(without).await;
    assert!(String::from_utf8_lossy(&bytes).contains(r#""details":null"#));
}

#[tokio::test]
async fn one_of_values_in_a_map_are_written_as_poem_openapi_writes_them() {
    let values: BTreeMap<String, RequirementValue> = BTreeMap::from([
        ("name".to_owned(), RequirementValue::String("Ada".into())),
        ("adult".to_owned(), RequirementValue::Boolean(true)),
        ("employees".to_owned(), RequirementValue::Integer(i64::MIN)),
    ]);
    same_bytes(values).await;
}
