//! Asking the master what the engine cannot see, and checking what it
//! computed against the master's own answers — without I/O: each run
//! says which queries to send, a batch at a time, and takes their
//! answers (or failures) in the same order.
//!
//! * [`SlProbes`]: one Get per partition, for a pair that shares it
//!   ([`Fabric::partition_probe`]), whose SL the engine then uses.
//! * [`SampleCheck`]: for each pair, the master's records of the pair —
//!   one GetTable naming both GIDs (and the P_Key) where its answers come
//!   whole, compared record for record; or, where they come cut, one Get
//!   per LID pair naming both LIDs too, compared but for Preference (a
//!   query naming both LIDs always gets Preference 0). Whether answers
//!   come whole is learnt from the first pair, whose records may fit one
//!   MAD where later pairs' do not (LMC ranges): a GetTable answer that
//!   comes cut is never compared, its pair is asked again by LID pairs.
//!   A pair whose answer differs from the computed one is asked once
//!   more: answered otherwise then, the master's answers vary from ask to
//!   ask (DFSSSP draws a path's SL at random), and the difference is told
//!   as that ([`Mismatch::varies`]).
//!
//! What a check compares the master's answers with is a
//! [`ComputedPaths`]: the path engine's [`Fabric`] in lsaquery, a model of
//! one in the storm simulator, through the same check.

use std::ops::Range;

use bytes::Bytes;
use local_sa_core::path_engine::{Fabric, PairCheck, Table, compare_pair};
use local_sa_core::requester::{Answer, Failure};
use mad_codec::attr::path_record::mask as pr;
use mad_codec::zerocopy::FromZeros;
use mad_codec::{AttributeId, Gid, MadStatus, Method, PathRecord, SaMadBuilder, SaRecord as _};

use crate::computed::keys::key_of;
use crate::computed::{Checked, Mismatch, Served};

/// What the master did with one query: its answer, or why none came.
pub type End = Result<Answer, Failure>;

/// What a check compares the master's answers with: where each port is
/// (its GID, its LIDs) and each pair's computed records.
pub trait ComputedPaths {
    /// Why a pair's records could not be computed.
    type Error: std::fmt::Display;

    /// The GID of the port `guid` names (prefix 0 if none does).
    fn gid(&self, guid: u64) -> Gid;

    /// The LIDs of the port `guid` names (none if no port does).
    fn lids(&self, guid: u64) -> Range<u16>;

    /// The records from `source` to `dest` in `table`, into `out`.
    fn pair(
        &self,
        source: u64,
        dest: u64,
        table: Table,
        out: &mut Vec<PathRecord>,
    ) -> Result<(), Self::Error>;
}

impl ComputedPaths for Fabric {
    type Error = local_sa_core::path_engine::TableError;

    fn gid(&self, guid: u64) -> Gid {
        Gid::new(self.endport(guid).map_or(0, |e| e.prefix), guid)
    }

    fn lids(&self, guid: u64) -> Range<u16> {
        self.endport(guid).map_or(0..0, |e| e.lids())
    }

    fn pair(
        &self,
        source: u64,
        dest: u64,
        table: Table,
        out: &mut Vec<PathRecord>,
    ) -> Result<(), Self::Error> {
        // The engine's own (inherent) `pair`, not this trait's.
        Self::pair(self, source, dest, table, out)
    }
}

/// A PathRecord query of `method` for `pair`, naming `lids` too if given.
fn query(
    paths: &impl ComputedPaths,
    method: Method,
    pair: &PairCheck,
    lids: Option<(u16, u16)>,
) -> Bytes {
    let mut t = PathRecord::new_zeroed();
    t.set_sgid(paths.gid(pair.source));
    t.set_dgid(paths.gid(pair.dest));
    let mut mask = pr::SGID | pr::DGID;
    if let Some((s, d)) = lids {
        t.set_slid(s);
        t.set_dlid(d);
        mask |= pr::SLID | pr::DLID;
    }
    mask |= key_of(pair.table).apply(&mut t);
    let mut b = SaMadBuilder::request(method, 0, AttributeId::PATH_RECORD).record(&t);
    b.header_mut().sa.set_component_mask(mask);
    b.into_bytes()
}

/// Why a check ended before every pair was compared: an end that is not
/// an answer about paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckEnded {
    /// The master did not answer a pair's query.
    NoAnswer(Failure),
    /// The master answered a pair's query with an error status.
    Refused {
        /// The status.
        status: MadStatus,
        /// The pair's source and destination port GUIDs.
        pair: (u64, u64),
    },
}

impl std::fmt::Display for CheckEnded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NoAnswer(e) => write!(f, "no answer from the master ({e})"),
            Self::Refused { status, pair } => write!(
                f,
                "the master answered {} to {:#018x} -> {:#018x}",
                status.names(),
                pair.0,
                pair.1
            ),
        }
    }
}

impl std::error::Error for CheckEnded {}

/// The records of an answer: none for NO_RECORDS; why not for any other
/// end.
fn records(end: End, pair: &PairCheck) -> Result<Vec<PathRecord>, CheckEnded> {
    let answer = end.map_err(CheckEnded::NoAnswer)?;
    match answer.status() {
        MadStatus::OK => Ok(answer.records::<PathRecord>().copied().collect()),
        MadStatus::ERR_NO_RECORDS => Ok(Vec::new()),
        status => Err(CheckEnded::Refused {
            status,
            pair: (pair.source, pair.dest),
        }),
    }
}

/// Learning the SL of every partition, and the PacketLifeTime of a path
/// between two ports (OpenSM's `subnet_timeout`, which ports that ignore
/// the SM's PortInfo Set do not show), from one Get per partition.
pub struct SlProbes {
    probes: Vec<(u16, PairCheck)>,
    /// Partitions whose SL is not known, and why.
    unknown: Vec<(u16, String)>,
}

impl SlProbes {
    /// The probes of `fabric`'s partitions: those no two ports share with
    /// a path between them are unknown from the start.
    pub fn new(fabric: &Fabric) -> Self {
        Self::of(fabric, fabric.partitions())
    }

    /// The probes of `partitions` of `fabric`'s, as [`Self::new`].
    pub fn of(fabric: &Fabric, partitions: impl IntoIterator<Item = u16>) -> Self {
        let mut probes = Vec::new();
        let mut unknown = Vec::new();
        for p in partitions {
            match fabric.partition_probe(p) {
                Some(probe) => probes.push((p, probe)),
                None => unknown.push((p, "no two ports share it with a path between them".into())),
            }
        }
        Self { probes, unknown }
    }

    /// The queries to send, one per probe.
    pub fn requests(&self, fabric: &Fabric) -> Vec<Bytes> {
        (self.probes.iter())
            .map(|(_, probe)| query(fabric, Method::GET, probe, None))
            .collect()
    }

    /// Takes the master's ends of [`Self::requests`], in order, into
    /// `fabric`; counts what they carried in `served`. Returns the
    /// partitions whose SL could not be learnt, and why.
    pub fn learn(
        self,
        fabric: &mut Fabric,
        ends: Vec<End>,
        served: &mut Served,
    ) -> Vec<(u16, String)> {
        let mut unknown = self.unknown;
        for ((p, probe), end) in self.probes.iter().zip(ends) {
            match records(end, probe) {
                Ok(r) => {
                    served.count(r.len(), PathRecord::STRIDE);
                    match r.first() {
                        Some(r) => {
                            fabric.set_partition_sl(*p, r.sl());
                            if probe.source != probe.dest {
                                fabric.set_subnet_timeout(r.packet_life());
                            }
                        }
                        None => {
                            unknown.push((*p, "the master has no path in it for the probe".into()))
                        }
                    }
                }
                Err(why) => unknown.push((*p, why.to_string())),
            }
        }
        unknown
    }
}

/// A pair to ask about (its index in the pairs checked), and the LID pair
/// to name if any (else the whole port pair, in one GetTable).
type Ask = (usize, Option<(u16, u16)>);

/// Where a check stands.
enum Stage {
    /// Whether the master's multi-MAD answers come whole: one pair asked.
    Probe,
    /// Every pair asked, whole or by LID pairs.
    Pairs,
    /// The pairs whose whole-table answer came cut, asked by LID pairs.
    Again(Vec<usize>),
    /// The pairs that differed, asked once more.
    Recheck,
    /// Over.
    Done,
}

/// Comparing the computed records of a sample of pairs with the master's.
pub struct SampleCheck {
    pairs: Vec<PairCheck>,
    stage: Stage,
    /// The master's answers come whole (learnt from the probe).
    whole: bool,
    /// The batch asked, awaiting its ends.
    asked: Vec<Ask>,
    /// Pairs that differed, to ask once more: what was asked, the
    /// master's records then, and the difference.
    suspects: Vec<(Ask, Vec<PathRecord>, Mismatch)>,
    checked: Checked,
    served: Served,
}

impl SampleCheck {
    /// A check of `pairs`.
    pub fn new(pairs: Vec<PairCheck>) -> Self {
        let mut checked = Checked {
            pairs: pairs.len(),
            ..Checked::default()
        };
        for p in &pairs {
            checked.count_drawn(p.table, 1);
        }
        let stage = if pairs.is_empty() {
            Stage::Done
        } else {
            Stage::Probe
        };
        Self {
            pairs,
            stage,
            whole: true,
            asked: Vec::new(),
            suspects: Vec::new(),
            checked,
            served: Served::default(),
        }
    }

    /// The next batch of queries to send (all of them may be out at once),
    /// or `None` when the check is over. Each batch's ends go to
    /// [`Self::handle_batch`] before the next is asked for.
    pub fn poll_batch(&mut self, fabric: &impl ComputedPaths) -> Option<Vec<Bytes>> {
        self.asked = match &self.stage {
            Stage::Done => return None,
            Stage::Probe => vec![(0, None)],
            Stage::Pairs if self.whole => (0..self.pairs.len()).map(|i| (i, None)).collect(),
            Stage::Pairs => (0..self.pairs.len())
                .flat_map(|i| self.lid_pairs(fabric, i))
                .collect(),
            Stage::Again(cut) => cut
                .iter()
                .flat_map(|&i| self.lid_pairs(fabric, i))
                .collect(),
            Stage::Recheck => self.suspects.iter().map(|(ask, _, _)| *ask).collect(),
        };
        let requests = (self.asked.iter())
            .map(|&(i, lids)| {
                let method = if lids.is_some() {
                    Method::GET
                } else {
                    Method::GET_TABLE
                };
                query(fabric, method, &self.pairs[i], lids)
            })
            .collect();
        Some(requests)
    }

    /// The ends of the last batch, in order. An end that is not an answer
    /// about paths (no answer, an error status) ends the check: why.
    pub fn handle_batch(
        &mut self,
        fabric: &impl ComputedPaths,
        ends: Vec<End>,
    ) -> Result<(), CheckEnded> {
        let asked = std::mem::take(&mut self.asked);
        match std::mem::replace(&mut self.stage, Stage::Done) {
            Stage::Done => {}
            Stage::Probe => {
                let first = ends.into_iter().next();
                self.whole = !matches!(&first, Some(Ok(a)) if a.is_cut());
                if let Some(Ok(a)) = &first {
                    (self.served).count(a.records::<PathRecord>().count(), PathRecord::STRIDE);
                }
                self.stage = Stage::Pairs;
            }
            Stage::Pairs => {
                let cut = self.compare(fabric, &asked, ends)?;
                if !cut.is_empty() {
                    // A pair whose records did not fit one MAD, on a
                    // transport that cuts multi-MAD answers (the first
                    // pair's fitted), is asked again LID pair by LID pair:
                    // what was cut is not the master's answer.
                    self.stage = Stage::Again(cut);
                } else if !self.suspects.is_empty() {
                    self.stage = Stage::Recheck;
                }
            }
            Stage::Again(_) => {
                self.compare(fabric, &asked, ends)?;
                if !self.suspects.is_empty() {
                    self.stage = Stage::Recheck;
                }
            }
            Stage::Recheck => self.recheck(ends)?,
        }
        Ok(())
    }

    /// The master's second answers to the pairs that differed: one unlike
    /// its first says its answers vary.
    fn recheck(&mut self, ends: Vec<End>) -> Result<(), CheckEnded> {
        for ((_, first, mut mismatch), end) in
            std::mem::take(&mut self.suspects).into_iter().zip(ends)
        {
            let again = records(end, &mismatch.pair)?;
            self.served.count(again.len(), PathRecord::STRIDE);
            mismatch.varies = compare_pair(&first, &again).is_some();
            self.checked.mismatches.push(mismatch);
        }
        Ok(())
    }

    /// What the check found, and what it cost the master.
    pub fn finish(self) -> (Checked, Served) {
        (self.checked, self.served)
    }

    /// The Gets of pair `i`, one per LID pair of its ports.
    fn lid_pairs(&self, fabric: &impl ComputedPaths, i: usize) -> Vec<Ask> {
        let pair = &self.pairs[i];
        let dlids = fabric.lids(pair.dest);
        (fabric.lids(pair.source))
            .flat_map(|slid| dlids.clone().map(move |dlid| (i, Some((slid, dlid)))))
            .collect()
    }

    /// Compares each answer to `asked` with the computed records; returns
    /// the pairs whose whole-table answer came cut, not compared.
    fn compare(
        &mut self,
        fabric: &impl ComputedPaths,
        asked: &[Ask],
        ends: Vec<End>,
    ) -> Result<Vec<usize>, CheckEnded> {
        let mut cut = Vec::new();
        let mut ours = Vec::new();
        for (&(i, lids), end) in asked.iter().zip(ends) {
            let pair = self.pairs[i];
            if let Ok(a) = &end
                && lids.is_none()
                && a.is_cut()
            {
                (self.served).count(a.records::<PathRecord>().count(), PathRecord::STRIDE);
                cut.push(i);
                continue;
            }
            let theirs = records(end, &pair)?;
            self.served.count(theirs.len(), PathRecord::STRIDE);
            self.checked.records += theirs.len();
            ours.clear();
            if let Err(e) = fabric.pair(pair.source, pair.dest, pair.table, &mut ours) {
                self.checked.uncomputable.push((pair, e.to_string()));
                continue;
            }
            if let Some((s, d)) = lids {
                // A query naming both LIDs: that LID pair's record, with
                // the Preference such a query gets.
                ours.retain(|r| (r.slid(), r.dlid()) == (s, d));
                ours.iter_mut().for_each(|r| r.set_preference(0));
            }
            if let Some(difference) = compare_pair(&ours, &theirs) {
                let shown = lids.unwrap_or_else(|| {
                    let r = theirs.first().or(ours.first());
                    r.map_or((0, 0), |r| (r.slid(), r.dlid()))
                });
                let mismatch = Mismatch {
                    pair,
                    lids: shown,
                    difference,
                    varies: false,
                };
                self.suspects.push(((i, lids), theirs, mismatch));
            }
        }
        Ok(cut)
    }
}

#[cfg(test)]
pub(super) mod tests {
    use bytes::BytesMut;
    use local_sa_core::path_engine::Table;
    use local_sa_core::path_engine::synthetic::FatTree;
    use mad_codec::header::SaMadHeader;
    use mad_codec::zerocopy::{FromBytes, IntoBytes};
    use mad_codec::{ComponentMask, MAD_LEN};

    use super::*;

    /// A small fat tree's fabric (two LIDs a port), its first leaf's link
    /// to the slow first spine unplugged if `rerouted`.
    fn fabric(rerouted: bool) -> Fabric {
        let tree = FatTree {
            leaves: 2,
            hosts_per_leaf: 3,
            spines: 2,
            lmc: 1,
        };
        let mut f = Fabric::build(&tree.slow_first_spine(rerouted).records(), false).unwrap();
        f.set_partition_sl(0x7FFF, 0);
        f
    }

    /// A master that answers from its own fabric: a GetTable of more
    /// than `cut_over` records, or of `cut_from`'s pairs, comes cut to
    /// its first MAD (a transport without RMPP); a query for `refused`'s
    /// pairs gets that status.
    pub(crate) struct FakeMaster {
        pub(crate) fabric: Fabric,
        cut_over: usize,
        cut_from: Option<u64>,
        pub(crate) refused: Option<(u64, MadStatus)>,
        /// Each answer's SL drawn anew (as DFSSSP draws it).
        draws_sls: bool,
        pub(crate) queries: usize,
    }

    impl FakeMaster {
        pub(crate) fn new(fabric: Fabric) -> Self {
            Self {
                fabric,
                cut_over: usize::MAX,
                cut_from: None,
                refused: None,
                draws_sls: false,
                queries: 0,
            }
        }

        pub(crate) fn answer(&mut self, request: &Bytes) -> End {
            self.queries += 1;
            let (h, data) = SaMadHeader::parse(request).unwrap();
            let t = PathRecord::read_from_prefix(data).unwrap().0;
            let mask: ComponentMask = h.sa.component_mask();
            let (source, dest) = (t.sgid().guid(), t.dgid().guid());
            let table = if mask.contains(pr::PKEY) {
                Table::partition(t.pkey())
            } else {
                Table::Default
            };
            let mut records = Vec::new();
            self.fabric.pair(source, dest, table, &mut records).unwrap();
            if mask.contains(pr::SLID) {
                records.retain(|r| (r.slid(), r.dlid()) == (t.slid(), t.dlid()));
                records.iter_mut().for_each(|r| r.set_preference(0));
            }
            if self.draws_sls {
                let sl = 1 + (self.queries % 5) as u8;
                records.iter_mut().for_each(|r| r.set_sl(sl));
            }
            let mut h = *h;
            h.mad.set_method(h.mad.method().response());
            let status = match self.refused {
                Some((guid, status)) if guid == source => status,
                _ => MadStatus::OK,
            };
            h.mad.set_status(status);
            h.sa.set_attribute_offset(PathRecord::ATTRIBUTE_OFFSET);
            let mut mad = BytesMut::from(h.as_bytes());
            for r in &records {
                mad.extend_from_slice(r.as_bytes());
            }
            let mad = mad.freeze();
            let cut = records.len() > self.cut_over || self.cut_from == Some(source);
            if h.mad.method() == Method::GET_TABLE_RESP && cut {
                Ok(Answer::cut(mad, MAD_LEN).unwrap())
            } else {
                Ok(Answer::whole(mad).unwrap())
            }
        }
    }

    /// Checks `pairs` of `ours` against `master`, a batch at a time.
    fn run(
        ours: &Fabric,
        pairs: &[PairCheck],
        master: &mut FakeMaster,
    ) -> Result<(Checked, Served), CheckEnded> {
        let mut check = SampleCheck::new(pairs.to_vec());
        while let Some(batch) = check.poll_batch(ours) {
            let ends = batch.iter().map(|r| master.answer(r)).collect();
            check.handle_batch(ours, ends)?;
        }
        Ok(check.finish())
    }

    fn hosts(fabric: &Fabric) -> Vec<u64> {
        (fabric.endports().iter())
            .filter(|e| !e.is_switch)
            .map(|e| e.guid)
            .collect()
    }

    /// Every host pair's default table.
    fn every_pair(fabric: &Fabric) -> Vec<PairCheck> {
        let hosts = hosts(fabric);
        let each = |&source: &u64| {
            (hosts.iter()).map(move |&dest| PairCheck {
                source,
                dest,
                table: Table::Default,
            })
        };
        hosts.iter().flat_map(each).collect()
    }

    #[test]
    fn the_same_fabric_agrees_pair_by_pair_in_one_gettable_each() {
        let ours = fabric(false);
        let pairs = every_pair(&ours);
        let mut master = FakeMaster::new(fabric(false));
        let (checked, served) = run(&ours, &pairs, &mut master).unwrap();
        assert!(checked.mismatches.is_empty(), "{:?}", checked.mismatches);
        assert!(checked.uncomputable.is_empty());
        assert_eq!(checked.pairs, pairs.len());
        // Two LIDs a port: four records a pair.
        assert_eq!(checked.records, pairs.len() * 4);
        // The probe, then one GetTable a pair.
        assert_eq!(master.queries, 1 + pairs.len());
        assert_eq!(served.queries, master.queries as u64);
    }

    #[test]
    fn a_master_that_rerouted_differs_where_the_routes_moved() {
        let ours = fabric(false);
        let pairs = every_pair(&ours);
        let mut master = FakeMaster::new(fabric(true));
        let (checked, _) = run(&ours, &pairs, &mut master).unwrap();
        assert!(
            !checked.mismatches.is_empty(),
            "the unplugged link moved routes"
        );
        assert!(
            checked.mismatches.len() < pairs.len(),
            "pairs whose routes did not cross it agree"
        );
    }

    #[test]
    fn a_pair_that_differs_is_asked_once_more_and_a_master_whose_answers_vary_is_told_as_such() {
        let ours = fabric(false);
        let pairs = every_pair(&ours);
        // A reroute: the master answers each pair the same way twice.
        let mut master = FakeMaster::new(fabric(true));
        let (checked, _) = run(&ours, &pairs, &mut master).unwrap();
        let differ = checked.mismatches.len();
        assert!(differ > 0 && checked.varying() == 0);
        assert_eq!(
            master.queries,
            1 + pairs.len() + differ,
            "each asked once more"
        );
        // SLs drawn at each ask: every pair differs, and varies.
        let mut master = FakeMaster::new(fabric(false));
        master.draws_sls = true;
        let (checked, _) = run(&ours, &pairs, &mut master).unwrap();
        assert_eq!(checked.mismatches.len(), pairs.len());
        assert_eq!(checked.varying(), pairs.len());
        let why = crate::computed::explain::why(&checked.mismatches[0]);
        assert!(why.contains("vary from ask to ask"), "{why}");
    }

    #[test]
    fn cut_answers_are_asked_again_lid_pair_by_lid_pair() {
        let ours = fabric(false);
        let pairs = every_pair(&ours);
        let mut master = FakeMaster {
            cut_over: 0,
            ..FakeMaster::new(fabric(false))
        };
        let (checked, _) = run(&ours, &pairs, &mut master).unwrap();
        assert!(checked.mismatches.is_empty(), "{:?}", checked.mismatches);
        assert_eq!(checked.records, pairs.len() * 4);
        // The probe came cut: each pair's four LID pairs, one Get each.
        assert_eq!(master.queries, 1 + pairs.len() * 4);
    }

    #[test]
    fn a_pair_cut_after_a_whole_probe_is_asked_again_by_lid_pairs() {
        let ours = fabric(false);
        let pairs = every_pair(&ours);
        // The probe (the first pair) comes whole; one other source's
        // pairs come cut.
        let cut_from = pairs
            .iter()
            .find(|p| p.source != pairs[0].source)
            .unwrap()
            .source;
        let cut_pairs = pairs.iter().filter(|p| p.source == cut_from).count();
        let mut master = FakeMaster {
            cut_from: Some(cut_from),
            ..FakeMaster::new(fabric(false))
        };
        let (checked, _) = run(&ours, &pairs, &mut master).unwrap();
        assert!(checked.mismatches.is_empty());
        assert_eq!(checked.records, pairs.len() * 4);
        assert_eq!(master.queries, 1 + pairs.len() + cut_pairs * 4);
    }

    #[test]
    fn an_error_from_the_master_ends_the_check_naming_the_pair() {
        let ours = fabric(false);
        let pairs = every_pair(&ours);
        let source = pairs[1].source;
        let mut master = FakeMaster {
            refused: Some((source, MadStatus::ERR_REQ_INVALID)),
            ..FakeMaster::new(fabric(false))
        };
        let why = run(&ours, &pairs, &mut master).unwrap_err();
        assert!(
            matches!(why, CheckEnded::Refused { status: MadStatus::ERR_REQ_INVALID, pair } if pair.0 == source),
            "{why:?}"
        );
        assert!(
            why.to_string().contains(&format!("{source:#018x}")),
            "{why}"
        );
    }

    #[test]
    fn probes_learn_each_partition_s_sl_from_the_master() {
        let mut ours = fabric(false);
        let master_fabric = fabric(false);
        let probes = SlProbes::new(&ours);
        let requests = probes.requests(&ours);
        assert_eq!(requests.len(), ours.partitions().len());
        let mut master = FakeMaster::new(master_fabric);
        let ends = requests.iter().map(|r| master.answer(r)).collect();
        let mut served = Served::default();
        let unknown = probes.learn(&mut ours, ends, &mut served);
        assert!(unknown.is_empty(), "{unknown:?}");
        assert_eq!(ours.partition_sl(0x7FFF), Some(0));
        assert_eq!(served.queries, requests.len() as u64);
    }

    #[test]
    fn nothing_to_check_asks_nothing() {
        let ours = fabric(false);
        let mut check = SampleCheck::new(Vec::new());
        assert!(check.poll_batch(&ours).is_none());
        assert_eq!(check.finish().0.pairs, 0);
    }
}
