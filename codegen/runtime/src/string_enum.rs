//! String enums: serde, `Display` and `FromStr` written once over the generated `ALL` and
//! `as_str`, instead of serde's derives on each enum (which expand to a field visitor, a
//! variant visitor and their matches per enum: the heaviest part of a large crate's models).

use std::fmt;
use std::marker::PhantomData;

/// What a generated string enum provides: every value, and each one's wire text.
pub trait StringEnum: Sized + Copy + 'static {
    /// The enum's name, for messages.
    const NAME: &'static str;
    /// Every value, in document order.
    const ALL: &'static [Self];
    /// The value as it appears on the wire.
    fn as_str(&self) -> &'static str;

    /// The value whose wire text is `text`.
    fn from_wire(text: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|v| v.as_str() == text)
    }
}

/// serde's own words for an unknown variant (`unknown variant `x`, expected `a` or `b``), so
/// the message is the one serde's derive gave.
fn unknown<T: StringEnum>(text: &str) -> String {
    let names: Vec<String> = T::ALL.iter().map(|v| format!("`{}`", v.as_str())).collect();
    match names.as_slice() {
        [] => format!("unknown variant `{text}`, there are no variants"),
        [one] => format!("unknown variant `{text}`, expected {one}"),
        [a, b] => format!("unknown variant `{text}`, expected {a} or {b}"),
        _ => format!(
            "unknown variant `{text}`, expected one of {}",
            names.join(", ")
        ),
    }
}

/// `Deserialize` of a string enum: a string naming one of its values.
pub fn deserialize<'de, T: StringEnum, D: serde::Deserializer<'de>>(d: D) -> Result<T, D::Error> {
    struct Visitor<T>(PhantomData<T>);
    impl<T: StringEnum> serde::de::Visitor<'_> for Visitor<T> {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            write!(f, "one of the values of {}", T::NAME)
        }
        fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<T, E> {
            T::from_wire(text).ok_or_else(|| E::custom(unknown::<T>(text)))
        }
    }
    d.deserialize_str(Visitor(PhantomData))
}

/// `FromStr` of a string enum.
pub fn from_str<T: StringEnum>(text: &str) -> Result<T, String> {
    T::from_wire(text).ok_or_else(|| format!("`{text}` is not a known {}", T::NAME))
}

/// Implements [`StringEnum`], serde both ways, `Display` and `FromStr` for a generated enum
/// with inherent `ALL` and `as_str`.
#[macro_export]
#[doc(hidden)]
macro_rules! __string_enum {
    ($ty:ident) => {
        impl $crate::string_enum::StringEnum for $ty {
            const NAME: &'static str = stringify!($ty);
            const ALL: &'static [Self] = <$ty>::ALL;
            fn as_str(&self) -> &'static str {
                <$ty>::as_str(self)
            }
        }

        impl ::serde::Serialize for $ty {
            fn serialize<S: ::serde::Serializer>(
                &self,
                s: S,
            ) -> ::std::result::Result<S::Ok, S::Error> {
                s.serialize_str(<$ty>::as_str(self))
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $ty {
            fn deserialize<D: ::serde::Deserializer<'de>>(
                d: D,
            ) -> ::std::result::Result<Self, D::Error> {
                $crate::string_enum::deserialize(d)
            }
        }

        impl ::std::fmt::Display for $ty {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(<$ty>::as_str(self))
            }
        }

        impl ::std::str::FromStr for $ty {
            type Err = ::std::string::String;
            fn from_str(s: &str) -> ::std::result::Result<Self, Self::Err> {
                $crate::string_enum::from_str(s)
            }
        }
    };
}
pub use __string_enum as string_enum;

#[cfg(test)]
mod tests {
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Status {
        Open,
        Closed,
        OnHold,
    }

    impl Status {
        const ALL: &'static [Status] = &[Status::Open, Status::Closed, Status::OnHold];
        fn as_str(&self) -> &'static str {
            match self {
                Status::Open => "open",
                Status::Closed => "closed",
                Status::OnHold => "on-hold",
            }
        }
    }
    crate::string_enum!(Status);

    /// The same enum through serde's derives: what the generated enums used to be.
    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    enum Derived {
        #[serde(rename = "open")]
        Open,
        #[serde(rename = "closed")]
        Closed,
        #[serde(rename = "on-hold")]
        OnHold,
    }

    #[test]
    fn reads_and_writes_like_serde_derives() {
        for (ours, theirs) in [
            (Status::Open, Derived::Open),
            (Status::Closed, Derived::Closed),
            (Status::OnHold, Derived::OnHold),
        ] {
            let text = serde_json::to_string(&ours).unwrap();
            assert_eq!(text, serde_json::to_string(&theirs).unwrap());
            assert_eq!(serde_json::from_str::<Status>(&text).unwrap(), ours);
            let value = serde_json::Value::String(ours.to_string());
            assert_eq!(serde_json::from_value::<Status>(value).unwrap(), ours);
        }
        for bad in [r#""pending""#, r#""Open""#] {
            let ours = serde_json::from_str::<Status>(bad).unwrap_err().to_string();
            let theirs = serde_json::from_str::<Derived>(bad)
                .unwrap_err()
                .to_string();
            assert_eq!(ours, theirs);
        }
        assert!(serde_json::from_str::<Status>("3").is_err());
        assert_eq!("on-hold".parse::<Status>(), Ok(Status::OnHold));
        assert_eq!(
            "x".parse::<Status>(),
            Err("`x` is not a known Status".to_string())
        );
    }
}
