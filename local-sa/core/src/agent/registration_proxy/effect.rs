//! What the registration proxy asks `SaCore` to do, and what it counts.

use bytes::Bytes;
use mad_codec::{MadStatus, Notice};

use crate::address::Transmit;
use crate::agent::counterparts::Asker;
use crate::agent::master::purpose::Purpose;
use crate::memberships::JoinAnswer;
use crate::request::LocalReply;

/// One thing for `SaCore` to do, in the order given.
#[derive(Debug)]
pub(in crate::agent) enum ProxyEffect {
    /// Send `request` (a whole MAD) to the master for `purpose`.
    Send { purpose: Purpose, request: Bytes },
    /// Answer a subscribe or unsubscribe with `status` (a Set(InformInfo)
    /// MAD's OK echoes its request, as OpenSM does).
    AnswerInform { asker: Asker, status: MadStatus },
    /// Answer a join or a leave (the master's own answer, when it made
    /// this one, is passed on as it came).
    AnswerJoin { asker: Asker, answer: JoinAnswer },
    /// A MAD for a subscriber: a Report, sent or resent.
    Transmit(Transmit),
    /// A notice or a group's event for a local connection.
    Local(LocalReply),
    /// A notice the agent subscribed to for itself: its tables, groups
    /// and upkeep act on it.
    Notice(Notice),
    /// A registration step failed: register again after the back-off.
    RetryRegistration,
    /// The master lost this port's registrations (the canary is gone):
    /// everything it held is to be sent again.
    MasterLostState,
}

/// What the registration proxy counted (see [`crate::Counters`]).
#[derive(Debug, Default, Clone, Copy)]
pub(in crate::agent) struct ProxyCounts {
    pub(super) notices: u64,
    pub(super) reports_sent: u64,
    pub(super) leases_ended: u64,
    pub(super) refused_groups: u64,
    pub(super) refused_group_creations: u64,
    pub(super) refused_subscriptions: u64,
    pub(super) reregistrations: u64,
}
