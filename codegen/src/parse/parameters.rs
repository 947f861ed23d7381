//! Parameters: where each is, how it is written (style, explode, delimiter), and a schema the
//! runtime can read from text (or a JSON document, or a `deepObject`).

use std::collections::BTreeSet;

use openapiv3 as oa;
use openapiv3::ReferenceOr;

use super::bodies::media_kind;
use super::{Error, Parser, err, warn};
use crate::ir::*;
use crate::names;
use crate::names::escape;

/// Where a parameter is and its style: the delimiter of an array's values, and whether it is a
/// `deepObject` (only query parameters have a choice).
fn style(param: &oa::Parameter) -> (&oa::ParameterData, Location, char, bool) {
    match param {
        oa::Parameter::Path {
            parameter_data,
            style,
        } => {
            // An exploded `label` array is `.3.4.5`; every other path array is comma-separated
            // once its prefix is gone (`3,4,5`, `.3,4,5`, `;id=3,4,5`, `;id=3;id=4` rejoined).
            let exploded = parameter_data.explode.unwrap_or(false);
            let delimiter = match style {
                oa::PathStyle::Label if exploded => '.',
                _ => ',',
            };
            (parameter_data, Location::Path, delimiter, false)
        }
        oa::Parameter::Query {
            parameter_data,
            style,
            ..
        } => {
            let (delimiter, deep_object) = match style {
                oa::QueryStyle::Form => (',', false),
                oa::QueryStyle::SpaceDelimited => (' ', false),
                oa::QueryStyle::PipeDelimited => ('|', false),
                oa::QueryStyle::DeepObject => (',', true),
            };
            (parameter_data, Location::Query, delimiter, deep_object)
        }
        oa::Parameter::Header { parameter_data, .. } => {
            (parameter_data, Location::Header, ',', false)
        }
        oa::Parameter::Cookie { parameter_data, .. } => {
            (parameter_data, Location::Cookie, ',', false)
        }
    }
}

/// The schema of a plain (text) parameter: what poem-openapi cannot read from text (objects,
/// compositions, arrays of non-scalars) is taken as the raw text, with a warning; `true` then.
fn plain_schema(schema: Schema, pointer: &str) -> (Schema, bool) {
    let raw_text = Schema {
        kind: Kind::String {
            format: None,
            enum_values: Vec::new(),
        },
        description: schema.description.clone(),
        ..Schema::default()
    };
    match &schema.kind {
        Kind::Object(_) | Kind::OneOf { .. } | Kind::AnyOf(_) | Kind::AllOf(_) | Kind::Any => {
            warn(
                pointer,
                "an object-valued parameter is taken as its raw text",
            );
            (raw_text, true)
        }
        Kind::Array(item) if !is_scalar(item) => {
            warn(
                pointer,
                "an array of arrays or objects as a parameter is taken as its raw text",
            );
            (raw_text, true)
        }
        _ => (schema, false),
    }
}

/// The fields of a parameter poem-openapi cannot serve for its Rust type and validators: its
/// schema and `explode` as written, and for a `deepObject` its style (`null`: not written).
fn written_schema(
    data: &oa::ParameterData,
    deep_object: bool,
    pointer: &str,
) -> Result<String, Error> {
    let schema = match &data.format {
        oa::ParameterSchemaOrContent::Schema(s) => serde_json::to_value(s).ok(),
        oa::ParameterSchemaOrContent::Content(_) => None,
    };
    let fields = if deep_object {
        serde_json::json!({
            "schema": schema,
            "style": "deepObject",
            "explode": data.explode,
        })
    } else {
        serde_json::json!({ "schema": schema, "explode": data.explode })
    };
    super::json_text(&fields, pointer)
}

/// The fields of a parameter with non-JSON `content` (read as its raw text): its `content` as
/// written, and none of the `schema`, `style` and `explode` poem-openapi serves for a string.
fn written_content(data: &oa::ParameterData, pointer: &str) -> Result<String, Error> {
    let content = match &data.format {
        oa::ParameterSchemaOrContent::Content(c) => serde_json::to_value(c).ok(),
        oa::ParameterSchemaOrContent::Schema(_) => None,
    };
    let fields = serde_json::json!({
        "content": content,
        "schema": null,
        "style": null,
        "explode": null,
    });
    super::json_text(&fields, pointer)
}

/// A string, number, integer or boolean (what a parameter array may hold).
fn is_scalar(s: &Schema) -> bool {
    matches!(
        s.kind,
        Kind::String { .. }
            | Kind::Integer { .. }
            | Kind::Number { .. }
            | Kind::Boolean
            | Kind::Ref(_)
    )
}

impl<'a> Parser<'a> {
    /// One parameter (resolved if a `$ref`): where it is, how it is written, its schema as the
    /// runtime reads it, and its Rust field name (unique among the operation's: `taken`).
    pub(super) fn parameter(
        &mut self,
        p: &ReferenceOr<oa::Parameter>,
        pointer: &str,
        stem: &str,
        taken: &mut BTreeSet<String>,
    ) -> Result<Param, Error> {
        let (param, pointer) =
            self.resolve(p, pointer, "parameters", "parameter", |c| &c.parameters)?;
        let (data, location, delimiter, deep_style) = style(param);
        if data.extensions.contains_key(super::oas31::QUERYSTRING) {
            return self.query_string(data, pointer, stem, taken);
        }
        let (schema, content_type) = self.parameter_schema(data, &pointer, stem)?;
        let deep_object = deep_style && self.deep_object_applies(&schema, &pointer);
        let named = match &schema.kind {
            Kind::Ref(_) => true,
            Kind::Object(o) => !o.properties.is_empty(),
            _ => false,
        };
        let text_content = matches!(data.format, oa::ParameterSchemaOrContent::Content(_))
            && content_type.is_none();
        // A scalar schema beside keywords of another type, which the validators leave out.
        let loose = matches!(
            &data.format,
            oa::ParameterSchemaOrContent::Schema(ReferenceOr::Item(oa::Schema {
                schema_kind: oa::SchemaKind::Any(a),
                ..
            })) if a.typ.is_some()
        );
        let (schema, raw_text) = if deep_object {
            (self.deep_object(schema, stem, &data.name, &pointer), false)
        } else if content_type.is_some() {
            // A JSON document: any schema, read by `runtime::JsonParam`.
            (self.json_param(schema, &pointer, stem, &data.name), false)
        } else {
            plain_schema(schema, &pointer)
        };
        let served_as_written = if text_content {
            Some(written_content(data, &pointer)?)
        } else if deep_style && !(deep_object && named) {
            Some(written_schema(data, true, &pointer)?)
        } else if loose || raw_text {
            Some(written_schema(data, false, &pointer)?)
        } else {
            None
        };
        if location == Location::Path && !data.required {
            return err(&pointer, "path parameters must be required");
        }
        let rust = names::field_name(&data.name, taken);
        Ok(Param {
            // Only `form` explodes by default (the other styles exist for one delimited value).
            explode: data
                .explode
                .unwrap_or(location == Location::Query && delimiter == ','),
            delimiter,
            deep_object,
            query_string: false,
            form: false,
            path_style: match param {
                oa::Parameter::Path {
                    style: oa::PathStyle::Label,
                    ..
                } => Some(PathStyle::Label),
                oa::Parameter::Path {
                    style: oa::PathStyle::Matrix,
                    ..
                } => Some(PathStyle::Matrix),
                _ => None,
            },
            content_type,
            name: data.name.clone(),
            rust,
            location,
            required: data.required,
            description: data.description.clone(),
            deprecated: data.deprecated.unwrap_or(false),
            schema,
            pointer,
            served_as_written,
        })
    }

    /// OpenAPI 3.2's `in: querystring`: the whole query string, written with one `content`.
    /// JSON is read as a document (an inline object named), a form as an object of its keys
    /// (named, like a `deepObject`), any other media type as the raw text, with a warning.
    fn query_string(
        &mut self,
        data: &oa::ParameterData,
        pointer: String,
        stem: &str,
        taken: &mut BTreeSet<String>,
    ) -> Result<Param, Error> {
        let oa::ParameterSchemaOrContent::Content(content) = &data.format else {
            return err(
                &pointer,
                "an `in: querystring` parameter is written with `content`",
            );
        };
        let Some((media, m)) = content.iter().next() else {
            return err(
                &pointer,
                "an `in: querystring` parameter's `content` names no media type",
            );
        };
        if content.len() > 1 {
            return err(
                &pointer,
                "an `in: querystring` parameter's `content` names one media type",
            );
        }
        let hint = format!("{stem}{}", names::camel(&data.name));
        let schema_pointer = format!("{pointer}/content/{}/schema", escape(media));
        let schema = match &m.schema {
            Some(s) => self.convert_ref(s, &schema_pointer, &hint)?,
            None => Schema::default(),
        };
        let kind = media_kind(media);
        let (schema, content_type) = match kind {
            Media::Json | Media::Form => {
                let schema = match schema.kind {
                    Kind::Object(ref o) if !o.properties.is_empty() => {
                        self.hoist(&hint, schema, &schema_pointer, false)
                    }
                    _ => schema,
                };
                (schema, Some(media.clone()))
            }
            _ => {
                warn(
                    &pointer,
                    format!("a query string of type `{media}` is read as its raw text"),
                );
                let text = Schema {
                    kind: Kind::String {
                        format: None,
                        enum_values: Vec::new(),
                    },
                    description: schema.description.clone(),
                    ..Schema::default()
                };
                (text, None)
            }
        };
        Ok(Param {
            explode: false,
            delimiter: ',',
            deep_object: false,
            query_string: true,
            form: kind == Media::Form,
            path_style: None,
            content_type,
            name: data.name.clone(),
            rust: names::field_name(&data.name, taken),
            location: Location::Query,
            required: data.required,
            description: data.description.clone(),
            deprecated: data.deprecated.unwrap_or(false),
            schema,
            pointer,
            served_as_written: None,
        })
    }

    /// A parameter's schema as written: its `schema`, or the schema of its one JSON `content`
    /// (then with that media type, the parameter being a JSON document).
    fn parameter_schema(
        &mut self,
        data: &oa::ParameterData,
        pointer: &str,
        stem: &str,
    ) -> Result<(Schema, Option<String>), Error> {
        let hint = format!("{stem}{}", names::camel(&data.name));
        let content = match &data.format {
            oa::ParameterSchemaOrContent::Schema(s) => {
                let schema = self.convert_ref(s, &format!("{pointer}/schema"), &hint)?;
                return Ok((schema, None));
            }
            oa::ParameterSchemaOrContent::Content(content) => content,
        };
        let Some((media, m)) = content.iter().next() else {
            return err(pointer, "a parameter's `content` names no media type");
        };
        let schema_pointer = format!("{pointer}/content/{}/schema", escape(media));
        if media_kind(media) != Media::Json {
            // Read as a plain parameter: a scalar schema as itself, anything else as raw text
            // (`plain_schema`).
            warn(
                pointer,
                format!("a parameter with `{media}` content is read as plain text"),
            );
            let schema = match &m.schema {
                Some(s) => self.convert_ref(s, &schema_pointer, &hint)?,
                None => Schema {
                    kind: Kind::String {
                        format: None,
                        enum_values: Vec::new(),
                    },
                    ..Schema::default()
                },
            };
            return Ok((schema, None));
        }
        let schema = match &m.schema {
            Some(s) => self.convert_ref(s, &schema_pointer, &hint)?,
            None => Schema::default(),
        };
        Ok((schema, Some(media.clone())))
    }

    /// The schema of a JSON `content` parameter: an inline object gets a name (a Rust type).
    fn json_param(&mut self, schema: Schema, pointer: &str, stem: &str, name: &str) -> Schema {
        match schema.kind {
            Kind::Object(ref o) if !o.properties.is_empty() => {
                let hint = format!("{stem}{}", names::camel(name));
                self.hoist(&hint, schema, pointer, false)
            }
            _ => schema,
        }
    }

    /// Whether `deepObject` can apply to `schema`: an object (with properties, a map, or
    /// free-form). The style is not defined for other values; those are read as the plain
    /// `form` parameter that clients send for them, with a warning.
    fn deep_object_applies(&self, schema: &Schema, pointer: &str) -> bool {
        let target = match &schema.kind {
            Kind::Ref(n) => self.types.iter().find(|t| &t.name == n).map(|t| &t.schema),
            _ => Some(schema),
        };
        if matches!(target.map(|s| &s.kind), Some(Kind::Object(_) | Kind::Any)) {
            return true;
        }
        warn(
            pointer,
            "`deepObject` applies to objects only: this parameter is read in the `form` style",
        );
        false
    }

    /// The schema of a `deepObject` parameter: an object with properties is named (a Rust
    /// struct the runtime's `DeepObject` reads into); a map or a free-form object stays as it
    /// is (`BTreeMap` of its values' type, or a JSON object of strings).
    fn deep_object(&mut self, schema: Schema, stem: &str, name: &str, pointer: &str) -> Schema {
        match &schema.kind {
            Kind::Object(o) if !o.properties.is_empty() => {
                let hint = format!("{stem}{}", names::camel(name));
                self.hoist(&hint, schema, &format!("{pointer}/schema"), false)
            }
            _ => schema,
        }
    }
}
