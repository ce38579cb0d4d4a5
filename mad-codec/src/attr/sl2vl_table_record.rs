//! SLtoVLMappingTableRecord (attribute 0x0013, 16 bytes): which VL each of
//! the 16 SLs uses from one port to another.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned, network_endian::U16};

use crate::codes::AttributeId;
use crate::records::SaRecord;

/// SLtoVLMappingTableRecord component-mask bits.
pub mod mask {
    use crate::types::ComponentMask as M;

    /// LID.
    pub const LID: M = M::bit(0);
    /// InputPortNum.
    pub const IN_PORT: M = M::bit(1);
    /// OutputPortNum.
    pub const OUT_PORT: M = M::bit(2);
}

/// SLtoVLMappingTableRecord as it is on the wire.
#[derive(
    Clone, Copy, PartialEq, Eq, Hash, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct Sl2VlTableRecord {
    lid: U16,
    in_port: u8,
    out_port: u8,
    reserved: [u8; 4],
    vl_by_sl: [u8; 8],
}

const _: () = assert!(size_of::<Sl2VlTableRecord>() == 16);

impl SaRecord for Sl2VlTableRecord {
    const ATTRIBUTE_ID: AttributeId = AttributeId::SL_TO_VL_MAPPING_TABLE_RECORD;
}

impl Sl2VlTableRecord {
    field_accessors! {
        /// LID of the port (a switch's port 0 LID).
        be lid, set_lid: lid => u16;
        /// Input port (switches; reserved for adapters).
        copy in_port, set_in_port: in_port => u8;
        /// Output port (switches; reserved for adapters).
        copy out_port, set_out_port: out_port => u8;
    }

    /// The VL of each SL, SL 0 first (two 4-bit entries a byte, the even
    /// SL in the high half).
    pub fn vls(&self) -> [u8; 16] {
        core::array::from_fn(|sl| {
            let byte = self.vl_by_sl[sl / 2];
            if sl % 2 == 0 { byte >> 4 } else { byte & 0x0F }
        })
    }

    /// Sets [`Self::vls`] (each VL's low four bits).
    pub fn set_vls(&mut self, vls: [u8; 16]) {
        self.vl_by_sl = core::array::from_fn(|i| (vls[2 * i] & 0x0F) << 4 | vls[2 * i + 1] & 0x0F);
    }
}

#[cfg(test)]
mod tests {
    use zerocopy::FromZeros;

    use super::*;

    #[test]
    fn vls_are_packed_two_a_byte_even_sl_high() {
        let mut r = Sl2VlTableRecord::new_zeroed();
        let vls: [u8; 16] = core::array::from_fn(|sl| if sl == 3 { 15 } else { sl as u8 % 4 });
        r.set_vls(vls);
        assert_eq!(r.vl_by_sl[1], 0x2F, "SL 2 high, SL 3 low");
        assert_eq!(r.vls(), vls);
    }
}
