//! The three headers of an SA MAD: the MAD common header (bytes 0–23), the
//! RMPP header (24–35) and the SA header (36–55).
//!
//! Headers are small and byte-aligned, so each zerocopy struct is both the
//! view over received bytes and the owned value (built with `new`).

mod mad;
mod rmpp;
mod sa;

pub use mad::MadHeader;
pub use rmpp::{RmppFlags, RmppHeader, RmppStatus, RmppType};
pub use sa::{SaHeader, SaMadHeader};

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
