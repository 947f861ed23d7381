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

/// `date-time` fields are written by the runtime's own writer (`bank_api::runtime::date_time`),
/// not through chrono's `Display`; the text must be chrono's to the byte, fraction digits
/// (none, 3, 6 or 9), years at the edges, leap seconds and years chrono writes with a sign.
mod date_times {
    use chrono::{DateTime, Utc};
    use proptest::prelude::*;
    use serde::Serialize;

    #[derive(Serialize)]
    struct Ours<'a>(
        #[serde(serialize_with = "bank_api::runtime::date_time::serialize")] &'a DateTime<Utc>,
    );

    #[derive(Serialize)]
    struct OursOptional(
        #[serde(serialize_with = "bank_api::runtime::date_time::serialize_option")]
        Option<DateTime<Utc>>,
    );

    fn same_text(value: DateTime<Utc>) {
        let chrono_text = serde_json::to_string(&value).expect("chrono");
        assert_eq!(
            serde_json::to_string(&Ours(&value)).expect("ours"),
            chrono_text
        );
        assert_eq!(
            serde_json::to_string(&OursOptional(Some(value))).expect("ours"),
            chrono_text
        );
    }

    #[test]
    fn edge_values_are_written_as_chrono_writes_them() {
        let seconds = [
            -62_167_219_200, // 0000-01-01T00:00:00
            -62_167_219_201, // -0001-12-31T23:59:59, outside the fast path
            -1,
            0,
            951_782_399, // 2000-02-28T23:59:59
            1_798_761_599,
            253_402_300_799, // 9999-12-31T23:59:59
            253_402_300_800, // +10000-01-01, outside the fast path
        ];
        let nanos = [
            0,
            1,
            10,
            999,
            1_000,
            120_000,
            1_000_000,
            123_000_000,
            123_456_000,
            123_456_789,
            999_999_999,
            1_500_000_000, // a leap second, accepted only at :59
        ];
        let mut written = 0;
        for s in seconds {
            for n in nanos {
                if let Some(value) = DateTime::from_timestamp(s, n) {
                    same_text(value);
                    written += 1;
                }
            }
        }
        // Only the leap second at a second that is not :59 is refused by chrono.
        assert!(written >= seconds.len() * (nanos.len() - 1), "{written}");
        assert_eq!(
            serde_json::to_string(&OursOptional(None)).expect("none"),
            "null"
        );
    }

    proptest! {
        #[test]
        fn any_instant_is_written_as_chrono_writes_it(
            secs in -70_000_000_000i64..260_000_000_000,
            digits in 0u32..2_000_000_000,
            scale in prop::sample::select(vec![1u32, 1_000, 1_000_000, 1_000_000_000]),
        ) {
            // Scaling makes round fractions (3 or 6 digits, or none) as likely as long ones.
            let nanos = (digits / scale).saturating_mul(scale) % 2_000_000_000;
            if let Some(value) = DateTime::from_timestamp(secs, nanos) {
                same_text(value);
            }
        }
    }
}
