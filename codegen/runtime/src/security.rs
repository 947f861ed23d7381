//! Security schemes and requirements, as the document declares them, and the credentials a
//! request presents for them.
//!
//! A secured operation takes [`Auth`] (or [`OptionalAuth`] when one of its alternatives is the
//! empty requirement `{}`) as its first extractor, so authentication runs before any parameter
//! or body is parsed. Its requirements are tried in document order: the first alternative whose
//! every scheme finds credentials in the request is handed to [`Hooks::authenticate`] with the
//! alternative's index and scopes. Credentials that are present but malformed are a 401; when
//! no alternative is complete the answer is a 401 too, unless `{}` is one of them (then the
//! operation runs without a principal).

use std::marker::PhantomData;
use std::sync::Arc;

use poem::http::header::{AUTHORIZATION, COOKIE};
use poem::{Request, RequestBody};

use crate::{ApiDocument, Hooks, RequestError};

/// How a scheme carries its credentials.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemeKind {
    /// `http` with scheme `basic`: `Authorization: Basic base64(user:password)`.
    Basic,
    /// `http` with scheme `bearer`, `oauth2` and `openIdConnect`: `Authorization: Bearer token`.
    Bearer,
    /// Any other `http` scheme (lowercase name): `Authorization: <scheme> <credentials>`.
    Http(&'static str),
    /// `apiKey` in a header (name as declared).
    ApiKeyHeader(&'static str),
    /// `apiKey` in the query string.
    ApiKeyQuery(&'static str),
    /// `apiKey` in a cookie.
    ApiKeyCookie(&'static str),
    /// `mutualTLS` (OpenAPI 3.1+): the client's certificate, verified by the TLS layer (a
    /// listener or a proxy in front that requires one) before a request arrives here. Always
    /// counts as presented ([`Credential::MutualTls`]); `Hooks::authenticate` decides.
    MutualTls,
}

/// One security scheme of the document.
#[derive(Debug, Clone, Copy)]
pub struct SecuritySchemeDef {
    pub name: &'static str,
    pub kind: SchemeKind,
}

/// One alternative of a security requirement: (scheme name, scopes), all to be presented.
pub type Requirement = &'static [(&'static str, &'static [&'static str])];

/// A credential as presented, by the kind of its scheme.
#[derive(Clone, PartialEq, Eq)]
pub enum Credential {
    Basic {
        username: String,
        password: String,
    },
    /// A bearer token (`bearer`, `oauth2`, `openIdConnect`).
    Bearer(String),
    /// Another `http` scheme: its name (lowercase) and the rest of the header.
    Http {
        scheme: String,
        credentials: String,
    },
    /// An API key from a header, the query string or a cookie.
    ApiKey(String),
    /// A `mutualTLS` scheme: the connection's TLS layer authenticated the client.
    MutualTls,
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print secrets, not even in debug output.
        let kind = match self {
            Credential::Basic { .. } => "Basic",
            Credential::Bearer(_) => "Bearer",
            Credential::Http { .. } => "Http",
            Credential::ApiKey(_) => "ApiKey",
            Credential::MutualTls => "MutualTls",
        };
        write!(f, "Credential::{kind}(<redacted>)")
    }
}

/// The credential presented for one scheme of the matched alternative.
#[derive(Debug, Clone)]
pub struct SchemeCredential {
    /// The scheme's name in the document.
    pub scheme: &'static str,
    pub credential: Credential,
    /// The scopes the matched alternative lists for this scheme.
    pub scopes: &'static [&'static str],
}

/// What [`Hooks::authenticate`] receives: which alternative matched and its credentials.
#[derive(Debug, Clone)]
pub struct Credentials {
    /// Index of the matched alternative in the operation's requirements (document order).
    pub requirement: usize,
    /// One entry per scheme of that alternative, in its order.
    pub schemes: Vec<SchemeCredential>,
}

impl Credentials {
    /// The credential presented for `scheme`, if the matched alternative has it.
    pub fn get(&self, scheme: &str) -> Option<&Credential> {
        self.schemes
            .iter()
            .find(|s| s.scheme == scheme)
            .map(|s| &s.credential)
    }
}

/// The principal of a secured operation; its extraction is the authentication.
pub struct Auth<S: Hooks, D, const OP: usize>(pub S::Principal, PhantomData<D>);

/// The principal of an operation that may also run anonymously (`{}` among its requirements).
pub struct OptionalAuth<S: Hooks, D, const OP: usize>(pub Option<S::Principal>, PhantomData<D>);

macro_rules! auth_extractor {
    ($ty:ident, $map:expr) => {
        impl<'a, S: Hooks, D: ApiDocument, const OP: usize> poem_openapi::ApiExtractor<'a>
            for $ty<S, D, OP>
        {
            const TYPES: &'static [poem_openapi::ApiExtractorType] =
                &[poem_openapi::ApiExtractorType::PoemExtractor];
            type ParamType = ();
            type ParamRawType = ();

            async fn from_request(
                request: &'a Request,
                _body: &mut RequestBody,
                _param_opts: poem_openapi::ExtractParamOptions<Self::ParamType>,
            ) -> poem::Result<Self> {
                let principal = authenticate::<S, D>(request, OP).await?;
                let map: fn(Option<S::Principal>) -> poem::Result<_> = $map;
                Ok($ty(map(principal)?, PhantomData))
            }
        }
    };
}

auth_extractor!(Auth, |p| p
    .ok_or_else(|| RequestError::unauthorized().into()));
auth_extractor!(OptionalAuth, Ok);

/// Authenticates `request` for operation `op` of document `D` (see the module docs).
pub async fn authenticate<S: Hooks, D: ApiDocument>(
    request: &Request,
    op: usize,
) -> poem::Result<Option<S::Principal>> {
    let requirements = D::requirements(op);
    for (index, alternative) in requirements.iter().enumerate() {
        if alternative.is_empty() {
            continue;
        }
        let mut schemes = Vec::with_capacity(alternative.len());
        for (name, scopes) in alternative.iter() {
            let kind = D::SECURITY_SCHEMES
                .iter()
                .find(|s| s.name == *name)
                .map(|s| s.kind);
            match kind.map(|k| presented(request, k)) {
                Some(Presented::Yes(credential)) => schemes.push(SchemeCredential {
                    scheme: name,
                    credential,
                    scopes,
                }),
                Some(Presented::Malformed) => return Err(RequestError::unauthorized().into()),
                Some(Presented::No) | None => break,
            }
        }
        if schemes.len() == alternative.len() {
            let hooks = request
                .extensions()
                .get::<Arc<S>>()
                .ok_or_else(|| poem::Error::from(RequestError::internal("no hooks installed")))?;
            let credentials = Credentials {
                requirement: index,
                schemes,
            };
            return Ok(Some(hooks.authenticate(credentials).await?));
        }
    }
    if requirements.iter().any(|a| a.is_empty()) {
        Ok(None)
    } else {
        Err(RequestError::unauthorized().into())
    }
}

enum Presented {
    Yes(Credential),
    /// Present in the scheme's place but unreadable (a 401, not "absent").
    Malformed,
    No,
}

fn presented(request: &Request, kind: SchemeKind) -> Presented {
    match kind {
        SchemeKind::Basic => authorization(request, "basic", |rest| {
            parse_basic(rest).map(|(username, password)| Credential::Basic { username, password })
        }),
        SchemeKind::Bearer => authorization(request, "bearer", |rest| {
            let token = rest.trim();
            (!token.is_empty()).then(|| Credential::Bearer(token.to_string()))
        }),
        SchemeKind::Http(scheme) => authorization(request, scheme, |rest| {
            Some(Credential::Http {
                scheme: scheme.to_string(),
                credentials: rest.trim().to_string(),
            })
        }),
        SchemeKind::ApiKeyHeader(name) => match request.headers().get(name) {
            None => Presented::No,
            Some(v) => match v.to_str() {
                Ok(v) => Presented::Yes(Credential::ApiKey(v.to_string())),
                Err(_) => Presented::Malformed,
            },
        },
        SchemeKind::ApiKeyQuery(name) => {
            let pairs: Vec<(String, String)> =
                serde_urlencoded::from_str(request.uri().query().unwrap_or_default())
                    .unwrap_or_default();
            match pairs.into_iter().find(|(k, _)| k == name) {
                Some((_, v)) => Presented::Yes(Credential::ApiKey(v)),
                None => Presented::No,
            }
        }
        SchemeKind::MutualTls => Presented::Yes(Credential::MutualTls),
        SchemeKind::ApiKeyCookie(name) => {
            let value = request
                .headers()
                .get_all(COOKIE)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .flat_map(|v| v.split(';'))
                .filter_map(|pair| pair.trim().split_once('='))
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.trim_matches('"').to_string());
            match value {
                Some(v) => Presented::Yes(Credential::ApiKey(v)),
                None => Presented::No,
            }
        }
    }
}

/// The `Authorization` header's credentials when its scheme is `scheme` (case-insensitive).
fn authorization(
    request: &Request,
    scheme: &str,
    parse: impl FnOnce(&str) -> Option<Credential>,
) -> Presented {
    let Some(value) = request.headers().get(AUTHORIZATION) else {
        return Presented::No;
    };
    let Ok(value) = value.to_str() else {
        return Presented::Malformed;
    };
    let (given, rest) = value.split_once(' ').unwrap_or((value, ""));
    if !given.eq_ignore_ascii_case(scheme) {
        return Presented::No;
    }
    match parse(rest) {
        Some(c) => Presented::Yes(c),
        None => Presented::Malformed,
    }
}

fn parse_basic(rest: &str) -> Option<(String, String)> {
    let decoded = String::from_utf8(base64_decode(rest.trim())?).ok()?;
    let (username, password) = decoded.split_once(':')?;
    Some((username.to_string(), password.to_string()))
}

fn base64_decode(input: &str) -> Option<Vec<u8>> {
    fn val(c: u8) -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => (c - b'A') as u32,
            b'a'..=b'z' => (c - b'a' + 26) as u32,
            b'0'..=b'9' => (c - b'0' + 52) as u32,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        })
    }
    let bytes = input.trim_end_matches('=').as_bytes();
    if bytes.len() % 4 == 1 || input.len() > 16 * 1024 {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let mut acc = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            acc |= val(c)? << (18 - 6 * i);
        }
        let n = chunk.len() * 6 / 8;
        for i in 0..n {
            out.push((acc >> (16 - 8 * i)) as u8);
        }
    }
    Some(out)
}
