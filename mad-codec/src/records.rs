//! Multi-record SA payloads: N records of one attribute at
//! `AttributeOffset × 8`-byte spacing, as GetTable responses and
//! multi-record Set loads carry them.
//!
//! A payload of any length can be walked: the count is
//! `payload_len / (AttributeOffset × 8)` (the same arithmetic saquery and
//! libibumad clients use) and trailing bytes that do not make a whole record
//! are available through [`Records::remainder`].

use core::marker::PhantomData;

use bytes::BufMut;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::codes::AttributeId;
use crate::error::ParseError;

/// An SA attribute that can appear as a record in an SA payload.
pub trait SaRecord: FromBytes + IntoBytes + KnownLayout + Immutable + Unaligned + Copy {
    /// The attribute's ID.
    const ATTRIBUTE_ID: AttributeId;
    /// Size of one record as the specification defines it.
    const LEN: usize = size_of::<Self>();
    /// Distance between records on the wire: `LEN` rounded up to 8 bytes.
    const STRIDE: usize = Self::LEN.next_multiple_of(8);
    /// The AttributeOffset a response carrying these records uses.
    const ATTRIBUTE_OFFSET: u16 = {
        assert!(Self::STRIDE / 8 <= u16::MAX as usize);
        (Self::STRIDE / 8) as u16
    };

    /// Reads one record from the start of `bytes`, ignoring any bytes after
    /// it (for single-record payloads, where AttributeOffset is not
    /// meaningful).
    fn parse(bytes: &[u8]) -> Result<&Self, ParseError> {
        Self::ref_from_prefix(bytes)
            .map(|(r, _)| r)
            .map_err(|_| ParseError::Truncated {
                // The attribute's name: the last segment of its type path.
                what: core::any::type_name::<Self>()
                    .rsplit("::")
                    .next()
                    .unwrap_or("SA record"),
                need: Self::LEN,
                have: bytes.len(),
            })
    }
}

/// The records of one attribute in an SA payload, walked at a fixed stride.
///
/// Created by [`Records::new`] (or [`crate::SaMad::records`]); iterating
/// borrows each record in place, so walking a payload never allocates.
#[derive(Debug, Clone)]
pub struct Records<'a, T> {
    data: &'a [u8],
    stride: usize,
    _record: PhantomData<&'a T>,
}

impl<'a, T: SaRecord> Records<'a, T> {
    /// Views `data` as records `attribute_offset × 8` bytes apart.
    ///
    /// AttributeOffset 0 is accepted only with empty data (OpenSM's empty
    /// GetTableResp); otherwise a stride smaller than one record is
    /// [`ParseError::BadAttributeOffset`].
    pub fn new(data: &'a [u8], attribute_offset: u16) -> Result<Self, ParseError> {
        let stride = usize::from(attribute_offset) * 8;
        let empty_table = stride == 0 && data.is_empty();
        if !empty_table && stride < T::LEN {
            return Err(ParseError::BadAttributeOffset {
                offset: attribute_offset,
                record_len: T::LEN,
            });
        }
        Ok(Self {
            data,
            stride,
            _record: PhantomData,
        })
    }

    /// Views `data` as records at the attribute's standard stride.
    pub fn with_standard_stride(data: &'a [u8]) -> Self {
        Self {
            data,
            stride: T::STRIDE,
            _record: PhantomData,
        }
    }

    /// Number of whole records.
    pub fn len(&self) -> usize {
        self.data.len().checked_div(self.stride).unwrap_or(0)
    }

    /// True when there is no whole record.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The distance between records in bytes.
    pub fn stride(&self) -> usize {
        self.stride
    }

    /// The record at `index`.
    pub fn get(&self, index: usize) -> Option<&'a T> {
        if index >= self.len() {
            return None;
        }
        let start = index * self.stride;
        let bytes = self.data.get(start..start + T::LEN)?;
        T::ref_from_bytes(bytes).ok()
    }

    /// Trailing bytes after the last whole record.
    pub fn remainder(&self) -> &'a [u8] {
        let whole = self.len() * self.stride;
        self.data.get(whole..).unwrap_or(&[])
    }
}

impl<'a, T: SaRecord> Iterator for Records<'a, T> {
    type Item = &'a T;

    fn next(&mut self) -> Option<&'a T> {
        if self.stride == 0 || self.data.len() < self.stride {
            return None;
        }
        let (record, rest) = self.data.split_at(self.stride);
        self.data = rest;
        T::ref_from_prefix(record).ok().map(|(r, _)| r)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.len();
        (n, Some(n))
    }
}

impl<T: SaRecord> ExactSizeIterator for Records<'_, T> {}

/// Appends `record` to `out`, zero-padded to the attribute's stride.
pub fn put_record<T: SaRecord>(out: &mut impl BufMut, record: &T) {
    out.put_slice(record.as_bytes());
    out.put_bytes(0, T::STRIDE - T::LEN);
}

/// Appends every record of `records` to `out` at the attribute's stride.
pub fn put_records<'r, T: SaRecord + 'r>(
    out: &mut impl BufMut,
    records: impl IntoIterator<Item = &'r T>,
) {
    for record in records {
        put_record(out, record);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PathRecord;

    #[test]
    fn short_records_name_their_attribute() {
        assert_eq!(
            PathRecord::parse(&[0; 10]).unwrap_err(),
            ParseError::Truncated {
                what: "PathRecord",
                need: 64,
                have: 10
            }
        );
    }

    #[test]
    fn walking_counts_whole_records_only() {
        let data = [0u8; 64 * 3 + 10];
        let r = Records::<PathRecord>::new(&data, 8).unwrap();
        assert_eq!(r.len(), 3);
        assert_eq!(r.remainder().len(), 10);
        assert_eq!(r.clone().count(), 3);
        assert!(r.get(3).is_none());
        // A wider stride skips padding; a narrower one is refused.
        assert_eq!(Records::<PathRecord>::new(&data, 9).unwrap().len(), 2);
        assert_eq!(
            Records::<PathRecord>::new(&data, 7).unwrap_err(),
            ParseError::BadAttributeOffset {
                offset: 7,
                record_len: 64
            }
        );
        // OpenSM's empty table: AttributeOffset 0 and no data.
        assert_eq!(Records::<PathRecord>::new(&[], 0).unwrap().len(), 0);
        assert!(Records::<PathRecord>::new(&data, 0).is_err());
    }
}
