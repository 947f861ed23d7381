//! The response validator itself: it accepts what the document allows and names what it does
//! not (so the black-box suite's silence means something).

use contract_tests::contract::Contract;

fn contract() -> Contract {
    Contract::load(include_str!("../../spec/openapi.yaml"))
}

const ERROR: &str = r#"{"type":"request_validation_error","code":"invalid_limit","message":"m","documentation_url":"http://x/docs","details":{"limit":"bad"}}"#;

#[test]
fn a_conforming_error_body_passes() {
    let c = contract();
    let v = c.check(
        "GET",
        "/bank-accounts",
        400,
        Some("application/json; charset=utf-8"),
        ERROR.as_bytes(),
    );
    assert!(v.is_empty(), "{v:?}");
}

#[test]
fn an_undeclared_status_a_wrong_media_type_and_a_bad_body_are_named() {
    let c = contract();
    let v = c.check(
        "GET",
        "/bank-accounts/bacc_x",
        418,
        Some("application/json"),
        b"{}",
    );
    assert!(v[0].message.contains("not declared"), "{v:?}");
    assert_eq!(v[0].operation, "get_bank_account");
    let v = c.check(
        "GET",
        "/bank-accounts",
        400,
        Some("text/plain"),
        ERROR.as_bytes(),
    );
    assert!(v[0].message.contains("content type"), "{v:?}");
    let bad = r#"{"type":"nonsense","code":"x","message":"m","documentation_url":"http://x/docs","details":null}"#;
    let v = c.check(
        "GET",
        "/bank-accounts",
        400,
        Some("application/json"),
        bad.as_bytes(),
    );
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0].pointer, "/type");
}

#[test]
fn nullable_fields_accept_null_and_routes_prefer_literal_segments() {
    let c = contract();
    let v = c.check(
        "GET",
        "/bank-accounts",
        400,
        Some("application/json"),
        ERROR.replace(r#"{"limit":"bad"}"#, "null").as_bytes(),
    );
    assert!(v.is_empty(), "{v:?}");
    assert_eq!(
        c.operation("POST", "/entities/person"),
        Some("create_person_entity")
    );
    assert_eq!(c.operation("GET", "/entities/enti_1"), Some("get_entity"));
    assert_eq!(c.operation_ids().len(), 55);
}

#[test]
fn a_delete_without_body_must_send_no_body() {
    let c = contract();
    assert!(
        c.check("DELETE", "/bank-accounts/bacc_1", 200, None, b"")
            .is_empty()
    );
    assert!(
        !c.check(
            "DELETE",
            "/bank-accounts/bacc_1",
            200,
            Some("application/json"),
            b"{}"
        )
        .is_empty()
    );
}
