//! PortInfoRecord as saquery prints it: its RID in saquery's style, then
//! PortInfo the way libibmad dumps it (infiniband-diags' dump_portinfo:
//! `Name:` and dots to column 33, each field's value as libibmad's
//! mad_dump_* functions spell it, as in rdma-core v44).

use mad_codec::PortInfoRecord;

use super::printed::{Fmt, NOT_DISPLAYED, Printed};

/// How libibmad spells a field's value.
#[derive(Clone, Copy)]
enum Spelling {
    /// `mad_dump_uint`
    Uint,
    /// `mad_dump_hex`: `0x` and two digits a byte of the field's width.
    Hex,
    CapMask,
    CapMask2,
    /// LinkWidthEnabled: the widths, or-ed.
    WidthEnabled,
    /// LinkWidthSupported: as enabled, marking sets outside the standard.
    WidthSupported,
    WidthActive,
    SpeedSet,
    SpeedActive,
    SpeedExtSupported,
    SpeedExtEnabled,
    SpeedExtActive,
    PortState,
    PhysState,
    LinkDownDefault,
    Mtu,
    VlCap,
    OperVls,
}

use Spelling as S;

/// PortInfo's fields in libibmad's order: name, bit offset, bit width.
const FIELDS: [(&str, usize, usize, Spelling); 51] = [
    ("Mkey", 0, 64, S::Hex),
    ("GidPrefix", 64, 64, S::Hex),
    ("Lid", 128, 16, S::Uint),
    ("SMLid", 144, 16, S::Uint),
    ("CapMask", 160, 32, S::CapMask),
    ("DiagCode", 192, 16, S::Hex),
    ("MkeyLeasePeriod", 208, 16, S::Uint),
    ("LocalPort", 224, 8, S::Uint),
    ("LinkWidthEnabled", 232, 8, S::WidthEnabled),
    ("LinkWidthSupported", 240, 8, S::WidthSupported),
    ("LinkWidthActive", 248, 8, S::WidthActive),
    ("LinkSpeedSupported", 256, 4, S::SpeedSet),
    ("LinkState", 260, 4, S::PortState),
    ("PhysLinkState", 264, 4, S::PhysState),
    ("LinkDownDefState", 268, 4, S::LinkDownDefault),
    ("ProtectBits", 272, 2, S::Uint),
    ("LMC", 277, 3, S::Uint),
    ("LinkSpeedActive", 280, 4, S::SpeedActive),
    ("LinkSpeedEnabled", 284, 4, S::SpeedSet),
    ("NeighborMTU", 288, 4, S::Mtu),
    ("SMSL", 292, 4, S::Uint),
    ("VLCap", 296, 4, S::VlCap),
    ("InitType", 300, 4, S::Hex),
    ("VLHighLimit", 304, 8, S::Uint),
    ("VLArbHighCap", 312, 8, S::Uint),
    ("VLArbLowCap", 320, 8, S::Uint),
    ("InitReply", 328, 4, S::Hex),
    ("MtuCap", 332, 4, S::Mtu),
    ("VLStallCount", 336, 3, S::Uint),
    ("HoqLife", 339, 5, S::Uint),
    ("OperVLs", 344, 4, S::OperVls),
    ("PartEnforceInb", 348, 1, S::Uint),
    ("PartEnforceOutb", 349, 1, S::Uint),
    ("FilterRawInb", 350, 1, S::Uint),
    ("FilterRawOutb", 351, 1, S::Uint),
    ("MkeyViolations", 352, 16, S::Uint),
    ("PkeyViolations", 368, 16, S::Uint),
    ("QkeyViolations", 384, 16, S::Uint),
    ("GuidCap", 400, 8, S::Uint),
    ("ClientReregister", 408, 1, S::Uint),
    ("McastPkeyTrapSuppressionEnabled", 409, 2, S::Uint),
    ("SubnetTimeout", 411, 5, S::Uint),
    ("RespTimeVal", 419, 5, S::Uint),
    ("LocalPhysErr", 424, 4, S::Uint),
    ("OverrunErr", 428, 4, S::Uint),
    ("MaxCreditHint", 432, 16, S::Uint),
    ("RoundTrip", 456, 24, S::Uint),
    ("CapabilityMask2", 480, 16, S::CapMask2),
    ("LinkSpeedExtActive", 496, 4, S::SpeedExtActive),
    ("LinkSpeedExtSupported", 500, 4, S::SpeedExtSupported),
    ("LinkSpeedExtEnabled", 507, 5, S::SpeedExtEnabled),
];

/// CapabilityMask bits libibmad names, by bit.
const CAP_MASK_NAMES: [(u32, &str); 29] = [
    (1, "IsSM"),
    (2, "IsNoticeSupported"),
    (3, "IsTrapSupported"),
    (4, "IsOptionalIPDSupported"),
    (5, "IsAutomaticMigrationSupported"),
    (6, "IsSLMappingSupported"),
    (7, "IsMKeyNVRAM"),
    (8, "IsPKeyNVRAM"),
    (9, "IsLedInfoSupported"),
    (10, "IsSMdisabled"),
    (11, "IsSystemImageGUIDsupported"),
    (12, "IsPkeySwitchExternalPortTrapSupported"),
    (14, "IsExtendedSpeedsSupported"),
    (15, "IsCapabilityMask2Supported"),
    (16, "IsCommunicatonManagementSupported"),
    (17, "IsSNMPTunnelingSupported"),
    (18, "IsReinitSupported"),
    (19, "IsDeviceManagementSupported"),
    (20, "IsVendorClassSupported"),
    (21, "IsDRNoticeSupported"),
    (22, "IsCapabilityMaskNoticeSupported"),
    (23, "IsBootManagementSupported"),
    (24, "IsLinkRoundTripLatencySupported"),
    (25, "IsClientRegistrationSupported"),
    (26, "IsOtherLocalChangesNoticeSupported"),
    (27, "IsLinkSpeedWidthPairsTableSupported"),
    (28, "IsVendorSpecificMadsTableSupported"),
    (29, "IsMcastPkeyTrapSuppressionSupported"),
    (30, "IsMulticastFDBTopSupported"),
];

/// CapabilityMask2 bits libibmad names, by bit.
const CAP_MASK2_NAMES: [(u32, &str); 11] = [
    (0, "IsSetNodeDescriptionSupported"),
    (1, "IsPortInfoExtendedSupported"),
    (2, "IsVirtualizationSupported"),
    (3, "IsSwitchPortStateTableSupported"),
    (4, "IsLinkWidth2xSupported"),
    (5, "IsLinkSpeedHDRSupported"),
    (6, "IsMKeyProtectBitsExtSupported"),
    (7, "IsEnhancedTrap128Supported"),
    (8, "IsPartitionTopSupported"),
    (9, "IsEnhancedQoSArbiterSupported"),
    (10, "IsLinkSpeedNDRSupported"),
];

/// `0x…` and then each named bit on a line of its own, four tabs in.
fn mask_spelling(v: u64, names: &[(u32, &str)], extra: Option<(u32, &str)>) -> String {
    let mut s = format!("0x{v:x}");
    for (bit, name) in names.iter().copied().chain(extra) {
        if v >> bit & 1 == 1 {
            s.push_str("\n\t\t\t\t");
            s.push_str(name);
        }
    }
    s
}

/// The set bits' names joined with " or " (libibmad's dump_linkwidth,
/// dump_linkspeed and dump_linkspeedext), with "undefined (v)" when a bit
/// outside `names` is set or, unless `zero` spells it, nothing is.
fn or_list(v: u64, names: &[&str], zero: Option<&str>) -> String {
    if v == 0
        && let Some(z) = zero
    {
        return z.to_owned();
    }
    let mut s: String = names
        .iter()
        .enumerate()
        .filter(|(bit, _)| v >> bit & 1 == 1)
        .map(|(_, name)| format!("{name} or "))
        .collect();
    if v == 0 || v >> names.len() != 0 {
        s.push_str(&format!("undefined ({v})"));
    } else {
        s.truncate(s.len() - " or ".len());
    }
    s
}

fn pick(v: u64, names: &[(u64, &str)], unknown: impl Fn(u64) -> String) -> String {
    names
        .iter()
        .find(|(code, _)| *code == v)
        .map_or_else(|| unknown(v), |(_, name)| (*name).to_owned())
}

const WIDTHS: [&str; 5] = ["1X", "4X", "8X", "12X", "2X"];
const SPEEDS: [&str; 3] = ["2.5 Gbps", "5.0 Gbps", "10.0 Gbps"];
const EXT_SPEEDS: [&str; 4] = [
    "14.0625 Gbps",
    "25.78125 Gbps",
    "53.125 Gbps",
    "106.25 Gbps",
];
const MTUS: [(u64, &str); 5] = [
    (1, "256"),
    (2, "512"),
    (3, "1024"),
    (4, "2048"),
    (5, "4096"),
];
const VLS: [(u64, &str); 5] = [
    (1, "VL0"),
    (2, "VL0-1"),
    (3, "VL0-3"),
    (4, "VL0-7"),
    (5, "VL0-14"),
];

fn question(v: u64) -> String {
    format!("?({v})")
}

fn undefined(v: u64) -> String {
    format!("undefined ({v})")
}

/// A field's value as libibmad spells it; `bytes` is the field's width
/// rounded up to whole bytes.
fn spell(v: u64, how: Spelling, bytes: usize) -> String {
    match how {
        S::Uint => v.to_string(),
        S::Hex => format!("0x{v:0w$x}", w = bytes * 2),
        S::CapMask => mask_spelling(v, &CAP_MASK_NAMES, Some((31, "IsHierarchyInfoSupported"))),
        S::CapMask2 => mask_spelling(v, &CAP_MASK2_NAMES, None),
        S::WidthEnabled => or_list(v, &WIDTHS, None),
        S::WidthSupported => {
            let s = or_list(v, &WIDTHS, None);
            let standard = [1, 3, 7, 11, 15, 17, 19, 23, 27, 31].contains(&v);
            if standard || v >> 5 != 0 {
                s
            } else {
                s + " (IBA extension)"
            }
        }
        S::WidthActive => pick(
            v,
            &[(1, "1X"), (2, "4X"), (4, "8X"), (8, "12X"), (16, "2X")],
            undefined,
        ),
        S::SpeedSet => {
            let s = or_list(v, &SPEEDS, None);
            if [1, 3, 5, 7].contains(&v) || v >> 3 != 0 {
                s
            } else {
                s + " (IBA extension)"
            }
        }
        S::SpeedActive => pick(
            v,
            &[
                (0, "Extended speed"),
                (1, "2.5 Gbps"),
                (2, "5.0 Gbps"),
                (4, "10.0 Gbps"),
            ],
            undefined,
        ),
        S::SpeedExtSupported => or_list(v, &EXT_SPEEDS, Some("0")),
        S::SpeedExtEnabled if v == 30 => "Extended link speeds disabled".to_owned(),
        S::SpeedExtEnabled => or_list(v, &EXT_SPEEDS, Some("0")),
        S::SpeedExtActive => pick(
            v,
            &[
                (0, "No Extended Speed"),
                (1, "14.0625 Gbps"),
                (2, "25.78125 Gbps"),
                (4, "53.125 Gbps"),
                (8, "106.25 Gbps"),
            ],
            undefined,
        ),
        S::PortState => pick(
            v,
            &[
                (0, "NoChange"),
                (1, "Down"),
                (2, "Initialize"),
                (3, "Armed"),
                (4, "Active"),
            ],
            question,
        ),
        S::PhysState => pick(
            v,
            &[
                (0, "NoChange"),
                (1, "Sleep"),
                (2, "Polling"),
                (3, "Disabled"),
                (4, "PortConfigurationTraining"),
                (5, "LinkUp"),
                (6, "LinkErrorRecovery"),
                (7, "PhyTest"),
            ],
            question,
        ),
        S::LinkDownDefault => pick(
            v,
            &[(0, "NoChange"), (1, "Sleep"), (2, "Polling")],
            question,
        ),
        S::Mtu => pick(v, &MTUS, question),
        S::VlCap => pick(v, &VLS, question),
        S::OperVls if v == 0 => "No change".to_owned(),
        S::OperVls => pick(v, &VLS, question),
    }
}

/// libibmad's field line: `Name:` and dots to column 33, then the value.
fn field_line(name: &str, value: &str) -> String {
    let dots = 32usize.saturating_sub(name.len());
    format!("\t\t{name}:{}{value}", ".".repeat(dots))
}

/// saquery's PortInfoRecord: M_Key shown only with `show_keys`.
pub(crate) fn port_info_record(r: &PortInfoRecord, show_keys: bool) -> Printed {
    let mut p = Printed::new("PortInfoRecord dump", 24)
        .raw_line("\tRID")
        .num("EndPortLid", r.lid(), Fmt::Dec)
        .num("PortNum", r.port(), Fmt::Dec)
        .num("Options", r.options(), Fmt::HexLower)
        .raw_line("\tPortInfo dump:");
    for (name, offset, width, how) in FIELDS {
        let v = r.port_info_field(offset, width);
        if name == "Mkey" && !show_keys {
            p = p
                .raw_line(field_line(name, NOT_DISPLAYED))
                .json_text(name, NOT_DISPLAYED);
            continue;
        }
        p = p.raw_line(field_line(name, &spell(v, how, width.div_ceil(8))));
        p = if width == 64 {
            p.json_value(name, v, Fmt::Guid)
        } else {
            p.json_num(name, v)
        };
    }
    p
}

/// The short PortInfoRecord saquery -s lists ports by.
pub(crate) fn port_info_summary(r: &PortInfoRecord) -> Printed {
    Printed::new("PortInfoRecord dump", 24)
        .num("EndPortLid", r.lid(), Fmt::Dec)
        .num("PortNum", r.port(), Fmt::Dec)
        .num("base_lid", r.base_lid(), Fmt::Dec)
        .num("master_sm_base_lid", r.master_sm_lid(), Fmt::Dec)
        .num("capability_mask", r.capability_mask(), Fmt::Hex)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_spelled_as_libibmad_spells_them() {
        assert_eq!(spell(0x0251_0A6A, S::CapMask, 4).lines().count(), 11);
        assert!(spell(0x2, S::CapMask, 4).ends_with("\n\t\t\t\tIsSM"));
        assert_eq!(spell(0, S::CapMask2, 2), "0x0");
        assert_eq!(spell(3, S::WidthEnabled, 1), "1X or 4X");
        assert_eq!(spell(2, S::WidthSupported, 1), "4X (IBA extension)");
        assert_eq!(spell(0, S::WidthEnabled, 1), "undefined (0)");
        assert_eq!(spell(0x21, S::WidthEnabled, 1), "1X or undefined (33)");
        assert_eq!(
            spell(7, S::SpeedSet, 1),
            "2.5 Gbps or 5.0 Gbps or 10.0 Gbps"
        );
        assert_eq!(spell(4, S::SpeedSet, 1), "10.0 Gbps (IBA extension)");
        assert_eq!(spell(0, S::SpeedSet, 1), "undefined (0) (IBA extension)");
        assert_eq!(spell(0, S::SpeedExtSupported, 1), "0");
        assert_eq!(
            spell(30, S::SpeedExtEnabled, 1),
            "Extended link speeds disabled"
        );
        assert_eq!(spell(4, S::PortState, 1), "Active");
        assert_eq!(spell(9, S::PortState, 1), "?(9)");
        assert_eq!(spell(0, S::OperVls, 1), "No change");
        assert_eq!(spell(0xfe80, S::Hex, 8), "0x000000000000fe80");
        assert_eq!(spell(1, S::Hex, 1), "0x01");
        assert_eq!(
            field_line("McastPkeyTrapSuppressionEnabled", "0"),
            "\t\tMcastPkeyTrapSuppressionEnabled:.0"
        );
        assert_eq!(
            field_line("Lid", "4"),
            "\t\tLid:.............................4"
        );
    }
}
