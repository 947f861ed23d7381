//! Responses written in the media type the document lists, chosen by the request's `Accept`.
//!
//! A handler returns one typed value per status; the payload types write it in their usual
//! media type (`application/json`, `text/plain`, `application/octet-stream`). When the document
//! lists another name for that representation (`application/problem+json`, a vendor `+json`
//! type, `image/png`), or several interchangeable ones (JSON media types with the same schema),
//! the generator gives the operation a table of [`ResponseMedia`] and the glue wraps the
//! handler's answer in [`Negotiated`], which sets `Content-Type` to the listed type the request's
//! `Accept` prefers. The bytes are the same whichever is chosen.
//!
//! When `Accept` admits none of the listed types (or is absent), the first one is written: RFC
//! 9110 §12.5.1 lets a server disregard `Accept` rather than answer 406, and a 406 is not a
//! status the document declares.
//!
//! A response the document also lists in media types its payload cannot write (XML beside
//! JSON, as Swagger's petstore does) is the handler's to write: its variant holds a
//! [`crate::Representation`], the operation's input carries the request's [`Accept`], and a
//! handler that answers `Representation::Other { media_type, bytes }` keeps the `Content-Type`
//! it chose, provided the document lists it for that status (else the answer is a 500: the
//! handler broke the contract).

use poem::http::{HeaderValue, header};
use poem::{IntoResponse, Request, RequestBody, Response};
use poem_openapi::registry::{MetaResponses, Registry};

/// The media types of one declared response.
#[derive(Debug, Clone, Copy)]
pub struct ResponseMedia {
    /// The key under `responses`: `200`, `4XX` or `default`.
    pub status: &'static str,
    /// The types its payload's value may be written as, in order of preference (the first when
    /// `Accept` admits none). Empty: written as its payload writes it.
    pub types: &'static [&'static str],
    /// Every type the document lists for it (`type/*` and `*/*` are ranges): those a handler
    /// may write itself with [`crate::Representation::Other`].
    pub listed: &'static [&'static str],
}

/// The request's `Accept`, in the input of an operation whose handler may write a response in
/// a media type of its own choosing ([`crate::Representation::Other`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Accept(pub Option<HeaderValue>);

impl Accept {
    /// The type of `types` the request's `Accept` rates highest (the earlier one on a tie);
    /// `None` when the request has no `Accept` or it admits none of them. The generated
    /// `<STATUS>_MEDIA_TYPES` constants list a response's types, those of its payload first.
    pub fn preferred<'t>(&self, types: &[&'t str]) -> Option<&'t str> {
        preferred(self.0.as_ref().and_then(|a| a.to_str().ok()), types)
    }
}

/// Marks a response a handler wrote in a media type of its own choosing: [`Negotiated`] keeps
/// its `Content-Type`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ChosenByHandler;

/// The request's `Accept` header, as the glue hands it to [`Negotiated`].
pub struct AcceptHeader(pub Option<HeaderValue>);

impl<'a> poem_openapi::ApiExtractor<'a> for AcceptHeader {
    const TYPES: &'static [poem_openapi::ApiExtractorType] =
        &[poem_openapi::ApiExtractorType::PoemExtractor];
    type ParamType = ();
    type ParamRawType = ();

    async fn from_request(
        request: &'a Request,
        _body: &mut RequestBody,
        _param_opts: poem_openapi::ExtractParamOptions<Self::ParamType>,
    ) -> poem::Result<Self> {
        Ok(AcceptHeader(request.headers().get(header::ACCEPT).cloned()))
    }
}

/// A handler's response with the media types its statuses may be written in: documented as the
/// response itself, written with the `Content-Type` [`choose`] picks.
pub struct Negotiated<R> {
    pub response: R,
    pub accept: Option<HeaderValue>,
    /// Every declared response of the operation (so that a status is matched as the document
    /// matches it: its own code, then its range, then `default`).
    pub media: &'static [ResponseMedia],
}

impl<R: poem_openapi::ApiResponse> poem_openapi::ApiResponse for Negotiated<R> {
    fn meta() -> MetaResponses {
        R::meta()
    }

    fn register(registry: &mut Registry) {
        R::register(registry);
    }
}

impl<R: IntoResponse> IntoResponse for Negotiated<R> {
    fn into_response(self) -> Response {
        let mut response = self.response.into_response();
        let declared = declared(self.media, response.status().as_u16());
        if response.extensions().get::<ChosenByHandler>().is_some() {
            let written = response.content_type().unwrap_or_default();
            if declared.is_some_and(|m| crate::media_listed(written, m.listed)) {
                return response;
            }
            // The handler broke the contract; nothing it wrote is sent.
            return Response::builder()
                .status(poem::http::StatusCode::INTERNAL_SERVER_ERROR)
                .content_type("text/plain; charset=utf-8")
                .body("the response is in a media type the API does not declare for its status");
        }
        let Some(types) = declared.map(|m| m.types).filter(|t| !t.is_empty()) else {
            return response;
        };
        let accept = self.accept.as_ref().and_then(|a| a.to_str().ok());
        if let Some(chosen) = choose(accept, types)
            && let Ok(value) = HeaderValue::from_str(chosen)
        {
            response.headers_mut().insert(header::CONTENT_TYPE, value);
        }
        response
    }
}

/// The response the document declares for `status`: its own code, else its range (`4XX`),
/// else `default`.
fn declared(media: &'static [ResponseMedia], status: u16) -> Option<&'static ResponseMedia> {
    let code = status.to_string();
    let range = format!("{}XX", status / 100);
    [code.as_str(), range.as_str(), "default"]
        .iter()
        .find_map(|key| media.iter().find(|m| m.status == *key))
}

/// The type of `types` that `accept` prefers ([`preferred`]); the first type when `accept` is
/// absent or admits none; `None` only when `types` is empty.
pub fn choose<'t>(accept: Option<&str>, types: &[&'t str]) -> Option<&'t str> {
    preferred(accept, types).or(types.first().copied())
}

/// The type of `types` that `accept` prefers: the highest quality, the earlier type on a tie,
/// each type rated by the most specific range that matches it (`a/b`, then `a/*`, then `*/*`;
/// parameters other than `q` are not compared). `None` when `accept` is absent or admits none.
fn preferred<'t>(accept: Option<&str>, types: &[&'t str]) -> Option<&'t str> {
    let ranges: Vec<Range> = accept.map(parse_accept).unwrap_or_default();
    let mut best: Option<(&'t str, u16)> = None;
    for t in types {
        let (ty, sub) = essence(t);
        let rated = ranges
            .iter()
            .filter_map(|r| r.specificity(&ty, &sub).map(|s| (s, r.quality)))
            .max_by_key(|(s, _)| *s);
        if let Some((_, q)) = rated
            && q > 0
            && best.is_none_or(|(_, bq)| q > bq)
        {
            best = Some((t, q));
        }
    }
    best.map(|(t, _)| t)
}

/// One media range of an `Accept` header; quality in thousandths.
struct Range {
    ty: String,
    sub: String,
    quality: u16,
}

impl Range {
    /// How specifically this range names `ty/sub` (2 exact, 1 `ty/*`, 0 `*/*`), if at all.
    fn specificity(&self, ty: &str, sub: &str) -> Option<u8> {
        match (self.ty.as_str(), self.sub.as_str()) {
            (t, s) if t == ty && s == sub => Some(2),
            (t, "*") if t == ty => Some(1),
            ("*", "*") => Some(0),
            _ => None,
        }
    }
}

/// The ranges of an `Accept` header. A range that is not `type/subtype`, or whose `q` is not a
/// number from 0 to 1 with at most three decimals, is left out.
fn parse_accept(accept: &str) -> Vec<Range> {
    accept
        .split(',')
        .filter_map(|item| {
            let mut parts = item.split(';');
            let (ty, sub) = essence(parts.next()?);
            if ty.is_empty() || sub.is_empty() {
                return None;
            }
            let mut quality = 1000;
            for p in parts {
                let Some((k, v)) = p.split_once('=') else {
                    continue;
                };
                if k.trim().eq_ignore_ascii_case("q") {
                    quality = parse_quality(v.trim())?;
                }
            }
            Some(Range { ty, sub, quality })
        })
        .collect()
}

/// `0`, `0.5`, `1.000` … in thousandths (RFC 9110 §12.4.2).
fn parse_quality(v: &str) -> Option<u16> {
    let (int, frac) = v.split_once('.').unwrap_or((v, ""));
    if frac.len() > 3 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let frac_value: u16 = format!("{frac:0<3}").parse().ok()?;
    match int {
        "0" => Some(frac_value),
        "1" if frac_value == 0 => Some(1000),
        _ => None,
    }
}

/// A media type's `type` and `subtype`, lower-cased, without parameters.
fn essence(media_type: &str) -> (String, String) {
    let e = media_type.split(';').next().unwrap_or_default().trim();
    let (ty, sub) = e.split_once('/').unwrap_or((e, ""));
    (
        ty.trim().to_ascii_lowercase(),
        sub.trim().to_ascii_lowercase(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const JSON_OR_VENDOR: &[&str] = &["application/json", "application/vnd.example+json"];

    #[test]
    fn the_first_type_without_accept_or_when_nothing_is_admitted() {
        assert_eq!(choose(None, JSON_OR_VENDOR), Some("application/json"));
        assert_eq!(choose(Some(""), JSON_OR_VENDOR), Some("application/json"));
        assert_eq!(
            choose(Some("application/xml"), JSON_OR_VENDOR),
            Some("application/json")
        );
        // q=0 says "not this one"; with nothing else admitted the first is still written.
        assert_eq!(
            choose(Some("application/json;q=0"), &["application/json"]),
            Some("application/json")
        );
        assert_eq!(choose(Some("*/*"), &[]), None);
    }

    #[test]
    fn the_highest_quality_wins_then_the_document_order() {
        assert_eq!(
            choose(Some("application/vnd.example+json"), JSON_OR_VENDOR),
            Some("application/vnd.example+json")
        );
        assert_eq!(
            choose(
                Some("application/json;q=0.4, application/vnd.example+json;q=0.5"),
                JSON_OR_VENDOR
            ),
            Some("application/vnd.example+json")
        );
        assert_eq!(
            choose(Some("*/*"), JSON_OR_VENDOR),
            Some("application/json")
        );
        assert_eq!(
            choose(Some("application/*"), JSON_OR_VENDOR),
            Some("application/json")
        );
    }

    #[test]
    fn the_most_specific_range_rates_a_type() {
        // `application/json;q=0` excludes JSON even though `*/*` admits everything.
        assert_eq!(
            choose(Some("*/*, application/json;q=0"), JSON_OR_VENDOR),
            Some("application/vnd.example+json")
        );
        assert_eq!(
            choose(
                Some("Application/VND.example+JSON; charset=utf-8; q=0.9, application/*;q=0.1"),
                JSON_OR_VENDOR
            ),
            Some("application/vnd.example+json")
        );
    }

    #[test]
    fn malformed_ranges_and_qualities_are_left_out() {
        for accept in [
            "application/vnd.example+json;q=2, application/json;q=0.1",
            "application/vnd.example+json;q=0.1234, application/json;q=0.1",
            "application/vnd.example+json;q=x, application/json;q=0.1",
            "vnd.example, application/json;q=0.1",
        ] {
            assert_eq!(
                choose(Some(accept), JSON_OR_VENDOR),
                Some("application/json"),
                "{accept}"
            );
        }
        assert_eq!(parse_quality("0.5"), Some(500));
        assert_eq!(parse_quality("1.000"), Some(1000));
        assert_eq!(parse_quality("1.001"), None);
        assert_eq!(parse_quality("0"), Some(0));
    }

    #[test]
    fn a_status_matches_its_code_then_its_range_then_default() {
        const MEDIA: &[ResponseMedia] = &[
            ResponseMedia {
                status: "200",
                types: &[],
                listed: &["application/json", "application/xml"],
            },
            ResponseMedia {
                status: "4XX",
                types: &["application/problem+json"],
                listed: &["application/problem+json"],
            },
            ResponseMedia {
                status: "404",
                types: &["application/vnd.missing+json"],
                listed: &["application/vnd.missing+json"],
            },
            ResponseMedia {
                status: "default",
                types: &["application/vnd.error+json"],
                listed: &["application/vnd.error+json"],
            },
        ];
        let status = |s| declared(MEDIA, s).map(|m| m.status);
        assert_eq!(status(200), Some("200"));
        assert_eq!(status(404), Some("404"));
        assert_eq!(status(409), Some("4XX"));
        assert_eq!(status(503), Some("default"));
        assert_eq!(declared(&MEDIA[..1], 404).map(|m| m.status), None);
    }

    #[test]
    fn a_handler_learns_which_type_accept_prefers_and_nothing_without_one() {
        const TYPES: &[&str] = &["application/json", "application/xml"];
        let accept = |v: &'static str| Accept(Some(HeaderValue::from_static(v)));
        assert_eq!(Accept(None).preferred(TYPES), None);
        assert_eq!(accept("text/html").preferred(TYPES), None);
        assert_eq!(
            accept("application/xml").preferred(TYPES),
            Some("application/xml")
        );
        assert_eq!(accept("*/*").preferred(TYPES), Some("application/json"));
        assert_eq!(
            accept("application/json;q=0.5, application/xml").preferred(TYPES),
            Some("application/xml")
        );
    }
}
