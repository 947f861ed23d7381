//! Every OpenAPI 3.0 security scheme kind on the wire, through the generated crate of
//! `codegen/tests/fixtures/security_schemes.yaml`: which requirement alternative matched, with
//! which credentials and scopes, reaches `Hooks::authenticate`; missing or malformed credentials
//! are a 401; `{}` admits anonymous callers and `[]` takes no credentials at all.

use std::sync::Arc;

use fixture_security_schemes::models::Seen;
use fixture_security_schemes::runtime::{Credential, Credentials, Hooks, RequestError};
use fixture_security_schemes::secured::*;
use fixture_security_schemes::{Json, app};
use poem::http::{Method, StatusCode};
use poem::{Endpoint, Request};

struct Server;

/// `"<alternative>:<scheme>=<credential>[<scopes>],..."`; `wrong` credentials are refused.
fn describe(credentials: &Credentials) -> Result<String, RequestError> {
    let mut parts = Vec::new();
    for s in &credentials.schemes {
        let value = match &s.credential {
            Credential::Basic { username, password } => format!("basic {username}:{password}"),
            Credential::Bearer(token) => format!("bearer {token}"),
            Credential::Http {
                scheme,
                credentials,
            } => format!("{scheme} {credentials}"),
            Credential::ApiKey(key) => format!("key {key}"),
            Credential::MutualTls => "client certificate".to_string(),
        };
        if value.ends_with("wrong") {
            return Err(RequestError::unauthorized());
        }
        parts.push(format!("{}={value}{:?}", s.scheme, s.scopes));
    }
    Ok(format!("{}:{}", credentials.requirement, parts.join(",")))
}

impl Hooks for Server {
    type Principal = String;
    async fn authenticate(&self, credentials: Credentials) -> Result<String, RequestError> {
        describe(&credentials)
    }
    fn render_error(&self, error: RequestError, _request: &poem::Request) -> poem::Response {
        poem::Response::builder()
            .status(error.status)
            .body(error.message)
    }
}

fn seen(principal: String) -> Json<Seen> {
    Json(Seen { principal })
}

impl SecuredApi for Server {
    async fn inherited(&self, principal: String, _input: InheritedInput) -> InheritedResponse {
        InheritedResponse::Ok(seen(principal))
    }
    async fn scoped(&self, principal: String, _input: ScopedInput) -> ScopedResponse {
        ScopedResponse::Ok(seen(principal))
    }
    async fn optional(&self, principal: Option<String>, _input: OptionalInput) -> OptionalResponse {
        OptionalResponse::Ok(seen(principal.unwrap_or_else(|| "anonymous".into())))
    }
    async fn undeclared(&self, principal: String, _input: UndeclaredInput) -> UndeclaredResponse {
        UndeclaredResponse::Ok(seen(principal))
    }
    async fn open(&self, _input: OpenInput) -> OpenResponse {
        OpenResponse::Ok(seen("open".into()))
    }
}

/// The status and, on 200, the principal the handler saw.
async fn call(method: Method, uri: &str, headers: &[(&str, &str)]) -> (StatusCode, String) {
    let mut req = Request::builder()
        .method(method)
        .uri(uri.parse().expect("uri"));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = app(Arc::new(Server)).call(req.finish()).await;
    let resp = match resp {
        Ok(r) => r,
        Err(e) => e.into_response(),
    };
    let status = resp.status();
    let body = resp.into_body().into_string().await.expect("body");
    if status == StatusCode::OK {
        let v: serde_json::Value = serde_json::from_str(&body).expect("JSON");
        (
            status,
            v["principal"].as_str().unwrap_or_default().to_string(),
        )
    } else {
        (status, String::new())
    }
}

const BASIC_ALICE: &str = "Basic YWxpY2U6czNjcmV0"; // alice:s3cret

#[tokio::test]
async fn the_first_complete_alternative_is_authenticated_with_its_credentials() {
    use Method as M;
    let ok = |p: &str| (StatusCode::OK, p.to_string());
    // Global requirement: bearer, or (header key AND query key).
    assert_eq!(
        call(M::GET, "/inherited", &[("Authorization", "Bearer t0k")]).await,
        ok("0:BearerAuth=bearer t0k[]")
    );
    assert_eq!(
        call(M::GET, "/inherited?api_key=q%20k", &[("X-Api-Key", "hk")]).await,
        ok("1:ApiKeyHeader=key hk[],ApiKeyQuery=key q k[]")
    );
    // Half of an AND-set is not enough.
    assert_eq!(
        call(M::GET, "/inherited", &[("X-Api-Key", "hk")]).await.0,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        call(M::GET, "/inherited", &[]).await.0,
        StatusCode::UNAUTHORIZED
    );
    // Credentials the server refuses are a 401.
    assert_eq!(
        call(M::GET, "/inherited", &[("Authorization", "Bearer wrong")])
            .await
            .0,
        StatusCode::UNAUTHORIZED
    );
    // A Basic header where Bearer is required is not a bearer token.
    assert_eq!(
        call(M::GET, "/inherited", &[("Authorization", BASIC_ALICE)])
            .await
            .0,
        StatusCode::UNAUTHORIZED
    );

    // OAuth2 with its scopes; OpenID Connect (the same bearer header matches the first).
    assert_eq!(
        call(M::POST, "/scoped", &[("Authorization", "bearer abc")]).await,
        ok("0:OAuth2=bearer abc[\"pets:write\", \"pets:read\"]")
    );
    assert_eq!(
        call(
            M::POST,
            "/scoped",
            &[("Cookie", "theme=dark; session=c00kie")]
        )
        .await,
        ok("2:ApiKeyCookie=key c00kie[]")
    );
    assert_eq!(
        call(M::POST, "/scoped", &[("Cookie", "theme=dark")])
            .await
            .0,
        StatusCode::UNAUTHORIZED
    );

    // `{}`: anonymous is fine, credentials still count, and bad ones are still a 401.
    assert_eq!(call(M::GET, "/optional", &[]).await, ok("anonymous"));
    assert_eq!(
        call(M::GET, "/optional", &[("Authorization", BASIC_ALICE)]).await,
        ok("0:BasicAuth=basic alice:s3cret[]")
    );
    assert_eq!(
        call(M::GET, "/optional", &[("Authorization", "Basic !!!")])
            .await
            .0,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        call(
            M::GET,
            "/optional",
            &[("Authorization", "Digest username=\"a\"")]
        )
        .await,
        ok("2:DigestAuth=digest username=\"a\"[]")
    );

    // An undeclared scheme cannot be presented: only the other alternative is ever met.
    assert_eq!(
        call(M::GET, "/undeclared", &[("Authorization", BASIC_ALICE)]).await,
        ok("1:BasicAuth=basic alice:s3cret[]")
    );
    assert_eq!(
        call(M::GET, "/undeclared", &[("Authorization", "Bearer t0k")])
            .await
            .0,
        StatusCode::UNAUTHORIZED
    );

    // `[]`: no credentials are read at all.
    assert_eq!(call(M::GET, "/open", &[]).await, ok("open"));
    assert_eq!(
        call(M::GET, "/open", &[("Authorization", "Bearer wrong")]).await,
        ok("open")
    );
}

/// The fixture's own client against its server on a real port: credentials given once are sent
/// as each operation's first alternative they meet requires, scopes and all.
#[path = "support/on_a_port.rs"]
mod on_a_port;

mod round_trip {
    use super::*;
    use fixture_security_schemes::client::Client;
    use fixture_security_schemes::runtime::client::Config;

    async fn base() -> String {
        on_a_port::serve(app(Arc::new(Server))).await
    }

    fn principal(seen: Option<Json<Seen>>) -> String {
        seen.map(|s| s.0.principal)
            .unwrap_or_else(|| "refused".into())
    }

    #[tokio::test]
    async fn each_scheme_kind_is_sent_where_its_alternative_says() {
        let base = base().await;
        let with = |config: Config| Client::new(config);
        let inherited = |c: Client| async move {
            principal(match c.inherited(InheritedInput {}).await.unwrap() {
                InheritedResponse::Ok(s) => Some(s),
                _ => None,
            })
        };
        let scoped = |c: Client| async move {
            principal(match c.scoped(ScopedInput {}).await.unwrap() {
                ScopedResponse::Ok(s) => Some(s),
                _ => None,
            })
        };
        let optional = |c: Client| async move {
            principal(match c.optional(OptionalInput {}).await.unwrap() {
                OptionalResponse::Ok(s) => Some(s),
            })
        };
        assert_eq!(
            inherited(with(Config::new(&base).bearer("t0k"))).await,
            "0:BearerAuth=bearer t0k[]"
        );
        assert_eq!(
            inherited(with(
                Config::new(&base)
                    .credential("ApiKeyHeader", "hk")
                    .credential("ApiKeyQuery", "q k&")
            ))
            .await,
            "1:ApiKeyHeader=key hk[],ApiKeyQuery=key q k&[]"
        );
        assert_eq!(
            inherited(with(Config::new(&base).credential("ApiKeyHeader", "hk"))).await,
            "refused",
            "half of an alternative is not sent as if it were all"
        );
        assert_eq!(
            scoped(with(Config::new(&base).bearer("abc"))).await,
            "0:OAuth2=bearer abc[\"pets:write\", \"pets:read\"]"
        );
        assert_eq!(
            scoped(with(
                Config::new(&base).credential("ApiKeyCookie", "c00kie")
            ))
            .await,
            "2:ApiKeyCookie=key c00kie[]"
        );
        assert_eq!(optional(with(Config::new(&base))).await, "anonymous");
        assert_eq!(
            optional(with(Config::new(&base).basic_auth("alice", "s3cret"))).await,
            "0:BasicAuth=basic alice:s3cret[]"
        );
        assert_eq!(
            optional(with(
                Config::new(&base).credential("DigestAuth", "username=\"a\"")
            ))
            .await,
            "2:DigestAuth=digest username=\"a\"[]",
            "credentials win over `{{}}` listed before them"
        );
    }

    /// A requirement naming an undeclared scheme is never met, so its Basic alternative (the
    /// second) is the one sent, and nothing at all is refused with the declared 401; an
    /// operation without security runs with or without credentials.
    #[tokio::test]
    async fn an_undeclared_scheme_is_skipped_and_an_open_operation_needs_nothing() {
        let base = base().await;
        let basic = Client::new(Config::new(&base).basic_auth("alice", "s3cret"));
        match basic.undeclared(UndeclaredInput {}).await.unwrap() {
            UndeclaredResponse::Ok(s) => {
                assert_eq!(s.0.principal, "1:BasicAuth=basic alice:s3cret[]")
            }
            other => panic!("{other:?}"),
        }
        let anonymous = Client::new(Config::new(&base));
        assert!(matches!(
            anonymous.undeclared(UndeclaredInput {}).await.unwrap(),
            UndeclaredResponse::Unauthorized
        ));
        for client in [basic, anonymous] {
            let OpenResponse::Ok(s) = client.open(OpenInput {}).await.unwrap();
            assert_eq!(s.0.principal, "open");
        }
    }
}
