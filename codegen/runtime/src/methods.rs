//! Methods poem-openapi cannot route: OpenAPI 3.2's `QUERY` and the methods a path item lists
//! under `additionalOperations` (`COPY`, `LINK`, ...).
//!
//! The generator registers each such operation as a hidden `POST` at
//! `{prefix}/{METHOD}{path}`; [`ExtensionMethods`] sends a request with one of those methods
//! there (its body, headers and query untouched) and refuses any request that names the prefix
//! itself, so the registered routes are reachable only through their own method.

use poem::http::uri::PathAndQuery;
use poem::http::{Method, StatusCode, Uri};
use poem::{Endpoint, IntoResponse, Request, Response};

/// The middleware: `methods` are the extension methods the document declares (case-sensitive,
/// as HTTP methods are), `prefix` where their operations are registered.
pub struct ExtensionMethods {
    pub methods: &'static [&'static str],
    pub prefix: &'static str,
}

impl<E: Endpoint> poem::Middleware<E> for ExtensionMethods {
    type Output = ExtensionMethodsEndpoint<E>;

    fn transform(&self, inner: E) -> Self::Output {
        ExtensionMethodsEndpoint {
            methods: self.methods,
            prefix: self.prefix,
            inner,
        }
    }
}

pub struct ExtensionMethodsEndpoint<E> {
    methods: &'static [&'static str],
    prefix: &'static str,
    inner: E,
}

impl<E: Endpoint> ExtensionMethodsEndpoint<E> {
    /// Whether `path` is under the prefix (`/.method` or `/.method/...`).
    fn under_prefix(&self, path: &str) -> bool {
        path.strip_prefix(self.prefix)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    }
}

impl<E: Endpoint> Endpoint for ExtensionMethodsEndpoint<E> {
    type Output = Response;

    async fn call(&self, mut req: Request) -> poem::Result<Response> {
        let method = req.method().as_str();
        let Some(method) = self.methods.iter().copied().find(|m| *m == method) else {
            if self.under_prefix(req.uri().path()) {
                return Err(poem::error::NotFoundError.into());
            }
            return self.inner.call(req).await.map(IntoResponse::into_response);
        };
        let uri = rewritten(req.uri(), self.prefix, method)?;
        *req.uri_mut() = uri;
        req.set_method(Method::POST);
        match self.inner.call(req).await {
            Ok(r) => Ok(r.into_response()),
            // No operation of this method at this path. Whether the path has others is not
            // known here; 405 says what is true of the method either way.
            Err(e) if e.is::<poem::error::NotFoundError>() => {
                Err(poem::Error::from_status(StatusCode::METHOD_NOT_ALLOWED))
            }
            Err(e) => Err(e),
        }
    }
}

/// `uri` with `{prefix}/{method}` before its path, its query kept.
fn rewritten(uri: &Uri, prefix: &str, method: &str) -> poem::Result<Uri> {
    let path_and_query = match uri.query() {
        Some(q) => format!("{prefix}/{method}{}?{q}", uri.path()),
        None => format!("{prefix}/{method}{}", uri.path()),
    };
    let path_and_query = PathAndQuery::try_from(path_and_query)
        .map_err(|_| poem::Error::from_status(StatusCode::BAD_REQUEST))?;
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = Some(path_and_query);
    Uri::from_parts(parts).map_err(|_| poem::Error::from_status(StatusCode::BAD_REQUEST))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_method_goes_before_the_path_and_the_query_stays() {
        let uri: Uri = "/pets/search?limit=3".parse().unwrap();
        let out = rewritten(&uri, "/.method", "QUERY").unwrap();
        assert_eq!(out.to_string(), "/.method/QUERY/pets/search?limit=3");
        let uri: Uri = "/pets".parse().unwrap();
        assert_eq!(
            rewritten(&uri, "/.method", "COPY").unwrap().path(),
            "/.method/COPY/pets"
        );
    }
}
