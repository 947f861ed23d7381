//! Request bodies and responses: which media type types them, their schemas (multipart forms as
//! named types), response headers and links, and the variant name of each status.

use std::collections::BTreeSet;

use openapiv3 as oa;
use openapiv3::ReferenceOr;

use super::{Error, Parser, err, json_text, warn};
use crate::ir::*;
use crate::names;
use crate::names::escape;

/// A body taken as its bytes, whatever its content: no schema, or a multipart form that is not
/// an object. The whole `content` is served as written.
fn raw_body(body: &oa::RequestBody, content_type: &str, pointer: &str) -> Result<Body, Error> {
    Ok(Body {
        media: Media::Binary,
        content_type: content_type.to_string(),
        content_json: Some(json_text(&body.content, &format!("{pointer}/content"))?),
        description: body.description.clone(),
        required: body.required,
        schema: Schema::default(),
        also_form: false,
        other_media: Vec::new(),
    })
}

/// Warns that a multipart body is taken as its bytes (`None`: the caller makes it raw).
fn multipart_not_object(pointer: &str) -> Option<Schema> {
    warn(
        pointer,
        "a multipart body that is not an object is taken as its bytes",
    );
    None
}

impl<'a> Parser<'a> {
    /// A request body (resolved if a `$ref`), typed by its primary media type.
    pub(super) fn request_body(
        &mut self,
        b: &ReferenceOr<oa::RequestBody>,
        pointer: &str,
        stem: &str,
    ) -> Result<Body, Error> {
        let (body, pointer) = self.resolve(b, pointer, "requestBodies", "request body", |c| {
            &c.request_bodies
        })?;
        let Some((content_type, media)) = primary_media(&body.content) else {
            // OpenAPI 3.0 requires one; `content: {}` (just-eat.co.uk) says nothing of the body.
            warn(
                &format!("{pointer}/content"),
                "a request body without a media type is taken as bytes of any type",
            );
            return raw_body(body, "*/*", &pointer);
        };
        let mp = format!("{pointer}/content/{}", escape(content_type));
        let kind = media_kind(content_type);
        let content_json = several_media(&body.content, &format!("{pointer}/content"))?;
        let Some(schema) = &media.schema else {
            return raw_body(body, content_type, &pointer);
        };
        let schema = match (kind, schema) {
            (Media::Multipart, s) => match self.multipart_schema(s, &mp, stem)? {
                Some(schema) => schema,
                None => return raw_body(body, content_type, &pointer),
            },
            (_, s) => self.convert_ref(s, &format!("{mp}/schema"), &format!("{stem}Body"))?,
        };
        // A binary string is bytes whatever the media type says.
        let kind = if is_binary(&schema) {
            Media::Binary
        } else {
            kind
        };
        if !body.required && kind != Media::Json {
            warn(
                &pointer,
                "an optional body that is not JSON is taken as required",
            );
        }
        let also_form = kind == Media::Json
            && body
                .content
                .iter()
                .any(|(ct, m)| media_kind(ct) == Media::Form && m.schema == media.schema);
        // The listed types the primary extractor does not read (raw bytes read every type).
        let other_media = body
            .content
            .keys()
            .filter(|ct| {
                let k = media_kind(ct);
                kind != Media::Binary && k != kind && !(also_form && k == Media::Form)
            })
            .cloned()
            .collect();
        Ok(Body {
            media: kind,
            content_type: content_type.clone(),
            content_json,
            description: body.description.clone(),
            required: body.required,
            schema,
            also_form,
            other_media,
        })
    }

    /// The schema of a multipart body: a named type marked multipart (an inline object is
    /// hoisted as `<stem>Form`, a referenced one marked). `None` when it is not an object.
    fn multipart_schema(
        &mut self,
        schema: &ReferenceOr<oa::Schema>,
        mp: &str,
        stem: &str,
    ) -> Result<Option<Schema>, Error> {
        let sp = format!("{mp}/schema");
        match schema {
            ReferenceOr::Item(s) => {
                let converted = self.convert(s, &sp, &format!("{stem}Form"), true)?;
                if !matches!(converted.kind, Kind::Object(_)) {
                    return Ok(multipart_not_object(mp));
                }
                Ok(Some(self.hoist(
                    &format!("{stem}Form"),
                    converted,
                    &sp,
                    true,
                )))
            }
            ReferenceOr::Reference { reference } => {
                let name = self.schema_ref(reference, &sp)?;
                let t = self
                    .types
                    .iter_mut()
                    .find(|t| t.name == name)
                    .expect("resolved above");
                if !matches!(t.schema.kind, Kind::Object(_)) {
                    return Ok(multipart_not_object(mp));
                }
                t.multipart = true;
                Ok(Some(Schema {
                    kind: Kind::Ref(name),
                    ..Schema::default()
                }))
            }
        }
    }

    /// One response (resolved if a `$ref`): its variant name (unique among the operation's:
    /// `variants`), its primary content, headers and links.
    pub(super) fn response(
        &mut self,
        r: &ReferenceOr<oa::Response>,
        status: Status,
        pointer: &str,
        stem: &str,
        variants: &mut BTreeSet<String>,
    ) -> Result<Response, Error> {
        let (resp, pointer) =
            self.resolve(r, pointer, "responses", "response", |c| &c.responses)?;
        let variant = names::unique(status_variant(status), variants);
        let content_json = several_media(&resp.content, &format!("{pointer}/content"))?;
        let content = self.response_content(resp, &pointer, &format!("{stem}{variant}Body"))?;
        let written_as = content
            .as_ref()
            .map(|(kind, ct, _)| written_as(resp, *kind, ct))
            .unwrap_or_default();
        let other_media = content
            .as_ref()
            .map(|(_, primary, _)| {
                resp.content
                    .keys()
                    .filter(|ct| *ct != primary && !written_as.contains(ct))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        let headers = self.response_headers(resp, &pointer)?;
        let links = if resp.links.is_empty() {
            None
        } else {
            Some(json_text(&resp.links, &format!("{pointer}/links"))?)
        };
        Ok(Response {
            content_json,
            written_as,
            other_media,
            status,
            variant,
            description: resp.description.clone(),
            content,
            headers,
            links,
            component: pointer
                .strip_prefix("#/components/responses/")
                .map(|name| name.replace("~1", "/").replace("~0", "~")),
        })
    }

    /// A response's primary media type with its schema (named `hint` if hoisted), and how it
    /// is sent: forms, multipart answers and binary strings go as raw bytes.
    fn response_content(
        &mut self,
        resp: &oa::Response,
        pointer: &str,
        hint: &str,
    ) -> Result<Option<(Media, String, Schema)>, Error> {
        let Some((ct, media)) = primary_media(&resp.content) else {
            return Ok(None);
        };
        let mp = format!("{pointer}/content/{}", escape(ct));
        if let Some(streamed) = self.item_schema(ct, &mp, hint)? {
            return Ok(Some(streamed));
        }
        let schema = match &media.schema {
            Some(s) => self.convert_ref(s, &format!("{mp}/schema"), hint)?,
            None => Schema::default(),
        };
        let kind = match media_kind(ct) {
            Media::Json | Media::Text if !is_binary(&schema) => media_kind(ct),
            _ => Media::Binary,
        };
        Ok(Some((kind, ct.clone(), schema)))
    }

    /// A streamed response (OpenAPI 3.2's `itemSchema`, at `mp`/itemSchema in the normalised
    /// document, which openapiv3's media type cannot hold): its format, media type and the
    /// schema of one item (named `hint`Item if hoisted).
    fn item_schema(
        &mut self,
        ct: &str,
        mp: &str,
        hint: &str,
    ) -> Result<Option<(Media, String, Schema)>, Error> {
        let pointer = format!("{mp}/itemSchema");
        let Some(raw) = self.raw.and_then(|r| r.pointer(&pointer[1..])) else {
            return Ok(None);
        };
        let Some(format) = StreamFormat::of(ct) else {
            // The normaliser refuses `itemSchema` elsewhere.
            return err(&pointer, format!("`{ct}` is not a streamed media type"));
        };
        let item: ReferenceOr<oa::Schema> = serde_path_to_error::deserialize(raw).map_err(|e| {
            let mut e = super::invalid(e);
            e.pointer = format!("{pointer}{}", &e.pointer[1..]);
            e
        })?;
        let schema = self.convert_ref(&item, &pointer, &format!("{hint}Item"))?;
        Ok(Some((Media::Stream(format), ct.to_string(), schema)))
    }

    /// A response's headers (resolved if `$ref`s), each with a unique Rust name and the type of
    /// its value: a scalar typed, anything else text (with a warning).
    fn response_headers(
        &self,
        resp: &oa::Response,
        pointer: &str,
    ) -> Result<Vec<ResponseHeader>, Error> {
        let mut headers = Vec::new();
        let mut taken = BTreeSet::new();
        for (name, h) in &resp.headers {
            let hp = format!("{pointer}/headers/{}", escape(name));
            let h = match h {
                ReferenceOr::Item(h) => h,
                ReferenceOr::Reference { reference } => {
                    let found = reference
                        .strip_prefix("#/components/headers/")
                        .and_then(|n| self.components()?.headers.get(n));
                    match found {
                        Some(ReferenceOr::Item(h)) => h,
                        _ => return err(&hp, format!("`$ref` to unknown header `{reference}`")),
                    }
                }
            };
            let ty = self.header_type(&h.format);
            if ty.is_none() {
                warn(
                    &hp,
                    "a response header whose schema is not a scalar is written as text",
                );
            }
            headers.push(ResponseHeader {
                name: name.clone(),
                rust: names::unique(names::snake(name), &mut taken),
                required: h.required,
                description: h.description.clone(),
                ty: ty.unwrap_or(HeaderType::Text),
            });
        }
        Ok(headers)
    }

    /// The type of a header's value, by its schema (a `$ref` to a component schema followed):
    /// `None` for a schema that is not a scalar (or `content`), which is written as text.
    fn header_type(&self, format: &oa::ParameterSchemaOrContent) -> Option<HeaderType> {
        let oa::ParameterSchemaOrContent::Schema(schema) = format else {
            return None;
        };
        let schema = match schema {
            ReferenceOr::Item(s) => s,
            ReferenceOr::Reference { reference } => {
                let name = reference.strip_prefix("#/components/schemas/")?;
                self.components()?.schemas.get(name)?.as_item()?
            }
        };
        let oa::SchemaKind::Type(t) = &schema.schema_kind else {
            return None;
        };
        Some(match t {
            oa::Type::String(_) => HeaderType::Text,
            oa::Type::Integer(i) => match &i.format {
                oa::VariantOrUnknownOrEmpty::Item(oa::IntegerFormat::Int32) => HeaderType::I32,
                _ => HeaderType::I64,
            },
            oa::Type::Number(_) => HeaderType::F64,
            oa::Type::Boolean(_) => HeaderType::Bool,
            oa::Type::Object(_) | oa::Type::Array(_) => return None,
        })
    }
}

/// A `type: string, format: binary` schema: bytes, whatever the media type says.
fn is_binary(s: &Schema) -> bool {
    matches!(&s.kind, Kind::String { format, .. } if format.as_deref() == Some("binary"))
}

/// How a media type is read and written.
pub(super) fn media_kind(content_type: &str) -> Media {
    match essence(content_type).as_str() {
        "application/json" | "text/json" => Media::Json,
        e if e.ends_with("+json") => Media::Json,
        "multipart/form-data" => Media::Multipart,
        "application/x-www-form-urlencoded" => Media::Form,
        "text/plain" => Media::Text,
        _ => Media::Binary,
    }
}

/// The media types a response whose primary content is `primary` (of `kind`) is written in
/// (see [`Response::written_as`]). A wildcard (`*/*`, `image/*`) names no type to write, so it
/// leaves the payload's own.
fn written_as(resp: &oa::Response, kind: Media, primary: &str) -> Vec<String> {
    let concrete = |ct: &str| !ct.contains('*');
    let own = match kind {
        Media::Json => "application/json",
        Media::Text => "text/plain",
        Media::Stream(format) => format.own_media_type(),
        _ => "application/octet-stream",
    };
    let mut types: Vec<String> = Vec::new();
    if concrete(primary) {
        types.push(primary.to_string());
    }
    if kind == Media::Json {
        let schema = resp.content.get(primary).map(|m| &m.schema);
        types.extend(
            resp.content
                .iter()
                .filter(|(ct, m)| {
                    ct.as_str() != primary
                        && concrete(ct)
                        && media_kind(ct) == Media::Json
                        && Some(&m.schema) == schema
                })
                .map(|(ct, _)| ct.clone()),
        );
    }
    let only_own = types.len() == 1 && essence(&types[0]) == own;
    if only_own { Vec::new() } else { types }
}

/// A media type without parameters, lower-cased.
fn essence(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

/// The media type a body or response is typed by when it lists several: JSON first, then
/// multipart, form, text, and the first other one.
fn primary_media(
    content: &indexmap::IndexMap<String, oa::MediaType>,
) -> Option<(&String, &oa::MediaType)> {
    let rank = |ct: &str| match media_kind(ct) {
        Media::Json => 0,
        Media::Multipart => 1,
        Media::Form => 2,
        Media::Text => 3,
        // `media_kind` never says `Stream`: an `itemSchema` makes it (`item_schema`).
        Media::Binary | Media::Stream(_) => 4,
    };
    content.iter().min_by_key(|(ct, _)| rank(ct))
}

/// The whole `content` map as JSON text when the generated code cannot say it itself: several
/// media types (the others reach the handler as bytes, or are written by it: `Representation`),
/// or one that is not its kind's usual name (`application/vnd.x+json`, `*/*`), or whose inline
/// array or scalar schema says more than its Rust type documents (a `description`, limits).
fn several_media(
    content: &indexmap::IndexMap<String, oa::MediaType>,
    pointer: &str,
) -> Result<Option<String>, Error> {
    let usual = |ct: &str| {
        matches!(
            ct,
            "application/json"
                | "multipart/form-data"
                | "application/x-www-form-urlencoded"
                | "text/plain"
                | "application/octet-stream"
        )
    };
    let inline_detail = content
        .values()
        .any(|m| m.schema.as_ref().is_some_and(inline_schema_says_more));
    if content.len() > 1 || content.keys().any(|ct| !usual(ct)) || inline_detail {
        Ok(Some(json_text(content, pointer)?))
    } else {
        Ok(None)
    }
}

/// Whether an inline body schema that becomes a plain Rust type (an array, a string, a number, a
/// boolean: objects become named types that document themselves) has more to say than that
/// type's own schema (`{type, format}`, or `{type: array, items}` of a `$ref` or such a type).
fn inline_schema_says_more(schema: &ReferenceOr<oa::Schema>) -> bool {
    let ReferenceOr::Item(s) = schema else {
        return false;
    };
    if !matches!(
        s.schema_kind,
        oa::SchemaKind::Type(
            oa::Type::Array(_)
                | oa::Type::String(_)
                | oa::Type::Integer(_)
                | oa::Type::Number(_)
                | oa::Type::Boolean(_)
        )
    ) {
        return false;
    }
    let plain = |v: &serde_json::Value, allowed: &[&str]| {
        v.as_object()
            .is_some_and(|m| m.keys().all(|k| allowed.contains(&k.as_str())))
    };
    let Ok(v) = serde_json::to_value(s) else {
        return true;
    };
    let items_plain = v
        .get("items")
        .is_none_or(|i| plain(i, &["$ref"]) || plain(i, &["type", "format"]));
    !(plain(&v, &["type", "format", "items"]) && items_plain)
}

/// Variant name from the status code, never from a description (a doc edit cannot rename code).
pub fn status_variant(status: Status) -> String {
    match status {
        Status::Default => "Default".into(),
        Status::Range(d) => format!("Status{d}xx"),
        Status::Code(c) => match c {
            200 => "Ok",
            201 => "Created",
            202 => "Accepted",
            204 => "NoContent",
            301 => "MovedPermanently",
            302 => "Found",
            304 => "NotModified",
            400 => "BadRequest",
            401 => "Unauthorized",
            403 => "Forbidden",
            404 => "NotFound",
            405 => "MethodNotAllowed",
            409 => "Conflict",
            410 => "Gone",
            412 => "PreconditionFailed",
            413 => "PayloadTooLarge",
            415 => "UnsupportedMediaType",
            422 => "UnprocessableEntity",
            429 => "TooManyRequests",
            500 => "InternalServerError",
            501 => "NotImplemented",
            502 => "BadGateway",
            503 => "ServiceUnavailable",
            504 => "GatewayTimeout",
            other => return format!("Status{other}"),
        }
        .into(),
    }
}
