//! The document the generated service serves equals `spec/openapi.yaml` (see
//! `contract_tests::spec_equivalence` for what counts as noise).

use contract_tests::spec_equivalence::{differences, load};

#[test]
fn the_served_bankd_document_equals_the_source_document() {
    let source = load(include_str!("../../spec/openapi.yaml"));
    let served = bank_api::document();
    let diffs = differences(&source, &served);
    assert!(
        diffs.is_empty(),
        "{} differences:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
}

/// The comparison must be able to fail: each mutation of the source is real drift.
#[test]
fn the_comparison_notices_drift_in_schemas_parameters_responses_and_security() {
    let source = load(include_str!("../../spec/openapi.yaml"));
    let served = bank_api::document();
    let mutations: [(&str, fn(&mut serde_json::Value)); 4] = [
        ("a schema limit", |d| {
            d["components"]["schemas"]["CreateBankAccountRequest"]["properties"]["description"]["maxLength"] =
                256.into()
        }),
        ("a parameter flag", |d| {
            d["components"]["parameters"]["Limit"]["required"] = true.into()
        }),
        ("a response status", |d| {
            d["paths"]["/bank-accounts/{bank_account_id}"]["get"]["responses"]
                .as_object_mut()
                .map(|m| m.remove("404"));
        }),
        ("security", |d| {
            d["paths"]["/platform"]["get"]["security"] = serde_json::json!([])
        }),
    ];
    for (what, mutate) in mutations {
        let mut changed = source.clone();
        mutate(&mut changed);
        assert!(
            !differences(&changed, &served).is_empty(),
            "changing {what} went unnoticed"
        );
    }
}
