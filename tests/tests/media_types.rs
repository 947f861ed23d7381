//! Media types beyond JSON on the wire, through the generated crate of
//! `codegen/tests/fixtures/media_types.yaml`: a vendor `+json` type, a form-urlencoded body
//! (typed and validated like JSON), text/plain and raw bytes of any other type.

use std::sync::Arc;

use fixture_media_types::media::*;
use fixture_media_types::models::{Note, Problem};
use fixture_media_types::runtime::{Accept, Credentials, Hooks, Representation, RequestError};
use fixture_media_types::{Binary, Json, app};
use poem::http::{Method, StatusCode};
use poem::{Endpoint, Request};
use poem_openapi::payload::PlainText;

struct Server;

impl Hooks for Server {
    type Principal = ();
    async fn authenticate(&self, _credentials: Credentials) -> Result<(), RequestError> {
        Ok(())
    }
    fn render_error(&self, error: RequestError, _request: &poem::Request) -> poem::Response {
        let details = serde_json::to_string(&error.details).unwrap_or_default();
        poem::Response::builder().status(error.status).body(details)
    }
}

impl MediaApi for Server {
    async fn vendor_json(&self, input: VendorJsonInput) -> VendorJsonResponse {
        // The typed headers, from the note: what a client reads back as i32, i64, bool and f64.
        let stars = input.body.stars.unwrap_or(0);
        let tags = input.body.tags.as_ref().map_or(0, Vec::len);
        VendorJsonResponse::Ok(
            Json(input.body),
            5 - stars as i32,
            Some(tags as i64 + (1 << 40)),
            Some(stars > 3),
            (stars > 0).then(|| stars as f64 / 2.0),
        )
    }
    async fn form(&self, input: FormInput) -> FormResponse {
        let note = match input.body {
            Representation::Primary(note) => note,
            // The document's other media type reaches the handler as written.
            Representation::Other { media_type, bytes } => Note {
                title: format!("{media_type}: {}", String::from_utf8_lossy(&bytes)),
                stars: None,
                tags: None,
            },
        };
        FormResponse::Ok(written(&input.accept, FormResponse::OK_MEDIA_TYPES, note))
    }
    async fn text(&self, input: TextInput) -> TextResponse {
        TextResponse::Ok(PlainText(input.body.to_uppercase()))
    }
    async fn image(&self, input: ImageInput) -> ImageResponse {
        ImageResponse::Ok(Binary(input.body))
    }
    async fn either(&self, input: EitherInput) -> EitherResponse {
        EitherResponse::Ok(Json(input.body))
    }
    async fn markdown(&self, input: MarkdownInput) -> MarkdownResponse {
        MarkdownResponse::Ok(Binary(format!("<p>{}</p>", input.body).into_bytes()))
    }
    async fn blob(&self, input: BlobInput) -> BlobResponse {
        // Every test sends these bytes: a body changed on the way fails the call.
        assert_eq!(input.body, b"\x00\x01");
        BlobResponse::NoContent
    }
    async fn anything(&self, input: AnythingInput) -> AnythingResponse {
        assert_eq!(input.body, b"\x00any bytes");
        AnythingResponse::NoContent
    }
    async fn get_note(&self, input: GetNoteInput) -> GetNoteResponse {
        match input.title.as_str() {
            "gone" => GetNoteResponse::Status4xx(
                StatusCode::GONE,
                Json(Problem {
                    title: "gone".into(),
                    status: Some(410),
                }),
            ),
            // A handler that writes a media type the document does not list for the status.
            "csv" => GetNoteResponse::Ok(Representation::Other {
                media_type: "text/csv".into(),
                bytes: b"title\ncsv\n".to_vec(),
            }),
            _ => {
                let note = Note {
                    title: input.title,
                    stars: None,
                    tags: None,
                };
                GetNoteResponse::Ok(written(
                    &input.accept,
                    GetNoteResponse::OK_MEDIA_TYPES,
                    note,
                ))
            }
        }
    }
}

/// The note as XML when the client prefers it among `types`, else the typed JSON value (which
/// the glue writes in the JSON type the client prefers).
fn written(accept: &Accept, types: &[&str], note: Note) -> Representation<Json<Note>> {
    match accept.preferred(types) {
        Some(xml @ "application/xml") => Representation::Other {
            media_type: xml.to_string(),
            bytes: format!("<note><title>{}</title></note>", note.title).into_bytes(),
        },
        _ => Representation::Primary(Json(note)),
    }
}

async fn call(method: Method, uri: &str, content_type: &str, body: &[u8]) -> (StatusCode, String) {
    let (status, bytes) = call_bytes(method, uri, content_type, body).await;
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

async fn call_bytes(
    method: Method,
    uri: &str,
    content_type: &str,
    body: &[u8],
) -> (StatusCode, Vec<u8>) {
    let req = Request::builder()
        .method(method)
        .uri(uri.parse().expect("uri"))
        .content_type(content_type)
        .body(body.to_vec());
    let resp = match app(Arc::new(Server)).call(req).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    };
    let status = resp.status();
    (status, resp.into_body().into_vec().await.expect("body"))
}

#[tokio::test]
async fn each_media_type_is_read_as_declared() {
    use Method as M;
    let note = r#"{"title":"a","stars":2,"tags":["x","y"]}"#;
    assert_eq!(
        call(
            M::POST,
            "/vendor",
            "application/vnd.example+json",
            note.as_bytes()
        )
        .await,
        (StatusCode::OK, note.to_string())
    );
    // A form: fields read as their declared types, a repeated field of an array property.
    assert_eq!(
        call(
            M::POST,
            "/form",
            "application/x-www-form-urlencoded",
            b"title=a&stars=2&tags=x&tags=y"
        )
        .await,
        (StatusCode::OK, note.to_string())
    );
    // ... and validated like JSON, every field named.
    let (status, details) = call(
        M::POST,
        "/form",
        "application/x-www-form-urlencoded",
        b"title=&stars=many",
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let details: serde_json::Value = serde_json::from_str(&details).expect("details");
    assert_eq!(
        details
            .as_object()
            .map(|d| d.keys().cloned().collect::<Vec<_>>()),
        Some(vec!["stars".to_string(), "title".to_string()])
    );
    // The document's other media type for this body reaches the handler as its bytes, with
    // the request's Content-Type; a type the document does not list is a 415.
    assert_eq!(
        call(
            M::POST,
            "/form",
            "application/xml; charset=utf-8",
            b"<note/>"
        )
        .await,
        (
            StatusCode::OK,
            r#"{"title":"application/xml; charset=utf-8: <note/>"}"#.to_string()
        )
    );
    assert_eq!(
        call(M::POST, "/form", "text/csv", b"title\na").await.0,
        StatusCode::UNSUPPORTED_MEDIA_TYPE
    );
    assert_eq!(
        call(M::POST, "/text", "text/plain; charset=utf-8", b"hello").await,
        (StatusCode::OK, "HELLO".to_string())
    );
    let png = [0x89u8, b'P', b'N', b'G', 0, 1];
    assert_eq!(
        call_bytes(M::PUT, "/image", "image/png", &png).await,
        (StatusCode::OK, png.to_vec())
    );
}

#[tokio::test]
async fn a_body_without_a_media_type_is_bytes_of_any_type() {
    for content_type in ["application/x-custom", "text/plain", "application/json"] {
        let (status, _, body) = answer(
            Method::PUT,
            "/anything",
            None,
            content_type,
            b"\x00any bytes",
        )
        .await;
        assert_eq!(status, StatusCode::NO_CONTENT, "{content_type}: {body}");
    }
}

#[tokio::test]
async fn an_optional_body_that_is_not_json_is_taken_as_required() {
    // The handler's input is the text itself, not an Option (the generator warns).
    assert_eq!(
        call(Method::POST, "/markdown", "text/plain", b"*hi*").await,
        (StatusCode::OK, "<p>*hi*</p>".to_string())
    );
    assert_eq!(
        call(
            Method::PUT,
            "/blob",
            "application/octet-stream",
            b"\x00\x01"
        )
        .await
        .0,
        StatusCode::NO_CONTENT
    );
    // Left out, it is refused as a missing body would be, never handed over as empty.
    for (method, uri) in [(Method::POST, "/markdown"), (Method::PUT, "/blob")] {
        let req = Request::builder()
            .method(method)
            .uri(uri.parse().expect("uri"))
            .finish();
        let resp = match app(Arc::new(Server)).call(req).await {
            Ok(r) => r,
            Err(e) => e.into_response(),
        };
        assert_eq!(resp.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE, "{uri}");
    }
}

#[tokio::test]
async fn a_body_listed_as_json_and_as_a_form_is_read_as_its_content_type_says() {
    let note = r#"{"title":"a","stars":2,"tags":["x","y"]}"#;
    let ok = (StatusCode::OK, note.to_string());
    assert_eq!(
        call(Method::POST, "/either", "application/json", note.as_bytes()).await,
        ok
    );
    // ASP.NET's `text/json` is JSON too.
    assert_eq!(
        call(Method::POST, "/either", "text/json", note.as_bytes()).await,
        ok
    );
    let form = b"title=a&stars=2&tags=x&tags=y";
    assert_eq!(
        call(
            Method::POST,
            "/either",
            "application/x-www-form-urlencoded; charset=utf-8",
            form
        )
        .await,
        ok
    );
    // Each is validated as itself: a form's bad field and a JSON body's are both named.
    let (status, details) = call(
        Method::POST,
        "/either",
        "application/x-www-form-urlencoded",
        b"title=&stars=2",
    )
    .await;
    assert_eq!(
        (status, details.contains("title")),
        (StatusCode::BAD_REQUEST, true)
    );
    let (status, details) = call(
        Method::POST,
        "/either",
        "application/json",
        b"{\"stars\":1}",
    )
    .await;
    assert_eq!(
        (status, details.contains("title")),
        (StatusCode::BAD_REQUEST, true)
    );
    // A form sent as JSON is not guessed at.
    assert_eq!(
        call(Method::POST, "/either", "application/json", form)
            .await
            .0,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        call(Method::POST, "/either", "text/plain", form).await.0,
        StatusCode::UNSUPPORTED_MEDIA_TYPE
    );
}

/// `(status, Content-Type, body)` of a request with `Accept: accept` (none when `None`).
async fn answer(
    method: Method,
    uri: &str,
    accept: Option<&str>,
    content_type: &str,
    body: &[u8],
) -> (StatusCode, String, String) {
    let mut req = Request::builder()
        .method(method)
        .uri(uri.parse().expect("uri"))
        .content_type(content_type);
    if let Some(accept) = accept {
        req = req.header("accept", accept);
    }
    let resp = match app(Arc::new(Server)).call(req.body(body.to_vec())).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    };
    let status = resp.status();
    let content_type = resp.content_type().unwrap_or_default().to_string();
    let bytes = resp.into_body().into_vec().await.expect("body");
    (
        status,
        content_type,
        String::from_utf8_lossy(&bytes).into_owned(),
    )
}

#[tokio::test]
async fn a_response_listed_in_several_json_types_is_written_in_the_one_accept_prefers() {
    let note = r#"{"title":"a"}"#;
    for (accept, expected) in [
        // No Accept, or one that admits everything: the primary JSON type.
        (None, "application/json"),
        (Some("*/*"), "application/json"),
        (
            Some("application/vnd.example.v2+json"),
            "application/vnd.example.v2+json",
        ),
        (Some("text/json"), "text/json"),
        (
            Some("application/json;q=0.5, application/vnd.example.v2+json;q=0.8"),
            "application/vnd.example.v2+json",
        ),
        (
            Some("*/*, application/json;q=0"),
            "application/vnd.example.v2+json",
        ),
        // Neither is listed: Accept is disregarded (RFC 9110 12.5.1), the primary type written.
        (Some("text/html"), "application/json"),
    ] {
        assert_eq!(
            answer(Method::GET, "/notes/a", accept, "", b"").await,
            (StatusCode::OK, expected.to_string(), note.to_string()),
            "Accept: {accept:?}"
        );
    }
    // A status matched by its range is written in that range's type.
    let (status, content_type, body) = answer(
        Method::GET,
        "/notes/gone",
        Some("application/json"),
        "",
        b"",
    )
    .await;
    assert_eq!(
        (status, content_type.as_str()),
        (StatusCode::GONE, "application/problem+json")
    );
    assert_eq!(body, r#"{"title":"gone","status":410}"#);
}

#[tokio::test]
async fn a_listed_type_the_payload_cannot_write_is_written_by_the_handler_when_accept_prefers_it() {
    let json = r#"{"title":"a"}"#.to_string();
    let xml = "<note><title>a</title></note>".to_string();
    for (accept, expected) in [
        (Some("application/xml"), ("application/xml", &xml)),
        (
            Some("application/json;q=0.5, application/xml"),
            ("application/xml", &xml),
        ),
        (
            Some("application/xml;q=0.5, application/json"),
            ("application/json", &json),
        ),
        // Everything admitted: the payload's own types come first.
        (Some("*/*"), ("application/json", &json)),
        (None, ("application/json", &json)),
        (
            Some("text/json, application/xml;q=0.9"),
            ("text/json", &json),
        ),
    ] {
        let (status, content_type, body) = answer(Method::GET, "/notes/a", accept, "", b"").await;
        assert_eq!(
            (status, content_type.as_str(), &body),
            (StatusCode::OK, expected.0, expected.1),
            "Accept: {accept:?}"
        );
    }
    // A form body answered in XML: the operation without any other negotiated type.
    let (status, content_type, body) = answer(
        Method::POST,
        "/form",
        Some("application/xml"),
        "application/x-www-form-urlencoded",
        b"title=b",
    )
    .await;
    assert_eq!(
        (status, content_type.as_str(), body.as_str()),
        (
            StatusCode::OK,
            "application/xml",
            "<note><title>b</title></note>"
        )
    );
    // A media type the document does not list for the status is never sent.
    let (status, _, body) = answer(Method::GET, "/notes/csv", Some("text/csv"), "", b"").await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    assert!(!body.contains("csv"), "{body}");
}

#[tokio::test]
async fn a_response_is_written_in_the_media_type_the_document_names() {
    let note = r#"{"title":"a"}"#;
    let (_, content_type, _) = answer(
        Method::POST,
        "/vendor",
        None,
        "application/vnd.example+json",
        note.as_bytes(),
    )
    .await;
    assert_eq!(content_type, "application/vnd.example+json");
    // Bytes of a type the document names: text/html, not application/octet-stream.
    let (_, content_type, body) = answer(
        Method::POST,
        "/markdown",
        Some("text/html"),
        "text/plain",
        b"x",
    )
    .await;
    assert_eq!(
        (content_type.as_str(), body.as_str()),
        ("text/html", "<p>x</p>")
    );
    // A wildcard names no type: the payload's own stands.
    let (_, content_type, _) = answer(Method::PUT, "/image", None, "image/png", b"\x01").await;
    assert_eq!(content_type, "application/octet-stream");
    // JSON listed once as itself keeps the payload's own header.
    let (_, content_type, _) = answer(
        Method::POST,
        "/either",
        None,
        "application/json",
        note.as_bytes(),
    )
    .await;
    assert_eq!(content_type, "application/json; charset=utf-8");
}

/// The fixture's own client against its server on a real port: each body written in its media
/// type by the client, read by the server, answered, and read back into the response enum.
#[path = "support/on_a_port.rs"]
mod on_a_port;

mod round_trip {
    use super::*;
    use fixture_media_types::client::Client;
    use fixture_media_types::runtime::client::Config;

    async fn client() -> Client {
        Client::new(Config::new(on_a_port::serve(app(Arc::new(Server))).await))
    }

    fn note(title: &str) -> Note {
        Note {
            title: title.into(),
            stars: Some(4),
            tags: Some(vec!["a b".into(), "c&d".into()]),
        }
    }

    fn accept(value: Option<&str>) -> Accept {
        Accept(value.map(|v| v.parse().unwrap()))
    }

    #[tokio::test]
    async fn every_body_media_type_goes_and_comes_back() {
        let client = client().await;
        let VendorJsonResponse::Ok(Json(n), stars_left, revision, cached, score) = client
            .vendor_json(VendorJsonInput {
                body: note("vendor"),
            })
            .await
            .unwrap();
        assert_eq!(n, note("vendor"));
        // Response headers come back as the types their schemas declare.
        assert_eq!(
            (stars_left, revision, cached, score),
            (1, Some(2 + (1 << 40)), Some(true), Some(2.0))
        );
        let form = FormInput {
            body: Representation::Primary(note("form")),
            accept: accept(None),
        };
        match client.form(form).await.unwrap() {
            FormResponse::Ok(Representation::Primary(Json(n))) => assert_eq!(n, note("form")),
            other => panic!("{other:?}"),
        }
        let TextResponse::Ok(PlainText(t)) = client
            .text(TextInput {
                body: "shout é".into(),
            })
            .await
            .unwrap();
        assert_eq!(t, "SHOUT É");
        let png = b"\x89PNG\r\n\x1a\n\x00".to_vec();
        let ImageResponse::Ok(Binary(b)) = client
            .image(ImageInput { body: png.clone() })
            .await
            .unwrap();
        assert_eq!(b, png);
        let MarkdownResponse::Ok(Binary(b)) = client
            .markdown(MarkdownInput {
                body: "*hi*".into(),
            })
            .await
            .unwrap();
        assert_eq!(b, b"<p>*hi*</p>");
        let anything = AnythingInput {
            body: b"\x00any bytes".to_vec(),
        };
        assert!(matches!(
            client.anything(anything).await.unwrap(),
            AnythingResponse::NoContent
        ));
        let EitherResponse::Ok(Json(n)) = client
            .either(EitherInput {
                body: note("either"),
            })
            .await
            .unwrap();
        assert_eq!(n, note("either"));
        let blob = BlobInput {
            body: b"\x00\x01".to_vec(),
        };
        assert!(matches!(
            client.blob(blob).await.unwrap(),
            BlobResponse::NoContent
        ));
    }

    #[tokio::test]
    async fn another_listed_media_type_goes_as_bytes_and_comes_back_as_bytes() {
        let client = client().await;
        let xml = FormInput {
            body: Representation::Other {
                media_type: "application/xml".into(),
                bytes: b"<note/>".to_vec(),
            },
            accept: accept(Some("application/xml")),
        };
        match client.form(xml).await.unwrap() {
            FormResponse::Ok(Representation::Other { media_type, bytes }) => {
                assert_eq!(media_type, "application/xml");
                assert_eq!(
                    bytes,
                    b"<note><title>application/xml: <note/></title></note>"
                );
            }
            other => panic!("{other:?}"),
        }
        let gone = GetNoteInput {
            title: "gone".into(),
            accept: accept(None),
        };
        match client.get_note(gone).await.unwrap() {
            GetNoteResponse::Status4xx(status, Json(p)) => {
                assert_eq!((status.as_u16(), p.status), (410, Some(410)))
            }
            other => panic!("{other:?}"),
        }
    }

    /// A header whose value is not of its declared type is an invalid response that keeps what
    /// came; an absent optional one is `None`.
    #[tokio::test]
    async fn a_typed_header_that_does_not_parse_is_an_invalid_response() {
        use fixture_media_types::runtime::client::Error;
        use poem::{IntoResponse, handler};

        #[handler]
        fn many() -> poem::Response {
            poem::Response::builder()
                .content_type("application/vnd.example+json")
                .header("X-Stars-Left", "many")
                .body(r#"{"title":"t"}"#)
        }
        #[handler]
        fn bare() -> poem::Response {
            poem::web::Json(serde_json::json!({"title": "t"}))
                .with_content_type("application/vnd.example+json")
                .with_header("X-Stars-Left", "2")
                .into_response()
        }
        let input = || VendorJsonInput {
            body: note("vendor"),
        };
        let client = Client::new(Config::new(on_a_port::serve(many).await));
        match client.vendor_json(input()).await {
            Err(Error::InvalidResponse {
                received, reason, ..
            }) => {
                assert!(reason.contains("X-Stars-Left"), "{reason}");
                assert_eq!(received.body, br#"{"title":"t"}"#.to_vec());
            }
            other => panic!("{other:?}"),
        }
        let client = Client::new(Config::new(on_a_port::serve(bare).await));
        let VendorJsonResponse::Ok(_, stars_left, revision, cached, score) =
            client.vendor_json(input()).await.unwrap();
        assert_eq!((stars_left, revision, cached, score), (2, None, None, None));
    }

    /// A body that parses into its type but breaks a keyword of its schema (`title` has
    /// `minLength: 1`, `stars` is an integer) is an invalid response naming every field, as a
    /// request body would be refused.
    #[tokio::test]
    async fn a_body_that_breaks_its_schema_is_an_invalid_response() {
        use fixture_media_types::runtime::client::Error;
        use poem::{IntoResponse, handler};

        #[handler]
        fn empty() -> poem::Response {
            poem::web::Json(serde_json::json!({"title": "", "stars": 1.5}))
                .with_content_type("application/vnd.example+json")
                .with_header("X-Stars-Left", "2")
                .into_response()
        }
        let client = Client::new(Config::new(on_a_port::serve(empty).await));
        let input = VendorJsonInput {
            body: note("vendor"),
        };
        match client.vendor_json(input).await {
            Err(Error::InvalidResponse { reason, .. }) => {
                assert!(reason.contains("title"), "{reason}");
                assert!(reason.contains("stars"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
    }
}
