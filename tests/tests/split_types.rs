//! A document whose types are crates of their own (`codegen/tests/fixtures/split_types.yaml`,
//! generated with 3 types per crate): the server sees the same paths as with one crate, and a
//! request is read, validated and answered across the crates, every violation named. Inline
//! schemas written the same share one type.

use fixture_split_types::models::{
    Address, CountShipmentsOkBody, CountStopsOkBody, Leg, Mode, NewShipment, Route, Shipment, Stop,
};
use fixture_split_types::runtime::{Credentials, Hooks, RequestError};
use fixture_split_types::shipments::*;
use fixture_split_types::{Json, app};
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

impl ShipmentsApi for Server {
    async fn create_shipment(&self, input: CreateShipmentInput) -> CreateShipmentResponse {
        CreateShipmentResponse::Created(Json(Shipment {
            id: "shp_1".into(),
            shipment: input.body,
            tracking: None,
        }))
    }

    /// A route of two stops, the leg between them travelled the way asked for.
    async fn get_route(&self, input: GetRouteInput) -> GetRouteResponse {
        let at = |line1: &str| Address {
            line1: line1.into(),
            country: "NL".into(),
        };
        GetRouteResponse::Ok(Json(Route {
            first: Stop {
                address: at(&input.shipment_id),
                legs: Some(vec![Leg {
                    mode: input.mode.unwrap_or(Mode::Road),
                    to: Stop {
                        address: at("Depot"),
                        legs: None,
                    },
                }]),
            },
            weight: None,
        }))
    }

    async fn count_shipments(&self, _input: CountShipmentsInput) -> CountShipmentsResponse {
        CountShipmentsResponse::Ok(Json(CountShipmentsOkBody { count: 2 }))
    }

    /// The same type as `count_shipments` answers: the two inline schemas are written the same.
    async fn count_routes(&self, _input: CountRoutesInput) -> CountRoutesResponse {
        CountRoutesResponse::Ok(Json(CountShipmentsOkBody { count: 3 }))
    }

    /// A type of its own: its schema's description differs.
    async fn count_stops(&self, _input: CountStopsInput) -> CountStopsResponse {
        CountStopsResponse::Ok(Json(CountStopsOkBody { count: 4 }))
    }
}

async fn call(request: Request) -> (StatusCode, String) {
    let response = app(std::sync::Arc::new(Server))
        .call(request)
        .await
        .expect("answers");
    let status = response.status();
    (
        status,
        response.into_body().into_string().await.expect("text"),
    )
}

fn post(body: serde_json::Value) -> Request {
    Request::builder()
        .method(poem::http::Method::POST)
        .uri("/shipments".parse().expect("uri"))
        .content_type("application/json")
        .body(body.to_string())
}

#[tokio::test]
async fn a_body_whose_types_live_in_three_crates_is_read_and_answered() {
    let (status, body) = call(post(serde_json::json!({
        "from": {"line1": "Dam 1", "country": "NL"},
        "to": {"line1": "Rue 2", "country": "FR"},
        "parcels": [{"weight": {"grams": 1200}, "label": "books"}],
        "mode": "rail"
    })))
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let answer: serde_json::Value = serde_json::from_str(&body).expect("json");
    assert_eq!(answer["id"], "shp_1");
    assert_eq!(answer["shipment"]["parcels"][0]["weight"]["grams"], 1200);
    let read: NewShipment =
        serde_json::from_value(answer["shipment"].clone()).expect("the types read it back");
    assert_eq!(read.mode, Some(Mode::Rail));
}

#[tokio::test]
async fn violations_in_types_of_different_crates_are_named_together() {
    let (status, body) = call(post(serde_json::json!({
        "from": {"line1": "Dam 1", "country": "nl"},
        "to": {"line1": "Rue 2", "country": "FR"},
        "parcels": [{"weight": {"grams": 0}}],
        "mode": "air"
    })))
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    for field in ["from.country", "parcels[0].weight.grams", "mode"] {
        assert!(body.contains(field), "{field} not named in: {body}");
    }
}

#[tokio::test]
async fn types_that_hold_each_other_across_a_crate_boundary_are_served() {
    let request = Request::builder()
        .uri("/shipments/Dam%201/route?mode=sea".parse().expect("uri"))
        .finish();
    let (status, body) = call(request).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let route: serde_json::Value = serde_json::from_str(&body).expect("json");
    assert_eq!(route["first"]["address"]["line1"], "Dam 1");
    assert_eq!(route["first"]["legs"][0]["mode"], "sea");
    assert_eq!(route["first"]["legs"][0]["to"]["address"]["line1"], "Depot");
    let (status, body) = call(
        Request::builder()
            .uri("/shipments/x/route?mode=air".parse().expect("uri"))
            .finish(),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
}

#[tokio::test]
async fn operations_sharing_an_inline_schema_answer_through_one_type() {
    for (path, count) in [
        ("/shipments/count", 2),
        ("/routes/count", 3),
        ("/stops/count", 4),
    ] {
        let (status, body) =
            call(Request::builder().uri(path.parse().expect("uri")).finish()).await;
        assert_eq!(status, StatusCode::OK, "{path}: {body}");
        assert_eq!(body, format!("{{\"count\":{count}}}"), "{path}");
    }
}
