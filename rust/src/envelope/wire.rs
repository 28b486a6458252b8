//! `wire_struct!`: the envelope's structs, read as the SDKs read an event's object.
//!
//! Design notes
//! - Every SDK decodes an event with `json.loads`, whose object keeps the last value of a
//!   repeated key. serde's derive refuses a repeated field (`duplicate field`), and has no
//!   switch to do otherwise: an event the SDKs read was skipped whole, every fragment in it
//!   lost. The structs are declared through this macro instead, whose `Deserialize` keeps the
//!   last value of each member. Argument text is not touched: a repeated key inside a call's
//!   arguments is the arguments' own, judged by the `duplicate_keys` policy.
//! - A member is read one of two ways. Directly (`field: Type = "key"`), parsed as it comes,
//!   as the derive parses it: each value of a repeated member must still read as `Type`. The
//!   nested arrays and objects of the Chat Completions hot path are read so; holding them raw
//!   and parsing the last again would scan most of every chunk twice. Deferred
//!   (`field: Type = "key" => read`): each value is only borrowed as `&RawValue` (serde_json
//!   checks its syntax and nothing else), and `read` makes the field from the last one, so an
//!   earlier value of any type is dropped unread, as Python drops it. Strings and indexes are
//!   read through their raw text anyway, so deferring costs them nothing.
//! - Keys are compared once unescaped (`"\u0074ype"` is `type`, as in Python); unknown keys are
//!   skipped. Only a JSON object is read: the derive would also take an array as the fields in
//!   order, which no SDK does.

/// Declares a struct of borrowed wire fields and its last-wins `Deserialize` (module notes).
/// A deferred reader is `fn(Option<&'a RawValue>) -> Result<Type, E>` for any `E: de::Error`;
/// it gets `None` when the member is absent (JSON `null` is `Some("null")`). Fields after a
/// `;` are the struct's own, not read from the event: they start as their `Default`.
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
                $( $(#[$lmeta:meta])* $local:ident : $lty:ty ),* $(,)?
            )?
        }
    ) => {
        $(#[$meta])*
        $vis struct $name<$lt> {
            $( $(#[$fmeta])* $field: $ty, )*
            $($( $(#[$lmeta])* $local: $lty, )*)?
        }

        impl<'de: $lt, $lt> serde::Deserialize<'de> for $name<$lt> {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
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
                                    _ => None,
                                }))
                            }
                        }
                        d.deserialize_identifier(Names)
                    }
                }

                struct Members<$lt>(std::marker::PhantomData<&$lt ()>);

                impl<'de: $lt, $lt> serde::de::Visitor<'de> for Members<$lt> {
                    type Value = $name<$lt>;

                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str(concat!("an object (", stringify!($name), ")"))
                    }

                    fn visit_map<A: serde::de::MapAccess<'de>>(
                        self,
                        mut map: A,
                    ) -> Result<Self::Value, A::Error> {
                        $( let mut $field = wire_struct!(@empty $lt $ty $(, $read)?); )*
                        while let Some(Key(key)) = map.next_key()? {
                            match key {
                                $( Some($key) => {
                                    $field = wire_struct!(@value map $lt $ty $(, $read)?);
                                } )*
                                _ => {
                                    map.next_value::<serde::de::IgnoredAny>()?;
                                }
                            }
                        }
                        Ok($name {
                            $( $field: wire_struct!(@field A $field $ty $(, $read)?), )*
                            $($( $local: <$lty as Default>::default(), )*)?
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
        <$ty as Default>::default()
    };
    (@value $map:ident $lt:lifetime $ty:ty, $read:path) => {
        Some($map.next_value::<&$lt serde_json::value::RawValue>()?)
    };
    (@value $map:ident $lt:lifetime $ty:ty) => {
        $map.next_value::<$ty>()?
    };
    (@field $a:ident $field:ident $ty:ty, $read:path) => {{
        let read: Result<$ty, $a::Error> = $read($field);
        read?
    }};
    (@field $a:ident $field:ident $ty:ty) => {
        $field
    };
}
