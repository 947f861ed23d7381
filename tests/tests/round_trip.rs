//! The document the generated service serves equals `spec/openapi.yaml` (see
//! `contract_tests::spec_equivalence` for what counts as noise).

use contract_tests::spec_equivalence::{differences, load};

#[test]
fn the_served_bankd_document_equals_the_source_document() {
    let source = load(include_str!("../../spec/openapi.yaml"));
    let served = bank_api_routes::document();
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
    let served = bank_api_routes::document();
    type Mutation = (&'static str, fn(&mut serde_json::Value));
    let mutations: [Mutation; 5] = [
        ("a parameter's style", |d| {
            d["components"]["parameters"]["Limit"]["style"] = "pipeDelimited".into()
        }),
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

#[test]
fn the_comparison_notices_how_an_array_parameter_is_written() {
    let source = load(include_str!("../../codegen/tests/fixtures/parameters.yaml"));
    let served = fixture_parameters::document();
    assert!(differences(&source, &served).is_empty());
    let colors = |d: &mut serde_json::Value| {
        d["paths"]["/owners/{owner_id}/pets"]["get"]["parameters"]
            .as_array_mut()
            .and_then(|ps| ps.iter_mut().find(|p| p["name"] == "colors"))
            .map(std::mem::take)
            .unwrap_or_default()
    };
    for (key, value) in [("explode", true.into()), ("style", "pipeDelimited".into())] {
        let mut changed = source.clone();
        let mut p = colors(&mut changed);
        p[key] = value;
        let ps = changed["paths"]["/owners/{owner_id}/pets"]["get"]["parameters"]
            .as_array_mut()
            .expect("parameters");
        ps.retain(|p| !p.is_null());
        ps.push(p);
        assert!(
            !differences(&changed, &served).is_empty(),
            "changing `colors`' {key} went unnoticed"
        );
    }
}

/// Every golden fixture's generated service serves exactly its source document too: the
/// generator is general, not tuned to one document.
macro_rules! fixture_round_trip {
    ($($krate:ident => $file:literal),* $(,)?) => {
        #[test]
        fn every_fixture_serves_exactly_its_source_document() {
            let mut failures = Vec::new();
            $(
                let source = load(include_str!(concat!("../../codegen/tests/fixtures/", $file)));
                let diffs = differences(&source, &$krate::document());
                if !diffs.is_empty() {
                    failures.push(format!("{}:\n  {}", $file, diffs.join("\n  ")));
                }
            )*
            assert!(failures.is_empty(), "{}", failures.join("\n"));
        }
    };
}

fixture_round_trip! {
    fixture_all_of => "all_of.yaml",
    fixture_arrays => "arrays.yaml",
    fixture_callbacks => "callbacks.yaml",
    fixture_enums => "enums.yaml",
    fixture_formats => "formats.yaml",
    fixture_keywords => "keywords.yaml",
    fixture_maps => "maps.yaml",
    fixture_media_types => "media_types.yaml",
    fixture_multipart => "multipart.yaml",
    fixture_names => "names.yaml",
    fixture_nested_objects => "nested_objects.yaml",
    fixture_nullable => "nullable.yaml",
    fixture_objects => "objects.yaml",
    fixture_openapi31 => "openapi31.yaml",
    fixture_openapi32 => "openapi32.yaml",
    fixture_one_of => "one_of.yaml",
    fixture_parameters => "parameters.yaml",
    fixture_petstore => "petstore.yaml",
    fixture_schemas => "schemas.yaml",
    fixture_responses => "responses.yaml",
    fixture_routes_apart_routes => "routes_apart.yaml",
    fixture_security => "security.yaml",
    fixture_security_schemes => "security_schemes.yaml",
    fixture_split_types => "split_types.yaml",
    fixture_validation => "validation.yaml",
}

/// A fixture over several files serves the one document its files bundle into (the bundle
/// itself is tested in `codegen/tests/bundle.rs`).
#[test]
fn a_fixture_over_several_files_serves_its_bundled_document() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../codegen/tests/fixtures/multi_file.yaml");
    let source = openapi_poem::bundle::bundle_file(&path).expect("bundles");
    let diffs = differences(&source, &fixture_multi_file::document());
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}
