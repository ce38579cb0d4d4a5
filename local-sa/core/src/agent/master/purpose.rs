//! Why the agent sent a request to the master SA: the token each request
//! carries through the [`Requester`](crate::requester::Requester), by
//! which its answer finds the code that waits for it.

use crate::agent::port_tables::upkeep::CheckQuestion;
use crate::inbound::SaRequest;
use crate::memberships::OpId;
use crate::names::state::NameTable;
use crate::partitions::TableKey;
use crate::path_query::{PairKey, SourceKey};
use crate::request::PathQuery;
use crate::store::Epoch;

/// Why a request went to the master.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Purpose {
    /// Every path from this port (GetTable, SGID = ours) in one of its
    /// tables.
    Bulk { epoch: Epoch, table: TableKey },
    /// The paths from this port to one LID in one of its tables, when the
    /// bulk table came back cut (a transport without RMPP).
    Walk {
        epoch: Epoch,
        table: TableKey,
        dlid: u16,
    },
    /// The paths from this port to a port that came into service, for
    /// one of its tables.
    GidInService { guid: u64, table: TableKey },
    /// A query the cache could not answer.
    Forward(PathQuery),
    /// One port pair's paths for the fields the master's QoS policy
    /// matches on, or for another partition (the QoS cache).
    Pair(PairKey),
    /// One source's paths to every destination for those fields (the QoS
    /// cache, when many of its pairs are asked).
    QosTable(SourceKey),
    /// InformInfo Set for a filter (subscribe or unsubscribe).
    Inform {
        filter: informinfo::Filter,
        subscribe: bool,
    },
    /// A query passed on for a port: the master's answer goes back to it.
    Relay(SaRequest),
    /// A Set or Delete of MCMemberRecord for the memberships.
    Membership(OpId),
    /// The canary ServiceRecord (see `canary`).
    Canary(CanaryStep),
    /// The master's ClassPortInfo.
    MasterInfo,
    /// The master SM's SMInfoRecord: its activity (see `sweep_watch`).
    SweepPoll,
    /// The SMInfoRecord of the master at this port's own LID, asked
    /// before local-sa takes the SA class: one that answers is an SM
    /// running here (see `sa_class`).
    MasterHere,
    /// Host names for the refresh `epoch`: `table` whole (`key` = `None`)
    /// or for one port (see `names`).
    Names {
        epoch: Epoch,
        table: NameTable,
        key: Option<u64>,
    },
    /// This port's directory record: registering (or renewing) it, or
    /// withdrawing it.
    Publish { register: bool },
    /// This port's paths to one LID in one of its tables, or a pair a
    /// distributor loaded into the QoS cache, asked to check what it did
    /// not fetch itself (see `table_check`).
    Check { round: u32, question: CheckQuestion },
}

impl Purpose {
    /// What the request was, in a few words (for logs).
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Self::Bulk { .. } => "this port's PathRecord table",
            Self::Walk { .. } => "this port's paths to one LID",
            Self::GidInService { .. } => "the paths to a port that came into service",
            Self::Forward(_) => "a forwarded PathRecord query",
            Self::Pair(_) => "a port pair's paths for the QoS cache",
            Self::QosTable(_) => "a source's paths at a QoS key for the QoS cache",
            Self::Inform { .. } => "a subscription change",
            Self::Relay(_) => "a query relayed for a port",
            Self::Membership(_) => "a multicast membership change",
            Self::Canary(_) => "the canary ServiceRecord",
            Self::MasterInfo => "the master's ClassPortInfo",
            Self::SweepPoll => "the master SM's SMInfoRecord (its activity)",
            Self::MasterHere => "the SMInfoRecord of the master at this port's LID",
            Self::Names { .. } => "the host names tables",
            Self::Publish { .. } => "this port's directory record",
            Self::Check { .. } => "this port's paths to one LID or port, to check what it holds",
        }
    }
}

/// What a canary request was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CanaryStep {
    /// Registering it (ServiceRecord Set).
    Register,
    /// Looking for it (ServiceRecord Get).
    Audit,
    /// Withdrawing it (ServiceRecord Delete, at shutdown).
    Withdraw,
}
