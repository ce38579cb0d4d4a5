//! Declarative helpers shared by the wire modules.

/// Declares a wire code: a transparent newtype over an integer with named
/// constants. Unknown values are valid and print as `Name(0x..)`, so a code
/// a peer sends always survives a parse/emit round trip. Exported for the
/// codes of other wire formats local-sa speaks (the ibacm protocol's).
#[macro_export]
macro_rules! wire_code {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident($ty:ty) {
            $(
                $(#[$cmeta:meta])*
                $konst:ident = $value:literal,
            )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        #[repr(transparent)]
        $vis struct $name(pub $ty);

        impl $name {
            $(
                $(#[$cmeta])*
                pub const $konst: Self = Self($value);
            )*

            /// The constant's name if this value is one this crate knows.
            pub const fn name(self) -> Option<&'static str> {
                match self.0 {
                    $( $value => Some(stringify!($konst)), )*
                    _ => None,
                }
            }
        }

        impl core::fmt::Debug for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                match self.name() {
                    Some(name) => f.write_str(name),
                    None => write!(f, "{}({:#x})", stringify!($name), self.0),
                }
            }
        }

        impl core::fmt::Display for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                core::fmt::Debug::fmt(self, f)
            }
        }

        impl From<$ty> for $name {
            fn from(value: $ty) -> Self {
                Self(value)
            }
        }

        impl From<$name> for $ty {
            fn from(code: $name) -> Self {
                code.0
            }
        }
    };
}

/// Declares a getter/setter pair for a whole field of a zerocopy struct.
///
/// * `be` — a network-order integer field (`U16`/`U32`/`U64`), read with
///   `get()`; the accessor type is the plain integer.
/// * `code` — a network-order integer field read as a [`wire_code!`] newtype.
/// * `code8` — a byte read as a [`wire_code!`] newtype.
/// * `copy` — a `Copy` field returned as is (`u8`, `Gid`, byte arrays).
macro_rules! field_accessors {
    ($(
        $(#[$meta:meta])*
        $kind:ident $get:ident, $set:ident: $field:ident => $ty:ty;
    )*) => {
        $( field_accessors!(@one $kind $(#[$meta])* $get, $set, $field, $ty); )*
    };
    (@one be $(#[$meta:meta])* $get:ident, $set:ident, $field:ident, $ty:ty) => {
        $(#[$meta])*
        #[inline]
        pub fn $get(&self) -> $ty {
            self.$field.get()
        }
        #[doc = concat!("Sets [`Self::", stringify!($get), "`].")]
        #[inline]
        pub fn $set(&mut self, value: $ty) {
            self.$field.set(value)
        }
    };
    (@one code $(#[$meta:meta])* $get:ident, $set:ident, $field:ident, $ty:ty) => {
        $(#[$meta])*
        #[inline]
        pub fn $get(&self) -> $ty {
            <$ty>::from(self.$field.get())
        }
        #[doc = concat!("Sets [`Self::", stringify!($get), "`].")]
        #[inline]
        pub fn $set(&mut self, value: $ty) {
            self.$field.set(value.0)
        }
    };
    (@one code8 $(#[$meta:meta])* $get:ident, $set:ident, $field:ident, $ty:ty) => {
        $(#[$meta])*
        #[inline]
        pub fn $get(&self) -> $ty {
            <$ty>::from(self.$field)
        }
        #[doc = concat!("Sets [`Self::", stringify!($get), "`].")]
        #[inline]
        pub fn $set(&mut self, value: $ty) {
            self.$field = value.0
        }
    };
    (@one copy $(#[$meta:meta])* $get:ident, $set:ident, $field:ident, $ty:ty) => {
        $(#[$meta])*
        #[inline]
        pub fn $get(&self) -> $ty {
            self.$field
        }
        #[doc = concat!("Sets [`Self::", stringify!($get), "`].")]
        #[inline]
        pub fn $set(&mut self, value: $ty) {
            self.$field = value
        }
    };
}

/// Declares a getter/setter pair for a sub-byte field described by a
/// [`crate::bits::BitField`] inside a byte or network-order word.
///
/// `u8` fields are plain bytes; `be` fields are `U16`/`U32`. The setter
/// truncates the value to the field's width and keeps the other bits.
macro_rules! bit_accessors {
    ($(
        $(#[$meta:meta])*
        $kind:ident $get:ident, $set:ident: $field:ident[$bits:expr] => $ty:ty;
    )*) => {
        $( bit_accessors!(@one $kind $(#[$meta])* $get, $set, $field, $bits, $ty); )*
    };
    (@one u8 $(#[$meta:meta])* $get:ident, $set:ident, $field:ident, $bits:expr, $ty:ty) => {
        $(#[$meta])*
        #[inline]
        pub fn $get(&self) -> $ty {
            <$ty as $crate::bits::FromBits>::from_bits($bits.get(u32::from(self.$field)))
        }
        #[doc = concat!("Sets [`Self::", stringify!($get), "`].")]
        #[inline]
        pub fn $set(&mut self, value: $ty) {
            let bits = <$ty as $crate::bits::FromBits>::into_bits(value);
            // The field lies inside one byte, so the result fits in a u8.
            self.$field = $bits.set(u32::from(self.$field), bits) as u8;
        }
    };
    (@one be $(#[$meta:meta])* $get:ident, $set:ident, $field:ident, $bits:expr, $ty:ty) => {
        $(#[$meta])*
        #[inline]
        pub fn $get(&self) -> $ty {
            <$ty as $crate::bits::FromBits>::from_bits($bits.get(u32::from(self.$field.get())))
        }
        #[doc = concat!("Sets [`Self::", stringify!($get), "`].")]
        #[inline]
        pub fn $set(&mut self, value: $ty) {
            let bits = <$ty as $crate::bits::FromBits>::into_bits(value);
            let word = $bits.set(u32::from(self.$field.get()), bits);
            // The field lies inside this word, so the result fits its width.
            self.$field.set(word as _);
        }
    };
}
