//! The deserializer adapter: wraps every map, sequence and enum on a filtered path
//! and skips the filtered values.

use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, IgnoredAny, MapAccess, SeqAccess,
    VariantAccess, Visitor,
};

use crate::key::{CaptureKey, KeyDeserializer};
use crate::path::Node;

/// A [`DeserializeSeed`] decoding a `T` through a [`FieldFilter`](crate::FieldFilter); made by
/// [`FieldFilter::seed`](crate::FieldFilter::seed).
pub struct FilteredSeed<'f, T> {
    pub(crate) node: &'f Node,
    pub(crate) _t: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for FilteredSeed<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FilteredSeed").finish_non_exhaustive()
    }
}

impl<'de, T: Deserialize<'de>> DeserializeSeed<'de> for FilteredSeed<'_, T> {
    type Value = T;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<T, D::Error> {
        T::deserialize(FilteredDeserializer {
            de: deserializer,
            node: self.node,
        })
    }
}

/// A deserializer that skips a [`FieldFilter`](crate::FieldFilter)'s paths; made by
/// [`FieldFilter::wrap`](crate::FieldFilter::wrap).
pub struct FilteredDeserializer<'f, D> {
    pub(crate) de: D,
    pub(crate) node: &'f Node,
}

impl<D> fmt::Debug for FilteredDeserializer<'_, D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FilteredDeserializer")
            .finish_non_exhaustive()
    }
}

/// Forwards `deserialize_*` methods to the inner deserializer with a wrapped visitor.
macro_rules! forward_wrapped {
    ($($method:ident ( $($arg:ident : $ty:ty),* );)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, D::Error> {
                self.de.$method($($arg,)* Wrap { inner: visitor, node: self.node })
            }
        )*
    };
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for FilteredDeserializer<'_, D> {
    type Error = D::Error;

    forward_wrapped! {
        deserialize_any();
        deserialize_bool();
        deserialize_i8();
        deserialize_i16();
        deserialize_i32();
        deserialize_i64();
        deserialize_i128();
        deserialize_u8();
        deserialize_u16();
        deserialize_u32();
        deserialize_u64();
        deserialize_u128();
        deserialize_f32();
        deserialize_f64();
        deserialize_char();
        deserialize_str();
        deserialize_string();
        deserialize_bytes();
        deserialize_byte_buf();
        deserialize_option();
        deserialize_unit();
        deserialize_unit_struct(name: &'static str);
        deserialize_newtype_struct(name: &'static str);
        deserialize_seq();
        deserialize_tuple(len: usize);
        deserialize_tuple_struct(name: &'static str, len: usize);
        deserialize_map();
        deserialize_struct(name: &'static str, fields: &'static [&'static str]);
        deserialize_enum(name: &'static str, variants: &'static [&'static str]);
        deserialize_identifier();
        deserialize_ignored_any();
    }

    fn is_human_readable(&self) -> bool {
        self.de.is_human_readable()
    }
}

/// A visitor that wraps the maps, sequences, enums and nested values it is given.
pub(crate) struct Wrap<'f, V> {
    pub(crate) inner: V,
    pub(crate) node: &'f Node,
}

/// Forwards `visit_*` methods of scalars unchanged.
macro_rules! forward_visit {
    ($($method:ident ( $ty:ty );)*) => {
        $(
            fn $method<E: de::Error>(self, v: $ty) -> Result<Self::Value, E> {
                self.inner.$method(v)
            }
        )*
    };
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Wrap<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.expecting(f)
    }

    forward_visit! {
        visit_bool(bool);
        visit_i8(i8);
        visit_i16(i16);
        visit_i32(i32);
        visit_i64(i64);
        visit_i128(i128);
        visit_u8(u8);
        visit_u16(u16);
        visit_u32(u32);
        visit_u64(u64);
        visit_u128(u128);
        visit_f32(f32);
        visit_f64(f64);
        visit_char(char);
        visit_str(&str);
        visit_borrowed_str(&'de str);
        visit_string(String);
        visit_bytes(&[u8]);
        visit_borrowed_bytes(&'de [u8]);
        visit_byte_buf(Vec<u8>);
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        self.inner.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        self.inner.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        self.inner.visit_some(FilteredDeserializer {
            de,
            node: self.node,
        })
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        self.inner.visit_newtype_struct(FilteredDeserializer {
            de,
            node: self.node,
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        match self.node.items.as_deref() {
            Some(items) => self.inner.visit_seq(WrapSeq { seq, node: items }),
            None => self.inner.visit_seq(seq),
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        if self.node.fields.is_empty() {
            return self.inner.visit_map(map);
        }
        self.inner.visit_map(WrapMap {
            map,
            node: self.node,
            value_node: None,
        })
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Self::Value, A::Error> {
        if self.node.fields.is_empty() {
            return self.inner.visit_enum(data);
        }
        self.inner.visit_enum(WrapEnum {
            data,
            node: self.node,
        })
    }
}

/// A seed decoding its value with the filter at `node`.
pub(crate) struct WrapSeed<'f, S> {
    seed: S,
    pub(crate) node: &'f Node,
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for WrapSeed<'_, S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<S::Value, D::Error> {
        self.seed.deserialize(FilteredDeserializer {
            de,
            node: self.node,
        })
    }
}

/// Sequence elements, each decoded with the filter at `node` (the `[*]` node).
pub(crate) struct WrapSeq<'f, A> {
    seq: A,
    pub(crate) node: &'f Node,
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for WrapSeq<'_, A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        if self.node.skip {
            // `list[*]` skips every element: consume them all, yield none.
            while self.seq.next_element::<IgnoredAny>()?.is_some() {}
            return Ok(None);
        }
        self.seq.next_element_seed(WrapSeed {
            seed,
            node: self.node,
        })
    }

    fn size_hint(&self) -> Option<usize> {
        if self.node.skip {
            Some(0)
        } else {
            self.seq.size_hint()
        }
    }
}

/// A map whose keys are looked up in `node`: skipped keys vanish, keys with filtered
/// descendants get their value wrapped, other values pass through untouched.
pub(crate) struct WrapMap<'f, A> {
    map: A,
    pub(crate) node: &'f Node,
    /// The node for the value of the key just returned, when it has filtered
    /// descendants.
    value_node: Option<&'f Node>,
}

impl<'de, 'f, A: MapAccess<'de>> MapAccess<'de> for WrapMap<'f, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        loop {
            let Some(key) = self.map.next_key_seed(CaptureKey)? else {
                return Ok(None);
            };
            let child = key.as_str().and_then(|k| self.node.field(k));
            match child {
                Some(child) if child.skip => {
                    self.map.next_value::<IgnoredAny>()?;
                }
                _ => {
                    self.value_node = child;
                    return seed.deserialize(KeyDeserializer::new(key)).map(Some);
                }
            }
        }
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        match self.value_node.take() {
            Some(node) => self.map.next_value_seed(WrapSeed { seed, node }),
            None => self.map.next_value_seed(seed),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        self.map.size_hint()
    }
}

/// An enum whose variant name is looked up in `node` like a map key; a variant's
/// content cannot be skipped (it is required), but paths through it apply.
pub(crate) struct WrapEnum<'f, A> {
    data: A,
    pub(crate) node: &'f Node,
}

impl<'de, 'f, A: EnumAccess<'de>> EnumAccess<'de> for WrapEnum<'f, A> {
    type Error = A::Error;
    type Variant = WrapVariant<'f, A::Variant>;

    fn variant_seed<V: DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, Self::Variant), A::Error> {
        let (key, variant) = self.data.variant_seed(CaptureKey)?;
        let node = key.as_str().and_then(|k| self.node.field(k));
        let value = seed.deserialize(KeyDeserializer::new(key))?;
        Ok((value, WrapVariant { variant, node }))
    }
}

pub(crate) struct WrapVariant<'f, A> {
    variant: A,
    pub(crate) node: Option<&'f Node>,
}

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for WrapVariant<'_, A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.variant.unit_variant()
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, A::Error> {
        match self.node {
            Some(node) => self.variant.newtype_variant_seed(WrapSeed { seed, node }),
            None => self.variant.newtype_variant_seed(seed),
        }
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        match self.node {
            Some(node) => self.variant.tuple_variant(
                len,
                Wrap {
                    inner: visitor,
                    node,
                },
            ),
            None => self.variant.tuple_variant(len, visitor),
        }
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        match self.node {
            Some(node) => self.variant.struct_variant(
                fields,
                Wrap {
                    inner: visitor,
                    node,
                },
            ),
            None => self.variant.struct_variant(fields, visitor),
        }
    }
}
