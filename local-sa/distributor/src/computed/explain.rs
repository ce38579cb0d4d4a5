//! How a difference between computed records and the master's is told:
//! the pair, the field, and what can make such a field differ.

use local_sa_core::path_engine::Table;

use super::checked::Mismatch;

/// What a field's difference says about the master.
pub fn cause(field: &str) -> &'static str {
    match field {
        "sl" => {
            "the master's SLs come from something it does not publish: a routing engine's path SLs \
             (LASH, DFSSSP — which draws one of a pair's SLs at random for each query —, torus-2QoS), \
             a QoS level, or a partition's SL changed since it was asked; OpenSM's configuration \
             (--opensm-config) gives the engine its QoS policy and partitions"
        }
        "mtu" | "rate" => {
            "a QoS level's limit, OpenSM's quirks (enable_quirks) or extended-rate options, or ports \
             that changed while the description was read; OpenSM's configuration (--opensm-config) \
             gives the engine its QoS policy"
        }
        "packet_life" => {
            "a QoS level's packet lifetime, or SubnetTimeOut changed; OpenSM's configuration \
             (--opensm-config) gives the engine both"
        }
        "pkey" => "OpenSM's allow_both_pkeys, a QoS level's P_Keys, or P_Key tables that changed",
        "records" | "slid" | "dlid" | "reversible" | "preference" => {
            "the routes differ: forwarding tables, links or ports changed while they were read (a reroute?)"
        }
        "sgid" | "dgid" => "alias GUIDs or GID prefixes differ",
        _ => "the master fills this field in a way the engine does not follow",
    }
}

/// One difference, in a line.
pub fn describe(m: &Mismatch) -> String {
    let table = match m.pair.table {
        Table::Default => "default table".to_owned(),
        t => format!("partition {t}"),
    };
    format!(
        "{:#018x} -> {:#018x} (LIDs {} -> {}, {table}): {}",
        m.pair.source, m.pair.dest, m.lids.0, m.lids.1, m.difference
    )
}

/// What makes answers that vary from ask to ask.
pub const VARIES: &str = "the master answered this pair otherwise when asked again: its answers \
     vary from ask to ask (a routing engine that draws each path's SL at random, as DFSSSP does), \
     so equality with the master is not defined here and no computed table is sent for it";

/// Why tables of a difference's kind come from the master.
pub fn why(m: &Mismatch) -> String {
    let cause = if m.varies {
        VARIES
    } else {
        cause(m.difference.field)
    };
    format!("{} — {cause}", describe(m))
}
