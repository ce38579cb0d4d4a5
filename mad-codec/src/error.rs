//! The one decoding error type of this crate.

use core::fmt;

use crate::codes::MgmtClass;

/// Why received bytes could not be decoded.
///
/// Every variant names what was wrong precisely enough to log it or turn it
/// into a MAD status without looking at the bytes again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseError {
    /// The input ended before the structure did.
    Truncated {
        /// The structure being read.
        what: &'static str,
        /// Bytes the structure needs.
        need: usize,
        /// Bytes that were there.
        have: usize,
    },
    /// MAD BaseVersion is not 1.
    BadBaseVersion(u8),
    /// The ClassVersion is not one this crate speaks for the class.
    BadClassVersion {
        /// The management class of the MAD.
        class: MgmtClass,
        /// The version it carried.
        version: u8,
    },
    /// The MAD is not of the Subnet Administration class.
    NotSubnetAdministration(MgmtClass),
    /// AttributeOffset × 8 is smaller than one record, so records would
    /// overlap.
    BadAttributeOffset {
        /// AttributeOffset as received (in 8-byte units).
        offset: u16,
        /// Size in bytes of one record of the attribute.
        record_len: usize,
    },
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Truncated { what, need, have } => {
                write!(f, "{what} truncated: need {need} bytes, have {have}")
            }
            Self::BadBaseVersion(v) => write!(f, "MAD BaseVersion {v} (expected 1)"),
            Self::BadClassVersion { class, version } => {
                write!(f, "ClassVersion {version} not supported for class {class}")
            }
            Self::NotSubnetAdministration(class) => {
                write!(f, "management class {class} is not Subnet Administration")
            }
            Self::BadAttributeOffset { offset, record_len } => write!(
                f,
                "AttributeOffset {offset} ({} bytes) is smaller than one {record_len}-byte record",
                usize::from(offset) * 8
            ),
        }
    }
}

impl std::error::Error for ParseError {}

/// Maps a zerocopy size error into [`ParseError::Truncated`] for `what`.
pub(crate) fn truncated(what: &'static str, need: usize, have: usize) -> ParseError {
    ParseError::Truncated { what, need, have }
}
