//! Templates for the fabric's own records (saquery's PIR, SL2VL, PKTR,
//! VLAR, LR, LFTR, MFTR, GIR, SWIR, SMIR and -s): the component mask
//! names exactly the parts of `lid/number/number` given, as saquery's.

use mad_codec::attr::{
    guid_info_record::mask as gir, lft_record::mask as lftr, link_record::mask as lr,
    mft_record::mask as mftr, pkey_table_record::mask as pktr, port_info_record::mask as pir,
    sl2vl_table_record::mask as slvl, sm_info_record::mask as smir,
    switch_info_record::mask as swir, vl_arb_table_record::mask as vlar,
};
use mad_codec::zerocopy::{FromZeros, IntoBytes};
use mad_codec::{
    ComponentMask, GuidInfoRecord, LftRecord, LinkRecord, MftRecord, PkeyTableRecord,
    PortInfoRecord, Sl2VlTableRecord, SmInfoRecord, SwitchInfoRecord, VlArbTableRecord,
};

use super::kind::Kind;
use super::names::{LidArgument, Names, lid_and_numbers, narrow};

/// PortInfo.CapabilityMask bits `-s` lists ports by.
pub(crate) const IS_SM: u32 = 1 << 1;
/// PortInfo.CapabilityMask.IsSMdisabled.
pub(crate) const IS_SM_DISABLED: u32 = 1 << 10;
/// With a PortInfoRecord query: match ports having every bit of the
/// template's CapabilityMask set (OpenSM's IsPortInfoCapMaskMatchSupported).
pub(crate) const CAPABILITY_MASK_MATCH: u32 = 1 << 31;

/// The template and mask for `kind` from its arguments (`args[0]` the
/// `lid/...` one, `args[1]` LinkRecord's `to`).
pub(crate) fn template(
    kind: Kind,
    args: &[&str],
    names: Names<'_>,
) -> Result<(ComponentMask, Vec<u8>), String> {
    let LidArgument {
        lid,
        first: a,
        second: b,
    } = lid_and_numbers(args.first().copied().unwrap_or(""), names)?;
    let mut m = ComponentMask::NONE;
    let mut set = |on: bool, bit: ComponentMask| {
        if on {
            m |= bit;
        }
    };
    let bytes = match kind {
        Kind::PortInfoRecord => {
            let mut r = PortInfoRecord::new_zeroed();
            let (port, options) = (narrow::<u8>(a, "port")?, narrow::<u8>(b, "options")?);
            r.set_lid(lid.unwrap_or(0));
            r.set_port(port.unwrap_or(0));
            r.set_options(options.unwrap_or(0));
            set(lid.is_some(), pir::LID);
            set(port.is_some(), pir::PORT);
            set(options.is_some(), pir::OPTIONS);
            r.as_bytes().to_vec()
        }
        Kind::Sl2VlTableRecord => {
            let mut r = Sl2VlTableRecord::new_zeroed();
            let (inp, out) = (narrow::<u8>(a, "in_port")?, narrow::<u8>(b, "out_port")?);
            r.set_lid(lid.unwrap_or(0));
            r.set_in_port(inp.unwrap_or(0));
            r.set_out_port(out.unwrap_or(0));
            set(lid.is_some(), slvl::LID);
            set(inp.is_some(), slvl::IN_PORT);
            set(out.is_some(), slvl::OUT_PORT);
            r.as_bytes().to_vec()
        }
        Kind::PkeyTableRecord => {
            let mut r = PkeyTableRecord::new_zeroed();
            let (port, block) = (narrow::<u8>(a, "port")?, narrow::<u16>(b, "block")?);
            r.set_lid(lid.unwrap_or(0));
            r.set_port(port.unwrap_or(0));
            r.set_block(block.unwrap_or(0));
            set(lid.is_some(), pktr::LID);
            set(port.is_some(), pktr::PORT);
            set(block.is_some(), pktr::BLOCK);
            r.as_bytes().to_vec()
        }
        Kind::VlArbTableRecord => {
            let mut r = VlArbTableRecord::new_zeroed();
            let (port, block) = (narrow::<u8>(a, "port")?, narrow::<u8>(b, "block")?);
            r.set_lid(lid.unwrap_or(0));
            r.set_port(port.unwrap_or(0));
            r.set_block(block.unwrap_or(0));
            set(lid.is_some(), vlar::LID);
            set(port.is_some(), vlar::OUT_PORT);
            set(block.is_some(), vlar::BLOCK);
            r.as_bytes().to_vec()
        }
        Kind::LinkRecord => {
            let to = lid_and_numbers(args.get(1).copied().unwrap_or(""), names)?;
            let (to_lid, to_port) = (to.lid, to.first);
            let (from_port, to_port) = (
                narrow::<u8>(a, "from_port")?,
                narrow::<u8>(to_port, "to_port")?,
            );
            let mut r = LinkRecord::new_zeroed();
            r.set_from_lid(lid.unwrap_or(0));
            r.set_from_port(from_port.unwrap_or(0));
            r.set_to_lid(to_lid.unwrap_or(0));
            r.set_to_port(to_port.unwrap_or(0));
            set(lid.is_some(), lr::FROM_LID);
            set(from_port.is_some(), lr::FROM_PORT);
            set(to_lid.is_some(), lr::TO_LID);
            set(to_port.is_some(), lr::TO_PORT);
            // saquery sends the 8 bytes OpenSM's struct has.
            let mut bytes = r.as_bytes().to_vec();
            bytes.resize(8, 0);
            bytes
        }
        Kind::LftRecord => {
            let mut r = LftRecord::new_zeroed();
            let block = narrow::<u16>(a, "block")?;
            r.set_lid(lid.unwrap_or(0));
            r.set_block(block.unwrap_or(0));
            set(lid.is_some(), lftr::LID);
            set(block.is_some(), lftr::BLOCK);
            r.as_bytes().to_vec()
        }
        Kind::MftRecord => {
            let mut r = MftRecord::new_zeroed();
            let (position, block) = (narrow::<u8>(a, "position")?, narrow::<u16>(b, "block")?);
            if position.is_some_and(|p| p > 0x0F) || block.is_some_and(|b| b > 0x01FF) {
                return Err("MFTRecord position is 0-15 and block 0-511".into());
            }
            r.set_lid(lid.unwrap_or(0));
            r.set_position_block(position.unwrap_or(0), block.unwrap_or(0));
            set(lid.is_some(), mftr::LID);
            set(position.is_some(), mftr::POSITION);
            set(block.is_some(), mftr::BLOCK);
            r.as_bytes().to_vec()
        }
        Kind::GuidInfoRecord => {
            let mut r = GuidInfoRecord::new_zeroed();
            let block = narrow::<u8>(a, "block")?;
            r.set_lid(lid.unwrap_or(0));
            r.set_block(block.unwrap_or(0));
            set(lid.is_some(), gir::LID);
            set(block.is_some(), gir::BLOCK);
            r.as_bytes().to_vec()
        }
        Kind::SwitchInfoRecord => {
            let mut r = SwitchInfoRecord::new_zeroed();
            r.set_lid(lid.unwrap_or(0));
            set(lid.is_some(), swir::LID);
            r.as_bytes().to_vec()
        }
        Kind::SmInfoRecord => {
            let mut r = SmInfoRecord::new_zeroed();
            r.set_lid(lid.unwrap_or(0));
            set(lid.is_some(), smir::LID);
            // saquery sends the 32 bytes OpenSM's struct has.
            let mut bytes = r.as_bytes().to_vec();
            bytes.resize(32, 0);
            bytes
        }
        other => return Err(format!("{other:?} is not a fabric record")),
    };
    Ok((m, bytes))
}

/// `-s`'s PortInfoRecord template: ports whose CapabilityMask has `bits`.
pub(crate) fn capability_template(bits: u32) -> (ComponentMask, Vec<u8>) {
    let mut r = PortInfoRecord::new_zeroed();
    r.set_capability_mask(bits);
    (pir::CAPABILITY_MASK, r.as_bytes().to_vec())
}
