//! An OpenAPI 3.1 document through the generated crate of `codegen/tests/fixtures/openapi31.yaml`:
//! served as written, its JSON Schema 2020-12 keywords enforced on request bodies with every
//! violation named (type unions with `null`, `const`, numeric `exclusiveMinimum`, `$ref` beside
//! a description, `$defs` and `$anchor` references, `unevaluatedProperties: false`), and its
//! top-level `webhooks` a trait that builds typed payloads.

use std::collections::BTreeMap;

use contract_tests::spec_equivalence::{differences, load};
use fixture_openapi31::Document;
use fixture_openapi31::callbacks::{Webhooks, webhook_requests as requests};
use fixture_openapi31::models::{
    CreatePayment, CreatePaymentKind, CurrencyCode, Money, Payment, PaymentEvent, PaymentEventType,
    PaymentKind, PaymentStatus,
};
use serde_json::json;

#[path = "support/json_body.rs"]
mod json_body;

const SOURCE: &str = include_str!("../../codegen/tests/fixtures/openapi31.yaml");

#[test]
fn the_document_is_served_as_written() {
    let served = fixture_openapi31::document();
    assert_eq!(served["openapi"], "3.1.1");
    let diffs = differences(&load(SOURCE), &served);
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
    // As written: the anchor reference and the `webhooks` are there, not their 3.0 reading.
    assert_eq!(
        served["components"]["schemas"]["CreatePayment"]["properties"]["scheme"]["$ref"],
        "#currency-code"
    );
    assert!(served["webhooks"]["paymentSettled"]["post"].is_object());
}

async fn parse(body: serde_json::Value) -> Result<CreatePayment, BTreeMap<String, String>> {
    json_body::parse::<CreatePayment, Document>(body).await
}

#[tokio::test]
async fn a_valid_payment_is_typed_with_nulls_as_none() {
    let p = parse(json!({
        "kind": "book",
        "amount": {"amount": 1, "currency": "EUR"},
        "memo": null,
        "reference": 42,
        "settle_on": null,
        "scheme": "USD"
    }))
    .await
    .expect("accepted");
    assert_eq!(p.kind, CreatePaymentKind::Book);
    assert_eq!(p.amount.amount, 1);
    assert_eq!(p.memo, None);
    assert_eq!(p.settle_on, None);
    assert_eq!(p.scheme, Some(CurrencyCode("USD".into())));
    let text = parse(
        json!({"kind": "book", "amount": {"amount": 5, "currency": "EUR"},
        "reference": "inv-7", "memo": "rent", "settle_on": "2026-12-01"}),
    )
    .await
    .expect("accepted");
    assert_eq!(text.memo.as_deref(), Some("rent"));
    assert_eq!(text.settle_on, chrono::NaiveDate::from_ymd_opt(2026, 12, 1));
}

#[tokio::test]
async fn every_2020_12_violation_is_named_at_once() {
    let errors = parse(json!({
        "kind": "card",                                  // const: book
        "amount": {"amount": 0, "currency": "eur",       // exclusiveMinimum: 0; $defs pattern
                   "fee": 1},                            // unevaluatedProperties: false
        "memo": "x".repeat(141),                         // [string, null] with maxLength 140
        "reference": true,                               // [string, integer]
        "settle_on": "2026-13-01",                       // anyOf [date, null]
        "scheme": "usd"                                  // $ref to the anchor
    }))
    .await
    .expect_err("refused");
    let fields: Vec<&str> = errors.keys().map(String::as_str).collect();
    assert_eq!(
        fields,
        [
            "amount.amount",
            "amount.currency",
            "amount.fee",
            "kind",
            "memo",
            "reference",
            "scheme",
            "settle_on"
        ],
        "{errors:?}"
    );
    assert_eq!(errors["kind"], "must be one of \"book\"");
    assert_eq!(errors["amount.amount"], "must be greater than 0");
    assert_eq!(errors["amount.fee"], "is not a known field");
    assert_eq!(errors["memo"], "must be at most 140 characters long");
}

#[tokio::test]
async fn a_union_member_is_checked_with_its_own_keywords() {
    // `reference: [string, integer]` with `maxLength: 35` (strings) and `minimum: 1` (integers).
    let errors = parse(
        json!({"kind": "book", "amount": {"amount": 1, "currency": "EUR"},
        "reference": 0}),
    )
    .await
    .expect_err("refused");
    assert!(errors.contains_key("reference"), "{errors:?}");
    parse(
        json!({"kind": "book", "amount": {"amount": 1, "currency": "EUR"},
        "reference": "x".repeat(35)}),
    )
    .await
    .expect("a 35-character reference is accepted");
    // A required property stays required, and `null` is refused where the type has no null.
    let errors = parse(json!({"kind": "book", "amount": null}))
        .await
        .expect_err("refused");
    assert_eq!(errors["amount"], "must not be null", "{errors:?}");
}

struct Server;

enum Happened {
    Settled(&'static str),
    Created,
}

impl Webhooks for Server {
    type Event = Happened;
    fn payment_settled(&self, event: &Happened) -> Option<PaymentEvent> {
        let Happened::Settled(id) = event else {
            return None;
        };
        Some(PaymentEvent {
            r#type: PaymentEventType::PaymentSettled,
            payment: Payment {
                id: (*id).into(),
                kind: PaymentKind::Book,
                amount: Money {
                    amount: 1250,
                    currency: CurrencyCode("EUR".into()),
                },
                status: PaymentStatus::Settled,
                memo: None,
                parent: None,
            },
        })
    }
}

#[test]
fn a_webhook_is_built_through_the_generated_trait() {
    let sent = requests(&Server, &Happened::Settled("pay_1")).expect("serialised");
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].callback, "paymentSettled");
    assert_eq!(sent[0].method, "POST");
    assert_eq!(sent[0].content_type, Some("application/json"));
    let body: serde_json::Value = serde_json::from_slice(&sent[0].body).expect("JSON");
    assert_eq!(body["type"], "payment.settled");
    assert_eq!(body["payment"]["amount"]["amount"], 1250);
    // `memo` is required and nullable: written as null, not left out.
    assert_eq!(body["payment"]["memo"], serde_json::Value::Null);
    assert!(
        requests(&Server, &Happened::Created)
            .expect("serialised")
            .is_empty()
    );
}

/// A valid payment with the given fields added.
fn with(fields: serde_json::Value) -> serde_json::Value {
    let mut body = json!({"kind": "book", "amount": {"amount": 1, "currency": "EUR"}});
    for (k, v) in fields.as_object().expect("an object") {
        body[k] = v.clone();
    }
    body
}

#[tokio::test]
async fn keywords_beyond_openapi_3_0_are_enforced_with_every_violation_named() {
    let ok = parse(with(json!({
        "location": [48.85, 2.35],
        "tags": ["ops", "rent"],
        "metadata": {"team": "a", "n_items": 3},
        "settle_on": "2026-12-01", "memo": "rent"
    })))
    .await
    .expect("accepted");
    assert_eq!(ok.tags.as_ref().map(|t| t.0.len()), Some(2));
    let errors = parse(with(json!({
        "location": [91, 2.35, 7],                      // prefixItems bound; items: false
        "tags": ["ops", "ops", "ops"],                  // maxContains 2
        "metadata": {"n_items": "three",                // patternProperties ^n_: integer
                     "Team": "a",                       // propertyNames pattern
                     "owner": 5},                       // additionalProperties: string
        "settle_on": "2026-12-01"                       // dependentRequired: memo
    })))
    .await
    .expect_err("refused");
    let expected: BTreeMap<String, String> = [
        ("location", "must have at most 2 items"),
        ("location[0]", "must be at most 90"),
        ("memo", "is required when `settle_on` is present"),
        (
            "metadata.Team",
            "has a name that must match the pattern ^[a-z_]+$",
        ),
        ("metadata.n_items", "must be an integer"),
        ("metadata.owner", "must be a value of type string"),
        ("tags", "must contain at most 2 matching item(s), has 3"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    assert_eq!(errors, expected);
    let errors = parse(with(
        json!({"tags": ["rent"], "metadata": {"a_very_long_key": "x"}}),
    ))
    .await
    .expect_err("refused");
    assert_eq!(
        errors["tags"],
        "must contain at least 1 matching item(s), has 0"
    );
    assert_eq!(
        errors["metadata.a_very_long_key"],
        "has a name that must be at most 8 characters long"
    );
}

#[tokio::test]
async fn not_if_then_else_and_dependent_schemas_are_enforced() {
    parse(with(json!({"channel": {"kind": "api"}})))
        .await
        .expect("an api channel needs no device");
    parse(with(
        json!({"channel": {"kind": "card", "device": "pos-7"}}),
    ))
    .await
    .expect("a card channel with its device");
    let errors = parse(with(json!({"channel": {"kind": "card"}})))
        .await
        .expect_err("refused");
    assert_eq!(errors["channel.device"], "is required", "{errors:?}");
    let errors = parse(with(json!({"channel": {"kind": "api", "legacy": true}})))
        .await
        .expect_err("refused");
    assert_eq!(
        errors["channel"], "must not match the schema `not` forbids",
        "{errors:?}"
    );
    let errors = parse(with(json!({"channel": {"kind": "api", "device": "p7"}})))
        .await
        .expect_err("refused");
    assert_eq!(
        errors["channel.device"], "must be at least 4 characters long",
        "{errors:?}"
    );
}
