//! Parameter types poem-openapi does not read as the document writes them: `format: date`,
//! non-exploded arrays, `label` and `matrix` path styles, JSON (`content`) parameters,
//! `deepObject` query parameters, and patterns checked without recompiling.

use poem::{Request, RequestBody};
use poem_openapi::registry::{MetaSchema, MetaSchemaRef, Registry};
use poem_openapi::types::Type;
use serde_json::Value;

use crate::{inline, pattern_matches};

/// A `format: date` parameter (poem-openapi's own `NaiveDate` documents itself as `naive-date`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Date(pub chrono::NaiveDate);

impl Type for Date {
    const IS_REQUIRED: bool = true;
    type RawValueType = Self;
    type RawElementValueType = Self;

    fn name() -> std::borrow::Cow<'static, str> {
        "string_date".into()
    }

    fn schema_ref() -> MetaSchemaRef {
        let mut s = MetaSchema::new("string");
        s.format = Some("date");
        inline(s)
    }

    fn as_raw_value(&self) -> Option<&Self::RawValueType> {
        Some(self)
    }

    fn raw_element_iter<'a>(
        &'a self,
    ) -> Box<dyn Iterator<Item = &'a Self::RawElementValueType> + 'a> {
        Box::new(std::iter::once(self))
    }
}

impl poem_openapi::types::ParseFromParameter for Date {
    fn parse_from_parameter(value: &str) -> poem_openapi::types::ParseResult<Self> {
        chrono::NaiveDate::parse_from_str(value, "%Y-%m-%d")
            .map(Date)
            .map_err(|_| poem_openapi::types::ParseError::custom("must be a date (YYYY-MM-DD)"))
    }
}

/// A non-exploded array parameter: one value, items separated by `SEP` (`colors=red,blue` in
/// `form` style, `red blue` in `spaceDelimited`, `red|blue` in `pipeDelimited`).
///
/// poem-openapi's own `explode = false` unwraps a missing value (a panic when the parameter is
/// absent) and knows commas only, so generated code parses these itself and
/// [`DocumentPatch::unexploded_params`] puts `explode: false` (and the style) back in the served
/// document.
///
/// [`DocumentPatch::unexploded_params`]: crate::DocumentPatch::unexploded_params
#[derive(Debug, Clone, PartialEq)]
pub struct Delimited<T, const SEP: char>(pub Vec<T>);

/// A comma-separated array parameter (`form` and `simple` styles).
pub type Csv<T> = Delimited<T, ','>;

impl<T: poem_openapi::types::ParseFromParameter + Send + Sync, const SEP: char> Type
    for Delimited<T, SEP>
{
    const IS_REQUIRED: bool = true;
    type RawValueType = Vec<T>;
    type RawElementValueType = T::RawValueType;

    fn name() -> std::borrow::Cow<'static, str> {
        <Vec<T> as Type>::name()
    }

    fn schema_ref() -> MetaSchemaRef {
        <Vec<T> as Type>::schema_ref()
    }

    fn register(registry: &mut Registry) {
        <Vec<T> as Type>::register(registry);
    }

    fn as_raw_value(&self) -> Option<&Self::RawValueType> {
        Some(&self.0)
    }

    fn raw_element_iter<'a>(
        &'a self,
    ) -> Box<dyn Iterator<Item = &'a Self::RawElementValueType> + 'a> {
        self.0.raw_element_iter()
    }
}

impl<T: poem_openapi::types::ParseFromParameter + Send + Sync, const SEP: char>
    poem_openapi::types::ParseFromParameter for Delimited<T, SEP>
{
    fn parse_from_parameter(value: &str) -> poem_openapi::types::ParseResult<Self> {
        value
            .split(SEP)
            .map(|item| T::parse_from_parameter(item.trim()))
            .collect::<Result<Vec<T>, _>>()
            .map(Delimited)
            .map_err(poem_openapi::types::ParseError::propagate)
    }
}

/// `Type` for a parameter wrapper around one value of type `$inner` (its field `.0`): read its
/// own way, documented and validated as the value's type.
macro_rules! type_of_inner {
    ($inner:ident; [$($g:tt)*] $ty:ty) => {
        impl<$($g)*> Type for $ty {
            const IS_REQUIRED: bool = true;
            type RawValueType = $inner::RawValueType;
            type RawElementValueType = $inner::RawElementValueType;

            fn name() -> std::borrow::Cow<'static, str> {
                $inner::name()
            }

            fn schema_ref() -> MetaSchemaRef {
                $inner::schema_ref()
            }

            fn register(registry: &mut Registry) {
                $inner::register(registry);
            }

            fn as_raw_value(&self) -> Option<&Self::RawValueType> {
                self.0.as_raw_value()
            }

            fn raw_element_iter<'a>(
                &'a self,
            ) -> Box<dyn Iterator<Item = &'a Self::RawElementValueType> + 'a> {
                self.0.raw_element_iter()
            }
        }
    };
}

/// A path parameter in `label` (`STYLE = 'l'`: `.5`, `.3,4,5`, exploded `.3.4.5`) or `matrix`
/// style (`'m'`: `;id=5`, `;id=3,4,5`, exploded `;id=3;id=4;id=5`): the prefix is removed
/// (exploded matrix pairs are rejoined with commas) and the rest read as `W` reads it (the
/// value's type, or a [`Delimited`] array). A value without its prefix is a 400.
#[derive(Debug, Clone, PartialEq)]
pub struct PathStyled<W, const STYLE: char, const EXPLODE: bool>(pub W);

type_of_inner!(W; [W: Type, const STYLE: char, const EXPLODE: bool] PathStyled<W, STYLE, EXPLODE>);

impl<W: poem_openapi::types::ParseFromParameter, const STYLE: char, const EXPLODE: bool>
    poem_openapi::types::ParseFromParameter for PathStyled<W, STYLE, EXPLODE>
{
    fn parse_from_parameter(value: &str) -> poem_openapi::types::ParseResult<Self> {
        let text = path_style_text(value, STYLE, EXPLODE)
            .map_err(poem_openapi::types::ParseError::custom)?;
        W::parse_from_parameter(&text)
            .map(PathStyled)
            .map_err(poem_openapi::types::ParseError::propagate)
    }
}

/// The text of a `label` or `matrix` path value without its prefix (see [`PathStyled`]).
fn path_style_text(value: &str, style: char, explode: bool) -> Result<String, &'static str> {
    let after_name = |pair: &str| pair.split_once('=').map_or("", |(_, v)| v).to_string();
    match style {
        'l' => value
            .strip_prefix('.')
            .map(str::to_string)
            .ok_or("must begin with `.` (label style)"),
        'm' => {
            let rest = value
                .strip_prefix(';')
                .ok_or("must begin with `;name=` (matrix style)")?;
            if explode {
                Ok(rest
                    .split(';')
                    .map(after_name)
                    .collect::<Vec<_>>()
                    .join(","))
            } else {
                Ok(after_name(rest))
            }
        }
        _ => Ok(value.to_string()),
    }
}

/// A parameter written with `content` of a JSON media type: its value is a JSON document
/// (`?filter={"name":"Rex"}`, percent-encoded), read with the type's serde rules.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonParam<T>(pub T);

type_of_inner!(T; [T: Type + serde::de::DeserializeOwned] JsonParam<T>);

impl<T: Type + serde::de::DeserializeOwned> poem_openapi::types::ParseFromParameter
    for JsonParam<T>
{
    fn parse_from_parameter(value: &str) -> poem_openapi::types::ParseResult<Self> {
        serde_json::from_str(value).map(JsonParam).map_err(|e| {
            poem_openapi::types::ParseError::custom(format!("not the JSON expected: {e}"))
        })
    }
}

/// The items of a poem-openapi extractor of a query parameter that reads a `T` into `.0` (all
/// but `from_request`): [`DeepObject`] and [`QueryString`].
macro_rules! query_parameter_extractor {
    () => {
        const TYPES: &'static [poem_openapi::ApiExtractorType] =
            &[poem_openapi::ApiExtractorType::Parameter];
        const PARAM_IS_REQUIRED: bool = T::IS_REQUIRED;

        type ParamType = T;
        type ParamRawType = T::RawValueType;

        fn register(registry: &mut Registry) {
            T::register(registry);
        }

        fn param_in() -> Option<poem_openapi::registry::MetaParamIn> {
            Some(poem_openapi::registry::MetaParamIn::Query)
        }

        fn param_schema_ref() -> Option<MetaSchemaRef> {
            Some(T::schema_ref())
        }

        fn param_raw_type(&self) -> Option<&Self::ParamRawType> {
            self.0.as_raw_value()
        }
    };
}
pub(crate) use query_parameter_extractor;

/// A `deepObject` query parameter: `filter[name]=Rex&filter[min_age]=3` is the object
/// `{"name": "Rex", "min_age": 3}`.
///
/// poem-openapi's `Query` knows no `deepObject` (it serves the style but reads one value), so
/// this extractor gathers the bracketed keys itself and types each value by the property's
/// schema (integers, numbers and booleans from their text, a repeated key of an array property
/// as its items); then the object is read like a JSON body. No key at all is an absent
/// parameter.
pub struct DeepObject<T>(pub T);

/// The property schemas of `T`'s object schema, by name, and the schema of the values of any
/// other key (a map's `additionalProperties`), if it has one.
fn object_properties<T: Type>() -> (Vec<(&'static str, MetaSchema)>, Option<MetaSchema>) {
    let mut registry = Registry::new();
    T::register(&mut registry);
    let resolve = |r: &MetaSchemaRef| -> Option<MetaSchema> {
        match r {
            MetaSchemaRef::Inline(s) => Some((**s).clone()),
            MetaSchemaRef::Reference(name) => registry.schemas.get(name).cloned(),
        }
    };
    let Some(object) = resolve(&T::schema_ref()) else {
        return (Vec::new(), None);
    };
    let properties = object
        .properties
        .iter()
        .filter_map(|(name, r)| resolve(r).map(|s| (*name, s)))
        .collect();
    let additional = object.additional_properties.as_deref().and_then(resolve);
    (properties, additional)
}

/// A value of the query string typed as the schema `ty` says (`integer`, `number`,
/// `boolean`); text otherwise, and where it does not parse (the body reader names it).
fn typed_text(ty: &str, text: String) -> Value {
    let parsed = match ty {
        "integer" => text.parse::<i64>().ok().map(Value::from),
        "number" => text.parse::<f64>().ok().map(Value::from),
        "boolean" => text.parse::<bool>().ok().map(Value::from),
        _ => None,
    };
    parsed.unwrap_or(Value::String(text))
}

/// The object that `(key, text)` pairs of a query string write for `T`'s object schema: each
/// value typed by its property's schema, the repeated key of an array property gathered as its
/// items. Keys `field` maps to `None` are not the object's.
pub(crate) fn object_of_pairs<T: Type>(
    pairs: Vec<(String, String)>,
    field: impl Fn(&str) -> Option<&str>,
) -> serde_json::Map<String, Value> {
    let (properties, additional) = object_properties::<T>();
    let mut object = serde_json::Map::new();
    for (key, text) in pairs {
        let Some(field) = field(&key) else {
            continue;
        };
        let schema = properties
            .iter()
            .find(|(n, _)| *n == field)
            .map(|(_, s)| s)
            .or(additional.as_ref());
        match schema {
            Some(s) if s.ty == "array" => {
                let item_ty = s.items.as_deref().map_or("string", |i| match i {
                    MetaSchemaRef::Inline(i) => i.ty,
                    MetaSchemaRef::Reference(_) => "string",
                });
                let slot = object
                    .entry(field.to_string())
                    .or_insert_with(|| Value::Array(Vec::new()));
                if let Value::Array(items) = slot {
                    items.push(typed_text(item_ty, text));
                }
            }
            _ => {
                let ty = schema.map_or("string", |s| s.ty);
                object.insert(field.to_string(), typed_text(ty, text));
            }
        }
    }
    object
}

impl<'a, T> poem_openapi::ApiExtractor<'a> for DeepObject<T>
where
    T: Type + serde::de::DeserializeOwned + Send + Sync,
{
    query_parameter_extractor!();

    async fn from_request(
        request: &'a Request,
        _body: &mut RequestBody,
        param_opts: poem_openapi::ExtractParamOptions<Self::ParamType>,
    ) -> poem::Result<Self> {
        let name = param_opts.name;
        let fail = |reason: String| poem_openapi::error::ParseParamError { name, reason };
        let query = request.uri().query().unwrap_or_default();
        let pairs: Vec<(String, String)> =
            serde_urlencoded::from_str(query).map_err(|e| fail(e.to_string()))?;
        let prefix = format!("{name}[");
        let object = object_of_pairs::<T>(pairs, |key| {
            key.strip_prefix(&prefix).and_then(|k| k.strip_suffix(']'))
        });
        let value = if object.is_empty() {
            Value::Null
        } else {
            Value::Object(object)
        };
        if value.is_null() && T::IS_REQUIRED {
            return Err(fail("missing".to_string()).into());
        }
        serde_json::from_value(value)
            .map(DeepObject)
            .map_err(|e| fail(e.to_string()).into())
    }
}

/// The `pattern` of a path, query or header parameter, checked with [`pattern_matches`].
///
/// poem-openapi's own `pattern` validator compiles its regular expression on every request
/// (measured in bankd: 8 % of the server's samples under book transfers, for the
/// `Idempotency-Key` header). A custom validator does not show in the document poem-openapi
/// serves, so [`DocumentPatch::param_patterns`] puts the pattern back. It prints like
/// poem-openapi's validator, so the 400 a bad value gets reads the same.
///
/// [`DocumentPatch::param_patterns`]: crate::DocumentPatch::param_patterns
pub struct ParamPattern(pub &'static str);

impl std::fmt::Display for ParamPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "pattern(\"{}\")", self.0)
    }
}

impl<T: AsRef<str>> poem_openapi::validation::Validator<T> for ParamPattern {
    fn check(&self, value: &T) -> bool {
        pattern_matches(self.0, value.as_ref())
    }
}
