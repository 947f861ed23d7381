//! Security schemes (`components/securitySchemes`) and requirements (`security` lists).

use openapiv3 as oa;
use openapiv3::ReferenceOr;

use super::{Error, Parser, err, warn};
use crate::ir::*;
use crate::names::escape;

impl<'a> Parser<'a> {
    /// Every declared security scheme, in document order, as the IR names its kind.
    pub(super) fn security_schemes(&self) -> Result<Vec<SecurityScheme>, Error> {
        let mut out = Vec::new();
        let empty = indexmap::IndexMap::new();
        let c = self.components().map_or(&empty, |c| &c.security_schemes);
        for (name, s) in c {
            let p = format!("#/components/securitySchemes/{}", escape(name));
            let ReferenceOr::Item(s) = s else {
                return err(&p, "a security scheme `$ref` is not supported");
            };
            let (kind, description) = match s {
                oa::SecurityScheme::HTTP {
                    scheme,
                    description,
                    ..
                } => (
                    SchemeKind::Http {
                        scheme: scheme.to_ascii_lowercase(),
                    },
                    description,
                ),
                oa::SecurityScheme::APIKey {
                    location,
                    name,
                    description,
                    ..
                } => (
                    SchemeKind::ApiKey {
                        location: match location {
                            oa::APIKeyLocation::Header => ApiKeyIn::Header,
                            oa::APIKeyLocation::Query => ApiKeyIn::Query,
                            oa::APIKeyLocation::Cookie => ApiKeyIn::Cookie,
                        },
                        name: name.clone(),
                    },
                    description,
                ),
                oa::SecurityScheme::OAuth2 { description, .. } => (SchemeKind::OAuth2, description),
                oa::SecurityScheme::OpenIDConnect { description, .. } => {
                    (SchemeKind::OpenIdConnect, description)
                }
            };
            out.push(SecurityScheme {
                name: name.clone(),
                description: description.clone(),
                kind,
            });
        }
        for name in &self.mutual_tls {
            out.push(SecurityScheme {
                name: name.clone(),
                description: None,
                kind: SchemeKind::MutualTls,
            });
        }
        Ok(out)
    }

    /// The alternatives of a `security` list. A scheme the document does not declare (which
    /// OpenAPI forbids) cannot be presented, so an alternative naming one is never met: kept as
    /// written, with a warning.
    pub(super) fn security_requirement(
        &self,
        reqs: &[oa::SecurityRequirement],
        pointer: &str,
        schemes: &[SecurityScheme],
    ) -> Result<Vec<Requirement>, Error> {
        let mut out = Vec::new();
        for (i, alternative) in reqs.iter().enumerate() {
            let mut req = Requirement::new();
            for (name, scopes) in alternative {
                if !schemes.iter().any(|s| &s.name == name) {
                    warn(
                        &format!("{pointer}/{i}"),
                        format!(
                            "security scheme `{name}` is not declared: this alternative can never be met"
                        ),
                    );
                }
                req.push((name.clone(), scopes.clone()));
            }
            out.push(req);
        }
        Ok(out)
    }
}
