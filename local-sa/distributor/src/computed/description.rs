//! Reading the fabric's description from the master SA, without I/O:
//! every record type the path engine computes from, each through one
//! GetTable over RMPP as the master gives it, or, where the transport
//! cuts multi-MAD answers (ibsim has no RMPP), one Get per record: per
//! LID (walking upward until 64 LIDs past the highest that answered), per
//! port, per forwarding table block.
//!
//! [`DescriptionRead`] says which queries to send, a batch at a time (all
//! of a batch may be out at once), and takes their answers in the same
//! order; a driver sends them.

use std::collections::HashSet;

use bytes::Bytes;
use local_sa_core::lid_walk::{DEFAULT_WALK_GAP, LidWalk};
use local_sa_core::path_engine::{DescriptionError, Fabric, FabricRecords};
use local_sa_core::requester::{Answer, Failure};
use mad_codec::address::MAX_UNICAST_LID;
use mad_codec::attr::class_port_info::cap2;
use mad_codec::attr::{
    guid_info_record::mask as gir, lft_record::mask as lftr, link_record::mask as lr,
    node_record::mask as nr, pkey_table_record::mask as pkr, port_info_record::mask as pir,
    sl2vl_table_record::mask as slr,
};
use mad_codec::codes::NodeType;
use mad_codec::records::Records;
use mad_codec::zerocopy::FromZeros;
use mad_codec::{
    AttributeId, ClassPortInfo, ComponentMask, GuidInfoRecord, LftRecord, LinkRecord, MadStatus,
    Method, NodeRecord, PkeyTableRecord, PortInfoRecord, SaMadBuilder, SaRecord, Sl2VlTableRecord,
};

use crate::computed::Served;
use crate::computed::sample_check::End;

/// The description, and what reading it cost the master.
#[derive(Debug, Clone, Default)]
pub struct Description {
    /// Every record the engine computes from.
    pub records: FabricRecords,
    /// The master applies QoS (its ClassPortInfo says so).
    pub qos: bool,
    /// What reading it cost the master.
    pub served: Served,
    /// Its multi-MAD answers came cut: records were asked one by one.
    pub cut: bool,
}

impl Description {
    /// The fabric it describes, or why the description does not hold
    /// together.
    pub fn build(&self) -> Result<Fabric, DescriptionError> {
        Fabric::build(&self.records, self.qos)
    }

    /// The channel adapters' NodeRecords (a names table's).
    pub fn adapters(&self) -> Vec<NodeRecord> {
        (self.records.nodes.iter())
            .filter(|n| n.node_type() == NodeType::CA)
            .copied()
            .collect()
    }
}

/// Why a read ended early.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadFailure {
    /// The master did not answer a whole table's request (the driver
    /// says where it went).
    NoAnswer(Failure),
    /// The master answered a query with an error status: it refuses
    /// (`lsaquery` exits 1).
    Refused(String),
    /// An answer that cannot be used, or none to a record's Get
    /// (`lsaquery` exits 4).
    Unusable(String),
}

impl std::fmt::Display for ReadFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NoAnswer(failure) => write!(f, "the master did not answer: {failure}"),
            Self::Refused(why) | Self::Unusable(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for ReadFailure {}

/// The record types read after the NodeRecords, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Ports,
    Links,
    Lfts,
    Pkeys,
    Guids,
    Sl2vl,
}

impl Part {
    fn what(self) -> &'static str {
        match self {
            Self::Ports => "PortInfoRecords",
            Self::Links => "LinkRecords",
            Self::Lfts => "LFTRecords",
            Self::Pkeys => "P_KeyTableRecords",
            Self::Guids => "GUIDInfoRecords",
            Self::Sl2vl => "SL2VLTableRecords",
        }
    }

    /// The part read after this one (`qos`: the master applies QoS, and
    /// its SL to VL tables are read).
    fn next(self, qos: bool) -> Option<Self> {
        match self {
            Self::Ports => Some(Self::Links),
            Self::Links => Some(Self::Lfts),
            Self::Lfts => Some(Self::Pkeys),
            Self::Pkeys => Some(Self::Guids),
            Self::Guids if qos => Some(Self::Sl2vl),
            Self::Guids | Self::Sl2vl => None,
        }
    }
}

/// Where the read stands.
enum Stage {
    /// The master's ClassPortInfo (does it apply QoS?).
    MasterInfo,
    /// Every NodeRecord in one GetTable.
    Nodes,
    /// NodeRecords one LID at a time; the LIDs of the batch out.
    NodeWalk(LidWalk, Vec<u16>),
    /// A part in one GetTable.
    Whole(Part),
    /// A part one record at a time: each Get's (LID, port, block or
    /// port pair).
    Items(Part, Vec<(u16, u16)>),
    /// Links found by port number: the numbers asked.
    LinksByPort(Vec<u8>),
    /// Over.
    Done,
}

/// A read of the description, from the ClassPortInfo to the last part.
pub struct DescriptionRead {
    stage: Stage,
    /// The master's SA key (P_KeyTableRecords need it).
    sm_key: u64,
    /// A LID the walk of NodeRecords goes past at least (this port's, the
    /// master's).
    floor: u16,
    read: Description,
    endports: Endports,
    /// The last part read came whole.
    last_whole: bool,
}

impl DescriptionRead {
    /// A read whose queries carry `sm_key`; a walk over the LIDs goes at
    /// least past `floor`.
    pub fn new(sm_key: u64, floor: u16) -> Self {
        Self {
            stage: Stage::MasterInfo,
            sm_key,
            floor,
            read: Description::default(),
            endports: Endports::default(),
            last_whole: true,
        }
    }

    /// The next batch of queries, or `None` when the read is over. Each
    /// batch's ends go to [`Self::handle_batch`] before the next is asked
    /// for.
    pub fn poll_batch(&mut self) -> Option<Vec<Bytes>> {
        let sm_key = self.sm_key;
        let batch = match &mut self.stage {
            Stage::Done => return None,
            Stage::MasterInfo => {
                vec![
                    SaMadBuilder::request(Method::GET, 0, AttributeId::CLASS_PORT_INFO)
                        .into_bytes(),
                ]
            }
            Stage::Nodes => vec![whole::<NodeRecord>(sm_key)],
            Stage::NodeWalk(walk, asked) => {
                // Every LID the walk reaches as it stands; then the walk
                // moves on past what answered.
                *asked = std::iter::from_fn(|| walk.next_lid(usize::MAX)).collect();
                (asked.iter())
                    .map(|&lid| {
                        request::<NodeRecord>(Method::GET, sm_key, |t| {
                            t.set_lid(lid);
                            nr::LID
                        })
                    })
                    .collect()
            }
            Stage::Whole(part) => vec![match part {
                Part::Ports => whole::<PortInfoRecord>(sm_key),
                Part::Links => whole::<LinkRecord>(sm_key),
                Part::Lfts => whole::<LftRecord>(sm_key),
                Part::Pkeys => whole::<PkeyTableRecord>(sm_key),
                Part::Guids => whole::<GuidInfoRecord>(sm_key),
                Part::Sl2vl => whole::<Sl2VlTableRecord>(sm_key),
            }],
            Stage::Items(part, items) => {
                let part = *part;
                (items.iter())
                    .map(|&item| item_request(part, sm_key, item))
                    .collect()
            }
            Stage::LinksByPort(numbers) => (numbers.iter())
                .map(|&n| {
                    request::<LinkRecord>(Method::GET_TABLE, sm_key, |t| {
                        t.set_from_port(n);
                        lr::FROM_PORT
                    })
                })
                .collect(),
        };
        Some(batch)
    }

    /// The ends of the last batch, in order.
    pub fn handle_batch(&mut self, ends: Vec<End>) -> Result<(), ReadFailure> {
        let stage = std::mem::replace(&mut self.stage, Stage::Done);
        let pkeys = matches!(
            stage,
            Stage::Whole(Part::Pkeys) | Stage::Items(Part::Pkeys, _)
        );
        let next = self.take(stage, ends);
        // OpenSM gives P_KeyTableRecords only for its SA key.
        let hint = |why: String| {
            format!(
                "{why} (OpenSM gives P_KeyTableRecords only for its SA key, `sa_key`: give it as --smkey)"
            )
        };
        self.stage = match next {
            Ok(next) => next,
            Err(ReadFailure::Refused(why)) if pkeys => return Err(ReadFailure::Refused(hint(why))),
            Err(ReadFailure::Unusable(why)) if pkeys => {
                return Err(ReadFailure::Unusable(hint(why)));
            }
            Err(e) => return Err(e),
        };
        Ok(())
    }

    /// Whether the read is over (no batch left to ask).
    pub fn is_done(&self) -> bool {
        matches!(self.stage, Stage::Done)
    }

    /// What was read, once [`Self::poll_batch`] says the read is over.
    pub fn finish(self) -> Description {
        self.read
    }

    /// Takes a stage's ends; the stage that follows.
    fn take(&mut self, stage: Stage, ends: Vec<End>) -> Result<Stage, ReadFailure> {
        let served = &mut self.read.served;
        Ok(match stage {
            Stage::Done => Stage::Done,
            Stage::MasterInfo => {
                let answer = only(ends)?;
                if answer.status() != MadStatus::OK {
                    return Err(refused("ClassPortInfo", answer.status()));
                }
                let cpi = ClassPortInfo::parse(answer.data()).map_err(|e| {
                    ReadFailure::Unusable(format!("the master's ClassPortInfo: {e}"))
                })?;
                served.count(1, 72);
                self.read.qos = cpi.capability_mask2() & cap2::QOS_SUPPORTED != 0;
                Stage::Nodes
            }
            Stage::Nodes => match take_whole::<NodeRecord>("NodeRecords", only(ends)?, served)? {
                Some(all) => self.nodes_read(all),
                None => {
                    self.read.cut = true;
                    let walk = LidWalk::new(self.floor, DEFAULT_WALK_GAP);
                    Stage::NodeWalk(walk, Vec::new())
                }
            },
            Stage::NodeWalk(mut walk, asked) => {
                if asked.is_empty() {
                    let nodes = std::mem::take(&mut self.read.records.nodes);
                    return Ok(self.nodes_read(nodes));
                }
                for (lid, end) in asked.iter().zip(ends) {
                    let found = take_one::<NodeRecord>(end, || format!("LID {lid}"), served)?;
                    walk.answered(*lid, found.is_some());
                    self.read.records.nodes.extend(found);
                }
                Stage::NodeWalk(walk, Vec::new())
            }
            Stage::Whole(part) => {
                let answer = only(ends)?;
                let r = &mut self.read.records;
                let whole = match part {
                    Part::Ports => put(&mut r.ports, take_whole(part.what(), answer, served)?),
                    Part::Links => put(&mut r.links, take_whole(part.what(), answer, served)?),
                    Part::Lfts => put(&mut r.lfts, take_whole(part.what(), answer, served)?),
                    Part::Pkeys => put(&mut r.pkeys, take_whole(part.what(), answer, served)?),
                    Part::Guids => put(&mut r.guids, take_whole(part.what(), answer, served)?),
                    Part::Sl2vl => put(&mut r.sl2vl, take_whole(part.what(), answer, served)?),
                };
                self.last_whole = whole;
                if whole {
                    self.after(part)
                } else {
                    self.read.cut = true;
                    Stage::Items(part, self.items(part))
                }
            }
            Stage::Items(part, items) => {
                let r = &mut self.read.records;
                for (&(lid, x), end) in items.iter().zip(ends) {
                    let item = || format!("LID {lid} {x}");
                    match part {
                        Part::Ports => r
                            .ports
                            .extend(take_one::<PortInfoRecord>(end, item, served)?),
                        Part::Links => r.links.extend(take_one::<LinkRecord>(end, item, served)?),
                        Part::Lfts => r.lfts.extend(take_one::<LftRecord>(end, item, served)?),
                        Part::Pkeys => r
                            .pkeys
                            .extend(take_one::<PkeyTableRecord>(end, item, served)?),
                        Part::Guids => r
                            .guids
                            .extend(take_one::<GuidInfoRecord>(end, item, served)?),
                        Part::Sl2vl => r
                            .sl2vl
                            .extend(take_one::<Sl2VlTableRecord>(end, item, served)?),
                    }
                }
                self.after(part)
            }
            Stage::LinksByPort(numbers) => {
                for (n, end) in numbers.iter().zip(ends) {
                    let answer = end.map_err(|e| {
                        ReadFailure::Unusable(format!("the master's LinkRecords of port {n}: {e}"))
                    })?;
                    match answer.status() {
                        MadStatus::OK => {}
                        MadStatus::ERR_NO_RECORDS => continue,
                        status => return Err(refused(&format!("LinkRecords of port {n}"), status)),
                    }
                    let found: Vec<LinkRecord> = answer.records::<LinkRecord>().copied().collect();
                    served.count(found.len(), LinkRecord::STRIDE);
                    self.read.records.links.extend(found);
                }
                Stage::Whole(Part::Lfts)
            }
        })
    }

    /// Every NodeRecord is in: the ports they show are what the parts
    /// are asked about one by one, if they must be.
    fn nodes_read(&mut self, nodes: Vec<NodeRecord>) -> Stage {
        self.endports = Endports::of(&nodes);
        self.read.records.nodes = nodes;
        Stage::Whole(Part::Ports)
    }

    /// What follows `part`.
    fn after(&self, part: Part) -> Stage {
        if part == Part::Links && !self.last_whole {
            return self.links_by_port_number();
        }
        match part.next(self.read.qos) {
            Some(next) => Stage::Whole(next),
            None => Stage::Done,
        }
    }

    /// The links of active switch ports that asking by LID did not find:
    /// OpenSM masks a LinkRecord query's LIDs with the subnet's LMC, so a
    /// switch at a LID that is not a multiple of 2^LMC is never found by
    /// its LID. Each such port number is asked alone (a GetTable of the
    /// links from every node's port of that number); the records of a
    /// cut answer that arrive whole count.
    fn links_by_port_number(&self) -> Stage {
        let r = &self.read.records;
        let linked: HashSet<(u16, u8)> = (r.links.iter())
            .flat_map(|l| [(l.from_lid(), l.from_port()), (l.to_lid(), l.to_port())])
            .collect();
        let mut numbers: Vec<u8> = (r.ports.iter())
            .filter(|p| p.port() != 0 && p.port_state() == 4)
            .filter(|p| !linked.contains(&(p.lid(), p.port())))
            .map(|p| p.port())
            .collect();
        numbers.sort_unstable();
        numbers.dedup();
        if numbers.is_empty() {
            return Stage::Whole(Part::Lfts);
        }
        Stage::LinksByPort(numbers)
    }

    /// The Gets of `part`, one per record the NodeRecords show.
    fn items(&self, part: Part) -> Vec<(u16, u16)> {
        let e = &self.endports;
        match part {
            Part::Ports => e.ports(true),
            Part::Links => e.ports(false),
            Part::Lfts => e.switch_blocks((e.max_lid / 64) as u8),
            Part::Pkeys | Part::Guids => e.endports(),
            Part::Sl2vl => e.sl2vl_pairs(),
        }
    }
}

/// The one end of a one-query batch.
fn only(ends: Vec<End>) -> Result<Answer, ReadFailure> {
    match ends.into_iter().next() {
        Some(Ok(answer)) => Ok(answer),
        Some(Err(failure)) => Err(ReadFailure::NoAnswer(failure)),
        None => Err(ReadFailure::Unusable(
            "no answer was given to the read".into(),
        )),
    }
}

/// Stores `records` in `into` if the whole table came; true if it did.
fn put<R>(into: &mut Vec<R>, records: Option<Vec<R>>) -> bool {
    match records {
        Some(all) => {
            *into = all;
            true
        }
        None => false,
    }
}

/// The Get of one record of `part`: the template and mask for `item`
/// (a LID and a port, a block, or an ingress and egress port pair).
fn item_request(part: Part, sm_key: u64, (lid, x): (u16, u16)) -> Bytes {
    let get = Method::GET;
    match part {
        Part::Ports => request::<PortInfoRecord>(get, sm_key, |t| {
            t.set_lid(lid);
            t.set_port(x as u8);
            pir::LID | pir::PORT
        }),
        Part::Links => request::<LinkRecord>(get, sm_key, |t| {
            t.set_from_lid(lid);
            t.set_from_port(x as u8);
            lr::FROM_LID | lr::FROM_PORT
        }),
        Part::Lfts => request::<LftRecord>(get, sm_key, |t| {
            t.set_lid(lid);
            t.set_block(x);
            lftr::LID | lftr::BLOCK
        }),
        Part::Pkeys => request::<PkeyTableRecord>(get, sm_key, |t| {
            t.set_lid(lid);
            t.set_port(x as u8);
            t.set_block(0);
            pkr::LID | pkr::PORT | pkr::BLOCK
        }),
        Part::Guids => request::<GuidInfoRecord>(get, sm_key, |t| {
            t.set_lid(lid);
            t.set_block(0);
            gir::LID | gir::BLOCK
        }),
        Part::Sl2vl => request::<Sl2VlTableRecord>(get, sm_key, |t| {
            t.set_lid(lid);
            t.set_in_port((x >> 8) as u8);
            t.set_out_port(x as u8);
            slr::LID | slr::IN_PORT | slr::OUT_PORT
        }),
    }
}

/// A request for records of type `R`: `method`, the template and mask
/// `fill` sets, and the SA key.
fn request<R: SaRecord + FromZeros>(
    method: Method,
    sm_key: u64,
    fill: impl FnOnce(&mut R) -> ComponentMask,
) -> Bytes {
    let mut t = R::new_zeroed();
    let mask = fill(&mut t);
    let mut b = SaMadBuilder::request(method, 0, R::ATTRIBUTE_ID).record(&t);
    b.header_mut().sa.set_component_mask(mask);
    b.header_mut().sa.set_sm_key(sm_key);
    b.into_bytes()
}

/// The GetTable of every record of type `R`.
fn whole<R: SaRecord + FromZeros>(sm_key: u64) -> Bytes {
    request::<R>(Method::GET_TABLE, sm_key, |_| ComponentMask::NONE)
}

/// The name of record type `R`, for messages.
fn name_of<R>() -> &'static str {
    std::any::type_name::<R>()
        .rsplit("::")
        .next()
        .unwrap_or("record")
}

/// Every record of type `R` (`what`, for messages) in a GetTable's
/// `answer`, or `None` if it came cut.
fn take_whole<R: SaRecord + Copy>(
    what: &str,
    answer: Answer,
    served: &mut Served,
) -> Result<Option<Vec<R>>, ReadFailure> {
    let status = answer.status();
    if status == MadStatus::ERR_NO_RECORDS {
        served.count(0, R::STRIDE);
        return Ok(Some(Vec::new()));
    }
    if status != MadStatus::OK {
        return Err(refused(what, status));
    }
    if answer.is_cut() {
        served.count(0, R::STRIDE);
        return Ok(None);
    }
    let offset = answer.header().sa.attribute_offset();
    let records = Records::<R>::new(answer.data(), offset)
        .map_err(|e| ReadFailure::Unusable(format!("the master's {what}: {e}")))?;
    if !records.remainder().is_empty() {
        return Err(ReadFailure::Unusable(format!(
            "the master's {what}: its answer ends in a record cut short ({} bytes of a {}-byte {})",
            records.remainder().len(),
            R::LEN,
            name_of::<R>()
        )));
    }
    let all: Vec<R> = records.copied().collect();
    served.count(all.len(), R::STRIDE);
    Ok(Some(all))
}

/// The record of one Get's `end`, if the master has it (`item` names it
/// in messages).
fn take_one<R: SaRecord + Copy>(
    end: End,
    item: impl Fn() -> String,
    served: &mut Served,
) -> Result<Option<R>, ReadFailure> {
    let what = name_of::<R>();
    let answer =
        end.map_err(|e| ReadFailure::Unusable(format!("the master's {what} of {}: {e}", item())))?;
    match answer.status() {
        MadStatus::OK => {}
        MadStatus::ERR_NO_RECORDS => {
            served.count(0, R::STRIDE);
            return Ok(None);
        }
        status => return Err(refused(&format!("{what} of {}", item()), status)),
    }
    let r = R::parse(answer.data())
        .map_err(|e| ReadFailure::Unusable(format!("the master's {what} of {}: {e}", item())))?;
    served.count(1, R::STRIDE);
    Ok(Some(*r))
}

fn refused(what: &str, status: MadStatus) -> ReadFailure {
    ReadFailure::Refused(format!(
        "the master answered {} ({}; status {:#06x}) to the query for its {what}",
        status.names(),
        status.describe(),
        status.0
    ))
}

/// What the NodeRecords say of each port, for asking per record.
#[derive(Debug, Default)]
struct Endports {
    /// (LID, is a switch, ports: NumPorts of a switch, the port number of
    /// an adapter's port).
    all: Vec<(u16, bool, u8)>,
    max_lid: u16,
}

impl Endports {
    fn of(nodes: &[NodeRecord]) -> Self {
        let mut all: Vec<(u16, bool, u8)> = (nodes.iter())
            .filter(|n| n.lid() != 0)
            .map(|n| {
                let switch = n.node_type() == NodeType::SWITCH;
                let ports = if switch {
                    n.num_ports()
                } else {
                    n.local_port_num()
                };
                (n.lid(), switch, ports)
            })
            .collect();
        all.sort_unstable();
        all.dedup();
        // Under an LMC, a port answers above its base LID too.
        let max_lid = (all.last()).map_or(0, |(l, ..)| l.saturating_add(127).min(MAX_UNICAST_LID));
        Self { all, max_lid }
    }

    /// Every port: adapters' own, switches' 0 (`with_port0`) to NumPorts.
    fn ports(&self, with_port0: bool) -> Vec<(u16, u16)> {
        (self.all.iter())
            .flat_map(|&(lid, switch, n)| {
                let range = if switch {
                    u8::from(!with_port0)..=n
                } else {
                    n..=n
                };
                range.map(move |p| (lid, u16::from(p)))
            })
            .collect()
    }

    /// Each endport: (LID, its port number: 0 on a switch).
    fn endports(&self) -> Vec<(u16, u16)> {
        (self.all.iter())
            .map(|&(lid, switch, n)| (lid, if switch { 0 } else { u16::from(n) }))
            .collect()
    }

    /// Each switch's blocks 0 to `last`.
    fn switch_blocks(&self, last: u8) -> Vec<(u16, u16)> {
        (self.all.iter())
            .filter(|(_, switch, _)| *switch)
            .flat_map(|&(lid, ..)| (0..=last).map(move |b| (lid, u16::from(b))))
            .collect()
    }

    /// Every SL to VL table: each switch's (ingress, egress) pairs, as
    /// `ingress << 8 | egress`; an adapter's one table.
    fn sl2vl_pairs(&self) -> Vec<(u16, u16)> {
        (self.all.iter())
            .flat_map(|&(lid, switch, n)| {
                let pairs: Vec<u16> = if switch {
                    (0..=n)
                        .flat_map(|i| (0..=n).map(move |o| u16::from(i) << 8 | u16::from(o)))
                        .collect()
                } else {
                    vec![0]
                };
                pairs.into_iter().map(move |p| (lid, p))
            })
            .collect()
    }
}

#[cfg(test)]
pub(super) mod tests {
    use bytes::BytesMut;
    use local_sa_core::path_engine::synthetic::FatTree;
    use mad_codec::header::SaMadHeader;
    use mad_codec::records::put_records;
    use mad_codec::zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};
    use mad_codec::{ClassPortInfoRepr, MAD_LEN};

    use super::*;

    /// A master that serves `records`: every table whole, or, with `cut`,
    /// each GetTable's answer cut to its first MAD (a transport without
    /// RMPP) while Gets by template find one record each.
    pub(crate) struct FakeMaster {
        pub(crate) records: FabricRecords,
        pub(crate) qos: bool,
        pub(crate) cut: bool,
        /// A record type the master refuses (ERR_REQ_DENIED).
        pub(crate) refuses: Option<AttributeId>,
        pub(crate) queries: usize,
    }

    impl FakeMaster {
        pub(crate) fn new(records: FabricRecords) -> Self {
            Self {
                records,
                qos: false,
                cut: false,
                refuses: None,
                queries: 0,
            }
        }

        pub(crate) fn answer(&mut self, request: &Bytes) -> End {
            self.queries += 1;
            let (h, data) = SaMadHeader::parse(request).unwrap();
            let mut h = *h;
            let attribute = h.mad.attribute_id();
            let get_table = h.mad.method() == Method::GET_TABLE;
            h.mad.set_method(h.mad.method().response());
            if self.refuses == Some(attribute) {
                h.mad.set_status(MadStatus::ERR_REQ_DENIED);
                return Ok(Answer::whole(Bytes::copy_from_slice(h.as_bytes())).unwrap());
            }
            if attribute == AttributeId::CLASS_PORT_INFO {
                let cpi = ClassPortInfoRepr {
                    capability_mask2: if self.qos { cap2::QOS_SUPPORTED } else { 0 },
                    ..ClassPortInfoRepr::default()
                }
                .to_wire();
                let mut mad = BytesMut::from(h.as_bytes());
                mad.extend_from_slice(cpi.as_bytes());
                return Ok(Answer::whole(mad.freeze()).unwrap());
            }
            let r = &self.records;
            let mut out = BytesMut::new();
            let (found, offset) = match attribute {
                AttributeId::NODE_RECORD => pick(&r.nodes, data, get_table, |t| t.lid(), &mut out),
                AttributeId::PORT_INFO_RECORD => {
                    pick(&r.ports, data, get_table, |t| (t.lid(), t.port()), &mut out)
                }
                AttributeId::LINK_RECORD => pick(
                    &r.links,
                    data,
                    get_table,
                    |t| (t.from_lid(), t.from_port()),
                    &mut out,
                ),
                AttributeId::LINEAR_FORWARDING_TABLE_RECORD => {
                    pick(&r.lfts, data, get_table, |t| (t.lid(), t.block()), &mut out)
                }
                AttributeId::PKEY_TABLE_RECORD => {
                    pick(&r.pkeys, data, get_table, |t| (t.lid(), t.port()), &mut out)
                }
                AttributeId::GUID_INFO_RECORD => pick(
                    &r.guids,
                    data,
                    get_table,
                    |t| (t.lid(), t.block()),
                    &mut out,
                ),
                AttributeId::SL_TO_VL_MAPPING_TABLE_RECORD => pick(
                    &r.sl2vl,
                    data,
                    get_table,
                    |t| (t.lid(), t.in_port(), t.out_port()),
                    &mut out,
                ),
                other => panic!("the reader asked for {other:?}"),
            };
            h.mad.set_status(if found == 0 {
                MadStatus::ERR_NO_RECORDS
            } else {
                MadStatus::OK
            });
            h.sa.set_attribute_offset(offset);
            let mut mad = BytesMut::from(h.as_bytes());
            mad.extend_from_slice(&out);
            let mad = mad.freeze();
            if get_table && self.cut && mad.len() > MAD_LEN {
                Ok(Answer::cut(mad, MAD_LEN).unwrap())
            } else {
                Ok(Answer::whole(mad).unwrap())
            }
        }
    }

    /// The records of `all` a query wants — every one for a GetTable, the
    /// one whose `key` equals the template's for a Get — into `out`; how
    /// many, and their AttributeOffset.
    fn pick<R, K: PartialEq>(
        all: &[R],
        template: &[u8],
        get_table: bool,
        key: impl Fn(&R) -> K,
        out: &mut BytesMut,
    ) -> (usize, u16)
    where
        R: SaRecord + FromBytes + IntoBytes + Immutable + KnownLayout + Copy,
    {
        let t = R::read_from_prefix(template).unwrap().0;
        let chosen: Vec<&R> = if get_table {
            all.iter().collect()
        } else {
            all.iter().filter(|r| key(r) == key(&t)).take(1).collect()
        };
        put_records(out, chosen.iter().copied());
        (chosen.len(), R::ATTRIBUTE_OFFSET)
    }

    fn tree() -> FabricRecords {
        let tree = FatTree {
            leaves: 2,
            hosts_per_leaf: 3,
            spines: 2,
            lmc: 0,
        };
        tree.records()
    }

    /// Reads the description from `master`, a batch at a time.
    fn read(master: &mut FakeMaster) -> Result<Description, ReadFailure> {
        let mut read = DescriptionRead::new(0, 1);
        while let Some(batch) = read.poll_batch() {
            let ends = batch.iter().map(|r| master.answer(r)).collect();
            read.handle_batch(ends)?;
        }
        Ok(read.finish())
    }

    /// The records of the description the engine looks at, each kind
    /// sorted (a walk finds them in another order).
    fn sorted(mut r: FabricRecords) -> FabricRecords {
        r.nodes.sort_by_key(|n| n.lid());
        r.ports.sort_by_key(|p| (p.lid(), p.port()));
        r.links.sort_by_key(|l| (l.from_lid(), l.from_port()));
        r.lfts.sort_by_key(|l| (l.lid(), l.block()));
        r.pkeys.sort_by_key(|p| (p.lid(), p.port()));
        r.guids.sort_by_key(|g| (g.lid(), g.block()));
        r.sl2vl
            .sort_by_key(|s| (s.lid(), s.in_port(), s.out_port()));
        r
    }

    #[test]
    fn whole_tables_give_the_master_s_description_in_seven_queries() {
        let mut master = FakeMaster::new(tree());
        let d = read(&mut master).unwrap();
        assert_eq!(d.records, tree());
        assert!(!d.cut && !d.qos);
        // ClassPortInfo, then one GetTable for each of six kinds (no SL
        // to VL tables without QoS).
        assert_eq!(master.queries, 7);
        assert_eq!(d.served.queries, 7);
        assert!(d.build().is_ok());
    }

    #[test]
    fn a_master_with_qos_is_asked_its_sl_to_vl_tables_too() {
        let mut master = FakeMaster {
            qos: true,
            ..FakeMaster::new(tree())
        };
        let d = read(&mut master).unwrap();
        assert!(d.qos);
        assert_eq!(master.queries, 8);
    }

    #[test]
    fn cut_answers_are_read_record_by_record_to_the_same_description() {
        let mut master = FakeMaster {
            cut: true,
            ..FakeMaster::new(tree())
        };
        let d = read(&mut master).unwrap();
        assert!(d.cut);
        assert_eq!(sorted(d.records.clone()), sorted(tree()));
        assert!(master.queries > 7 + tree().nodes.len(), "asked one by one");
        assert_eq!(d.served.queries, master.queries as u64);
    }

    #[test]
    fn a_refused_p_key_table_says_which_key_opensm_wants() {
        let mut master = FakeMaster {
            refuses: Some(AttributeId::PKEY_TABLE_RECORD),
            ..FakeMaster::new(tree())
        };
        let Err(ReadFailure::Refused(why)) = read(&mut master) else {
            panic!("a refusal");
        };
        assert!(
            why.contains("P_KeyTableRecords") && why.contains("--smkey"),
            "{why}"
        );
    }

    #[test]
    fn no_answer_to_a_table_is_told_as_such() {
        let mut read = DescriptionRead::new(0, 1);
        let batch = read.poll_batch().unwrap();
        assert_eq!(batch.len(), 1);
        let silence = Failure::Timeout {
            attempts: 3,
            per_attempt: std::time::Duration::from_secs(1),
            sm_key: 0,
        };
        let ended = read.handle_batch(vec![Err(silence)]);
        assert_eq!(ended, Err(ReadFailure::NoAnswer(silence)));
    }
}
