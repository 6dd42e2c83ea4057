//! Map keys read ahead so the filter can decide before the decoded type sees them.

use std::fmt;
use std::marker::PhantomData;

use serde::de::value::{BorrowedStrDeserializer, StringDeserializer};
use serde::de::{self, DeserializeSeed, Deserializer, Visitor};
use serde::forward_to_deserialize_any;

/// A map key or variant name read ahead, so the filter can decide before the type
/// being decoded sees it. Borrowed from the input when the input allows (no escapes):
/// capturing allocates only for escaped keys.
pub(crate) enum Key<'de> {
    Borrowed(&'de str),
    Owned(String),
    U64(u64),
    I64(i64),
    Bool(bool),
}

impl Key<'_> {
    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Key::Borrowed(s) => Some(s),
            Key::Owned(s) => Some(s),
            _ => None,
        }
    }
}

/// Reads a key as it comes.
pub(crate) struct CaptureKey;

impl<'de> DeserializeSeed<'de> for CaptureKey {
    type Value = Key<'de>;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Key<'de>, D::Error> {
        de.deserialize_any(CaptureKey)
    }
}

impl<'de> Visitor<'de> for CaptureKey {
    type Value = Key<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map key")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
        Ok(Key::Borrowed(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
        Ok(Key::Owned(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
        Ok(Key::Owned(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Key<'de>, E> {
        Ok(Key::U64(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Key<'de>, E> {
        Ok(Key::I64(v))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Key<'de>, E> {
        Ok(Key::Bool(v))
    }
}

/// Hands a captured key to the type being decoded. String keys asked for as numbers
/// or booleans are parsed, as serde_json does for map keys.
pub(crate) struct KeyDeserializer<'de, E> {
    key: Key<'de>,
    _e: PhantomData<fn() -> E>,
}

impl<'de, E> KeyDeserializer<'de, E> {
    pub(crate) fn new(key: Key<'de>) -> Self {
        KeyDeserializer {
            key,
            _e: PhantomData,
        }
    }
}

/// `deserialize_*` for numbers and booleans: string keys are parsed.
macro_rules! parse_key {
    ($($method:ident => $visit:ident : $ty:ty;)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
                match &self.key {
                    Key::Borrowed(s) => parse_str_key::<$ty, V, E>(s, visitor, |v, n| v.$visit(n)),
                    Key::Owned(s) => parse_str_key::<$ty, V, E>(s, visitor, |v, n| v.$visit(n)),
                    _ => self.deserialize_any(visitor),
                }
            }
        )*
    };
}

pub(crate) fn parse_str_key<'de, T, V, E>(
    s: &str,
    visitor: V,
    visit: impl FnOnce(V, T) -> Result<V::Value, E>,
) -> Result<V::Value, E>
where
    T: std::str::FromStr,
    V: Visitor<'de>,
    E: de::Error,
{
    match s.parse::<T>() {
        Ok(n) => visit(visitor, n),
        Err(_) => Err(E::invalid_value(de::Unexpected::Str(s), &visitor)),
    }
}

impl<'de, E: de::Error> Deserializer<'de> for KeyDeserializer<'de, E> {
    type Error = E;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        match self.key {
            Key::Borrowed(s) => visitor.visit_borrowed_str(s),
            Key::Owned(s) => visitor.visit_string(s),
            Key::U64(n) => visitor.visit_u64(n),
            Key::I64(n) => visitor.visit_i64(n),
            Key::Bool(b) => visitor.visit_bool(b),
        }
    }

    parse_key! {
        deserialize_bool => visit_bool: bool;
        deserialize_i8 => visit_i8: i8;
        deserialize_i16 => visit_i16: i16;
        deserialize_i32 => visit_i32: i32;
        deserialize_i64 => visit_i64: i64;
        deserialize_i128 => visit_i128: i128;
        deserialize_u8 => visit_u8: u8;
        deserialize_u16 => visit_u16: u16;
        deserialize_u32 => visit_u32: u32;
        deserialize_u64 => visit_u64: u64;
        deserialize_u128 => visit_u128: u128;
        deserialize_f32 => visit_f32: f32;
        deserialize_f64 => visit_f64: f64;
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, E> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, E> {
        match self.key {
            Key::Borrowed(s) => {
                BorrowedStrDeserializer::<E>::new(s).deserialize_enum(name, variants, visitor)
            }
            Key::Owned(s) => {
                StringDeserializer::<E>::new(s).deserialize_enum(name, variants, visitor)
            }
            _ => self.deserialize_any(visitor),
        }
    }

    forward_to_deserialize_any! {
        char str string bytes byte_buf unit unit_struct seq tuple tuple_struct map struct
        identifier ignored_any
    }
}
