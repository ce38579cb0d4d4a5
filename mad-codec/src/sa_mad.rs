//! A whole SA MAD: the 56-byte headers and the SA data after them.

use bytes::{BufMut, Bytes, BytesMut};
use zerocopy::{FromZeros, IntoBytes};

use crate::codes::Method;
use crate::codes::{AttributeId, MgmtClass};
use crate::error::ParseError;
use crate::header::MAD_LEN;
use crate::header::{MadHeader, RmppHeader, SaHeader, SaMadHeader};
use crate::records::{Records, SaRecord, put_record};

/// A view of an SA MAD: its headers and its data.
///
/// `bytes` may be one 256-byte MAD, an exact-length response, or a whole
/// reassembled RMPP transfer; the data is everything after byte 56.
#[derive(Debug, Clone, Copy)]
pub struct SaMad<'a> {
    header: &'a SaMadHeader,
    data: &'a [u8],
}

impl<'a> SaMad<'a> {
    /// Views `bytes` as an SA MAD. Only the length is checked, so a
    /// responder can still read the header of a MAD with bad versions to
    /// answer it; see [`SaMad::parse_checked`].
    pub fn parse(bytes: &'a [u8]) -> Result<Self, ParseError> {
        let (header, data) = SaMadHeader::parse(bytes)?;
        Ok(Self { header, data })
    }

    /// Views `bytes` as an SA MAD and checks that it is one: class
    /// Subnet Administration, BaseVersion 1, ClassVersion 2.
    pub fn parse_checked(bytes: &'a [u8]) -> Result<Self, ParseError> {
        let mad = Self::parse(bytes)?;
        let class = mad.mad().mgmt_class();
        if class != MgmtClass::SUBN_ADM {
            return Err(ParseError::NotSubnetAdministration(class));
        }
        mad.mad().check_versions()?;
        Ok(mad)
    }

    /// All three headers.
    pub fn header(&self) -> &'a SaMadHeader {
        self.header
    }

    /// The MAD common header.
    pub fn mad(&self) -> &'a MadHeader {
        &self.header.mad
    }

    /// The RMPP header.
    pub fn rmpp(&self) -> &'a RmppHeader {
        &self.header.rmpp
    }

    /// The SA header.
    pub fn sa(&self) -> &'a SaHeader {
        &self.header.sa
    }

    /// The SA data: everything after the 56 header bytes.
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// The single record at the start of the data (Get/Set requests and
    /// responses, Reports). AttributeOffset is not consulted: OpenSM sets
    /// it to 0 in requests and rounds it down for InformInfo.
    pub fn record<T: SaRecord>(&self) -> Result<&'a T, ParseError> {
        T::parse(self.data)
    }

    /// The records of a multi-record payload, at AttributeOffset spacing.
    pub fn records<T: SaRecord>(&self) -> Result<Records<'a, T>, ParseError> {
        Records::new(self.data, self.sa().attribute_offset())
    }
}

/// Builds an SA MAD: headers, then records or raw data.
///
/// The result has its exact length (56 + data). Up to [`MAD_LEN`] bytes it
/// is one MAD (a transport pads it to 256 bytes); beyond that it must go
/// through the RMPP sender.
#[derive(Debug, Clone)]
pub struct SaMadBuilder {
    header: SaMadHeader,
    data: BytesMut,
}

impl SaMadBuilder {
    /// Starts from the given headers.
    pub fn new(header: SaMadHeader) -> Self {
        Self {
            header,
            data: BytesMut::new(),
        }
    }

    /// Starts an SA request (class 3, version 2, SM_Key 0, no RMPP).
    pub fn request(method: Method, transaction_id: u64, attribute_id: AttributeId) -> Self {
        let mad = MadHeader::new(
            MgmtClass::SUBN_ADM,
            MgmtClass::SA_CLASS_VERSION,
            method,
            transaction_id,
            attribute_id,
            0,
        );
        Self::new(SaMadHeader {
            mad,
            rmpp: RmppHeader::new_zeroed(),
            sa: SaHeader::new(0, 0, crate::types::ComponentMask::NONE),
        })
    }

    /// The headers, for editing.
    pub fn header_mut(&mut self) -> &mut SaMadHeader {
        &mut self.header
    }

    /// Appends one record at its standard stride and sets AttributeOffset.
    pub fn record<T: SaRecord>(mut self, record: &T) -> Self {
        self.push_record(record);
        self
    }

    /// Appends one record at its standard stride and sets AttributeOffset.
    pub fn push_record<T: SaRecord>(&mut self, record: &T) {
        self.header.sa.set_attribute_offset(T::ATTRIBUTE_OFFSET);
        put_record(&mut self.data, record);
    }

    /// Appends raw data bytes.
    pub fn data(mut self, bytes: &[u8]) -> Self {
        self.data.put_slice(bytes);
        self
    }

    /// The MAD at its exact length.
    pub fn into_bytes(self) -> Bytes {
        let mut out = BytesMut::with_capacity(SaMadHeader::LEN + self.data.len());
        out.put_slice(self.header.as_bytes());
        out.put_slice(&self.data);
        out.freeze()
    }

    /// True when the MAD fits in one 256-byte MAD.
    pub fn fits_one_mad(&self) -> bool {
        SaMadHeader::LEN + self.data.len() <= MAD_LEN
    }
}
