//! Why a fabric's description is refused: what does not hold together,
//! with the record that says so.

use super::routes::RouteError;

/// A description that does not hold together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DescriptionError {
    /// No NodeRecord at all.
    NoNodes,
    /// A record names a LID outside the unicast range.
    LidOutOfRange {
        /// The record type.
        record: &'static str,
        /// The LID (the first past the range, for an LMC range).
        lid: u16,
    },
    /// Two ports claim one LID.
    DuplicateLid {
        /// The LID.
        lid: u16,
        /// The GUIDs of both.
        guids: (u64, u64),
    },
    /// Two NodeRecords give one port GUID.
    DuplicateGuid {
        /// The GUID.
        guid: u64,
    },
    /// A port without its PortInfoRecord.
    NoPortInfo {
        /// Its LID (its switch's).
        lid: u16,
        /// Its number.
        port: u8,
    },
    /// A record names a LID no NodeRecord gives.
    UnknownLid {
        /// The record type.
        record: &'static str,
        /// The LID.
        lid: u16,
    },
    /// A record names a port its node does not have.
    NoSuchPort {
        /// The record type.
        record: &'static str,
        /// The node's LID.
        lid: u16,
        /// The port.
        port: u8,
    },
    /// A port linked to two different ports.
    ConflictingLinks {
        /// The port's LID (its switch's).
        lid: u16,
        /// Its number.
        port: u8,
    },
    /// An active port without a LinkRecord.
    NoLink {
        /// The port's LID (its switch's).
        lid: u16,
        /// Its number.
        port: u8,
    },
    /// A switch without a forwarding table.
    NoForwardingTable {
        /// The switch's LID.
        lid: u16,
    },
    /// An LFTRecord for a LID that is not a switch's.
    NotASwitch {
        /// The record type.
        record: &'static str,
        /// The LID.
        lid: u16,
    },
    /// An LFTRecord block past the unicast LIDs.
    BlockOutOfRange {
        /// The switch's LID.
        lid: u16,
        /// The block.
        block: u16,
    },
    /// A master with QoS gave no SL to VL table a path needs
    /// ([`RouteError::NoSl2Vl`]; the other route errors cost their pairs,
    /// not the fabric: [`super::Fabric::route_faults`]).
    Route(RouteError),
}

impl std::fmt::Display for DescriptionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NoNodes => write!(f, "NodeRecords: the master gave none"),
            Self::LidOutOfRange { record, lid } => {
                write!(f, "{record}: LID {lid} is not a unicast LID (1 to 49151)")
            }
            Self::DuplicateLid { lid, guids } => write!(
                f,
                "NodeRecords and PortInfoRecords: LID {lid} is claimed by port {:#018x} and by port {:#018x}",
                guids.0, guids.1
            ),
            Self::DuplicateGuid { guid } => {
                write!(f, "NodeRecords: port GUID {guid:#018x} at two LIDs")
            }
            Self::NoPortInfo { lid, port } => {
                write!(f, "PortInfoRecords: none for LID {lid} port {port}")
            }
            Self::UnknownLid { record, lid } => {
                write!(
                    f,
                    "{record}: LID {lid} is no node's (no NodeRecord gives it)"
                )
            }
            Self::NoSuchPort { record, lid, port } => {
                write!(f, "{record}: the node at LID {lid} has no port {port}")
            }
            Self::ConflictingLinks { lid, port } => write!(
                f,
                "LinkRecords: LID {lid} port {port} is linked to two different ports"
            ),
            Self::NoLink { lid, port } => write!(
                f,
                "LinkRecords: none for LID {lid} port {port}, whose PortInfoRecord says it is active"
            ),
            Self::NoForwardingTable { lid } => {
                write!(f, "LFTRecords: none for the switch at LID {lid}")
            }
            Self::NotASwitch { record, lid } => {
                write!(f, "{record}: LID {lid} is not a switch's")
            }
            Self::BlockOutOfRange { lid, block } => write!(
                f,
                "LFTRecord of switch LID {lid}: block {block} is past the unicast LIDs"
            ),
            Self::Route(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for DescriptionError {}

impl From<RouteError> for DescriptionError {
    fn from(e: RouteError) -> Self {
        Self::Route(e)
    }
}
