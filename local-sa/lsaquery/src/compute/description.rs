//! Reading the fabric's description from the master SA: every record type
//! the path engine computes from, each through one GetTable over RMPP as
//! the master gives it, or, where the transport cuts multi-MAD answers
//! (ibsim has no RMPP), one Get per record: per LID (walking upward until
//! 64 LIDs past the highest that answered), per port, per forwarding table
//! block.

use bytes::Bytes;
use local_sa_core::lid_walk::{DEFAULT_WALK_GAP, LidWalk};
use local_sa_core::path_engine::FabricRecords;
use local_sa_core::requester::{Answer, Failure as RequestFailure};
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
use umad::Address;

use local_sa_distributor::computed::Served;

use super::ask::each;
use crate::session::Session;
use crate::stop::Stop;

/// The description, and what reading it cost the master.
pub(crate) struct Description {
    pub(crate) records: FabricRecords,
    /// The master applies QoS (its ClassPortInfo says so).
    pub(crate) qos: bool,
    pub(crate) served: Served,
    /// Its multi-MAD answers came cut: records were asked one by one.
    pub(crate) cut: bool,
}

impl Description {
    /// The fabric it describes; a description that does not hold
    /// together fails with exit status 5, saying why.
    pub(crate) fn build(&self) -> Result<local_sa_core::path_engine::Fabric, Stop> {
        local_sa_core::path_engine::Fabric::build(&self.records, self.qos).map_err(|e| {
            Stop::new(
                5,
                format!("the fabric's description from the master does not hold together: {e}"),
            )
        })
    }

    /// The channel adapters' NodeRecords (a names table's).
    pub(crate) fn adapters(&self) -> Vec<NodeRecord> {
        self.records
            .nodes
            .iter()
            .filter(|n| n.node_type() == NodeType::CA)
            .copied()
            .collect()
    }
}

/// Reads the description from `master`, at most `window` queries in
/// flight. P_KeyTableRecords need the master's SA key (`--smkey`).
pub(crate) async fn read(
    session: &mut Session,
    master: Address,
    window: usize,
) -> Result<Description, Stop> {
    let mut r = Reader {
        session,
        master,
        window,
        served: Served::default(),
        cut: false,
        last_whole: true,
    };
    let qos = r.master_qos().await?;
    let nodes = r.nodes().await?;
    let endports = Endports::of(&nodes);
    let ports = r
        .part::<PortInfoRecord, u8>(
            "PortInfoRecords",
            ComponentMask::NONE,
            |t, (lid, port)| {
                t.set_lid(lid);
                t.set_port(port);
                pir::LID | pir::PORT
            },
            endports.ports(true),
        )
        .await?;
    let links = r
        .part::<LinkRecord, u8>(
            "LinkRecords",
            ComponentMask::NONE,
            |t, (lid, port)| {
                t.set_from_lid(lid);
                t.set_from_port(port);
                lr::FROM_LID | lr::FROM_PORT
            },
            endports.ports(false),
        )
        .await?;
    let links = if r.last_whole {
        links
    } else {
        r.links_by_port_number(links, &ports).await?
    };
    let blocks = (endports.max_lid / 64) as u8;
    let lfts = r
        .part::<LftRecord, u8>(
            "LFTRecords",
            ComponentMask::NONE,
            |t, (lid, block)| {
                t.set_lid(lid);
                t.set_block(u16::from(block));
                lftr::LID | lftr::BLOCK
            },
            endports.switch_blocks(blocks),
        )
        .await?;
    let pkeys = r
        .part::<PkeyTableRecord, u8>("P_KeyTableRecords", ComponentMask::NONE, |t, (lid, port)| {
            t.set_lid(lid);
            t.set_port(port);
            t.set_block(0);
            pkr::LID | pkr::PORT | pkr::BLOCK
        }, endports.endports())
        .await
        .map_err(|e| {
            Stop::new(
                e.code,
                format!(
                    "{} (OpenSM gives P_KeyTableRecords only for its SA key, `sa_key`: give it as --smkey)",
                    e.message
                ),
            )
        })?;
    let guids = r
        .part::<GuidInfoRecord, u8>(
            "GUIDInfoRecords",
            ComponentMask::NONE,
            |t, (lid, _)| {
                t.set_lid(lid);
                t.set_block(0);
                gir::LID | gir::BLOCK
            },
            endports.endports(),
        )
        .await?;
    let sl2vl = if qos {
        r.part::<Sl2VlTableRecord, u16>(
            "SL2VLTableRecords",
            ComponentMask::NONE,
            |t, (lid, ports)| {
                t.set_lid(lid);
                t.set_in_port((ports >> 8) as u8);
                t.set_out_port(ports as u8);
                slr::LID | slr::IN_PORT | slr::OUT_PORT
            },
            endports.sl2vl_pairs(),
        )
        .await?
    } else {
        Vec::new()
    };
    let (served, cut) = (r.served, r.cut);
    Ok(Description {
        records: FabricRecords {
            nodes,
            ports,
            links,
            lfts,
            pkeys,
            guids,
            sl2vl,
        },
        qos,
        served,
        cut,
    })
}

/// What the NodeRecords say of each port, for asking per record.
struct Endports {
    /// (LID, is a switch, ports: NumPorts of a switch, the port number of
    /// an adapter's port).
    all: Vec<(u16, bool, u8)>,
    max_lid: u16,
}

impl Endports {
    fn of(nodes: &[NodeRecord]) -> Self {
        let mut all: Vec<(u16, bool, u8)> = nodes
            .iter()
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
        let max_lid = all
            .last()
            .map_or(0, |(l, ..)| l.saturating_add(127).min(MAX_UNICAST_LID));
        Self { all, max_lid }
    }

    /// Every port: adapters' own, switches' 0 (`with_port0`) to NumPorts.
    fn ports(&self, with_port0: bool) -> Vec<(u16, u8)> {
        self.all
            .iter()
            .flat_map(|&(lid, switch, n)| {
                let range = if switch {
                    u8::from(!with_port0)..=n
                } else {
                    n..=n
                };
                range.map(move |p| (lid, p))
            })
            .collect()
    }

    /// Each endport: (LID, its port number: 0 on a switch).
    fn endports(&self) -> Vec<(u16, u8)> {
        self.all
            .iter()
            .map(|&(lid, switch, n)| (lid, if switch { 0 } else { n }))
            .collect()
    }

    /// Each switch's blocks 0 to `last`.
    fn switch_blocks(&self, last: u8) -> Vec<(u16, u8)> {
        self.all
            .iter()
            .filter(|(_, switch, _)| *switch)
            .flat_map(|&(lid, ..)| (0..=last).map(move |b| (lid, b)))
            .collect()
    }

    /// Every SL to VL table: each switch's (ingress, egress) pairs, as
    /// `ingress << 8 | egress`; an adapter's one table.
    fn sl2vl_pairs(&self) -> Vec<(u16, u16)> {
        self.all
            .iter()
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

struct Reader<'s> {
    session: &'s mut Session,
    master: Address,
    window: usize,
    served: Served,
    cut: bool,
    /// The last part read came whole.
    last_whole: bool,
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

/// The name of record type `R`, for messages.
fn name_of<R>() -> &'static str {
    std::any::type_name::<R>()
        .rsplit("::")
        .next()
        .unwrap_or("record")
}

impl Reader<'_> {
    async fn master_qos(&mut self) -> Result<bool, Stop> {
        let request =
            SaMadBuilder::request(Method::GET, 0, AttributeId::CLASS_PORT_INFO).into_bytes();
        let c = self.session.client.request(self.master, &request).await?;
        let answer = self.session.answer(c)?;
        let mad = self.session.ok(&answer)?;
        let cpi = ClassPortInfo::parse(mad.data())
            .map_err(|e| Stop::new(4, format!("the master's ClassPortInfo: {e}")))?;
        self.served.count(1, 72);
        Ok(cpi.capability_mask2() & cap2::QOS_SUPPORTED != 0)
    }

    /// Every NodeRecord: one GetTable, or a walk over the LIDs.
    async fn nodes(&mut self) -> Result<Vec<NodeRecord>, Stop> {
        if let Some(all) = self
            .whole::<NodeRecord>("NodeRecords", ComponentMask::NONE)
            .await?
        {
            return Ok(all);
        }
        let sm_key = self.session.sm_key;
        let mut records = Vec::new();
        let floor = self.session.port.lid.max(self.master.lid);
        let mut walk = LidWalk::new(floor, DEFAULT_WALK_GAP);
        loop {
            // Every LID the walk reaches as it stands, asked `window` at a
            // time; then the walk moves on past what answered.
            let lids: Vec<u16> = std::iter::from_fn(|| walk.next_lid(usize::MAX)).collect();
            if lids.is_empty() {
                return Ok(records);
            }
            let requests: Vec<Bytes> = lids
                .iter()
                .map(|l| {
                    request::<NodeRecord>(Method::GET, sm_key, |t| {
                        t.set_lid(*l);
                        nr::LID
                    })
                })
                .collect();
            let ends = each(self.session, self.master, self.window, &requests).await?;
            for (lid, end) in lids.iter().zip(ends) {
                let found = self.one::<NodeRecord>(end, || format!("LID {lid}"))?;
                walk.answered(*lid, found.is_some());
                records.extend(found);
            }
        }
    }

    /// Every record of type `R`: one GetTable with `mask` (an empty
    /// template), or, if its answer comes cut, one Get for each item of
    /// `items` (the template and mask `fill` sets for it).
    async fn part<R: SaRecord + FromZeros, T: Copy + std::fmt::Debug>(
        &mut self,
        what: &'static str,
        mask: ComponentMask,
        fill: impl Fn(&mut R, (u16, T)) -> ComponentMask,
        items: Vec<(u16, T)>,
    ) -> Result<Vec<R>, Stop> {
        if let Some(all) = self.whole::<R>(what, mask).await? {
            self.last_whole = true;
            return Ok(all);
        }
        self.last_whole = false;
        let sm_key = self.session.sm_key;
        let requests: Vec<Bytes> = items
            .iter()
            .map(|item| request::<R>(Method::GET, sm_key, |t| fill(t, *item)))
            .collect();
        let ends = each(self.session, self.master, self.window, &requests).await?;
        let mut records = Vec::new();
        for (item, end) in items.iter().zip(ends) {
            if let Some(r) = self.one::<R>(end, || format!("LID {} {:?}", item.0, item.1))? {
                records.push(r);
            }
        }
        Ok(records)
    }

    /// The links of active switch ports that asking by LID did not find:
    /// OpenSM masks a LinkRecord query's LIDs with the subnet's LMC, so a
    /// switch at a LID that is not a multiple of 2^LMC is never found by
    /// its LID. Each such port number is asked alone (a GetTable of the
    /// links from every node's port of that number); the records of a
    /// cut answer that arrive whole count.
    async fn links_by_port_number(
        &mut self,
        mut links: Vec<LinkRecord>,
        ports: &[PortInfoRecord],
    ) -> Result<Vec<LinkRecord>, Stop> {
        let linked: std::collections::HashSet<(u16, u8)> = links
            .iter()
            .flat_map(|l| [(l.from_lid(), l.from_port()), (l.to_lid(), l.to_port())])
            .collect();
        let mut numbers: Vec<u8> = ports
            .iter()
            .filter(|p| p.port() != 0 && p.port_state() == 4)
            .filter(|p| !linked.contains(&(p.lid(), p.port())))
            .map(|p| p.port())
            .collect();
        numbers.sort_unstable();
        numbers.dedup();
        let sm_key = self.session.sm_key;
        let requests: Vec<Bytes> = numbers
            .iter()
            .map(|n| {
                request::<LinkRecord>(Method::GET_TABLE, sm_key, |t| {
                    t.set_from_port(*n);
                    lr::FROM_PORT
                })
            })
            .collect();
        for (n, end) in numbers
            .iter()
            .zip(each(self.session, self.master, self.window, &requests).await?)
        {
            let answer = end
                .map_err(|e| Stop::new(4, format!("the master's LinkRecords of port {n}: {e}")))?;
            match answer.status() {
                MadStatus::OK => {}
                MadStatus::ERR_NO_RECORDS => continue,
                status => return Err(refused(&format!("LinkRecords of port {n}"), status)),
            }
            let found: Vec<LinkRecord> = answer.records::<LinkRecord>().copied().collect();
            self.served.count(found.len(), LinkRecord::STRIDE);
            links.extend(found);
        }
        Ok(links)
    }

    /// Every record of type `R` in one GetTable, or `None` if the answer
    /// came cut.
    async fn whole<R: SaRecord + FromZeros>(
        &mut self,
        what: &'static str,
        mask: ComponentMask,
    ) -> Result<Option<Vec<R>>, Stop> {
        let request = request::<R>(Method::GET_TABLE, self.session.sm_key, |_| mask);
        let c = self.session.client.request(self.master, &request).await?;
        let answer = self.session.answer(c)?;
        let status = answer.status();
        if status == MadStatus::ERR_NO_RECORDS {
            self.served.count(0, R::STRIDE);
            return Ok(Some(Vec::new()));
        }
        if status != MadStatus::OK {
            return Err(refused(what, status));
        }
        if answer.is_cut() {
            self.cut = true;
            self.served.count(0, R::STRIDE);
            return Ok(None);
        }
        let offset = answer.header().sa.attribute_offset();
        let records = Records::<R>::new(answer.data(), offset)
            .map_err(|e| Stop::new(4, format!("the master's {what}: {e}")))?;
        if !records.remainder().is_empty() {
            return Err(Stop::new(
                4,
                format!(
                    "the master's {what}: its answer ends in a record cut short ({} bytes of a {}-byte {})",
                    records.remainder().len(),
                    R::LEN,
                    name_of::<R>()
                ),
            ));
        }
        let all: Vec<R> = records.copied().collect();
        self.served.count(all.len(), R::STRIDE);
        Ok(Some(all))
    }

    /// The record of one Get's `end`, if the master has it (`item`
    /// names it in messages).
    fn one<R: SaRecord>(
        &mut self,
        end: Result<Answer, RequestFailure>,
        item: impl Fn() -> String,
    ) -> Result<Option<R>, Stop> {
        let what = name_of::<R>();
        let answer =
            end.map_err(|e| Stop::new(4, format!("the master's {what} of {}: {e}", item())))?;
        match answer.status() {
            MadStatus::OK => {}
            MadStatus::ERR_NO_RECORDS => {
                self.served.count(0, R::STRIDE);
                return Ok(None);
            }
            status => return Err(refused(&format!("{what} of {}", item()), status)),
        }
        let r = R::parse(answer.data())
            .map_err(|e| Stop::new(4, format!("the master's {what} of {}: {e}", item())))?;
        self.served.count(1, R::STRIDE);
        Ok(Some(*r))
    }
}

fn refused(what: &str, status: MadStatus) -> Stop {
    Stop::new(
        1,
        format!(
            "the master answered {} ({}; status {:#06x}) to the query for its {what}",
            status.names(),
            status.describe(),
            status.0
        ),
    )
}
