//! Constructs the generator does not support are errors naming the JSON pointer; nothing is
//! silently dropped.

fn doc(paths: &str, schemas: &str) -> String {
    format!(
        "openapi: 3.0.3\ninfo: {{title: t, version: '1'}}\npaths:\n{paths}\ncomponents:\n  schemas:\n{schemas}\n"
    )
}

const OP: &str = "  /x:\n    get:\n      operationId: get_x\n      tags: [x]\n      responses:\n        '200': {description: ok}\n";

fn error(text: &str) -> bank_codegen::Error {
    let opts = bank_codegen::Options {
        crate_name: "t",
        source: "t.yaml",
        runtime_path: "runtime",
    };
    bank_codegen::generate(text, &opts).expect_err("must be refused")
}

#[test]
fn a_security_scheme_reference_is_refused_with_its_pointer() {
    let text = format!(
        "{}  securitySchemes:\n    B: {{$ref: '#/components/securitySchemes/A'}}\n    A: {{type: http, scheme: basic}}\n",
        doc(OP, "    S: {type: string}\n")
    );
    let e = error(&text);
    assert_eq!(e.pointer, "#/components/securitySchemes/B");
}

#[test]
fn swagger_2_and_openapi_3_1_are_refused() {
    assert_eq!(
        error("swagger: '2.0'\ninfo: {title: t, version: '1'}\npaths: {}\n").pointer,
        "#/openapi"
    );
    assert_eq!(
        error("openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths: {}\n").pointer,
        "#/openapi"
    );
}

#[test]
fn a_dangling_ref_is_refused() {
    let e = error(&doc(
        OP,
        "    A:\n      type: object\n      properties:\n        b: {$ref: '#/components/schemas/Missing'}\n",
    ));
    assert_eq!(e.pointer, "#/components/schemas/A/properties/b");
    assert!(e.message.contains("Missing"), "{}", e.message);
}

#[test]
fn duplicate_operation_ids_are_refused() {
    let paths = format!(
        "{OP}  /y:\n    get:\n      operationId: get_x\n      tags: [x]\n      responses:\n        '200': {{description: ok}}\n"
    );
    let e = error(&doc(&paths, "    A: {type: string}\n"));
    assert_eq!(e.pointer, "#/paths/~1y/get");
}

#[test]
fn array_cookie_parameters_are_refused_and_unknown_media_types_are_bytes() {
    let cookie = "  /x:\n    get:\n      operationId: get_x\n      tags: [x]\n      parameters:\n        - {name: c, in: cookie, schema: {type: array, items: {type: string}}}\n      responses:\n        '200': {description: ok}\n";
    let e = error(&doc(cookie, "    A: {type: string}\n"));
    assert_eq!(e.pointer, "#/paths/~1x/get/parameters/0");
    assert!(e.message.contains("array cookie"), "{}", e.message);
    let xml = "  /x:\n    get:\n      operationId: get_x\n      tags: [x]\n      responses:\n        '200':\n          description: ok\n          content:\n            application/xml:\n              schema: {type: string}\n";
    let api = bank_codegen::parse::parse(&doc(xml, "    A: {type: string}\n")).expect("parses");
    let (media, content_type, _) = api.operations[0].responses[0]
        .content
        .clone()
        .expect("content");
    assert_eq!(
        (media, content_type.as_str()),
        (bank_codegen::ir::Media::Binary, "application/xml")
    );
}

#[test]
fn ecma_patterns_are_kept_whatever_their_features() {
    // Lookbehind, lookahead and Unicode properties are ECMA-262: kept, enforced at run time.
    for p in ["(?<=a)b", "^(?!aws:).+$", "^\\p{L}+$"] {
        let api = bank_codegen::parse::parse(&doc(
            OP,
            &format!("    A:\n      type: string\n      pattern: '{p}'\n"),
        ))
        .unwrap_or_else(|e| panic!("{p}: {e}"));
        assert_eq!(api.types[0].schema.constraints.pattern.as_deref(), Some(p));
    }
}

#[test]
fn the_ir_keeps_dotted_and_keyword_parameter_names() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/parameters.yaml"
    ))
    .expect("fixture");
    let api = bank_codegen::parse::parse(&text).expect("parses");
    let params: Vec<(String, String)> = api
        .operations
        .iter()
        .flat_map(|o| o.params.iter().map(|p| (p.name.clone(), p.rust.clone())))
        .collect();
    assert!(
        params
            .iter()
            .any(|(n, r)| n == "balance.gte" && r == "balance_gte"),
        "{params:?}"
    );
    assert!(
        params.iter().any(|(n, r)| n == "type" && r == "r#type"),
        "{params:?}"
    );
    assert!(
        params.iter().any(|(n, r)| n == "match" && r == "r#match"),
        "{params:?}"
    );
}

#[test]
fn operations_without_an_id_or_a_tag_are_named_not_refused() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/names.yaml"
    ))
    .expect("fixture");
    let api = bank_codegen::parse::parse(&text).expect("parses");
    let ops: Vec<(&str, bool, &str, &str)> = api
        .operations
        .iter()
        .map(|o| {
            (
                o.rust.as_str(),
                o.explicit_id,
                o.tag.as_str(),
                o.type_stem.as_str(),
            )
        })
        .collect();
    assert_eq!(
        ops,
        [
            // no operationId, no tag: named from method and path, held by the default trait
            ("get_pets_pet_id", false, "", "GetPetsPetId"),
            // written ids take their names first
            ("get_pets", true, "Models", "GetPets"),
            ("post_pets", false, "Café", "PostPets"),
            // `get /PETS` would be `get_pets` too: the next free suffix, in document order
            ("get_pets2", false, "2fa", "GetPets2"),
        ]
    );
    let tags: Vec<(&str, &str, &str, bool)> = api
        .tags
        .iter()
        .map(|t| {
            (
                t.name.as_str(),
                t.rust.as_str(),
                t.module.as_str(),
                t.served,
            )
        })
        .collect();
    assert_eq!(
        tags,
        [
            ("Models", "Models", "models2", true),
            ("café", "CafU00e9", "caf_u00e9", true),
            ("Café", "CafU00e92", "caf_u00e92", true),
            ("2fa", "V2fa", "v2fa", true),
            ("", "Default", "default", false),
        ]
    );
    // `café` is only ever a second tag: served, but it holds no trait.
    let traits: Vec<&str> = api.trait_tags().map(|t| t.rust.as_str()).collect();
    assert_eq!(traits, ["Models", "CafU00e92", "V2fa", "Default"]);
}
