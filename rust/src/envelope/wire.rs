//! `wire_struct!`: the envelope's structs, read as the SDKs read an event's object.
//!
//! Design notes
//! - Every SDK decodes an event with `json.loads`, whose object keeps the last value of a
//!   repeated key. serde's derive refuses a repeated field (`duplicate field`), and has no
//!   switch to do otherwise: an event the SDKs read was skipped whole, every fragment in it
//!   lost. The structs are declared through this macro instead, whose `Deserialize` keeps the
//!   last value of each member. Argument text is not touched: a repeated key inside a call's
//!   arguments is the arguments' own, judged by the `duplicate_keys` policy.
//! - A member is read one of two ways. Directly (`field: Option<T> = "key"`, `T` an object
//!   struct or an array, [`Direct`]), parsed as it comes: the nested arrays and objects of the
//!   Chat Completions hot path are read so; holding them raw and parsing the last again would
//!   scan most of every chunk twice. A value of another JSON type is read past and noted
//!   ([`Mismatch`]), not refused on the spot: a later copy of the member replaces it, as in
//!   Python, and only a mismatch that is the last value makes the event malformed (with the
//!   position of the object's end, not of the value). The value is told apart by serde's
//!   `deserialize_any`, which serde_json answers from the byte it peeks anyway. Measured with
//!   callgrind on a raw Chat stream (one call in 8-byte fragments): about 90 instructions more
//!   per chunk than the derive's reading (~1% of `feed_sse`'s Rust side). Rejected: a strict
//!   pass with a lenient retry on failure, whose const-generic readers LLVM inlined worse
//!   (~400 more per chunk), and reading these members raw (a second scan). Deferred
//!   (`field: Type = "key" => read`): each value is only borrowed as `&RawValue` (serde_json
//!   checks its syntax and nothing else), and `read` makes the field from the last one, so an
//!   earlier value of any type is dropped unread, as Python drops it. Strings and indexes are
//!   read through their raw text anyway, so deferring costs them nothing.
//! - Keys are compared once unescaped (`"\u0074ype"` is `type`, as in Python); unknown keys are
//!   skipped, and noted where a struct asks (`..other`: a Chat tool-call entry, whose other
//!   members the SDK keeps). Only a JSON object is read: the derive would also take an array as the fields in
//!   order, which no SDK does.

use std::fmt;
use std::marker::PhantomData;

use serde::de;
use serde_json::value::RawValue;

/// Declares a struct of borrowed wire fields and its last-wins `Deserialize` (module notes).
/// A deferred reader is `fn(Option<&'a RawValue>) -> Result<Type, E>` for any `E: de::Error`;
/// it gets `None` when the member is absent (JSON `null` is `Some("null")`). Fields after a
/// `;` are the struct's own, not read from the event: they start as their `Default`. A member
/// read directly is an `Option<&RawValue>` or an `Option<T>` of a [`Direct`] `T` ([`Read`]).
/// `; ..other` (first after the `;`) declares a `bool` field that is true when the object had a
/// member of another name: only a flag, so that reading such members costs nothing until one
/// comes, when the reader can read the object again for them.
macro_rules! wire_struct {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident<$lt:lifetime> {
            $(
                $(#[$fmeta:meta])*
                $field:ident : $ty:ty = $key:literal $(=> $read:path)?
            ),* $(,)?
            $(
                ;
                $( .. $(#[$ometa:meta])* $other:ident $(,)? )?
                $( $(#[$lmeta:meta])* $local:ident : $lty:ty ),* $(,)?
            )?
        }
    ) => {
        $(#[$meta])*
        $vis struct $name<$lt> {
            $( $(#[$fmeta])* $field: $ty, )*
            $($( $(#[$ometa])* $other: bool, )?)?
            $($( $(#[$lmeta])* $local: $lty, )*)?
        }

        impl<'de: $lt, $lt> $crate::envelope::wire::Direct<'de> for $name<$lt> {
            const EXPECTED: &'static str = concat!("an object (", stringify!($name), ")");

            fn from_object<A: serde::de::MapAccess<'de>>(
                mut map: A,
                mismatch: &mut Option<$crate::envelope::wire::Mismatch>,
            ) -> Result<Option<Self>, A::Error> {
                /// The member a key names, if it is one of ours.
                struct Key(Option<&'static str>);

                impl<'de> serde::Deserialize<'de> for Key {
                    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                        struct Names;
                        impl serde::de::Visitor<'_> for Names {
                            type Value = Key;
                            fn expecting(
                                &self,
                                f: &mut std::fmt::Formatter<'_>,
                            ) -> std::fmt::Result {
                                f.write_str("a member name")
                            }
                            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Key, E> {
                                Ok(Key(match v {
                                    $( $key => Some($key), )*
                                    $crate::envelope::wire::NUMBER_TOKEN => {
                                        Some($crate::envelope::wire::NUMBER_TOKEN)
                                    }
                                    _ => None,
                                }))
                            }
                        }
                        d.deserialize_identifier(Names)
                    }
                }

                $( let mut $field = wire_struct!(@empty $lt $ty $(, $read)?); )*
                // Read only by a struct that declares `..other`; a dead store otherwise.
                let mut other = false;
                while let Some(Key(key)) = map.next_key()? {
                    match key {
                        $( Some($key) => {
                            wire_struct!(@value map $field $lt $ty $(, $read)?);
                        } )*
                        Some($crate::envelope::wire::NUMBER_TOKEN) => {
                            // A number, which serde_json's `deserialize_any` hands on as a map
                            // of this one member (`arbitrary_precision`).
                            map.next_value::<serde::de::IgnoredAny>()?;
                            *mismatch = Some($crate::envelope::wire::Mismatch::Number);
                            return Ok(None);
                        }
                        _ => {
                            other = true;
                            map.next_value::<serde::de::IgnoredAny>()?;
                        }
                    }
                }
                let _ = other;
                Ok(Some($name {
                    $( $field: wire_struct!(@field A $field $ty $(, $read)?), )*
                    $($( $other: other, )?)?
                    $($( $local: <$lty as Default>::default(), )*)?
                }))
            }
        }

        impl<'de: $lt, $lt> serde::Deserialize<'de> for $name<$lt> {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct Members<$lt>(std::marker::PhantomData<&$lt ()>);

                impl<'de: $lt, $lt> serde::de::Visitor<'de> for Members<$lt> {
                    type Value = $name<$lt>;

                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str(
                            <$name<$lt> as $crate::envelope::wire::Direct<'de>>::EXPECTED,
                        )
                    }

                    fn visit_map<A: serde::de::MapAccess<'de>>(
                        self,
                        map: A,
                    ) -> Result<Self::Value, A::Error> {
                        let mut mismatch = None;
                        let read = <$name<$lt> as $crate::envelope::wire::Direct<'de>>::from_object(
                            map,
                            &mut mismatch,
                        )?;
                        read.ok_or_else(|| {
                            mismatch
                                .unwrap_or($crate::envelope::wire::Mismatch::Number)
                                .error::<A::Error, Option<$name<$lt>>>()
                        })
                    }
                }

                d.deserialize_map(Members(std::marker::PhantomData))
            }
        }
    };
    (@empty $lt:lifetime $ty:ty, $read:path) => {
        None::<&$lt serde_json::value::RawValue>
    };
    (@empty $lt:lifetime $ty:ty) => {
        (
            <$ty as Default>::default(),
            None::<$crate::envelope::wire::Mismatch>,
        )
    };
    (@value $map:ident $field:ident $lt:lifetime $ty:ty, $read:path) => {
        $field = Some($map.next_value::<&$lt serde_json::value::RawValue>()?)
    };
    (@value $map:ident $field:ident $lt:lifetime $ty:ty) => {
        $field.0 = $map.next_value_seed($crate::envelope::wire::Member::<$ty>::new(&mut $field.1))?
    };
    (@field $a:ident $field:ident $ty:ty, $read:path) => {{
        let read: Result<$ty, $a::Error> = $read($field);
        read?
    }};
    (@field $a:ident $field:ident $ty:ty) => {
        match $field {
            (value, None) => value,
            (_, Some(m)) => return Err(m.error::<$a::Error, $ty>()),
        }
    };
}

/// The key under which serde_json's `deserialize_any` hands on a number as a one-member map
/// when `arbitrary_precision` is on (`serde_json::number::TOKEN`, not public). A test pins it:
/// a number that is a member's last value must stay a mismatch. An event object with a member
/// of this name is read as a number too, as serde_json's own `Value` reads it.
pub(crate) const NUMBER_TOKEN: &str = "$serde_json::private::Number";

/// A type a `wire_struct!` member is read as directly: an object struct (declared with the
/// macro) or an array. Each reader gets the value's contents once `deserialize_any` has told
/// its type, and answers `None` and a [`Mismatch`] for a value of another type, read past.
/// The value comes back in the `Result<Option<_>>` that serde_json's own `Option` reading
/// gives: no wrapper on the hot path to be moved about.
pub(crate) trait Direct<'de>: Sized {
    /// What a value must be, for the error of a last value that is not.
    const EXPECTED: &'static str;

    /// Reads a JSON object, or serde_json's stand-in for a number ([`NUMBER_TOKEN`]).
    ///
    /// # Errors
    /// Only when the JSON itself is broken or a value inside is refused.
    fn from_object<A: de::MapAccess<'de>>(
        mut map: A,
        mismatch: &mut Option<Mismatch>,
    ) -> Result<Option<Self>, A::Error> {
        let Some(IsNumber(number)) = map.next_key()? else {
            *mismatch = Some(Mismatch::Object);
            return Ok(None);
        };
        map.next_value::<de::IgnoredAny>()?;
        while map
            .next_entry::<de::IgnoredAny, de::IgnoredAny>()?
            .is_some()
        {}
        *mismatch = Some(if number {
            Mismatch::Number
        } else {
            Mismatch::Object
        });
        Ok(None)
    }

    /// Reads a JSON array.
    ///
    /// # Errors
    /// Only when the JSON itself is broken or a value inside is refused.
    fn from_array<A: de::SeqAccess<'de>>(
        mut seq: A,
        mismatch: &mut Option<Mismatch>,
    ) -> Result<Option<Self>, A::Error> {
        while seq.next_element::<de::IgnoredAny>()?.is_some() {}
        *mismatch = Some(Mismatch::Array);
        Ok(None)
    }
}

/// Whether a member name is serde_json's [`NUMBER_TOKEN`].
struct IsNumber(bool);

impl<'de> de::Deserialize<'de> for IsNumber {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Name;
        impl de::Visitor<'_> for Name {
            type Value = IsNumber;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<IsNumber, E> {
                Ok(IsNumber(v == NUMBER_TOKEN))
            }
        }
        d.deserialize_identifier(Name)
    }
}

/// A directly read member's value of another JSON type than its own, read past. It is an
/// error only if no later copy of the member replaces it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Mismatch {
    Object,
    Array,
    Number,
    String,
    Boolean,
}

impl Mismatch {
    /// The error of `T`'s member whose last value was of another type.
    pub(crate) fn error<'de, E: de::Error, T: Read<'de>>(self) -> E {
        let got = match self {
            Self::Object => "object",
            Self::Array => "array",
            Self::Number => "number",
            Self::String => "string",
            Self::Boolean => "boolean",
        };
        E::invalid_type(de::Unexpected::Other(got), &T::EXPECTED)
    }
}

/// The type of a member read directly: `Option<&RawValue>` (any value), or `Option<T>` of a
/// [`Direct`] `T` (`null` is `None`).
pub(crate) trait Read<'de>: Sized {
    /// What the member's value must be.
    const EXPECTED: &'static str;

    /// Reads one value of the member; for one of another JSON type, `None` and its
    /// `mismatch`, which a value of the member's own type clears.
    ///
    /// # Errors
    /// Only when the JSON itself is broken or a value inside is refused.
    fn read<D: de::Deserializer<'de>>(
        d: D,
        mismatch: &mut Option<Mismatch>,
    ) -> Result<Self, D::Error>;
}

impl<'de: 'a, 'a> Read<'de> for Option<&'a RawValue> {
    const EXPECTED: &'static str = "a value";

    #[inline]
    fn read<D: de::Deserializer<'de>>(d: D, _: &mut Option<Mismatch>) -> Result<Self, D::Error> {
        de::Deserialize::deserialize(d)
    }
}

impl<'de, T: Direct<'de>> Read<'de> for Option<T> {
    const EXPECTED: &'static str = T::EXPECTED;

    #[inline]
    fn read<D: de::Deserializer<'de>>(
        d: D,
        mismatch: &mut Option<Mismatch>,
    ) -> Result<Self, D::Error> {
        d.deserialize_any(Member::<Self>::new(mismatch))
    }
}

/// Reads one value of a directly read member ([`Read`]), noting a [`Mismatch`].
pub(crate) struct Member<'m, T> {
    mismatch: &'m mut Option<Mismatch>,
    read: PhantomData<T>,
}

impl<'m, T> Member<'m, T> {
    pub(crate) fn new(mismatch: &'m mut Option<Mismatch>) -> Self {
        Self {
            mismatch,
            read: PhantomData,
        }
    }
}

impl<'de, T: Read<'de>> de::DeserializeSeed<'de> for Member<'_, T> {
    type Value = T;

    #[inline]
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
        T::read(d, self.mismatch)
    }
}

/// The value of an `Option<T>` member, told by its JSON type.
impl<'de, T: Direct<'de>> de::Visitor<'de> for Member<'_, Option<T>> {
    type Value = Option<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(T::EXPECTED)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        *self.mismatch = None;
        Ok(None)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        *self.mismatch = None;
        Ok(None)
    }

    #[inline]
    fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        *self.mismatch = None;
        T::from_object(map, self.mismatch)
    }

    #[inline]
    fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        *self.mismatch = None;
        T::from_array(seq, self.mismatch)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        *self.mismatch = Some(Mismatch::Boolean);
        Ok(None)
    }

    // Numbers come as maps (`NUMBER_TOKEN`); these are for a deserializer without
    // `arbitrary_precision`.
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        *self.mismatch = Some(Mismatch::Number);
        Ok(None)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        *self.mismatch = Some(Mismatch::Number);
        Ok(None)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        *self.mismatch = Some(Mismatch::Number);
        Ok(None)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        *self.mismatch = Some(Mismatch::String);
        Ok(None)
    }
}
