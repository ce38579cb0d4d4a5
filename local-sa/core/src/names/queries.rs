//! The two tables names come from, as asked of the master SA — by the
//! agent after its paths, and by a distributor before it pushes them:
//! the channel adapters' NodeRecords and the directory's ServiceRecords,
//! each whole (a GetTable) or, when a whole answer came back cut, for one
//! port.

use bytes::Bytes;
use mad_codec::attr::node_record::mask as nr;
use mad_codec::attr::service_record::mask as sr;
use mad_codec::codes::NodeType;
use mad_codec::zerocopy::FromZeros;
use mad_codec::{AttributeId, Gid, Method, NodeRecord, SaMadBuilder, ServiceRecord};

use super::directory;

/// The channel adapters' NodeRecords (their NodeDescriptions name the
/// hosts), or the NodeRecords of the port at `lid`.
pub fn adapters(lid: Option<u16>) -> Bytes {
    let mut t = NodeRecord::new_zeroed();
    let mask = match lid {
        None => {
            t.set_node_type(NodeType::CA);
            nr::NODE_TYPE
        }
        Some(lid) => {
            t.set_lid(lid);
            nr::LID
        }
    };
    let mut b = SaMadBuilder::request(Method::GET_TABLE, 0, AttributeId::NODE_RECORD).record(&t);
    b.header_mut().sa.set_component_mask(mask);
    b.into_bytes()
}

/// Every directory record, or the port `gid`'s. One port's is asked with
/// a Get (its identity is the whole key), whose answer is a plain MAD: a
/// table answer travels RMPP-framed, and a transport without RMPP cuts a
/// 176-byte record even when it is alone.
pub fn directory(gid: Option<Gid>) -> Bytes {
    let (method, (mask, t)) = match gid {
        None => {
            let mut t = ServiceRecord::new_zeroed();
            t.set_service_id(directory::SERVICE_ID);
            (Method::GET_TABLE, (sr::SERVICE_ID, t))
        }
        Some(gid) => (Method::GET, directory::record_of(gid)),
    };
    let mut b = SaMadBuilder::request(method, 0, AttributeId::SERVICE_RECORD).record(&t);
    b.header_mut().sa.set_component_mask(mask);
    b.into_bytes()
}
