//! saquery's node listings (-N, -D, -L, -l, -G, -O, -U) and its -m
//! member dump: records fetched whole, then picked and named here as
//! saquery does, the names through the node-name map.

use mad_codec::codes::NodeType;
use mad_codec::{McMemberRecord, NodeRecord};

use crate::print;
use crate::session::Session;
use crate::stop::Stop;

/// What a node listing prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Listing {
    /// -N: the NodeRecords of the nodes named (every one without a name).
    Records,
    /// -D: each adapter's LID and name.
    Descriptions,
    /// -L: the LIDs of the nodes named.
    Lids,
    /// -l: the first of them.
    UniqueLid,
    /// -G: their port GUIDs.
    Guids,
    /// -O: the name of the node at a LID.
    NameOfLid,
    /// -U: the name of the node with a port GUID.
    NameOfGuid,
}

impl Listing {
    /// Whether the listing needs its argument (a name, LID or GUID).
    pub(crate) fn needs_argument(self) -> bool {
        !matches!(self, Self::Records | Self::Descriptions)
    }
}

/// Prints a node listing of `records`; `wanted` is the command line's
/// name (or, for -O and -U, the records were asked for by LID or GUID).
pub(crate) fn print_nodes(
    session: &Session,
    listing: Listing,
    wanted: Option<&str>,
    records: &[NodeRecord],
) -> Result<(), Stop> {
    let map = &session.node_names;
    let name = |r: &NodeRecord| map.name(r.node_guid(), &r.description_bytes());
    let named = |r: &&NodeRecord| {
        wanted.is_none_or(|w| {
            w == crate::node_names::clean_description(&r.description_bytes()) || w == name(r)
        })
    };
    if listing == Listing::Descriptions {
        if session.json {
            for r in records.iter().filter(|r| r.node_type() == NodeType::CA) {
                session.print(&print::node_record(r, map))?;
            }
            return Ok(());
        }
        outln!("   LID \"name\"")?;
        outln!("================")?;
        for r in records.iter().filter(|r| r.node_type() == NodeType::CA) {
            outln!("{:6}  \"{}\"", r.lid(), name(r))?;
        }
        return Ok(());
    }
    for r in records.iter().filter(named) {
        if session.json || listing == Listing::Records {
            session.print(&print::node_record(r, map))?;
        } else {
            match listing {
                Listing::Lids | Listing::UniqueLid => outln!("{}", r.lid())?,
                Listing::Guids => outln!("0x{:016x}", r.port_guid())?,
                _ => outln!("{}", name(r))?,
            }
        }
        if listing == Listing::UniqueLid {
            break;
        }
    }
    Ok(())
}

/// saquery -m: each membership with its port's node name (from
/// `nodes`, by port GUID), or with an MLID given, only that group's
/// members' port GIDs.
pub(crate) fn print_members(
    session: &Session,
    mlid: Option<&str>,
    members: &[McMemberRecord],
    nodes: &[NodeRecord],
) -> Result<(), Stop> {
    let map = &session.node_names;
    let node_name = |m: &McMemberRecord| {
        let interface_id = m.port_gid().guid();
        nodes
            .iter()
            .find(|n| n.port_guid() == interface_id)
            .map_or_else(
                || "<unknown>".to_owned(),
                |n| map.name(n.node_guid(), &n.description_bytes()),
            )
    };
    let mlid = mlid
        .map(|m| local_sa_cli::number::<u16>(m).map_err(|e| Stop::new(2, e)))
        .transpose()?;
    for m in members {
        let name = node_name(m);
        match mlid {
            Some(wanted) if wanted != m.mlid() => {}
            Some(_) if !session.json => {
                outln!("\t\tPortGid.................{} ({name})", m.port_gid())?
            }
            _ => session.print(&print::mc_member_with_node(m, name))?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use mad_codec::zerocopy::FromZeros;

    use super::*;
    use crate::node_names::NodeNameMap;

    #[test]
    fn a_node_without_a_mapped_name_goes_by_its_description() {
        let mut r = NodeRecord::new_zeroed();
        r.set_description("h9 HCA-1");
        assert_eq!(
            NodeNameMap::default().name(1, &r.description_bytes()),
            "h9 HCA-1"
        );
    }
}
