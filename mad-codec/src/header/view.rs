//! Headers as views over the bytes they arrive in.

use zerocopy::{FromBytes, Immutable, KnownLayout};

use crate::error::{ParseError, truncated};

/// Reads a `T` from the start of `bytes`, returning it and the rest.
///
/// Every wire struct of this crate is `Unaligned`, so the only way this can
/// fail is a short input, reported as [`ParseError::Truncated`].
pub(crate) fn view_prefix<'a, T>(
    bytes: &'a [u8],
    what: &'static str,
) -> Result<(&'a T, &'a [u8]), ParseError>
where
    T: FromBytes + KnownLayout + Immutable + zerocopy::Unaligned,
{
    T::ref_from_prefix(bytes).map_err(|_| truncated(what, size_of::<T>(), bytes.len()))
}
