//! SA MADs as they enter the agent, decoded once: the headers parsed into
//! a typed request that every handler takes, with the bytes as they
//! arrived kept for the answers that echo them.

use bytes::Bytes;
use mad_codec::header::{RmppType, SaMadHeader};
use mad_codec::records::SaRecord;
use mad_codec::{AttributeId, ComponentMask, MAD_LEN, Method, MgmtClass};

use crate::address::Address;

/// What an SA MAD that arrived is, by its headers.
#[derive(Debug)]
pub(crate) enum Inbound {
    /// Not an SA MAD: shorter than the SA headers, or another class.
    Malformed {
        /// Its length.
        len: usize,
    },
    /// An answer to one of our requests, one of our requests handed back
    /// by the transport, or a ReportResp: for whatever sent the request.
    Answer {
        /// Its method.
        method: Method,
        /// The low 32 bits of its TransactionID.
        tid: u32,
        /// The MAD.
        mad: Bytes,
    },
    /// An RMPP ACK, STOP or ABORT about a transfer with a peer.
    RmppControl(SaRequest),
    /// A request from a peer.
    Request(SaRequest),
}

impl Inbound {
    /// Classifies `mad` from `from`; `status` is the transport's. The MAD
    /// is taken, not copied.
    pub(crate) fn decode(from: Address, status: u32, mut mad: Bytes) -> Self {
        // One packet carries at most one MAD; anything past it is not part
        // of the MAD (and must not be echoed back in an answer).
        mad.truncate(MAD_LEN);
        let Ok((header, _)) = SaMadHeader::parse(&mad) else {
            return Self::Malformed { len: mad.len() };
        };
        if header.mad.mgmt_class() != MgmtClass::SUBN_ADM {
            return Self::Malformed { len: mad.len() };
        }
        let method = header.mad.method();
        if status != 0 || method.is_response() {
            let tid = header.mad.transaction_id_low();
            return Self::Answer { method, tid, mad };
        }
        // Only a request keeps its headers.
        let header = *header;
        let rmpp = &header.rmpp;
        let control = rmpp.is_active()
            && rmpp.rmpp_type() != RmppType::DATA
            && rmpp.rmpp_type() != RmppType::NONE;
        let request = SaRequest { from, header, mad };
        if control {
            Self::RmppControl(request)
        } else {
            Self::Request(request)
        }
    }
}

/// An SA request from a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SaRequest {
    /// Where it came from.
    pub(crate) from: Address,
    header: SaMadHeader,
    /// The MAD as it arrived, at most 256 bytes.
    mad: Bytes,
}

impl SaRequest {
    /// Its headers.
    pub(crate) fn header(&self) -> &SaMadHeader {
        &self.header
    }

    /// The MAD as it arrived.
    pub(crate) fn mad(&self) -> &Bytes {
        &self.mad
    }

    /// The method.
    pub(crate) fn method(&self) -> Method {
        self.header.mad.method()
    }

    /// The attribute.
    pub(crate) fn attribute(&self) -> AttributeId {
        self.header.mad.attribute_id()
    }

    /// The component mask.
    pub(crate) fn mask(&self) -> ComponentMask {
        self.header.sa.component_mask()
    }

    /// The SM_Key it carries.
    pub(crate) fn sm_key(&self) -> u64 {
        self.header.sa.sm_key()
    }

    /// The low 32 bits of its TransactionID (the upper ones are the
    /// sender's transport's).
    pub(crate) fn tid(&self) -> u32 {
        self.header.mad.transaction_id_low()
    }

    /// Where answers go.
    pub(crate) fn reply_to(&self) -> Address {
        self.from.reply()
    }

    /// The SA data after the headers.
    pub(crate) fn data(&self) -> &[u8] {
        self.mad.get(SaMadHeader::LEN..).unwrap_or_default()
    }

    /// Its one record, if the data holds a whole one.
    pub(crate) fn record<T: SaRecord>(&self) -> Option<T> {
        T::parse(self.data()).ok().copied()
    }

    /// Its template record: the data's first record, zero-filled where a
    /// sender that did not pad its MAD left it short.
    pub(crate) fn template<T: SaRecord>(&self) -> T {
        let mut r = T::new_zeroed();
        let data = self.data();
        let n = data.len().min(T::LEN);
        r.as_mut_bytes()[..n].copy_from_slice(&data[..n]);
        r
    }

    /// True for the same request sent again: same port, QP and
    /// TransactionID.
    pub(crate) fn same_request(&self, other: &Self) -> bool {
        self.from.lid == other.from.lid
            && self.from.qpn == other.from.qpn
            && self.header.mad.transaction_id() == other.header.mad.transaction_id()
    }
}
