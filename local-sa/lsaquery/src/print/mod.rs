//! Records as saquery prints them, or as JSON lines.
//!
//! Each record becomes a list of named fields, each with its value and the
//! printf format saquery uses for it, so that the text output matches
//! saquery's byte for byte and the JSON output carries the same names.

mod fabric;
mod port_info;
mod printed;

use std::fmt::Write as _;

use mad_codec::attr::ServiceRecord;
use mad_codec::codes::NodeType;
use mad_codec::zerocopy::IntoBytes;
use mad_codec::{
    ClassPortInfo, InformInfoRecord, McMemberRecord, NodeRecord, Notice, PathRecord, TrapDetails,
};

pub(crate) use fabric::*;
pub(crate) use port_info::*;
pub(crate) use printed::Printed;
use printed::{Fmt, NOT_DISPLAYED};

pub(crate) fn path_record(r: &PathRecord) -> Printed {
    let b = r.as_bytes();
    let flow = u64::from(r.raw_traffic()) << 31
        | u64::from(r.flow_label()) << 8
        | u64::from(r.hop_limit());
    let resv2 = b[58..64]
        .iter()
        .fold(0u64, |acc, x| acc << 8 | u64::from(*x));
    Printed::new("PathRecord dump", 24)
        .num("service_id", r.service_id(), Fmt::Guid)
        .text("dgid", r.dgid().to_string())
        .text("sgid", r.sgid().to_string())
        .num("dlid", r.dlid(), Fmt::Dec)
        .num("slid", r.slid(), Fmt::Dec)
        .num("hop_flow_raw", flow, Fmt::Hex)
        .num("tclass", r.tclass(), Fmt::Hex)
        .num("num_path_revers", b[49], Fmt::Hex)
        .num("pkey", r.pkey(), Fmt::Hex)
        .num("qos_class", r.qos_class(), Fmt::Hex)
        .num("sl", r.sl(), Fmt::Hex)
        .num("mtu", b[54], Fmt::Hex)
        .num("rate", b[55], Fmt::Hex)
        .num("pkt_life", b[56], Fmt::Hex)
        .num("preference", r.preference(), Fmt::Hex)
        .num("resv2", resv2, Fmt::HexUpper(12))
}

fn node_type_name(t: NodeType) -> &'static str {
    match t {
        NodeType::CA => "Channel Adapter",
        NodeType::SWITCH => "Switch",
        NodeType::ROUTER => "Router",
        _ => "???",
    }
}

/// saquery's NodeRecord, the description as the node-name map names the
/// node.
pub(crate) fn node_record(r: &NodeRecord, names: &crate::node_names::NodeNameMap) -> Printed {
    let reserved = u16::from_be_bytes([r.as_bytes()[2], r.as_bytes()[3]]);
    Printed::new("NodeRecord dump", 24)
        .num("lid", r.lid(), Fmt::Dec)
        .num("reserved", reserved, Fmt::Hex)
        .num("base_version", r.base_version(), Fmt::Hex)
        .num("class_version", r.class_version(), Fmt::Hex)
        .text("node_type", node_type_name(r.node_type()))
        .num("num_ports", r.num_ports(), Fmt::Dec)
        .num("sys_guid", r.system_image_guid(), Fmt::Guid)
        .num("node_guid", r.node_guid(), Fmt::Guid)
        .num("port_guid", r.port_guid(), Fmt::Guid)
        .num("partition_cap", r.partition_cap(), Fmt::Hex)
        .num("device_id", r.device_id(), Fmt::Hex)
        .num("revision", r.revision(), Fmt::Hex)
        .num("port_num", r.local_port_num(), Fmt::Dec)
        .num("vendor_id", r.vendor_id(), Fmt::Hex)
        .text(
            "NodeDescription",
            names.name(r.node_guid(), &r.description_bytes()),
        )
}

pub(crate) fn class_port_info(c: &ClassPortInfo) -> Printed {
    let word = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    let b = c.as_bytes();
    Printed::new("SA ClassPortInfo", 25)
        .num("Base version", c.base_version(), Fmt::Dec)
        .num("Class version", c.class_version(), Fmt::Dec)
        .num("Capability mask", c.capability_mask(), Fmt::HexUpper(4))
        .num("Capability mask 2", c.capability_mask2(), Fmt::HexUpper(8))
        .num("Response time value", c.resp_time_value(), Fmt::HexUpper(2))
        .text("Redirect GID", c.redirect_gid().to_string())
        .num("Redirect TC/SL/FL", word(&b[24..28]), Fmt::HexUpper(8))
        .num("Redirect LID", c.redirect_lid(), Fmt::Dec)
        .num("Redirect PKey", c.redirect_pkey(), Fmt::HexUpper(4))
        .num("Redirect QP", word(&b[32..36]), Fmt::HexUpper(8))
        .num("Redirect QKey", c.redirect_qkey(), Fmt::HexUpper(8))
        .text("Trap GID", c.trap_gid().to_string())
        .num("Trap TC/SL/FL", word(&b[56..60]), Fmt::HexUpper(8))
        .num("Trap LID", c.trap_lid(), Fmt::Dec)
        .num("Trap PKey", c.trap_pkey(), Fmt::HexUpper(4))
        .num("Trap HL/QP", word(&b[64..68]), Fmt::HexUpper(8))
        .num("Trap QKey", c.trap_qkey(), Fmt::HexUpper(8))
}

pub(crate) fn mc_group(r: &McMemberRecord) -> Printed {
    let b = r.as_bytes();
    Printed::new("MCMemberRecord group dump", 24)
        .text("MGID", r.mgid().to_string())
        .num("Mlid", r.mlid(), Fmt::Hex)
        .num("Mtu", b[38], Fmt::Hex)
        .num("pkey", r.pkey(), Fmt::Hex)
        .num("Rate", b[42], Fmt::Hex)
        .num("SL", r.sl(), Fmt::Hex)
}

pub(crate) fn mc_member(r: &McMemberRecord) -> Printed {
    let b = r.as_bytes();
    Printed::new("MCMember Record dump", 24)
        .text("MGID", r.mgid().to_string())
        .text("PortGid", r.port_gid().to_string())
        .num("qkey", r.qkey(), Fmt::HexLower)
        .num("mlid", r.mlid(), Fmt::HexLower)
        .num("mtu", b[38], Fmt::HexLower)
        .num("TClass", r.tclass(), Fmt::HexLower)
        .num("pkey", r.pkey(), Fmt::HexLower)
        .num("rate", b[42], Fmt::HexLower)
        .num("pkt_life", b[43], Fmt::HexLower)
        .num("SL", r.sl(), Fmt::HexLower)
        .num("FlowLabel", r.flow_label(), Fmt::HexLower)
        .num("HopLimit", r.hop_limit(), Fmt::HexLower)
        .num("Scope", r.scope(), Fmt::HexLower)
        .num("JoinState", r.join_state().0, Fmt::HexLower)
        .num("ProxyJoin", proxy_join(r), Fmt::HexLower)
}

/// ProxyJoin as saquery reads it: OpenSM's `proxy_join:1` bit field, the
/// lowest bit of byte 49 on the machines it runs on.
fn proxy_join(r: &McMemberRecord) -> u8 {
    r.as_bytes()[49] & 1
}

/// saquery -m's member, with the name of its port's node.
pub(crate) fn mc_member_with_node(r: &McMemberRecord, node: String) -> Printed {
    Printed::new("MCMemberRecord member dump", 24)
        .text("MGID", r.mgid().to_string())
        .num("Mlid", r.mlid(), Fmt::Hex)
        .text("PortGid", r.port_gid().to_string())
        .num("ScopeState", r.as_bytes()[48], Fmt::Hex)
        .num("ProxyJoin", proxy_join(r), Fmt::Hex)
        .text("NodeDescription", node)
}

pub(crate) fn service_record(r: &ServiceRecord, show_keys: bool) -> Printed {
    let key = if show_keys {
        r.service_key().iter().fold(String::from("0x"), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
    } else {
        NOT_DISPLAYED.into()
    };
    const DATA8: [&str; 16] = [
        "ServiceData8.1",
        "ServiceData8.2",
        "ServiceData8.3",
        "ServiceData8.4",
        "ServiceData8.5",
        "ServiceData8.6",
        "ServiceData8.7",
        "ServiceData8.8",
        "ServiceData8.9",
        "ServiceData8.10",
        "ServiceData8.11",
        "ServiceData8.12",
        "ServiceData8.13",
        "ServiceData8.14",
        "ServiceData8.15",
        "ServiceData8.16",
    ];
    const DATA16: [&str; 8] = [
        "ServiceData16.1",
        "ServiceData16.2",
        "ServiceData16.3",
        "ServiceData16.4",
        "ServiceData16.5",
        "ServiceData16.6",
        "ServiceData16.7",
        "ServiceData16.8",
    ];
    const DATA32: [&str; 4] = [
        "ServiceData32.1",
        "ServiceData32.2",
        "ServiceData32.3",
        "ServiceData32.4",
    ];
    const DATA64: [&str; 2] = ["ServiceData64.1", "ServiceData64.2"];
    let mut p = Printed::new("ServiceRecord dump", 24)
        .num("ServiceID", r.service_id(), Fmt::Guid)
        .text("ServiceGID", r.service_gid().to_string())
        .num("ServiceP_Key", r.service_pkey(), Fmt::Hex)
        .num("ServiceLease", r.service_lease(), Fmt::Hex)
        .text("ServiceKey", key)
        .text("ServiceName", r.service_name());
    for (name, v) in DATA8.iter().zip(r.data8()) {
        p = p.num(name, v, Fmt::Hex);
    }
    for (name, v) in DATA16.iter().zip(r.data16()) {
        p = p.num(name, v, Fmt::Hex);
    }
    for (name, v) in DATA32.iter().zip(r.data32()) {
        p = p.num(name, v, Fmt::Hex);
    }
    for (name, v) in DATA64.iter().zip(r.data64()) {
        p = p.num(name, v, Fmt::Guid);
    }
    p
}

pub(crate) fn inform_info_record(r: &InformInfoRecord, show_keys: bool) -> Printed {
    let ii = r.inform_info();
    let generic = ii.is_generic() != 0;
    let qpn = if show_keys {
        format!("0x{:06X}", ii.qpn())
    } else {
        NOT_DISPLAYED.into()
    };
    let p = Printed::new("InformInfoRecord dump", 24)
        .line("RID")
        .text("SubscriberGID", r.subscriber_gid().to_string())
        .num("SubscriberEnum", r.enumeration(), Fmt::Hex)
        .line("InformInfo dump:")
        .text("gid", ii.gid().to_string())
        .num("lid_range_begin", ii.lid_range_begin(), Fmt::Dec)
        .num("lid_range_end", ii.lid_range_end(), Fmt::Dec)
        .num("is_generic", ii.is_generic(), Fmt::Hex)
        .num("subscribe", ii.subscribe(), Fmt::Hex)
        .num("trap_type", ii.notice_type(), Fmt::Hex);
    let p = if generic {
        p.num("trap_num", ii.device_id(), Fmt::Dec)
    } else {
        p.num("dev_id", ii.device_id(), Fmt::Hex)
    };
    let p = p
        .text("qpn", qpn)
        .num("resp_time_val", ii.resp_time_value(), Fmt::Hex);
    if generic {
        p.num("node_type", ii.vendor_id(), Fmt::HexUpper(6))
    } else {
        p.num("vendor_id", ii.vendor_id(), Fmt::HexUpper(6))
    }
}

/// A Notice (what a Report delivers), with its data details decoded for
/// the traps local-sa knows. saquery has no format for notices; this one
/// follows its style.
pub(crate) fn notice(n: &Notice) -> Printed {
    let p = Printed::new("Notice dump", 24)
        .num("is_generic", u8::from(n.is_generic()), Fmt::Hex)
        .num("type", n.notice_type().0, Fmt::Hex)
        .num("producer_type", n.vendor_id(), Fmt::HexUpper(6))
        .num("trap_num", n.device_id(), Fmt::Dec)
        .num("issuer_lid", n.issuer_lid(), Fmt::Dec)
        .num("toggle", u8::from(n.toggle()), Fmt::Hex)
        .num("count", n.count(), Fmt::Hex);
    let p = match n.details() {
        TrapDetails::GidInService { gid } | TrapDetails::GidOutOfService { gid } => {
            p.text("gid", gid.to_string())
        }
        TrapDetails::McGroupCreated { mgid } | TrapDetails::McGroupDeleted { mgid } => {
            p.text("mgid", mgid.to_string())
        }
        TrapDetails::LinkStateChange { lid } => p.num("lid", lid, Fmt::Dec),
        TrapDetails::LocalChanges {
            lid,
            other_local_changes,
            capability_mask,
            change_flags,
            capability_mask2,
        } => p
            .num("lid", lid, Fmt::Dec)
            .num(
                "other_local_changes",
                u8::from(other_local_changes),
                Fmt::Hex,
            )
            .num("capability_mask", capability_mask, Fmt::HexUpper(8))
            .num("change_flags", change_flags, Fmt::Hex)
            .num("capability_mask2", capability_mask2, Fmt::HexUpper(4)),
        TrapDetails::SystemImageGuidChanged {
            lid,
            system_image_guid,
        } => p
            .num("lid", lid, Fmt::Dec)
            .num("system_image_guid", system_image_guid, Fmt::Guid),
        TrapDetails::Other => p.text(
            "data_details",
            mad_codec::hex::dump(&n.data_details()).replace('\n', " "),
        ),
    };
    p.text("issuer_gid", n.issuer_gid().to_string())
}

/// saquery's text for the PathRecord of
/// conformance/vectors/pr-gettable-lids.mad: what lsaquery prints for it
/// and reads back.
#[cfg(test)]
pub(crate) const SAQUERY_PATH_RECORD_TEXT: &str = "PathRecord dump:
\t\tservice_id..............0x0000000000000000
\t\tdgid....................fe80::10:1
\t\tsgid....................fe80::10:4
\t\tdlid....................1
\t\tslid....................4
\t\thop_flow_raw............0x0
\t\ttclass..................0x0
\t\tnum_path_revers.........0x80
\t\tpkey....................0xFFFF
\t\tqos_class...............0x0
\t\tsl......................0x0
\t\tmtu.....................0x84
\t\trate....................0x83
\t\tpkt_life................0x92
\t\tpreference..............0x0
\t\tresv2...................0x000000000000
";

#[cfg(test)]
mod tests {
    use mad_codec::zerocopy::{FromBytes, FromZeros};

    use super::*;

    /// The record and text of conformance/vectors/pr-gettable-lids.mad.
    #[test]
    fn path_record_text_matches_saquery() {
        let bytes: [u8; 64] = [
            0, 0, 0, 0, 0, 0, 0, 0, 0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10, 0, 1, 0xfe,
            0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10, 0, 4, 0, 1, 0, 4, 0, 0, 0, 0, 0, 0x80,
            0xff, 0xff, 0, 0, 0x84, 0x83, 0x92, 0, 0, 0, 0, 0, 0, 0,
        ];
        let r = PathRecord::ref_from_bytes(&bytes[..]).unwrap();
        let expected = SAQUERY_PATH_RECORD_TEXT;
        assert_eq!(path_record(r).to_text(), expected);
        let json = path_record(r).to_json();
        assert!(
            json.starts_with(
                "{\"schema\":1,\"record\":\"PathRecord\",\"service_id\":\"0x0000000000000000\",\"dgid\":\"fe80::10:1\""
            ),
            "{json}"
        );
        assert!(json.contains(",\"mtu\":132,\"mtu_bytes\":2048,"), "{json}");
        assert!(json.contains(",\"rate\":131,\"rate_gbps\":10,"), "{json}");
    }

    #[test]
    fn guids_are_exact_strings_and_unknown_codes_have_no_meaning() {
        let mut r = PathRecord::new_zeroed();
        r.set_service_id(0x1122_3344_5566_7788);
        r.as_mut_bytes()[54] = 0x3F;
        r.as_mut_bytes()[55] = 0x82;
        let json = path_record(&r).to_json();
        assert!(
            json.contains("\"service_id\":\"0x1122334455667788\""),
            "{json}"
        );
        assert!(json.contains("\"mtu_bytes\":null"), "{json}");
        assert!(json.contains("\"rate_gbps\":2.5"), "{json}");
    }
}
