//! Parameters through the generated crate of `codegen/tests/fixtures/parameters.yaml`: array
//! query parameters in form style exploded (`ids=1&ids=2`) and not (`colors=red,blue`), items
//! typed and checked, and `spaceDelimited` / `pipeDelimited` ones; cookie parameters (a
//! comma-separated array too) read and validated.

use std::sync::Arc;

use fixture_parameters::models::{Pet, PetList};
use fixture_parameters::pets::*;
use fixture_parameters::runtime::{Credentials, Hooks, RequestError};
use fixture_parameters::{Json, app};
use poem::http::StatusCode;
use poem::{Endpoint, Request};

struct Server;

impl Hooks for Server {
    type Principal = ();
    async fn authenticate(&self, _credentials: Credentials) -> Result<(), RequestError> {
        Ok(())
    }
    fn render_error(&self, error: RequestError, _request: &poem::Request) -> poem::Response {
        poem::Response::builder()
            .status(error.status)
            .body(error.message)
    }
}

/// Answers with one pet whose name says what the arrays held.
impl PetsApi for Server {
    async fn list_owner_pets(&self, input: ListOwnerPetsInput) -> ListOwnerPetsResponse {
        let name = match (&input.filter, &input.r#where) {
            _ if input.counts.is_some() || input.labels.is_some() || input.order.is_some() => {
                format!("{:?} {:?} {:?}", input.counts, input.labels, input.order)
            }
            _ if input.note.is_some() || input.prefix.is_some() => {
                format!("{:?} {:?}", input.note, input.prefix)
            }
            _ if input.shapes.is_some() || input.since.is_some() => {
                format!("{:?} {:?}", input.shapes, input.since)
            }
            (_, Some(w)) => format!("{:?} {:?}", w.color, w.max),
            (Some(f), None) => format!(
                "{:?} {:?} {:?} {:?}",
                f.name, f.min_age, f.vaccinated, f.kinds
            ),
            (None, None) => format!(
                "{:?} {:?} {:?} {:?}",
                input.ids, input.colors, input.sizes, input.tags
            ),
        };
        ListOwnerPetsResponse::Ok(Json(PetList(vec![Pet {
            id: 1,
            owner_id: input.owner_id,
            name,
            r#type: None,
            balance: None,
        }])))
    }
    /// Answers with the pet of the body, named after the headers read beside it.
    async fn create_owner_pet(&self, input: CreateOwnerPetInput) -> CreateOwnerPetResponse {
        CreateOwnerPetResponse::Ok(Json(Pet {
            id: 1,
            owner_id: input.owner_id,
            name: format!(
                "{} {:?} {}",
                input.body.name, input.idempotency_key, input.x_trace
            ),
            r#type: input.body.r#type,
            balance: None,
        }))
    }
    /// Answers with a pet named after the values read.
    async fn path_styles(&self, input: PathStylesInput) -> PathStylesResponse {
        PathStylesResponse::Ok(Json(Pet {
            id: input.label,
            owner_id: input.matrix.clone(),
            name: format!(
                "{} {:?} {} {:?} {:?}",
                input.label, input.labels, input.matrix, input.matrices, input.ids
            ),
            r#type: None,
            balance: None,
        }))
    }
    async fn grid(&self, input: GridInput) -> GridResponse {
        GridResponse::Ok(Json(Pet {
            id: 0,
            owner_id: String::new(),
            name: input.cells,
            r#type: None,
            balance: None,
        }))
    }
    async fn named_twice(&self, input: NamedTwiceInput) -> NamedTwiceResponse {
        NamedTwiceResponse::Ok(Json(Pet {
            id: 0,
            owner_id: String::new(),
            name: input.name,
            r#type: None,
            balance: None,
        }))
    }
    /// Answers with a pet named after the `session_hint` cookie.
    async fn get_owner_pet(&self, input: GetOwnerPetInput) -> GetOwnerPetResponse {
        GetOwnerPetResponse::Ok(Json(Pet {
            id: input.pet_id,
            owner_id: input.owner_id,
            name: format!("{:?} {:?}", input.session_hint, input.flavours),
            r#type: None,
            balance: None,
        }))
    }
}

async fn list(query: &str) -> (StatusCode, String) {
    call(&format!("/owners/o1/pets?region=eu&{query}"), None).await
}

/// The status and, for a 200, the name of the first pet (or the body of an error).
async fn call(uri: &str, cookie: Option<&str>) -> (StatusCode, String) {
    let mut req = Request::builder()
        .uri(uri.parse().expect("uri"))
        .header("X-Trace", "t");
    if let Some(c) = cookie {
        req = req.header("Cookie", c);
    }
    let req = req.finish();
    let resp = match app(Arc::new(Server)).call(req).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    };
    let status = resp.status();
    let body = resp.into_body().into_string().await.expect("body");
    if status != StatusCode::OK {
        return (status, body);
    }
    let v: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    let pet = if v.is_array() { &v[0] } else { &v };
    (status, pet["name"].as_str().unwrap_or_default().to_string())
}

#[tokio::test]
async fn a_deep_object_parameter_is_read_typed_by_its_schema() {
    assert_eq!(
        list("filter[name]=Rex&filter[min_age]=2&filter[vaccinated]=true&filter[kinds]=dog&filter[kinds]=cat&other[x]=1").await,
        (
            StatusCode::OK,
            r#"Some("Rex") Some(2) Some(true) Some(["dog", "cat"])"#.to_string()
        )
    );
    // Brackets percent-encoded, as browsers send them; a string that looks like a number stays
    // a string.
    assert_eq!(
        list("filter%5Bname%5D=42").await,
        (StatusCode::OK, r#"Some("42") None None None"#.to_string())
    );
    // A value that is not of its property's type is a 400 saying why.
    let (status, body) = list("filter[min_age]=old").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body.contains("\"old\"") && body.contains("i32"), "{body}");
}

#[tokio::test]
async fn a_deep_object_map_or_free_form_object_takes_any_key() {
    // A map's values typed by `additionalProperties`; a free-form object's are text.
    assert_eq!(
        list("counts[dog]=2&counts[cat]=1&labels[colour]=red&labels[n]=3").await,
        (
            StatusCode::OK,
            r#"Some({"cat": 1, "dog": 2}) Some(Object {"colour": String("red"), "n": String("3")}) None"#
                .to_string()
        )
    );
    let (status, body) = list("counts[dog]=two").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body.contains("\"two\""), "{body}");
    // Text content: the raw text.
    assert_eq!(
        list("note=a%20b%7Bc%7D").await,
        (StatusCode::OK, r#"Some("a b{c}") None"#.to_string())
    );
    // Number bounds on a string do not apply (JSON Schema ignores them); its length limit does.
    assert_eq!(
        list("prefix=zz").await,
        (StatusCode::OK, r#"None Some("zz")"#.to_string())
    );
    assert_eq!(list("prefix=abcdef").await.0, StatusCode::BAD_REQUEST);
    // Its schema's limits hold (maxLength 20).
    assert_eq!(
        list(&format!("note={}", "x".repeat(21))).await.0,
        StatusCode::BAD_REQUEST
    );
    // deepObject on a string is the plain parameter clients send for it.
    assert_eq!(
        list("order=name").await,
        (StatusCode::OK, r#"None None Some("name")"#.to_string())
    );
}

#[tokio::test]
async fn an_array_of_arrays_in_the_path_is_its_raw_text() {
    assert_eq!(
        call("/grids/1,2;3,4", None).await,
        (StatusCode::OK, "1,2;3,4".to_string())
    );
}

#[tokio::test]
async fn a_json_content_parameter_is_read_as_a_document() {
    assert_eq!(
        list("where=%7B%22color%22%3A%22red%22%2C%22max%22%3A3%7D").await,
        (StatusCode::OK, r#"Some("red") Some(3)"#.to_string())
    );
    // Not JSON, or JSON of the wrong shape: 400.
    assert_eq!(list("where=red").await.0, StatusCode::BAD_REQUEST);
    assert_eq!(
        list("where=%7B%22max%22%3A%22x%22%7D").await.0,
        StatusCode::BAD_REQUEST
    );
}

#[tokio::test]
async fn a_cookie_parameter_is_read_and_validated() {
    let pet = "/owners/o1/pets/7";
    assert_eq!(
        call(pet, Some("other=1; session_hint=abc")).await,
        (StatusCode::OK, r#"Some("abc") None"#.to_string())
    );
    assert_eq!(
        call(pet, None).await,
        (StatusCode::OK, "None None".to_string())
    );
    // An array in a cookie: one comma-separated value.
    assert_eq!(
        call(pet, Some("flavours=mint,lime; session_hint=x")).await,
        (
            StatusCode::OK,
            r#"Some("x") Some(["mint", "lime"])"#.to_string()
        )
    );
    // Longer than its maxLength (8): refused like any other invalid parameter.
    assert_eq!(
        call(pet, Some("session_hint=123456789")).await.0,
        StatusCode::BAD_REQUEST
    );
}

#[tokio::test]
async fn exploded_and_comma_separated_arrays_are_parsed() {
    assert_eq!(
        list("ids=1&ids=22&colors=red,blue&sizes=3%204&tags=a|b%7Cc").await,
        (
            StatusCode::OK,
            r#"Some([1, 22]) Some(["red", "blue"]) Some([3, 4]) Some(["a", "b", "c"])"#.to_string()
        )
    );
    assert_eq!(
        list("").await,
        (StatusCode::OK, "None None None None".to_string())
    );
    // An item of the wrong type is a 400, whatever the delimiter.
    assert_eq!(list("ids=1&ids=x").await.0, StatusCode::BAD_REQUEST);
    assert_eq!(list("sizes=1%20x").await.0, StatusCode::BAD_REQUEST);
}

/// A default the extracted type cannot hold (a delimited array's, a date's `""`) leaves the
/// parameter optional: absent is `None`, never a made-up value; present, it is read as usual.
#[tokio::test]
async fn parameters_whose_default_the_type_cannot_hold_are_optional() {
    assert_eq!(
        list("shapes=square,star&since=2026-01-02").await,
        (
            StatusCode::OK,
            r#"Some(["square", "star"]) Some(2026-01-02)"#.to_string()
        )
    );
    assert_eq!(
        list("since=2026-01-02").await,
        (StatusCode::OK, "None Some(2026-01-02)".to_string())
    );
    assert_eq!(list("since=yesterday").await.0, StatusCode::BAD_REQUEST);
    // Neither given: the handler sees neither (the other parameters' reading, all absent).
    assert_eq!(
        list("").await,
        (StatusCode::OK, "None None None None".to_string())
    );
}

#[tokio::test]
async fn path_parameters_are_read_in_their_style() {
    assert_eq!(
        call(
            "/styles/.7/.a.b/;matrix=x/;matrices=1;matrices=2/1,2,3",
            None
        )
        .await,
        (
            StatusCode::OK,
            r#"7 ["a", "b"] x [1, 2] [1, 2, 3]"#.to_string()
        )
    );
    // One item each.
    assert_eq!(
        call("/styles/.0/.a/;matrix=/;matrices=5/9", None).await,
        (StatusCode::OK, r#"0 ["a"]  [5] [9]"#.to_string())
    );
    // Without its prefix, or with an item of the wrong type: 400.
    for uri in [
        "/styles/7/.a/;matrix=x/;matrices=1/1",
        "/styles/.7/a/;matrix=x/;matrices=1/1",
        "/styles/.7/.a/matrix=x/;matrices=1/1",
        "/styles/.7/.a/;matrix=x/;matrices=1;matrices=z/1",
        "/styles/.7/.a/;matrix=x/;matrices=1/1,x",
    ] {
        assert_eq!(call(uri, None).await.0, StatusCode::BAD_REQUEST, "{uri}");
    }
}

#[tokio::test]
async fn a_path_may_name_a_variable_twice() {
    assert_eq!(
        call("/twice/rex/and/rex", None).await,
        (StatusCode::OK, "rex".to_string())
    );
    assert_eq!(call("/twice/rex/and", None).await.0, StatusCode::NOT_FOUND);
}

// ------------------------------------------------------------ the typed client, round trip

/// The fixture's own client against its server on a real port: every parameter written in its
/// style by the client is read back to the same value by the server.
/// poem-openapi stops at the first parameter it refuses; the answer names every one that
/// fails, each in the body validator's words.
#[tokio::test]
async fn every_failing_parameter_is_named_in_one_answer() {
    let (status, message) = call(
        "/owners/o1/pets?ids=1&ids=x&sizes=1%20y&balance.gte=z",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    for said in [
        "region is required",
        "ids must be an integer (int64)",
        "balance.gte must be an integer (int64)",
    ] {
        assert!(message.contains(said), "{said:?} not in {message:?}");
    }
    assert!(message.contains("and 1 more"), "four failures: {message:?}");
    // One failure alone keeps poem-openapi's own refusal, in the same words.
    let (status, message) = list("ids=x").await;
    assert_eq!(
        (status, message.as_str()),
        (StatusCode::BAD_REQUEST, "ids must be an integer (int64)")
    );
}

#[path = "support/on_a_port.rs"]
mod on_a_port;

mod round_trip {
    use super::*;
    use fixture_parameters::client::Client;
    use fixture_parameters::models::{ListOwnerPetsWhere, PetFilter};
    use fixture_parameters::runtime::client::Config;

    async fn client() -> Client {
        Client::new(Config::new(on_a_port::serve(app(Arc::new(Server))).await))
    }

    fn list_input() -> ListOwnerPetsInput {
        ListOwnerPetsInput {
            owner_id: "o/1 ü".into(),
            region: "eu".into(),
            balance_gte: None,
            page: None,
            weight_gte: None,
            created_lt: None,
            r#type: None,
            r#match: None,
            x_trace: "t".into(),
            ids: None,
            colors: None,
            sizes: None,
            tags: None,
            shapes: None,
            since: None,
            filter: None,
            counts: None,
            labels: None,
            prefix: None,
            note: None,
            order: None,
            r#where: None,
        }
    }

    /// The first pet's owner and name, from a 200.
    fn pet(answer: ListOwnerPetsResponse) -> (String, String) {
        match answer {
            ListOwnerPetsResponse::Ok(Json(PetList(pets))) => {
                (pets[0].owner_id.clone(), pets[0].name.clone())
            }
            other => panic!("not a 200: {other:?}"),
        }
    }

    #[tokio::test]
    async fn arrays_in_every_query_style_arrive_as_sent() {
        let client = client().await;
        let mut input = list_input();
        input.ids = Some(vec![1, 2]);
        input.colors = Some(vec!["red".into(), "dark blue".into()]);
        input.sizes = Some(vec![1, 2]);
        input.tags = Some(vec!["a".into(), "b&c".into()]);
        let want = format!(
            "{:?} {:?} {:?} {:?}",
            input.ids, input.colors, input.sizes, input.tags
        );
        let (owner, name) = pet(client.list_owner_pets(input).await.unwrap());
        assert_eq!((owner.as_str(), name), ("o/1 ü", want));
    }

    #[tokio::test]
    async fn a_deep_object_and_an_exploded_object_arrive_as_sent() {
        let client = client().await;
        let mut input = list_input();
        let filter = PetFilter {
            name: Some("Rex [the] dog".into()),
            min_age: Some(3),
            vaccinated: Some(true),
            kinds: Some(vec!["dog".into(), "cat".into()]),
        };
        input.filter = Some(filter.clone());
        let want = format!(
            "{:?} {:?} {:?} {:?}",
            filter.name, filter.min_age, filter.vaccinated, filter.kinds
        );
        assert_eq!(pet(client.list_owner_pets(input).await.unwrap()).1, want);

        let mut input = list_input();
        let r#where = ListOwnerPetsWhere {
            color: Some("red".into()),
            max: Some(4),
        };
        input.r#where = Some(r#where.clone());
        let want = format!("{:?} {:?}", r#where.color, r#where.max);
        assert_eq!(pet(client.list_owner_pets(input).await.unwrap()).1, want);
    }

    #[tokio::test]
    async fn path_styles_and_cookies_arrive_as_sent() {
        let client = client().await;
        let input = PathStylesInput {
            label: 5,
            labels: vec!["a".into(), "b c".into()],
            matrix: "m;1".into(),
            matrices: vec![3, 4],
            ids: vec![7, 8],
        };
        let want = format!(
            "{} {:?} {} {:?} {:?}",
            input.label, input.labels, input.matrix, input.matrices, input.ids
        );
        match client.path_styles(input).await.unwrap() {
            PathStylesResponse::Ok(Json(p)) => assert_eq!(p.name, want),
            other => panic!("{other:?}"),
        }
        let input = GetOwnerPetInput {
            owner_id: "o1".into(),
            pet_id: 9,
            x_trace: "t".into(),
            session_hint: Some("warm".into()),
            flavours: Some(vec!["salty".into(), "sweet".into()]),
        };
        let want = format!("{:?} {:?}", input.session_hint, input.flavours);
        match client.get_owner_pet(input).await.unwrap() {
            GetOwnerPetResponse::Ok(Json(p)) => assert_eq!((p.id, p.name), (9, want)),
            other => panic!("{other:?}"),
        }
    }

    /// The operations the other tests leave out: a body beside path and header parameters
    /// (the key the caller gave, sent as given), a path parameter written like a matrix, and a
    /// path parameter named like a query one.
    #[tokio::test]
    async fn a_body_with_headers_and_the_odd_path_parameters_arrive_as_sent() {
        let client = client().await;
        let input = CreateOwnerPetInput {
            owner_id: "o 2".into(),
            idempotency_key: Some("key-1".into()),
            x_trace: "trace".into(),
            body: fixture_parameters::models::CreatePetRequest {
                name: "Rex".into(),
                r#type: Some("dog".into()),
            },
        };
        match client.create_owner_pet(input).await.unwrap() {
            CreateOwnerPetResponse::Ok(Json(p)) => assert_eq!(
                (p.owner_id.as_str(), p.name.as_str(), p.r#type.as_deref()),
                ("o 2", "Rex Some(\"key-1\") trace", Some("dog"))
            ),
            other => panic!("{other:?}"),
        }
        let cells = GridInput {
            cells: "1,2;3,4".into(),
        };
        let GridResponse::Ok(Json(p)) = client.grid(cells).await.unwrap();
        assert_eq!(p.name, "1,2;3,4");
        let named = NamedTwiceInput {
            name: "twice & more".into(),
        };
        let NamedTwiceResponse::Ok(Json(p)) = client.named_twice(named).await.unwrap();
        assert_eq!(p.name, "twice & more");
    }
}
