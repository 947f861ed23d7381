//! A server written when `GET /optional` still required credentials (`principal: String`); the
//! document now lists `{}` among its alternatives, so the principal is optional and the
//! compiler names the method whose signature must change.
use fixture_security_schemes::runtime::{Credentials, Hooks, RequestError};
use fixture_security_schemes::secured::*;
use fixture_security_schemes::{Json, models::Seen};

struct Shop;

impl Hooks for Shop {
    type Principal = String;
    async fn authenticate(&self, _credentials: Credentials) -> Result<String, RequestError> {
        Ok(String::new())
    }
    fn render_error(&self, _error: RequestError, _request: &poem::Request) -> poem::Response {
        poem::Response::default()
    }
}

fn seen(principal: String) -> Json<Seen> {
    Json(Seen { principal })
}

impl SecuredApi for Shop {
    async fn inherited(&self, principal: String, _input: InheritedInput) -> InheritedResponse {
        InheritedResponse::Ok(seen(principal))
    }
    async fn scoped(&self, principal: String, _input: ScopedInput) -> ScopedResponse {
        ScopedResponse::Ok(seen(principal))
    }
    async fn optional(&self, principal: String, _input: OptionalInput) -> OptionalResponse {
        OptionalResponse::Ok(seen(principal))
    }
    async fn undeclared(&self, principal: String, _input: UndeclaredInput) -> UndeclaredResponse {
        UndeclaredResponse::Ok(seen(principal))
    }
    async fn open(&self, _input: OpenInput) -> OpenResponse {
        OpenResponse::Ok(seen(String::new()))
    }
}

fn main() {}
