//! Request validation in the generated crate happens before any handler: every offending field
//! of a body is named, for JSON bodies and for named `multipart/form-data` forms alike.

use bank_api::models::{CreateBankAccountRequest, UploadDocumentRequest};
use bank_api::runtime::{JsonBody, MultipartBody, RequestError};
use poem::Request;
use poem_openapi::payload::ParsePayload;

fn details(err: poem::Error) -> Vec<String> {
    let e = err.downcast_ref::<RequestError>().expect("a RequestError");
    e.details.keys().cloned().collect()
}

#[tokio::test]
async fn a_named_multipart_form_is_validated_field_by_field() {
    let boundary = "XyZ";
    let body = format!(
        "--{b}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n\r\nhello\r\n\
         --{b}\r\nContent-Disposition: form-data; name=\"description\"\r\n\r\n{long}\r\n\
         --{b}\r\nContent-Disposition: form-data; name=\"unknown\"\r\n\r\nx\r\n--{b}--\r\n",
        b = boundary,
        long = "d".repeat(128)
    );
    let req = Request::builder()
        .content_type(&format!("multipart/form-data; boundary={boundary}"))
        .body(body);
    let (req, mut body) = req.split();
    let err =
        MultipartBody::<UploadDocumentRequest, bank_api::Document>::from_request(&req, &mut body)
            .await
            .err()
            .expect("refused");
    let fields = details(err);
    for f in ["description", "type", "unknown"] {
        assert!(
            fields.contains(&f.to_owned()),
            "{f} not named in {fields:?}"
        );
    }
}

#[tokio::test]
async fn a_json_body_names_every_offending_field_at_once() {
    let req = Request::builder()
        .content_type("application/json")
        .body(r#"{"entity_id": 5, "description": "x", "currency_code": "usd", "balances": {}}"#);
    let (req, mut body) = req.split();
    let err =
        JsonBody::<CreateBankAccountRequest, bank_api::Document>::from_request(&req, &mut body)
            .await
            .err()
            .expect("refused");
    let fields = details(err);
    assert_eq!(
        fields,
        ["balances", "currency_code", "description", "entity_id"],
        "{fields:?}"
    );
}
