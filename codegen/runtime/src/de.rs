//! Reading a generated object type with serde, without serde's derive.
//!
//! `#[derive(Deserialize)]` writes, for every struct, a field enum with its own visitor, a
//! visitor for sequences and one for maps; in a large crate those expansions are a good part of
//! what rustc checks. [`deserialize_object!`](crate::deserialize_object) writes only the map
//! visitor, over the helpers here, and reads what the derive reads in the same words: a field
//! given twice is `duplicate field`, a missing one `missing field` (an absent optional field is
//! `None`, as the derive's `missing_field` makes it), an unknown one is skipped or, for a closed
//! schema, `unknown field ..., expected one of ...`. Only a JSON array in place of the object,
//! which the derive reads field by field, is refused (`invalid type: sequence`).

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};

/// An object's key, borrowed from the input where it can be.
pub struct Key<'de>(Cow<'de, str>);

impl Key<'_> {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> de::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_string())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_identifier(KeyVisitor)
    }
}

/// The next value into `slot`, which must still be empty.
pub fn slot<'de, A: MapAccess<'de>, T: de::Deserialize<'de>>(
    map: &mut A,
    slot: &mut Option<T>,
    name: &'static str,
) -> Result<(), A::Error> {
    if slot.is_some() {
        return Err(de::Error::duplicate_field(name));
    }
    *slot = Some(map.next_value()?);
    Ok(())
}

/// The value of a key the type does not declare: skipped, or refused when the type is closed.
pub fn unknown<'de, A: MapAccess<'de>>(
    map: &mut A,
    key: &str,
    closed: bool,
    fields: &'static [&'static str],
) -> Result<(), A::Error> {
    if closed {
        return Err(de::Error::unknown_field(key, fields));
    }
    map.next_value::<IgnoredAny>().map(|_| ())
}

/// A field's value: what was read, or what its type makes of its absence (`None` for an
/// `Option`, `missing field` for anything else).
pub fn take<'de, T: de::Deserialize<'de>, E: de::Error>(
    slot: Option<T>,
    name: &'static str,
) -> Result<T, E> {
    match slot {
        Some(value) => Ok(value),
        None => T::deserialize(Missing(name, PhantomData)),
    }
}

/// The deserializer of an absent field.
struct Missing<E>(&'static str, PhantomData<E>);

impl<'de, E: de::Error> Deserializer<'de> for Missing<E> {
    type Error = E;

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, E> {
        Err(E::missing_field(self.0))
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        visitor.visit_none()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

/// `Deserialize` for a generated struct: its name, whether it is closed, and each field, with
/// its name on the wire when that is not the field's own (`id, r#type: "type", created_gt:
/// "created.gt"`).
#[macro_export]
#[doc(hidden)]
macro_rules! __deserialize_object {
    ($ty:ident, $closed:literal, { $($field:ident $(: $name:literal)?),* $(,)? }) => {
        impl<'de> ::serde::Deserialize<'de> for $ty {
            fn deserialize<D: ::serde::Deserializer<'de>>(
                deserializer: D,
            ) -> ::std::result::Result<Self, D::Error> {
                const FIELDS: &[&str] = &[$($crate::de::wire_name!($field $(, $name)?)),*];
                struct ObjectVisitor;
                impl<'de> ::serde::de::Visitor<'de> for ObjectVisitor {
                    type Value = $ty;
                    fn expecting(&self, f: &mut ::std::fmt::Formatter) -> ::std::fmt::Result {
                        f.write_str(concat!("struct ", stringify!($ty)))
                    }
                    #[allow(deprecated)]
                    fn visit_map<A: ::serde::de::MapAccess<'de>>(
                        self,
                        mut map: A,
                    ) -> ::std::result::Result<$ty, A::Error> {
                        $(let mut $field = ::std::option::Option::None;)*
                        while let ::std::option::Option::Some(key) =
                            map.next_key::<$crate::de::Key<'de>>()?
                        {
                            match key.as_str() {
                                $($crate::de::wire_name!($field $(, $name)?) => {
                                    let wire = $crate::de::wire_name!($field $(, $name)?);
                                    $crate::de::slot(&mut map, &mut $field, wire)?
                                })*
                                other => $crate::de::unknown(&mut map, other, $closed, FIELDS)?,
                            }
                        }
                        ::std::result::Result::Ok($ty {
                            $($field: $crate::de::take($field, $crate::de::wire_name!($field $(, $name)?))?,)*
                        })
                    }
                }
                deserializer.deserialize_struct(stringify!($ty), FIELDS, ObjectVisitor)
            }
        }
    };
}
pub use __deserialize_object as deserialize_object;

/// A field's name on the wire: the one given, else the field's own.
#[macro_export]
#[doc(hidden)]
macro_rules! __wire_name {
    ($field:ident) => {
        stringify!($field)
    };
    ($field:ident, $name:literal) => {
        $name
    };
}
pub use __wire_name as wire_name;

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    /// What the macro writes, beside what serde's derive writes for the same struct.
    #[derive(Debug, PartialEq)]
    struct Written {
        id: String,
        r#type: Option<String>,
        count: Option<i64>,
        required_nullable: Option<bool>,
    }
    crate::deserialize_object!(Written, false, {
        id, r#type: "type", count, required_nullable,
    });

    #[derive(Debug, PartialEq, Deserialize)]
    struct Derived {
        id: String,
        #[serde(rename = "type", default)]
        r#type: Option<String>,
        #[serde(default)]
        count: Option<i64>,
        required_nullable: Option<bool>,
    }

    #[derive(Debug, PartialEq)]
    struct WrittenClosed {
        id: String,
    }
    crate::deserialize_object!(WrittenClosed, true, { id });

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct DerivedClosed {
        id: String,
    }

    fn both<W, D>(json: &str) -> (Result<W, String>, Result<D, String>)
    where
        W: for<'de> Deserialize<'de>,
        D: for<'de> Deserialize<'de>,
    {
        let w = serde_json::from_str::<W>(json).map_err(|e| e.to_string());
        // The same words, but for the struct's name.
        let d = serde_json::from_str::<D>(json)
            .map_err(|e| e.to_string().replace("struct Derived", "struct Written"));
        (w, d)
    }

    #[test]
    fn reads_what_the_derive_reads_and_fails_in_its_words() {
        let cases = [
            r#"{"id":"a","type":"t","count":3,"required_nullable":true}"#,
            r#"{"id":"a","extra":{"deep":[1,2]},"required_nullable":null}"#,
            r#"{"id":"a"}"#,
            r#"{"type":"t"}"#,
            r#"{"id":"a","id":"b"}"#,
            r#"{"id":1}"#,
            r#""text""#,
            r#"{"id":"a\u0041","type":"esc\"aped"}"#,
        ];
        for json in cases {
            let (w, d) = both::<Written, Derived>(json);
            let w = w.map(|w| (w.id, w.r#type, w.count, w.required_nullable));
            let d = d.map(|d| (d.id, d.r#type, d.count, d.required_nullable));
            assert_eq!(w, d, "{json}");
        }
        for json in [r#"{"id":"a"}"#, r#"{"id":"a","other":1}"#, r#"{}"#] {
            let (w, d) = both::<WrittenClosed, DerivedClosed>(json);
            assert_eq!(w.map(|w| w.id), d.map(|d| d.id), "{json}");
        }
    }

    #[test]
    fn reads_from_a_json_value_as_the_server_does() {
        let value = serde_json::json!({"id": "a", "type": "t", "unknown": [1]});
        let w: Written = serde_json::from_value(value).unwrap();
        assert_eq!(w.r#type.as_deref(), Some("t"));
        assert_eq!(w.count, None);
        let err = serde_json::from_value::<WrittenClosed>(serde_json::json!({"id": "a", "x": 1}))
            .unwrap_err()
            .to_string();
        assert_eq!(err, "unknown field `x`, expected `id`");
    }
}
