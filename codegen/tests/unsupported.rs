//! Constructs the generator does not support are errors naming the JSON pointer; nothing is
//! silently dropped.

fn doc(paths: &str, schemas: &str) -> String {
    format!(
        "openapi: 3.0.3\ninfo: {{title: t, version: '1'}}\npaths:\n{paths}\ncomponents:\n  schemas:\n{schemas}\n"
    )
}

const OP: &str = "  /x:\n    get:\n      operationId: get_x\n      tags: [x]\n      responses:\n        '200': {description: ok}\n";

fn error(text: &str) -> openapi_poem::Error {
    let opts = openapi_poem::Options {
        crate_name: "t",
        source: "t.yaml",
        runtime_path: Some("runtime"),
        flags: "",
        types_per_crate: openapi_poem::emit::DEFAULT_TYPES_PER_CRATE,
        routes_apart: false,
    };
    openapi_poem::generate(text, &opts).expect_err("must be refused")
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
fn swagger_2_and_openapi_4_are_refused() {
    assert_eq!(
        error("swagger: '2.0'\ninfo: {title: t, version: '1'}\npaths: {}\n").pointer,
        "#/openapi"
    );
    assert_eq!(
        error("openapi: 4.0.0\ninfo: {title: t, version: '1'}\npaths: {}\n").pointer,
        "#/openapi"
    );
}

#[test]
fn what_openapi_3_2_allows_and_the_generator_does_not_serve_is_refused_with_its_pointer() {
    let head = "openapi: 3.2.0\ninfo: {title: t, version: '1'}\n";
    let ok = "responses:\n            '200': {description: ok}";
    // A streamed request body.
    let upload = format!(
        "{head}paths:\n  /up:\n    post:\n      requestBody:\n        content:\n          application/jsonl:\n            itemSchema: {{type: string}}\n      responses:\n        '200': {{description: ok}}\n"
    );
    let e = error(&upload);
    assert_eq!(
        e.pointer,
        "#/paths/~1up/post/requestBody/content/application~1jsonl/itemSchema"
    );
    assert!(e.message.contains("request bodies"), "{}", e.message);
    // A stream in a media type the runtime does not write.
    let mixed = format!(
        "{head}paths:\n  /m:\n    get:\n      responses:\n        '200':\n          description: ok\n          content:\n            multipart/mixed:\n              itemSchema: {{type: string}}\n"
    );
    assert_eq!(
        error(&mixed).pointer,
        "#/paths/~1m/get/responses/200/content/multipart~1mixed/itemSchema"
    );
    // `additionalOperations` naming a method that has its own field.
    let fixed =
        format!("{head}paths:\n  /a:\n    additionalOperations:\n      POST:\n        {ok}\n");
    assert_eq!(
        error(&fixed).pointer,
        "#/paths/~1a/additionalOperations/POST"
    );
    // A method name that is not an HTTP token.
    let spaced = format!(
        "{head}paths:\n  /a:\n    additionalOperations:\n      'MY METHOD':\n        {ok}\n"
    );
    assert_eq!(
        error(&spaced).pointer,
        "#/paths/~1a/additionalOperations/MY METHOD"
    );
    // QUERY in a webhook: the server would have to send it.
    let webhook = format!("{head}webhooks:\n  ping:\n    query:\n      {ok}\n");
    assert_eq!(error(&webhook).pointer, "#/webhooks/ping/query");
    // `in: querystring` in a 3.1 document.
    let v31 = "openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths:\n  /q:\n    get:\n      parameters:\n        - {name: q, in: querystring, content: {application/json: {schema: {type: object}}}}\n      responses:\n        '200': {description: ok}\n";
    assert_eq!(error(v31).pointer, "#/paths/~1q/get/parameters/0/in");
    // A `querystring` parameter written with `schema`.
    let schema = format!(
        "{head}paths:\n  /q:\n    get:\n      parameters:\n        - {{name: q, in: querystring, schema: {{type: object}}}}\n      responses:\n        '200': {{description: ok}}\n"
    );
    assert_eq!(error(&schema).pointer, "#/paths/~1q/get/parameters/0");
}

#[test]
fn a_json_schema_dialect_other_than_2020_12_is_refused_at_its_pointer() {
    let text = "openapi: 3.1.0\ninfo: {title: t, version: '1'}\njsonSchemaDialect: 'http://json-schema.org/draft-07/schema#'\npaths: {}\n";
    assert_eq!(error(text).pointer, "#/jsonSchemaDialect");
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
fn path_arrays_of_objects_are_raw_text_and_unknown_media_types_are_bytes() {
    let path = "  /x/{c}:\n    get:\n      operationId: get_x\n      tags: [x]\n      parameters:\n        - {name: c, in: path, required: true, schema: {type: array, items: {type: object}}}\n      responses:\n        '200': {description: ok}\n";
    let api = openapi_poem::parse::parse(&doc(path, "    A: {type: string}\n")).expect("parses");
    let c = &api.operations[0].params[0];
    assert!(
        matches!(c.schema.kind, openapi_poem::ir::Kind::String { .. }),
        "{:?}",
        c.schema.kind
    );
    // Served as written.
    let written: serde_json::Value =
        serde_json::from_str(c.served_as_written.as_deref().expect("served as written"))
            .expect("JSON");
    assert_eq!(written["schema"]["items"]["type"], "object");
    let xml = "  /x:\n    get:\n      operationId: get_x\n      tags: [x]\n      responses:\n        '200':\n          description: ok\n          content:\n            application/xml:\n              schema: {type: string}\n";
    let api = openapi_poem::parse::parse(&doc(xml, "    A: {type: string}\n")).expect("parses");
    let (media, content_type, _) = api.operations[0].responses[0]
        .content
        .clone()
        .expect("content");
    assert_eq!(
        (media, content_type.as_str()),
        (openapi_poem::ir::Media::Binary, "application/xml")
    );
}

#[test]
fn ecma_patterns_are_kept_whatever_their_features() {
    // Lookbehind, lookahead and Unicode properties are ECMA-262: kept, enforced at run time.
    for p in ["(?<=a)b", "^(?!aws:).+$", "^\\p{L}+$"] {
        let api = openapi_poem::parse::parse(&doc(
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
    let api = openapi_poem::parse::parse(&text).expect("parses");
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
    let api = openapi_poem::parse::parse(&text).expect("parses");
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
            // named like the glue's own functions: the glue names its functions `op_<name>`
            ("document", true, "2fa", "Document"),
            ("routes", true, "2fa", "Routes"),
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

#[test]
fn a_schema_ref_may_point_anywhere_in_the_document_and_must_resolve() {
    use openapi_poem::ir::Kind;
    // A property of a component, and a response schema inside `paths` (percent-encoded braces,
    // as real documents write them), each become a type of their own, made once.
    let paths = "  /x/{id}:\n    get:\n      operationId: get_x\n      tags: [x]\n      parameters:\n        - {name: id, in: path, required: true, schema: {type: string}}\n      responses:\n        '200':\n          description: ok\n          content:\n            application/json:\n              schema: {type: object, properties: {n: {type: integer}}}\n  /y:\n    get:\n      operationId: get_y\n      tags: [x]\n      responses:\n        '200':\n          description: ok\n          content:\n            application/json:\n              schema: {$ref: '#/paths/~1x~1%7Bid%7D/get/responses/200/content/application~1json/schema'}\n";
    let schemas = "    Disk:\n      type: object\n      properties:\n        fs: {type: string, enum: [ext4, xfs]}\n    Copy:\n      type: object\n      properties:\n        fs: {$ref: '#/components/schemas/Disk/properties/fs'}\n        again: {$ref: '#/components/schemas/Disk/properties/fs'}\n";
    let api = openapi_poem::parse::parse(&doc(paths, schemas)).expect("parses");
    let copy = api.types.iter().find(|t| t.name == "Copy").expect("Copy");
    let Kind::Object(o) = &copy.schema.kind else {
        panic!("an object")
    };
    let (Kind::Ref(a), Kind::Ref(b)) = (&o.properties[0].schema.kind, &o.properties[1].schema.kind)
    else {
        panic!("references: {o:?}")
    };
    assert_eq!(a, b, "one type per pointer");
    let fs = api
        .types
        .iter()
        .find(|t| &t.name == a)
        .expect("the pointed type");
    assert_eq!(fs.pointer, "#/components/schemas/Disk/properties/fs");
    assert!(matches!(&fs.schema.kind, Kind::String { enum_values, .. } if enum_values.len() == 2));
    let y = &api.operations[1].responses[0]
        .content
        .as_ref()
        .expect("content")
        .2;
    let Kind::Ref(name) = &y.kind else {
        panic!("a reference: {y:?}")
    };
    let t = api
        .types
        .iter()
        .find(|t| &t.name == name)
        .expect("the pointed type");
    assert!(matches!(t.schema.kind, Kind::Object(_)), "{t:?}");
    // Generated, the crate names them like any other type.
    let opts = openapi_poem::Options {
        crate_name: "t",
        source: "t.yaml",
        runtime_path: Some("runtime"),
        flags: "",
        types_per_crate: openapi_poem::emit::DEFAULT_TYPES_PER_CRATE,
        routes_apart: false,
    };
    openapi_poem::generate(&doc(paths, schemas), &opts).expect("generates");

    // A pointer that leads nowhere is refused where it is written.
    let bad = "    A:\n      type: object\n      properties:\n        b: {$ref: '#/components/schemas/Nope/properties/x'}\n";
    let e = error(&doc(OP, bad));
    assert_eq!(e.pointer, "#/components/schemas/A/properties/b");
    assert!(e.message.contains("does not resolve"), "{}", e.message);
}

#[test]
fn type_arrays_are_refused_in_schemas_but_not_in_extensions_or_examples() {
    let opts = openapi_poem::Options {
        crate_name: "t",
        source: "t.yaml",
        runtime_path: Some("runtime"),
        flags: "",
        types_per_crate: openapi_poem::emit::DEFAULT_TYPES_PER_CRATE,
        routes_apart: false,
    };
    let e = error(&doc(OP, "    S:\n      type: [string, 'null']\n"));
    assert_eq!(e.pointer, "#/components/schemas/S/type");
    // Values, not schemas: an extension's content (apptigent.com), an example's value
    // (formapi.io), an enumerated value and a default.
    let schemas = "    S:\n      type: object\n      x-shape: {type: [a, b]}\n      \
                   example: {type: [1, 2]}\n      properties:\n        \
                   e: {type: object, enum: [{type: [x]}], default: {type: [y]}}\n";
    let text = format!(
        "{}x-ibm-endpoints:\n  - {{type: [production, development]}}\n",
        doc(OP, schemas)
    );
    openapi_poem::generate(&text, &opts).expect("values are not schemas");
}

#[test]
fn a_document_that_is_not_openapi_3_0_is_refused_where_reading_stopped() {
    let e = error(&doc(OP, "    S: {type: string, pattern: 0}\n"));
    assert_eq!(e.pointer, "#/components/schemas/S");
    assert!(e.message.contains("expected a string"), "{}", e.message);
    // An operation without `responses`: openapiv3 tries a `$ref` and a path item at each path,
    // so the pointer stops at `paths`.
    let no_responses = "  /x:\n    get:\n      operationId: get_x\n";
    assert_eq!(
        error(&doc(no_responses, "    A: {type: string}\n")).pointer,
        "#/paths"
    );
}
