//! Operations: found in `paths` and named, their parameters (in the path template's order),
//! request body, responses, security and callbacks; and the tags that group them.

use std::collections::BTreeSet;

use openapiv3 as oa;
use openapiv3::ReferenceOr;

use super::{Error, Parser, err, json_text, warn};
use crate::ir::*;
use crate::names;
use crate::names::escape;

/// An operation found in `paths`, with the names [`Parser::plan_operations`] gave it.
pub(super) struct Planned<'a> {
    path: &'a str,
    method: &'a str,
    op: &'a oa::Operation,
    path_params: &'a [ReferenceOr<oa::Parameter>],
    pointer: String,
    id: String,
    rust: String,
}

/// An operation of a method openapiv3's path item has no field for: OpenAPI 3.2's `query`, or
/// one of `additionalOperations` (its key as written: methods are case-sensitive).
pub(super) struct ExtensionOp {
    path: String,
    method: String,
    pointer: String,
    op: oa::Operation,
}

/// The extension operations of the (normalised) document's paths, in document order.
pub(super) fn extension_ops(doc: &serde_json::Value) -> Result<Vec<ExtensionOp>, Error> {
    let mut out = Vec::new();
    let Some(paths) = doc.get("paths").and_then(|p| p.as_object()) else {
        return Ok(out);
    };
    for (path, item) in paths {
        let pp = format!("#/paths/{}", escape(path));
        let query = item
            .get("query")
            .map(|op| ("query", op, format!("{pp}/query")));
        let additional = item
            .get("additionalOperations")
            .and_then(|a| a.as_object())
            .into_iter()
            .flatten()
            .map(|(m, op)| {
                let pointer = format!("{pp}/additionalOperations/{}", escape(m));
                (m.as_str(), op, pointer)
            });
        for (method, op, pointer) in query.into_iter().chain(additional) {
            let op = serde_path_to_error::deserialize(op).map_err(|e| {
                let mut e = super::invalid(e);
                e.pointer = format!("{pointer}{}", &e.pointer[1..]);
                e
            })?;
            out.push(ExtensionOp {
                path: path.clone(),
                method: method.to_string(),
                pointer,
                op,
            });
        }
    }
    Ok(out)
}

/// The tags of `operations`: those the document declares that some operation uses (document
/// order), then undeclared ones in order of first use, then the unserved default tag (name
/// `""`, trait `DefaultApi`) for operations without a tag. Rust names and modules are unique
/// (and never `callbacks` when the document sends requests: `outgoing`).
pub(super) fn tags_of(doc: &oa::OpenAPI, operations: &[Operation], outgoing: bool) -> Vec<Tag> {
    let used = |name: &str| operations.iter().any(|o| o.tags.iter().any(|t| t == name));
    let mut out: Vec<(String, Option<String>, bool)> = doc
        .tags
        .iter()
        .filter(|t| used(&t.name))
        .map(|t| (t.name.clone(), t.description.clone(), true))
        .collect();
    for o in operations {
        for t in &o.tags {
            if !out.iter().any(|(n, _, _)| n == t) {
                out.push((t.clone(), None, true));
            }
        }
    }
    if operations.iter().any(|o| o.tags.is_empty()) {
        out.push((String::new(), None, false));
    }
    let mut rust_taken = BTreeSet::new();
    let mut modules_taken: BTreeSet<String> =
        ["models", "server", "runtime", "lib", "client", "responses"]
            .into_iter()
            .map(String::from)
            .collect();
    if outgoing {
        // The module of the `Callbacks` and `Webhooks` traits.
        modules_taken.insert("callbacks".into());
    }
    out.into_iter()
        .map(|(name, description, served)| {
            let stem = if served {
                names::camel(&name)
            } else {
                "Default".to_string()
            };
            let rust = names::unique(stem, &mut rust_taken);
            let module = names::unique(names::method_name(&rust), &mut modules_taken);
            Tag {
                name,
                rust,
                module,
                description,
                served,
            }
        })
        .collect()
}

/// The names in a path template, in order (`/pets/{petId}` → `petId`).
fn template_names(path: &str) -> Vec<String> {
    path.split('/')
        .filter_map(|seg| {
            seg.strip_prefix('{')
                .and_then(|s| s.strip_suffix('}'))
                .map(str::to_string)
        })
        .collect()
}

/// A path parameter the template names but no `parameters` list declares: a required string,
/// with a warning (the operation is still served).
fn undeclared_path_param(name: &str, pointer: &str, taken: &mut BTreeSet<String>) -> Param {
    warn(
        pointer,
        format!("path parameter `{name}` is not declared (taken as a string)"),
    );
    Param {
        explode: false,
        delimiter: ',',
        deep_object: false,
        query_string: false,
        form: false,
        path_style: None,
        content_type: None,
        name: name.to_string(),
        rust: names::field_name(name, taken),
        location: Location::Path,
        required: true,
        description: None,
        deprecated: false,
        schema: Schema {
            kind: Kind::String {
                format: None,
                enum_values: Vec::new(),
            },
            ..Schema::default()
        },
        pointer: pointer.to_string(),
        served_as_written: None,
    }
}

/// Makes the path parameters the template's: adds the undeclared ones, drops (with a warning)
/// those the template does not name, and orders them as the template does, since path
/// parameters bind by position in poem-openapi. The others follow in their order.
fn order_path_params(
    params: &mut Vec<Param>,
    path: &str,
    pointer: &str,
    taken: &mut BTreeSet<String>,
) {
    let template_order = template_names(path);
    for name in &template_order {
        if !params
            .iter()
            .any(|p| p.location == Location::Path && &p.name == name)
        {
            params.push(undeclared_path_param(name, pointer, taken));
        }
    }
    params.retain(|p| {
        let stray = p.location == Location::Path && !template_order.contains(&p.name);
        if stray {
            warn(
                pointer,
                format!(
                    "path parameter `{}` is not in the path template (ignored)",
                    p.name
                ),
            );
        }
        !stray
    });
    params.sort_by_key(|p| match p.location {
        Location::Path => template_order
            .iter()
            .position(|n| n == &p.name)
            .unwrap_or(0),
        _ => usize::MAX,
    });
}

/// What a callback request may answer: each status code's description (a `$ref` by its
/// reference), then the default's. Ranges are left out.
fn callback_responses(cop: &oa::Operation) -> Vec<(Status, String)> {
    let mut responses = Vec::new();
    for (code, r) in &cop.responses.responses {
        let description = match r {
            ReferenceOr::Item(r) => r.description.clone(),
            ReferenceOr::Reference { reference } => reference.clone(),
        };
        if let oa::StatusCode::Code(c) = code {
            responses.push((Status::Code(*c), description));
        }
    }
    if let Some(ReferenceOr::Item(r)) = &cop.responses.default {
        responses.push((Status::Default, r.description.clone()));
    }
    responses
}

impl<'a> Parser<'a> {
    /// Every operation in document order, named: written `operationId`s keep their names (a
    /// duplicate is an error) and take their Rust names first; an operation without one is
    /// named from its method and path (`get /pets/{petId}` → `get_pets_pet_id`). A Rust name
    /// taken already gets the next free counter suffix (`2`, `3`, ...), in document order.
    pub(super) fn plan_operations(&self) -> Result<Vec<Planned<'a>>, Error> {
        let mut planned = Vec::new();
        for (path, item) in &self.doc.paths.paths {
            let pp = format!("#/paths/{}", escape(path));
            let item = match item {
                ReferenceOr::Item(i) => i,
                ReferenceOr::Reference { .. } => {
                    return err(&pp, "path item `$ref` is not supported");
                }
            };
            for (method, op) in item.iter() {
                planned.push(Planned {
                    path,
                    method,
                    op,
                    path_params: &item.parameters,
                    pointer: format!("{pp}/{method}"),
                    id: String::new(),
                    rust: String::new(),
                });
            }
            for x in self.extension_ops.iter().filter(|x| &x.path == path) {
                planned.push(Planned {
                    path,
                    method: &x.method,
                    op: &x.op,
                    path_params: &item.parameters,
                    pointer: x.pointer.clone(),
                    id: String::new(),
                    rust: String::new(),
                });
            }
        }
        let mut written = BTreeSet::new();
        let mut taken = BTreeSet::new();
        for p in planned.iter_mut() {
            if let Some(id) = &p.op.operation_id {
                if !written.insert(id.clone()) {
                    return err(&p.pointer, format!("operationId `{id}` is not unique"));
                }
                p.id = id.clone();
                p.rust = names::unique(names::method_name(id), &mut taken);
            }
        }
        for p in planned.iter_mut() {
            if p.op.operation_id.is_none() {
                p.rust = names::unique(
                    names::method_name(&format!("{} {}", p.method, p.path)),
                    &mut taken,
                );
                p.id = p.rust.clone();
            }
        }
        Ok(planned)
    }

    /// One planned operation, whole: parameters, body, responses, security (its own, or the
    /// document's) and callbacks, with the parts served as written.
    pub(super) fn operation(
        &mut self,
        planned: Planned<'a>,
        global_security: &[Requirement],
        schemes: &[SecurityScheme],
    ) -> Result<Operation, Error> {
        let Planned {
            path,
            method,
            op,
            path_params,
            pointer,
            id,
            rust,
        } = planned;
        let pointer = pointer.as_str();
        let type_stem = names::camel(&rust);
        let tag = op.tags.first().cloned().unwrap_or_default();
        let params = self.operation_params(path, op, path_params, pointer, &type_stem)?;
        let body = match &op.request_body {
            None => None,
            Some(b) => Some(self.request_body(b, &format!("{pointer}/requestBody"), &type_stem)?),
        };
        let responses = self.responses(op, pointer, &type_stem)?;
        let security = match &op.security {
            Some(reqs) => {
                self.security_requirement(reqs, &format!("{pointer}/security"), schemes)?
            }
            None => global_security.to_vec(),
        };
        let (callbacks, callbacks_json) = self.callbacks(op, pointer, &rust, &type_stem)?;
        let security_json = match &op.security {
            Some(s) => Some(json_text(s, &format!("{pointer}/security"))?),
            None => None,
        };
        Ok(Operation {
            explicit_id: op.operation_id.is_some(),
            id,
            rust,
            type_stem,
            method: method.to_string(),
            path: path.to_string(),
            tag,
            tags: op.tags.clone(),
            summary: op.summary.clone(),
            description: op.description.clone(),
            deprecated: op.deprecated,
            params,
            body,
            responses_declared: op.responses.default.is_some()
                || !op.responses.responses.is_empty(),
            responses,
            security,
            security_json,
            callbacks,
            callbacks_json,
            pagination: pagination_extension(op, pointer)?,
            pointer: pointer.to_string(),
        })
    }

    /// An operation's parameters: the path item's, then its own (one with the same name and
    /// location overrides the path item's), ordered as the path template needs.
    fn operation_params(
        &mut self,
        path: &str,
        op: &oa::Operation,
        path_params: &[ReferenceOr<oa::Parameter>],
        pointer: &str,
        type_stem: &str,
    ) -> Result<Vec<Param>, Error> {
        let mut params: Vec<Param> = Vec::new();
        // The input's own fields (`accept`: see `Operation::writes_other_media`) and the
        // principal the trait method takes beside it.
        let mut taken = BTreeSet::from([
            "body".to_string(),
            "accept".to_string(),
            "principal".to_string(),
        ]);
        let all: Vec<(usize, bool, &ReferenceOr<oa::Parameter>)> = path_params
            .iter()
            .enumerate()
            .map(|(i, p)| (i, true, p))
            .chain(op.parameters.iter().enumerate().map(|(i, p)| (i, false, p)))
            .collect();
        for (i, from_path_item, p) in all {
            let pp = if from_path_item {
                format!("#/paths/{}/parameters/{i}", escape(path))
            } else {
                format!("{pointer}/parameters/{i}")
            };
            let param = self.parameter(p, &pp, type_stem, &mut taken)?;
            if let Some(existing) = params
                .iter_mut()
                .find(|x| x.name == param.name && x.location == param.location)
            {
                *existing = param; // operation-level overrides path-level
            } else {
                params.push(param);
            }
        }
        order_path_params(&mut params, path, pointer, &mut taken);
        Ok(params)
    }

    /// An operation's responses: by status code in document order, then `default`; none
    /// declared is a `default` without a body (with a warning). Variant names are unique within
    /// the operation.
    fn responses(
        &mut self,
        op: &oa::Operation,
        pointer: &str,
        type_stem: &str,
    ) -> Result<Vec<Response>, Error> {
        let mut responses = Vec::new();
        let mut variants = BTreeSet::new();
        for (code, r) in &op.responses.responses {
            let status = match code {
                oa::StatusCode::Code(c) => Status::Code(*c),
                oa::StatusCode::Range(d) => Status::Range(*d),
            };
            let rp = format!("{pointer}/responses/{}", status.key());
            responses.push(self.response(r, status, &rp, type_stem, &mut variants)?);
        }
        if let Some(r) = &op.responses.default {
            let rp = format!("{pointer}/responses/default");
            responses.push(self.response(r, Status::Default, &rp, type_stem, &mut variants)?);
        }
        if responses.is_empty() {
            // OpenAPI 3.0 requires one; documents in the wild omit them. The handler answers
            // with any status and no body (a `default` variant); the document says none.
            warn(
                &format!("{pointer}/responses"),
                "no response is declared (OpenAPI 3.0 requires one): the handler answers any \
                 status without a body",
            );
            responses.push(Response {
                status: Status::Default,
                variant: "Default".into(),
                description: String::new(),
                content: None,
                content_json: None,
                written_as: Vec::new(),
                other_media: Vec::new(),
                headers: Vec::new(),
                links: None,
                component: None,
            });
        }
        Ok(responses)
    }

    /// The requests of an operation's `callbacks`. Each is named `<operation>_<callback>` (plus
    /// `_<method>` when one callback URL has several); its body is a JSON request body. With
    /// them, the `callbacks` map as JSON text (served as written), if the operation has any.
    fn callbacks(
        &mut self,
        op: &oa::Operation,
        pointer: &str,
        rust: &str,
        stem: &str,
    ) -> Result<(Vec<Callback>, Option<String>), Error> {
        let mut out = Vec::new();
        let mut taken = BTreeSet::new();
        for (name, callback) in &op.callbacks {
            let cp = format!("{pointer}/callbacks/{}", escape(name));
            for (expression, item) in callback {
                let ep = format!("{cp}/{}", escape(expression));
                let methods: Vec<(&str, &oa::Operation)> = item.iter().collect();
                for (method, cop) in &methods {
                    let mp = format!("{ep}/{method}");
                    let mut base = format!("{rust}_{}", names::snake(name));
                    if methods.len() > 1 {
                        base = format!("{base}_{method}");
                    }
                    let method_name = names::unique(base, &mut taken);
                    let hint = format!("{stem}{}", names::camel(&method_name[rust.len()..]));
                    let body = self.callback_body(cop, &mp, &hint)?;
                    out.push(Callback {
                        name: name.clone(),
                        expression: expression.clone(),
                        method: method.to_string(),
                        rust: method_name,
                        summary: cop.summary.clone(),
                        description: cop.description.clone(),
                        body,
                        responses: callback_responses(cop),
                        pointer: mp,
                    });
                }
            }
        }
        let json = if op.callbacks.is_empty() {
            None
        } else {
            Some(json_text(&op.callbacks, &format!("{pointer}/callbacks"))?)
        };
        Ok((out, json))
    }

    /// Top-level `webhooks` (OpenAPI 3.1+): one request per webhook and method, named after the
    /// webhook in snake case (plus `_<method>` when it has several), unique in document order;
    /// its payload types are named `<Name>Webhook...`.
    pub(super) fn webhooks(&mut self) -> Result<Vec<Callback>, Error> {
        let mut out = Vec::new();
        let mut taken = BTreeSet::new();
        for (name, item) in self.webhook_items {
            let wp = format!("#/webhooks/{}", escape(name));
            let methods: Vec<(&str, &oa::Operation)> = item.iter().collect();
            for (method, op) in &methods {
                let mp = format!("{wp}/{method}");
                let mut base = names::snake(name);
                if methods.len() > 1 {
                    base = format!("{base}_{method}");
                }
                let method_name = names::unique(base, &mut taken);
                let hint = format!("{}Webhook", names::camel(&method_name));
                let body = self.callback_body(op, &mp, &hint)?;
                out.push(Callback {
                    name: name.clone(),
                    expression: String::new(),
                    method: method.to_string(),
                    rust: method_name,
                    summary: op.summary.clone(),
                    description: op.description.clone(),
                    body,
                    responses: callback_responses(op),
                    pointer: mp,
                });
            }
        }
        Ok(out)
    }

    /// A callback request's body, if any: a request body (types named from `hint`) that must
    /// be JSON or a form (`application/x-www-form-urlencoded`), since the server writes it.
    fn callback_body(
        &mut self,
        cop: &oa::Operation,
        mp: &str,
        hint: &str,
    ) -> Result<Option<Body>, Error> {
        let Some(b) = &cop.request_body else {
            return Ok(None);
        };
        let body = self.request_body(b, &format!("{mp}/requestBody"), hint)?;
        if !matches!(body.media, Media::Json | Media::Form) {
            return err(
                &format!("{mp}/requestBody"),
                "a callback or webhook body must be JSON or a form",
            );
        }
        Ok(Some(body))
    }
}

/// The operation's `x-pagination`, when written: `{param, items?, cursor? (with has_more?) |
/// next_token | link: true}` (codegen/README.md, "The client").
fn pagination_extension(op: &oa::Operation, pointer: &str) -> Result<Option<Pagination>, Error> {
    let Some(ext) = op.extensions.get("x-pagination") else {
        return Ok(None);
    };
    let text = |key: &str| ext.get(key).and_then(|v| v.as_str()).map(str::to_string);
    let at = format!("{pointer}/x-pagination");
    let Some(param) = text("param") else {
        return err(
            &at,
            "`param` (the query parameter that takes the next page's position) is required",
        );
    };
    let next = if let Some(field) = text("cursor") {
        NextPage::LastItem {
            field,
            flag: text("has_more").unwrap_or_else(|| "has_more".into()),
        }
    } else if let Some(token) = text("next_token") {
        NextPage::Token(token)
    } else if ext.get("link").and_then(|v| v.as_bool()) == Some(true) {
        NextPage::Link
    } else {
        return err(
            &at,
            "one of `cursor`, `next_token` or `link: true` is required",
        );
    };
    Ok(Some(Pagination {
        param,
        items: text("items"),
        next,
    }))
}
