//! Answers shaped the way OpenSM shapes them (and the golden vectors show):
//! the request's headers echoed with the response method, SM_Key 0, and
//! exact lengths.

use bytes::{Bytes, BytesMut};
use mad_codec::header::{RmppHeader, SaMadHeader};
use mad_codec::zerocopy::{FromZeros, IntoBytes};
use mad_codec::{MadStatus, Method};

/// The headers of a successful answer to `request`: the response method,
/// status 0, no RMPP, SM_Key 0, and `attribute_offset`.
pub(crate) fn success_header(request: &SaMadHeader, attribute_offset: u16) -> SaMadHeader {
    let mut h = *request;
    h.mad.set_method(request.mad.method().response());
    h.mad.set_status(MadStatus::OK);
    h.rmpp = RmppHeader::new_zeroed();
    h.sa.set_sm_key(0);
    h.sa.set_attribute_offset(attribute_offset);
    h
}

/// A one-MAD answer: headers and data at their exact length.
pub(crate) fn single(header: &SaMadHeader, data: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(SaMadHeader::LEN + data.len());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out.freeze()
}

/// An error answer: the whole request as it arrived, with `status`, the
/// response method and SM_Key 0, as OpenSM's `osm_sa_send_error` makes it.
/// AttributeOffset is 0 for a GetTable and the request's own otherwise
/// (OpenSM zeroes only the GetTable's). The RMPP bytes stay as the request
/// had them, so an error GetTableResp is not an RMPP transfer.
pub(crate) fn error(request: &[u8], status: MadStatus) -> Option<Bytes> {
    let mut out = BytesMut::from(request);
    let (h, _) = SaMadHeader::parse_mut(&mut out).ok()?;
    if h.mad.method() == Method::GET_TABLE {
        h.sa.set_attribute_offset(0);
    }
    h.mad.set_method(h.mad.method().response());
    h.mad.set_status(status);
    h.sa.set_sm_key(0);
    Some(out.freeze())
}

/// Another SA's answer passed on to the asker of `request`: unchanged but
/// for the asker's TransactionID; with the answer's status.
pub(crate) fn relay(answer: &[u8], request: &SaMadHeader) -> Option<(Bytes, MadStatus)> {
    let tid = request.mad.transaction_id();
    let mut out = BytesMut::from(answer);
    let (h, _) = SaMadHeader::parse_mut(&mut out).ok()?;
    h.mad.set_transaction_id(tid);
    let status = h.mad.status();
    Some((out.freeze(), status))
}

#[cfg(test)]
mod tests {
    use mad_codec::{AttributeId, SaMad, SaMadBuilder};

    use super::*;

    #[test]
    fn errors_echo_the_request() {
        let mut b = SaMadBuilder::request(Method::GET_TABLE, 0x1234, AttributeId::PATH_RECORD);
        b.header_mut().sa.set_sm_key(7);
        b.header_mut().sa.set_attribute_offset(8);
        let req = b.data(&[5; 200]).into_bytes();
        let e = error(&req, MadStatus::ERR_REQ_INVALID).unwrap();
        let m = SaMad::parse(&e).unwrap();
        assert_eq!(m.mad().method(), Method::GET_TABLE_RESP);
        assert_eq!(m.mad().status(), MadStatus::ERR_REQ_INVALID);
        assert_eq!((m.sa().sm_key(), m.sa().attribute_offset()), (0, 0));
        assert_eq!(m.data(), &[5; 200]);
        assert_eq!(m.mad().transaction_id(), 0x1234);
        assert!(error(&req[..40], MadStatus::ERR_REQ_INVALID).is_none());
        // A Get's stays as the client sent it, as from OpenSM.
        for offset in [0, 8] {
            let mut b = SaMadBuilder::request(Method::GET, 0x1235, AttributeId::PATH_RECORD);
            b.header_mut().sa.set_attribute_offset(offset);
            let req = b.data(&[0; 64]).into_bytes();
            let e = error(&req, MadStatus::ERR_NO_RECORDS).unwrap();
            assert_eq!(SaMad::parse(&e).unwrap().sa().attribute_offset(), offset);
        }
    }

    #[test]
    fn a_set_is_answered_with_get_resp() {
        let req = SaMadBuilder::request(Method::SET, 9, AttributeId::PATH_RECORD).into_bytes();
        let (h, _) = SaMadHeader::parse(&req).unwrap();
        let s = success_header(h, 8);
        assert_eq!(s.mad.method(), Method::GET_RESP);
        assert_eq!(s.sa.attribute_offset(), 8);
        assert_eq!(single(&s, &[1, 2]).len(), SaMadHeader::LEN + 2);
    }
}
