//! What a query asks for, by saquery's names for it.

use mad_codec::records::SaRecord;
use mad_codec::{AttributeId, InformInfoRecord, McMemberRecord, NodeRecord, PathRecord};

use crate::listing::Listing;

/// What is being asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    ClassPortInfo,
    NodeRecord,
    /// saquery's node listings (-N, -D, -L, -l, -G, -O, -U).
    Nodes(Listing),
    PathRecord,
    McMemberRecord,
    /// -m: memberships with their nodes' names.
    McMembers,
    McGroups,
    ServiceRecord,
    InformInfoRecord,
    PortInfoRecord,
    Sl2VlTableRecord,
    PkeyTableRecord,
    VlArbTableRecord,
    LinkRecord,
    LftRecord,
    MftRecord,
    GuidInfoRecord,
    SwitchInfoRecord,
    SmInfoRecord,
    /// `-s`: the ports with IsSM, then those with IsSMdisabled.
    SmPorts,
}

impl Kind {
    pub(crate) fn from_name(name: &str) -> Option<Self> {
        let n = name.to_ascii_lowercase();
        Some(match n.as_str() {
            "classportinfo" | "cpi" => Self::ClassPortInfo,
            "noderecord" | "nr" => Self::NodeRecord,
            "pathrecord" | "pr" => Self::PathRecord,
            "mcmemberrecord" | "mcmr" => Self::McMemberRecord,
            "servicerecord" | "sr" => Self::ServiceRecord,
            "informinforecord" | "iir" => Self::InformInfoRecord,
            "portinforecord" | "pir" => Self::PortInfoRecord,
            "sl2vltablerecord" | "sl2vl" => Self::Sl2VlTableRecord,
            "pkeytablerecord" | "pktr" => Self::PkeyTableRecord,
            "vlarbitrationtablerecord" | "vlar" => Self::VlArbTableRecord,
            "linkrecord" | "lr" => Self::LinkRecord,
            "lftrecord" | "lftr" => Self::LftRecord,
            "mftrecord" | "mftr" => Self::MftRecord,
            "guidinforecord" | "gir" => Self::GuidInfoRecord,
            "switchinforecord" | "swir" => Self::SwitchInfoRecord,
            "sminforecord" | "smir" => Self::SmInfoRecord,
            _ => return None,
        })
    }

    /// Whether local-sa answers this query itself; the others go to the
    /// master SA even when local-sa is the default SA (as saquery sends
    /// every query there).
    pub(crate) fn served_by_local_sa(self) -> bool {
        matches!(
            self,
            Self::ClassPortInfo
                | Self::PathRecord
                | Self::McMemberRecord
                | Self::McMembers
                | Self::McGroups
                | Self::InformInfoRecord
        )
    }

    pub(crate) fn attribute(self) -> AttributeId {
        match self {
            Self::ClassPortInfo => AttributeId::CLASS_PORT_INFO,
            Self::NodeRecord | Self::Nodes(_) => NodeRecord::ATTRIBUTE_ID,
            Self::PathRecord => PathRecord::ATTRIBUTE_ID,
            Self::McMemberRecord | Self::McMembers | Self::McGroups => McMemberRecord::ATTRIBUTE_ID,
            Self::ServiceRecord => AttributeId::SERVICE_RECORD,
            Self::InformInfoRecord => InformInfoRecord::ATTRIBUTE_ID,
            Self::PortInfoRecord | Self::SmPorts => AttributeId::PORT_INFO_RECORD,
            Self::Sl2VlTableRecord => AttributeId::SL_TO_VL_MAPPING_TABLE_RECORD,
            Self::PkeyTableRecord => AttributeId::PKEY_TABLE_RECORD,
            Self::VlArbTableRecord => AttributeId::VL_ARBITRATION_TABLE_RECORD,
            Self::LinkRecord => AttributeId::LINK_RECORD,
            Self::LftRecord => AttributeId::LINEAR_FORWARDING_TABLE_RECORD,
            Self::MftRecord => AttributeId::MULTICAST_FORWARDING_TABLE_RECORD,
            Self::GuidInfoRecord => AttributeId::GUID_INFO_RECORD,
            Self::SwitchInfoRecord => AttributeId::SWITCH_INFO_RECORD,
            Self::SmInfoRecord => AttributeId::SM_INFO_RECORD,
        }
    }
}
