//! NodeRecord (attribute 0x0011, 108 bytes, sent at a 112-byte stride).

use zerocopy::{
    FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned,
    network_endian::{U16, U32, U64},
};

use super::text::{nul_padded_text, put_nul_padded};
use crate::bits::{get_u24, put_u24};
use crate::codes::{AttributeId, NodeType};
use crate::records::SaRecord;

/// NodeRecord component-mask bits.
pub mod mask {
    use crate::types::ComponentMask as M;

    /// LID.
    pub const LID: M = M::bit(0);
    /// NodeInfo.BaseVersion.
    pub const BASE_VERSION: M = M::bit(2);
    /// NodeInfo.ClassVersion.
    pub const CLASS_VERSION: M = M::bit(3);
    /// NodeInfo.NodeType.
    pub const NODE_TYPE: M = M::bit(4);
    /// NodeInfo.NumPorts.
    pub const NUM_PORTS: M = M::bit(5);
    /// NodeInfo.SystemImageGUID.
    pub const SYSTEM_IMAGE_GUID: M = M::bit(6);
    /// NodeInfo.NodeGUID.
    pub const NODE_GUID: M = M::bit(7);
    /// NodeInfo.PortGUID.
    pub const PORT_GUID: M = M::bit(8);
    /// NodeInfo.PartitionCap.
    pub const PARTITION_CAP: M = M::bit(9);
    /// NodeInfo.DeviceID.
    pub const DEVICE_ID: M = M::bit(10);
    /// NodeInfo.Revision.
    pub const REVISION: M = M::bit(11);
    /// NodeInfo.LocalPortNum.
    pub const LOCAL_PORT_NUM: M = M::bit(12);
    /// NodeInfo.VendorID.
    pub const VENDOR_ID: M = M::bit(13);
    /// NodeDescription.
    pub const NODE_DESCRIPTION: M = M::bit(14);
}

/// NodeRecord as it is on the wire: a LID, that port's NodeInfo and the
/// node's description.
#[derive(
    Clone, Copy, PartialEq, Eq, Hash, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct NodeRecord {
    lid: U16,
    reserved: U16,
    base_version: u8,
    class_version: u8,
    node_type: u8,
    num_ports: u8,
    system_image_guid: U64,
    node_guid: U64,
    port_guid: U64,
    partition_cap: U16,
    device_id: U16,
    revision: U32,
    local_port_num: u8,
    vendor_id: [u8; 3],
    node_description: [u8; 64],
}

const _: () = assert!(size_of::<NodeRecord>() == 108);

impl SaRecord for NodeRecord {
    const ATTRIBUTE_ID: AttributeId = AttributeId::NODE_RECORD;
}

impl NodeRecord {
    field_accessors! {
        /// LID of the port this record describes.
        be lid, set_lid: lid => u16;
        /// NodeInfo.BaseVersion.
        copy base_version, set_base_version: base_version => u8;
        /// NodeInfo.ClassVersion.
        copy class_version, set_class_version: class_version => u8;
        /// NodeInfo.NodeType.
        code8 node_type, set_node_type: node_type => NodeType;
        /// NodeInfo.NumPorts.
        copy num_ports, set_num_ports: num_ports => u8;
        /// NodeInfo.SystemImageGUID.
        be system_image_guid, set_system_image_guid: system_image_guid => u64;
        /// NodeInfo.NodeGUID.
        be node_guid, set_node_guid: node_guid => u64;
        /// NodeInfo.PortGUID.
        be port_guid, set_port_guid: port_guid => u64;
        /// NodeInfo.PartitionCap.
        be partition_cap, set_partition_cap: partition_cap => u16;
        /// NodeInfo.DeviceID.
        be device_id, set_device_id: device_id => u16;
        /// NodeInfo.Revision.
        be revision, set_revision: revision => u32;
        /// NodeInfo.LocalPortNum.
        copy local_port_num, set_local_port_num: local_port_num => u8;
        /// NodeDescription, raw (NUL padded).
        copy description_bytes, set_description_bytes: node_description => [u8; 64];
    }

    /// NodeInfo.VendorID (24 bits).
    pub fn vendor_id(&self) -> u32 {
        get_u24(self.vendor_id)
    }

    /// Sets [`Self::vendor_id`].
    pub fn set_vendor_id(&mut self, id: u32) {
        self.vendor_id = put_u24(id);
    }

    /// NodeDescription up to its first NUL, invalid UTF-8 replaced.
    pub fn description(&self) -> String {
        nul_padded_text(&self.node_description)
    }

    /// Sets NodeDescription, truncated to 64 bytes and NUL padded.
    pub fn set_description(&mut self, text: &str) {
        put_nul_padded(&mut self.node_description, text);
    }
}

impl core::fmt::Debug for NodeRecord {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("NodeRecord")
            .field("lid", &self.lid())
            .field("node_type", &self.node_type())
            .field("num_ports", &self.num_ports())
            .field("node_guid", &format_args!("{:#018x}", self.node_guid()))
            .field("port_guid", &format_args!("{:#018x}", self.port_guid()))
            .field("local_port_num", &self.local_port_num())
            .field("description", &self.description())
            .finish_non_exhaustive()
    }
}
