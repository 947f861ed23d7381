//! Types whose schema is generated: [`SpecType`], and the `spec_type!` macro that implements
//! poem-openapi's traits for one (glue between serde and poem-openapi's `Type`).

use poem_openapi::registry::{MetaSchema, Registry};

use crate::SchemaData;

/// A generated type: its documented schema, and whether that schema is a named component.
///
/// A type implements serde only in the directions the server moves it (see [`spec_type!`]): a
/// request-only type deserialises, a response-only type serialises.
pub trait SpecType: Send + Sync + 'static {
    /// The component name, or `None` for a schema written inline in the document.
    const NAME: Option<&'static str>;
    /// The schema as the document writes it, as data ([`SchemaData`]).
    const SCHEMA: SchemaData;

    /// The schema; registers what it refers to.
    fn schema(registry: &mut Registry) -> MetaSchema {
        Self::SCHEMA.schema(registry)
    }
}

/// Implements poem-openapi's traits for a [`SpecType`]. One line in generated code instead of
/// sixty. `spec_type!(T)` (or `spec_type!(T, both)`) for a type that goes both ways;
/// `spec_type!(T, read)` for one that is only read from requests (`ParseFromJSON`, and
/// `ParseFromParameter` for string enums used as parameters); `spec_type!(T, write)` for one that
/// is only written (`ToJSON`).
///
/// With a schema, `spec_type!(T, read, "Name", "{json}", [Linked, …])` also implements
/// [`SpecType`] itself: the component name (`_` for an inline schema), the schema's JSON and the
/// types its `{"$ref": i}` entries point to (a [`SchemaData`]), so that a generated type's schema
/// is one call rather than an impl block of a dozen lines.
#[macro_export]
#[doc(hidden)]
macro_rules! __spec_type {
    (@schema $ty:ty, _, $json:literal, [$($link:ty),* $(,)?]) => {
        $crate::__spec_type!(@schema $ty, ::std::option::Option::None, $json, [$($link),*]);
    };
    (@schema $ty:ty, $name:literal, $json:literal, [$($link:ty),* $(,)?]) => {
        $crate::__spec_type!(
            @schema $ty, ::std::option::Option::Some($name), $json, [$($link),*]
        );
    };
    (@schema $ty:ty, $name:expr, $json:literal, [$($link:ty),* $(,)?]) => {
        impl $crate::SpecType for $ty {
            const NAME: ::std::option::Option<&'static str> = $name;
            const SCHEMA: $crate::SchemaData = $crate::SchemaData {
                json: $json,
                links: &[$($crate::link::<$link>()),*],
            };
        }
    };
    ($ty:ty, $way:ident, $name:tt, $json:literal, [$($link:ty),* $(,)?]) => {
        $crate::__spec_type!(@schema $ty, $name, $json, [$($link),*]);
        $crate::__spec_type!($ty, $way);
    };
    ($ty:ty, both) => {
        $crate::__spec_type!($ty);
    };
    ($ty:ty) => {
        $crate::__spec_type!($ty, type);
        $crate::__spec_type!($ty, read_impls);
        $crate::__spec_type!($ty, write_impls);
    };
    ($ty:ty, read) => {
        $crate::__spec_type!($ty, type);
        $crate::__spec_type!($ty, read_impls);
    };
    ($ty:ty, write) => {
        $crate::__spec_type!($ty, type);
        $crate::__spec_type!($ty, write_impls);
    };
    ($ty:ty, type) => {
        impl ::poem_openapi::types::Type for $ty {
            const IS_REQUIRED: bool = true;
            type RawValueType = Self;
            type RawElementValueType = Self;

            fn name() -> ::std::borrow::Cow<'static, str> {
                ::std::borrow::Cow::Borrowed(
                    <$ty as $crate::SpecType>::NAME.unwrap_or(stringify!($ty)),
                )
            }

            fn schema_ref() -> ::poem_openapi::registry::MetaSchemaRef {
                match <$ty as $crate::SpecType>::NAME {
                    ::std::option::Option::Some(name) => $crate::reference(name),
                    ::std::option::Option::None => {
                        let mut registry = ::poem_openapi::registry::Registry::new();
                        $crate::inline(<$ty as $crate::SpecType>::schema(&mut registry))
                    }
                }
            }

            fn register(registry: &mut ::poem_openapi::registry::Registry) {
                match <$ty as $crate::SpecType>::NAME {
                    ::std::option::Option::Some(name) => registry
                        .create_schema::<Self, _>(name.to_string(), |registry| {
                            <$ty as $crate::SpecType>::schema(registry)
                        }),
                    ::std::option::Option::None => {
                        let _ = <$ty as $crate::SpecType>::schema(registry);
                    }
                }
            }

            fn as_raw_value(&self) -> ::std::option::Option<&Self::RawValueType> {
                ::std::option::Option::Some(self)
            }

            fn raw_element_iter<'a>(
                &'a self,
            ) -> ::std::boxed::Box<
                dyn ::std::iter::Iterator<Item = &'a Self::RawElementValueType> + 'a,
            > {
                ::std::boxed::Box::new(::std::iter::once(self))
            }
        }
    };
    ($ty:ty, read_impls) => {
        impl ::poem_openapi::types::ParseFromJSON for $ty {
            fn parse_from_json(
                value: ::std::option::Option<::serde_json::Value>,
            ) -> ::poem_openapi::types::ParseResult<Self> {
                ::serde_json::from_value(value.unwrap_or_default())
                    .map_err(::poem_openapi::types::ParseError::custom)
            }
        }

        impl ::poem_openapi::types::ParseFromParameter for $ty {
            fn parse_from_parameter(value: &str) -> ::poem_openapi::types::ParseResult<Self> {
                ::serde_json::from_value(::serde_json::Value::String(value.to_string())).map_err(
                    |_| {
                        ::poem_openapi::types::ParseError::custom(format!(
                            "`{value}` is not an allowed value"
                        ))
                    },
                )
            }
        }
    };
    ($ty:ty, write_impls) => {
        impl ::poem_openapi::types::ToJSON for $ty {
            fn to_json(&self) -> ::std::option::Option<::serde_json::Value> {
                ::serde_json::to_value(self).ok()
            }
        }
    };
}
pub use crate::__spec_type as spec_type;
