//! Reading a fabric to compute from, without I/O: the description
//! ([`DescriptionRead`]), the fabric built from it, and what the master
//! does not publish — from OpenSM's own files (`--opensm-config`) when
//! they are the master's configuration, else each partition's SL asked of
//! the master, from one path in it ([`SlProbes`]).
//!
//! Read again (a watch's event, [`FabricRead::again`]), what was learnt
//! before is kept, so that an event costs the master description records,
//! not paths: the same records and the same configuration end the read
//! there; the partitions' SLs and the PacketLifeTime learnt stay, and only
//! a partition new since then is probed. After a sweep of the master
//! (and whenever the description changed: the master swept), OpenSM's
//! files are read again too, as OpenSM reads them at every heavy sweep: a
//! policy or partitions file edited, or an option OpenSM takes while it
//! runs, is a change like a reroute, and what it was is said.
//!
//! A configuration that is not the master's — its QoS bit, or a port group
//! it names, does not fit the fabric read — is said in the log, and the
//! fabric is computed without it: the check then proves what the master's
//! answers are, or the tables come from the master.
//!
//! [`FabricRead`] says which queries to send a batch at a time and takes
//! their ends in the same order, as the description's read does; a driver
//! sends them (lsaquery's session, the watch driver's `ask`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use local_sa_core::opensm_config::qos_policy::QueryKeys;
use local_sa_core::path_engine::{DescriptionError, FabricRecords};

use super::description::{Description, DescriptionRead, ReadFailure};
use super::opensm_input::{self, ConfigError, OpenSmInput};
use super::sample_check::{End, SlProbes};
use super::{Checked, Prepared, Served};

/// Why a fabric could not be read.
#[derive(Debug)]
pub enum FabricReadFailure {
    /// The description's read failed.
    Read(ReadFailure),
    /// The description does not hold together (read mid-sweep, or wrong).
    NotTogether(DescriptionError),
    /// OpenSM's files given cannot be read, or OpenSM would refuse them,
    /// or they ask for what the engine does not follow: the command line
    /// was wrong.
    ConfigRefused(String),
}

impl std::fmt::Display for FabricReadFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Read(e) => e.fmt(f),
            Self::NotTogether(e) => write!(
                f,
                "the fabric's description from the master does not hold together: {e}"
            ),
            Self::ConfigRefused(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for FabricReadFailure {}

/// What a read found.
pub enum FabricReadEnd {
    /// Read again: the same records as before, and the same configuration
    /// of OpenSM's; reading them cost the master this.
    Unchanged(Served),
    /// The fabric as it is now (not yet checked: what the checks before
    /// found stays, unless OpenSM's files changed), and what changed in
    /// OpenSM's files, a line each.
    Read(Box<Prepared>, Vec<String>),
}

/// What a fabric read again keeps of the one before.
struct Before {
    /// The description it was built from, compared with the new one.
    records: Arc<FabricRecords>,
    qos: bool,
    /// Each partition's SL as the master told it.
    sls: Vec<(u16, u8)>,
    /// The PacketLifeTime the first read learnt.
    subnet_timeout: u8,
    /// What its checks found (kept while OpenSM's files are unchanged).
    checked: Checked,
    /// Read OpenSM's files again even if the description is the same.
    files_too: bool,
}

/// Where a read stands.
enum Stage {
    Describing(Box<DescriptionRead>),
    Probing(Box<Probing>),
    Done(FabricReadEnd),
    /// Failed, or its end taken.
    Over,
}

/// The fabric built, its partitions' SLs asked of the master.
struct Probing {
    prepared: Prepared,
    probes: SlProbes,
    /// Read again without OpenSM's files: the partitions new since the
    /// read before (the only ones probed), and the PacketLifeTime it
    /// learnt (which stays).
    again: Option<(Vec<u16>, u8)>,
    /// What changed in OpenSM's files, a line each.
    changes: Vec<String>,
    /// When the description's read ended (the probes' time counts from
    /// then).
    read_at: Instant,
}

/// One read of a fabric from the master: a step machine whose queries a
/// driver sends, a batch at a time.
pub struct FabricRead {
    stage: Stage,
    /// The master's LID (OpenSM's files name it as the SM).
    master_lid: u16,
    opensm: Option<Arc<OpenSmInput>>,
    asked_keys: Vec<QueryKeys>,
    before: Option<Before>,
    started: Instant,
}

impl FabricRead {
    /// A first read from the master at `master_lid`, its queries carrying
    /// `sm_key`, a walk over the LIDs going at least past `floor`;
    /// configured by OpenSM's files `opensm` if given, with tables at
    /// `asked_keys` to compute.
    pub fn first(
        now: Instant,
        (sm_key, floor, master_lid): (u64, u16, u16),
        opensm: Option<Arc<OpenSmInput>>,
        asked_keys: Vec<QueryKeys>,
    ) -> Self {
        Self {
            stage: Stage::Describing(Box::new(DescriptionRead::new(sm_key, floor))),
            master_lid,
            opensm,
            asked_keys,
            before: None,
            started: now,
        }
    }

    /// `previous`'s fabric read again; after a sweep of the master
    /// (`files_too`), OpenSM's files too.
    pub fn again(
        now: Instant,
        (sm_key, floor, master_lid): (u64, u16, u16),
        previous: &Prepared,
        files_too: bool,
    ) -> Self {
        let fabric = &previous.fabric;
        let sls = (fabric.partitions().into_iter())
            .filter_map(|p| Some((p, fabric.partition_sl(p)?)))
            .collect();
        let checked = Checked {
            mismatches: previous.checked.mismatches.clone(),
            uncomputable: previous.checked.uncomputable.clone(),
            drawn: previous.checked.drawn.clone(),
            ..Checked::default()
        };
        let before = Before {
            records: previous.records.clone(),
            qos: previous.qos,
            sls,
            subnet_timeout: fabric.subnet_timeout(),
            checked,
            files_too,
        };
        Self {
            before: Some(before),
            ..Self::first(
                now,
                (sm_key, floor, master_lid),
                previous.opensm.clone(),
                previous.asked_keys.clone(),
            )
        }
    }

    /// The next batch of queries, or `None` when the read is over. Each
    /// batch's ends go to [`Self::handle_batch`] before the next is asked
    /// for.
    pub fn poll_batch(&mut self) -> Option<Vec<Bytes>> {
        match &mut self.stage {
            Stage::Describing(read) => read.poll_batch(),
            Stage::Probing(p) => Some(p.probes.requests(&p.prepared.fabric)),
            Stage::Done(_) | Stage::Over => None,
        }
    }

    /// The ends of the last batch, in order.
    pub fn handle_batch(&mut self, now: Instant, ends: Vec<End>) -> Result<(), FabricReadFailure> {
        let stage = std::mem::replace(&mut self.stage, Stage::Over);
        self.stage = match stage {
            Stage::Describing(mut read) => {
                read.handle_batch(ends).map_err(FabricReadFailure::Read)?;
                if !read.is_done() {
                    Stage::Describing(read)
                } else {
                    self.described(now, read.finish())?
                }
            }
            Stage::Probing(p) => Stage::Done(probed(now, *p, ends)),
            other => other,
        };
        Ok(())
    }

    /// What the read found, once [`Self::poll_batch`] says it is over;
    /// `None` if it failed or its end was taken.
    pub fn finish(&mut self) -> Option<FabricReadEnd> {
        match std::mem::replace(&mut self.stage, Stage::Over) {
            Stage::Done(end) => Some(end),
            _ => None,
        }
    }

    /// The description read at `now`: unchanged, or the fabric built from
    /// it and configured, or its partitions to probe.
    fn described(&mut self, now: Instant, read: Description) -> Result<Stage, FabricReadFailure> {
        let same = self
            .before
            .as_ref()
            .is_some_and(|b| *b.records == read.records && b.qos == read.qos);
        let mut changes = Vec::new();
        if let (Some(before), Some(input)) = (&self.before, &self.opensm)
            && (before.files_too || !same)
        {
            let (taken, changed) = files_again(input);
            self.opensm = taken;
            changes = changed;
        }
        if same && changes.is_empty() {
            return Ok(Stage::Done(FabricReadEnd::Unchanged(read.served)));
        }
        let mut fabric = read.build().map_err(FabricReadFailure::NotTogether)?;
        let mut unfit = None;
        let mut policy_dropped = None;
        let mut again = None;
        let configured = match &self.opensm {
            Some(input) => {
                match input.apply(&mut fabric, &read.records, read.qos, self.master_lid) {
                    Ok(dropped) => {
                        policy_dropped = dropped;
                        true
                    }
                    Err(ConfigError::DoesNotFit(why)) => {
                        tracing::warn!(
                            "OpenSM's configuration is not the master's: {why}; the tables are computed \
                             without it (the partitions' SLs asked of the master), and the check says \
                             what else differs"
                        );
                        unfit = Some(why);
                        false
                    }
                    Err(ConfigError::Refused(why)) => {
                        return Err(FabricReadFailure::ConfigRefused(why));
                    }
                }
            }
            None => match &self.before {
                None => false,
                Some(before) => {
                    // The SLs learnt stay; a partition new since then is
                    // probed, alone (and the PacketLifeTime learnt first
                    // stays what it was).
                    fabric.set_subnet_timeout(before.subnet_timeout);
                    for &(p, sl) in &before.sls {
                        fabric.set_partition_sl(p, sl);
                    }
                    let new: Vec<u16> = (fabric.partitions().into_iter())
                        .filter(|p| fabric.partition_sl(*p).is_none())
                        .collect();
                    let none_new = new.is_empty();
                    again = Some((new, before.subnet_timeout));
                    none_new
                }
            },
        };
        // What the checks before found stays found — a table the master
        // gave because the engine could not prove it is not computed now
        // for want of a sampled pair in it — unless OpenSM's files changed:
        // the check says anew what differs.
        let checked = match &mut self.before {
            Some(before) if changes.is_empty() => std::mem::take(&mut before.checked),
            _ => Checked::default(),
        };
        let prepared = Prepared {
            opensm: self.opensm.clone(),
            opensm_unfit: unfit,
            policy_dropped,
            asked_keys: self.asked_keys.clone(),
            qos: read.qos,
            adapters: read.adapters(),
            pkey_tables: read.records.pkeys.clone(),
            records: Arc::new(read.records),
            description: read.served,
            cut: read.cut,
            unknown_sls: Vec::new(),
            sample: Served::default(),
            checked,
            read_time: now.saturating_duration_since(self.started),
            check_time: Duration::ZERO,
            fabric,
        };
        if configured {
            return Ok(Stage::Done(FabricReadEnd::Read(
                Box::new(prepared),
                changes,
            )));
        }
        let probes = match &again {
            Some((new, _)) => SlProbes::of(&prepared.fabric, new.iter().copied()),
            None => SlProbes::new(&prepared.fabric),
        };
        Ok(Stage::Probing(Box::new(Probing {
            prepared,
            probes,
            again,
            changes,
            read_at: now,
        })))
    }
}

/// The partitions' probes answered at `now`: the fabric with their SLs.
fn probed(now: Instant, p: Probing, ends: Vec<End>) -> FabricReadEnd {
    let Probing {
        mut prepared,
        probes,
        again,
        changes,
        read_at,
    } = p;
    prepared.unknown_sls = probes.learn(&mut prepared.fabric, ends, &mut prepared.sample);
    if let Some((_, timeout)) = again {
        prepared.fabric.set_subnet_timeout(timeout);
    }
    prepared.check_time = now.saturating_duration_since(read_at);
    FabricReadEnd::Read(Box::new(prepared), changes)
}

/// OpenSM's files read again: the configuration OpenSM takes now, and
/// what changed. A file that cannot be read, or asks for what the engine
/// does not follow, keeps the configuration as it was (the check says
/// whether the master agrees), and is said.
fn files_again(input: &Arc<OpenSmInput>) -> (Option<Arc<OpenSmInput>>, Vec<String>) {
    match input.reread() {
        Ok(opensm_input::Reread::Same) => (Some(input.clone()), Vec::new()),
        Ok(opensm_input::Reread::Changed(now, changes)) => {
            for c in &changes {
                tracing::info!("OpenSM's configuration changed: {c}");
            }
            (Some(Arc::from(now)), changes)
        }
        Err(e) => {
            tracing::warn!(
                "OpenSM's files read again: {}; the configuration read before stands (the check \
                 says whether the master agrees)",
                e.message()
            );
            (Some(input.clone()), Vec::new())
        }
    }
}

#[cfg(test)]
mod tests {
    use local_sa_core::path_engine::synthetic::{FatTree, NodeId};
    use local_sa_core::path_engine::{Fabric, PairCheck, Table};
    use mad_codec::header::SaMadHeader;
    use mad_codec::{AttributeId, MadStatus};

    use super::super::{description, sample_check};
    use super::*;

    /// A small fat tree's records, its first leaf's link to the first
    /// spine unplugged if `rerouted`.
    fn records(rerouted: bool) -> FabricRecords {
        tree().slow_first_spine(rerouted).records()
    }

    fn tree() -> FatTree {
        FatTree {
            leaves: 2,
            hosts_per_leaf: 3,
            spines: 2,
            lmc: 0,
        }
    }

    /// [`records`]`(true)`, its first host of each leaf in partition
    /// 0x0001 too.
    fn rerouted_with_a_partition() -> FabricRecords {
        let mut spec = tree().slow_first_spine(true);
        // Nodes come spines, leaves, then hosts.
        for host in [4, 7] {
            spec.pkeys(NodeId(host), &[0xFFFF, 0x8001]);
        }
        spec.records()
    }

    /// A master serving a fabric: its description, and its paths (every
    /// partition on SL 0).
    struct Master {
        description: description::tests::FakeMaster,
        paths: sample_check::tests::FakeMaster,
    }

    impl Master {
        fn new(records: FabricRecords) -> Self {
            let mut fabric = Fabric::build(&records, false).unwrap();
            for p in fabric.partitions() {
                fabric.set_partition_sl(p, 0);
            }
            Self {
                description: description::tests::FakeMaster::new(records),
                paths: sample_check::tests::FakeMaster::new(fabric),
            }
        }

        fn answer(&mut self, request: &Bytes) -> End {
            let (h, _) = SaMadHeader::parse(request).unwrap();
            if h.mad.attribute_id() == AttributeId::PATH_RECORD {
                self.paths.answer(request)
            } else {
                self.description.answer(request)
            }
        }

        /// The queries answered: of the description, of paths.
        fn queries(&self) -> (usize, usize) {
            (self.description.queries, self.paths.queries)
        }
    }

    /// Carries `read` out against `master`, a batch at a time.
    fn run(mut read: FabricRead, master: &mut Master) -> Result<FabricReadEnd, FabricReadFailure> {
        let now = Instant::now();
        while let Some(batch) = read.poll_batch() {
            let ends = batch.iter().map(|r| master.answer(r)).collect();
            read.handle_batch(now, ends)?;
        }
        Ok(read.finish().expect("an end"))
    }

    fn first(master: &mut Master) -> Prepared {
        let read = FabricRead::first(Instant::now(), (0, 1, 1), None, Vec::new());
        match run(read, master).unwrap() {
            FabricReadEnd::Read(prepared, changes) => {
                assert!(changes.is_empty());
                *prepared
            }
            FabricReadEnd::Unchanged(_) => panic!("a first read found its fabric"),
        }
    }

    fn again(previous: &Prepared, master: &mut Master) -> FabricReadEnd {
        let read = FabricRead::again(Instant::now(), (0, 1, 1), previous, false);
        run(read, master).unwrap()
    }

    #[test]
    fn a_first_read_learns_each_partition_s_sl_from_the_master() {
        let mut master = Master::new(records(false));
        let prepared = first(&mut master);
        let partitions = prepared.fabric.partitions();
        assert!(!partitions.is_empty());
        for p in &partitions {
            assert_eq!(prepared.fabric.partition_sl(*p), Some(0), "{p:#06x}");
        }
        assert!(
            prepared.unknown_sls.is_empty(),
            "{:?}",
            prepared.unknown_sls
        );
        // ClassPortInfo and six GetTables; one probe a partition.
        assert_eq!(master.queries(), (7, partitions.len()));
        assert_eq!(prepared.sample.queries, partitions.len() as u64);
        assert_eq!(prepared.description.queries, 7);
    }

    #[test]
    fn the_same_description_again_ends_the_read_and_probes_nothing() {
        let mut master = Master::new(records(false));
        let previous = first(&mut master);
        let before = master.queries();
        let FabricReadEnd::Unchanged(served) = again(&previous, &mut master) else {
            panic!("the same fabric read again is unchanged");
        };
        assert_eq!(served.queries, 7);
        assert_eq!(master.queries(), (before.0 + 7, before.1), "no probe");
    }

    #[test]
    fn a_reroute_keeps_the_sls_and_the_checks_found_and_probes_nothing() {
        let mut master = Master::new(records(false));
        let mut previous = first(&mut master);
        let pair = PairCheck {
            source: 1,
            dest: 2,
            table: Table::Default,
        };
        previous.checked.uncomputable = vec![(pair, "no route".into())];
        let mut rerouted = Master::new(records(true));
        let FabricReadEnd::Read(new, changes) = again(&previous, &mut rerouted) else {
            panic!("a reroute changes the fabric");
        };
        assert!(changes.is_empty());
        assert_ne!(*new.records, *previous.records);
        assert_eq!(
            rerouted.queries(),
            (7, 0),
            "nothing but the description asked"
        );
        for p in new.fabric.partitions() {
            assert_eq!(new.fabric.partition_sl(p), Some(0));
        }
        assert_eq!(
            new.checked.uncomputable.len(),
            1,
            "what the check found stays"
        );
        assert_eq!(
            new.fabric.subnet_timeout(),
            previous.fabric.subnet_timeout()
        );
    }

    #[test]
    fn a_partition_the_master_did_not_tell_is_asked_again_after_a_change() {
        let mut master = Master::new(records(false));
        let fabric = Fabric::build(&records(false), false).unwrap();
        let probe = fabric.partition_probe(0x7FFF).unwrap();
        master.paths.refused = Some((probe.source, MadStatus::ERR_REQ_INVALID));
        let previous = first(&mut master);
        assert_eq!(previous.fabric.partition_sl(0x7FFF), None);
        assert!(
            previous.unknown_sls.iter().any(|(p, _)| *p == 0x7FFF),
            "{:?}",
            previous.unknown_sls
        );
        let mut rerouted = Master::new(records(true));
        let FabricReadEnd::Read(new, _) = again(&previous, &mut rerouted) else {
            panic!("a reroute changes the fabric");
        };
        assert_eq!(rerouted.queries().1, 1, "the partition probed");
        assert_eq!(new.fabric.partition_sl(0x7FFF), Some(0));
        assert!(new.unknown_sls.is_empty(), "{:?}", new.unknown_sls);
    }

    #[test]
    fn a_new_partition_is_probed_alone_and_the_others_keep_their_sls() {
        let mut master = Master::new(records(false));
        let previous = first(&mut master);
        assert_eq!(previous.fabric.partitions(), [0x7FFF]);
        // The master's answer for the old partition would now differ:
        // kept, it is not asked.
        let mut with_new = Master::new(rerouted_with_a_partition());
        with_new.paths.fabric.set_partition_sl(0x7FFF, 5);
        let FabricReadEnd::Read(new, _) = again(&previous, &mut with_new) else {
            panic!("a new partition changes the fabric");
        };
        assert_eq!(new.fabric.partitions(), [0x0001, 0x7FFF]);
        assert_eq!(
            with_new.queries(),
            (7, 1),
            "the new partition's probe alone"
        );
        assert_eq!(new.fabric.partition_sl(0x0001), Some(0));
        assert_eq!(new.fabric.partition_sl(0x7FFF), Some(0), "kept");
        assert!(new.unknown_sls.is_empty(), "{:?}", new.unknown_sls);
    }

    #[test]
    fn a_refused_description_ends_the_read_with_why() {
        let mut master = Master::new(records(false));
        master.description = description::tests::FakeMaster {
            refuses: Some(AttributeId::LINK_RECORD),
            ..description::tests::FakeMaster::new(records(false))
        };
        let read = FabricRead::first(Instant::now(), (0, 1, 1), None, Vec::new());
        let Err(FabricReadFailure::Read(ReadFailure::Refused(why))) = run(read, &mut master) else {
            panic!("a refusal ends the read");
        };
        assert!(why.contains("LinkRecord"), "{why}");
    }
}
