//! The fabric's own records as saquery prints them: the SM, switches,
//! links and the per-port tables (SL to VL, VL arbitration, P_Keys, GUIDs)
//! and forwarding tables. Field widths and formats are saquery's
//! (infiniband-diags saquery.c), line for line.

use std::fmt::Write as _;

use mad_codec::{
    GuidInfoRecord, LftRecord, LinkRecord, MftRecord, PkeyTableRecord, Sl2VlTableRecord,
    SmInfoRecord, SwitchInfoRecord, VlArbTableRecord,
};

use super::printed::{Fmt, Printed};

/// The first multicast LID: MFT blocks count from it.
const MULTICAST_LID_START: u64 = 0xC000;

/// `|`-separated two-digit columns, as saquery's `%2u|` rows.
fn columns(values: impl IntoIterator<Item = u8>) -> String {
    values.into_iter().fold(String::new(), |mut s, v| {
        let _ = write!(s, "{v:2}|");
        s
    })
}

pub(crate) fn sm_info_record(r: &SmInfoRecord) -> Printed {
    Printed::new("SMInfoRecord dump", 22)
        .line("RID")
        .num("LID", r.lid(), Fmt::Dec)
        .line("SMInfo dump:")
        .num("GUID", r.guid(), Fmt::Guid)
        .num("SM_Key", r.sm_key(), Fmt::Guid)
        .num("ActCount", r.act_count(), Fmt::Dec)
        .num("Priority", r.priority(), Fmt::Dec)
        .num("SMState", r.state(), Fmt::Dec)
}

/// `multicast_fdb_top`: whether the SA's ClassPortInfo says it fills
/// MulticastFDBTop (CapabilityMask2 bit 3); saquery prints it only then.
pub(crate) fn switch_info_record(r: &SwitchInfoRecord, multicast_fdb_top: bool) -> Printed {
    let p = Printed::new("SwitchInfoRecord dump", 40)
        .line("RID")
        .num("LID", r.lid(), Fmt::Dec)
        .line("SwitchInfo dump:")
        .num("LinearFDBCap", r.linear_fdb_cap(), Fmt::Hex)
        .num("RandomFDBCap", r.random_fdb_cap(), Fmt::Hex)
        .num("MulticastFDBCap", r.multicast_fdb_cap(), Fmt::Hex)
        .num("LinearFDBTop", r.linear_fdb_top(), Fmt::Hex)
        .num("DefaultPort", r.default_port(), Fmt::Dec)
        .num(
            "DefaultMulticastPrimaryPort",
            r.default_multicast_primary_port(),
            Fmt::Dec,
        )
        .num(
            "DefaultMulticastNotPrimaryPort",
            r.default_multicast_not_primary_port(),
            Fmt::Dec,
        )
        .num(
            "LifeTimeValue/PortStateChange/OpSL2VL",
            r.life_state(),
            Fmt::Hex,
        )
        .num("LIDsPerPort", r.lids_per_port(), Fmt::Hex)
        .num(
            "PartitionEnforcementCap",
            r.partition_enforcement_cap(),
            Fmt::Hex,
        )
        .num("flags", r.flags(), Fmt::Hex);
    if multicast_fdb_top {
        p.num("MulticastFDBTop", r.multicast_fdb_top(), Fmt::Hex)
    } else {
        p
    }
}

pub(crate) fn link_record(r: &LinkRecord) -> Printed {
    Printed::new("LinkRecord dump", 27)
        .num("FromLID", r.from_lid(), Fmt::Dec)
        .num("FromPort", r.from_port(), Fmt::Dec)
        .num("ToPort", r.to_port(), Fmt::Dec)
        .num("ToLID", r.to_lid(), Fmt::Dec)
}

pub(crate) fn sl2vl_table_record(r: &Sl2VlTableRecord) -> Printed {
    let vls = r.vls();
    Printed::new("SL2VLTableRecord dump", 27)
        .num("LID", r.lid(), Fmt::Dec)
        .num("InPort", r.in_port(), Fmt::Dec)
        .num("OutPort", r.out_port(), Fmt::Dec)
        .line(format!("SL:{}", columns(0..16)))
        .line(format!("VL:{}", columns(vls)))
        .list("vl_by_sl", vls.map(u64::from).to_vec(), Fmt::Dec)
}

pub(crate) fn vl_arb_table_record(r: &VlArbTableRecord) -> Printed {
    let entries = r.entries();
    let mut p = Printed::new("VLArbTableRecord dump", 27)
        .num("LID", r.lid(), Fmt::Dec)
        .num("Port", r.port(), Fmt::Dec)
        .num("Block", r.block(), Fmt::Dec);
    for half in entries.chunks(16) {
        p = p
            .line(format!("VL    :{}", columns(half.iter().map(|e| e.0))))
            .line(format!("Weight:{}", columns(half.iter().map(|e| e.1))));
    }
    p.list(
        "vl",
        entries.iter().map(|e| u64::from(e.0)).collect(),
        Fmt::Dec,
    )
    .list(
        "weight",
        entries.iter().map(|e| u64::from(e.1)).collect(),
        Fmt::Dec,
    )
}

pub(crate) fn pkey_table_record(r: &PkeyTableRecord) -> Printed {
    let pkeys = r.pkeys();
    let mut p = Printed::new("PKeyTableRecord dump", 27)
        .num("LID", r.lid(), Fmt::Dec)
        .num("Port", r.port(), Fmt::Dec)
        .num("Block", r.block(), Fmt::Dec)
        .line("PKey Table:");
    for row in pkeys.chunks(8) {
        let words: Vec<String> = row.iter().map(|k| format!("0x{k:04x}")).collect();
        p = p.line(words.join(" "));
    }
    p.raw_line("")
        .list("pkeys", pkeys.map(u64::from).to_vec(), Fmt::Dec)
}

pub(crate) fn lft_record(r: &LftRecord) -> Printed {
    let block = u64::from(r.block());
    let ports = r.ports();
    let mut p = Printed::new("LFT Record dump", 27)
        .num("LID", r.lid(), Fmt::Dec)
        .num("Block", r.block(), Fmt::Dec)
        .line("LFT:")
        .line("LID\tPort Number");
    for (i, port) in ports.iter().enumerate() {
        p = p.line(format!("{}\t{port}", block * 64 + i as u64));
    }
    p.raw_line("").json_num("first_lid", block * 64).list(
        "ports",
        ports.map(u64::from).to_vec(),
        Fmt::Dec,
    )
}

pub(crate) fn guid_info_record(r: &GuidInfoRecord) -> Printed {
    const NAMES: [&str; 8] = [
        "GUID 0", "GUID 1", "GUID 2", "GUID 3", "GUID 4", "GUID 5", "GUID 6", "GUID 7",
    ];
    let mut p = Printed::new("GUIDInfo Record dump", 27)
        .num("LID", r.lid(), Fmt::Dec)
        .num("Block", r.block(), Fmt::Dec);
    for (name, guid) in NAMES.iter().zip(r.guids()) {
        p = p.num(name, guid, Fmt::Guid);
    }
    p
}

pub(crate) fn mft_record(r: &MftRecord) -> Printed {
    let first = MULTICAST_LID_START + u64::from(r.block()) * 32;
    let masks = r.port_masks();
    let mut p = Printed::new("MFT Record dump", 27)
        .num("LID", r.lid(), Fmt::Dec)
        .num("Position", r.position(), Fmt::Dec)
        .num("Block", r.block(), Fmt::Dec)
        .line("MFT:")
        .line("MLID\tPort Mask");
    for (i, mask) in masks.iter().enumerate() {
        p = p.line(format!("0x{:04x}\t0x{mask:04x}", first + i as u64));
    }
    p.raw_line("").json_num("first_mlid", first).list(
        "port_masks",
        masks.map(u64::from).to_vec(),
        Fmt::Dec,
    )
}

#[cfg(test)]
mod tests {
    use mad_codec::zerocopy::{FromZeros, IntoBytes};

    use super::*;

    #[test]
    fn tables_print_saquery_s_rows_and_json_arrays() {
        let mut lft = LftRecord::new_zeroed();
        lft.set_lid(3);
        lft.set_block(1);
        let mut ports = [0u8; 64];
        ports[0] = 7;
        lft.set_ports(ports);
        let p = lft_record(&lft);
        let text = p.to_text();
        assert!(text.starts_with(
            "LFT Record dump:\n\t\tLID........................3\n\t\tBlock......................1\n\t\tLFT:\n\t\tLID\tPort Number\n\t\t64\t7\n\t\t65\t0\n"
        ), "{text}");
        assert!(text.ends_with("\t\t127\t0\n\n"), "{text}");
        let json = p.to_json();
        assert!(json.contains("\"first_lid\":64,\"ports\":[7,0,0"), "{json}");

        let mut slvl = Sl2VlTableRecord::new_zeroed();
        slvl.as_mut_bytes()[8] = 0x12; // SL 0 → VL 1, SL 1 → VL 2
        let text = sl2vl_table_record(&slvl).to_text();
        assert!(
            text.contains(
                "\t\tSL: 0| 1| 2| 3| 4| 5| 6| 7| 8| 9|10|11|12|13|14|15|\n\t\tVL: 1| 2| 0|"
            ),
            "{text}"
        );
        let mut mft = MftRecord::new_zeroed();
        mft.set_position_block(1, 2);
        let text = mft_record(&mft).to_text();
        assert!(
            text.contains("\t\tPosition...................1\n\t\tBlock......................2\n")
        );
        assert!(text.contains("\t\t0xc040\t0x0000\n"), "{text}");
    }
}
