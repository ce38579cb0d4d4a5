//! What `--compute` says: the fabric, what reading and checking cost the
//! master beside what fetching every table would have, and, for each
//! difference found, which field and what can make it differ.

use std::time::Duration;

use serde_json::json;

use local_sa_distributor::computed::explain::{VARIES, cause, why};
use local_sa_distributor::computed::tables::{Counts, NodeTables};
use local_sa_distributor::computed::{Prepared, Served, coverage_json, coverage_text};

use crate::stop::Stop;

/// Differences described in full, at most.
const SHOWN: usize = 10;

/// The numbers of a run.
pub(super) struct ComputeReport<'a> {
    prepared: &'a Prepared,
    tables: Counts,
    records: Counts,
    failed: Vec<String>,
    compute_time: Duration,
}

impl<'a> ComputeReport<'a> {
    pub(super) fn new(
        prepared: &'a Prepared,
        computed: &[NodeTables],
        compute_time: Duration,
    ) -> Self {
        let mut failed = Vec::new();
        let mut tables = Counts::default();
        let mut records = Counts::default();
        for t in computed {
            records += t.records;
            match &t.default {
                Ok(_) => tables.default += 1,
                Err(e) => failed.push(format!("LID {}: {e}", t.lid)),
            }
            for (p, r) in &t.partitions {
                match r {
                    Ok(_) => tables.partitions += 1,
                    Err(e) => failed.push(format!("LID {} partition {p:#06x}: {e}", t.lid)),
                }
            }
            for (table, r) in &t.at_keys {
                match r {
                    Ok(_) => tables.at_keys += 1,
                    Err(e) => failed.push(format!("LID {} table {table}: {e}", t.lid)),
                }
            }
        }
        Self {
            prepared,
            tables,
            records,
            failed,
            compute_time,
        }
    }

    fn paths_per_second(&self) -> f64 {
        let all = self.records.all() as f64;
        all / self.compute_time.as_secs_f64().max(1e-9)
    }

    /// Prints the report, as text or one JSON object.
    pub(super) fn print(&self, as_json: bool, master: u16) -> Result<(), Stop> {
        if as_json {
            return outln!("{}", self.json(master));
        }
        let p = self.prepared;
        let f = &p.fabric;
        let switches = f.switch_count();
        let adapters = f.endports().len() - switches;
        let d = p.description;
        outln!(
            "fabric: {adapters} adapter ports, {switches} switches, {} GUIDs as destinations; QoS {}",
            f.alias_count(),
            if p.qos { "on" } else { "off" }
        )?;
        outln!(
            "description: {} records ({} bytes) from the master SA at LID {master} in {} queries, {:.3} s{}",
            d.records,
            d.bytes,
            d.queries,
            p.read_time.as_secs_f64(),
            if p.cut {
                " (its multi-MAD answers arrive cut: asked record by record)"
            } else {
                ""
            }
        )?;
        let sls: Vec<String> = f
            .partitions()
            .into_iter()
            .map(|q| match f.partition_sl(q) {
                Some(sl) => format!("{q:#06x} SL {sl}"),
                None => format!("{q:#06x} SL unknown"),
            })
            .collect();
        outln!(
            "partitions: {}; PacketLifeTime {} (the master's subnet_timeout)",
            sls.join(", "),
            f.subnet_timeout()
        )?;
        for (q, why) in &p.unknown_sls {
            outln!("  partition {q:#06x}: SL not known: {why}")?;
        }
        if let Some(config) = p.describe_config() {
            outln!("OpenSM's configuration: {config}")?;
        }
        outln!(
            "computed: {} default tables ({} PathRecords) and {} partition tables ({} PathRecords){} in {:.3} s, {:.1} M paths/s",
            self.tables.default,
            self.records.default,
            self.tables.partitions,
            self.records.partitions,
            match self.tables.at_keys {
                0 => String::new(),
                n => format!(
                    ", {n} tables at ServiceIDs or QoS classes ({} PathRecords)",
                    self.records.at_keys
                ),
            },
            self.compute_time.as_secs_f64(),
            self.paths_per_second() / 1e6
        )?;
        if let Some(why) = p.keys_not_computed_because() {
            outln!("  tables at ServiceIDs and QoS classes not computed: {why}")?;
        }
        for why in self.failed.iter().take(SHOWN) {
            outln!("  not computed: {why}")?;
        }
        let (faults, count) = f.route_faults();
        if count > 0 {
            outln!(
                "  {count} ways through the forwarding tables lead nowhere: the pairs that take them get no path, \
                 as at the master (each is in the check)"
            )?;
            for fault in faults.iter().take(SHOWN) {
                outln!("    {fault}")?;
            }
        }
        let c = &p.checked;
        outln!(
            "check: {} pairs, {} of the master's PathRecords compared in {:.3} s: {}",
            c.pairs,
            c.records,
            p.check_time.as_secs_f64(),
            if c.mismatches.is_empty() && c.uncomputable.is_empty() {
                "all equal".to_owned()
            } else if c.varying() > 0 {
                format!(
                    "{} differ ({} of them the master answers otherwise each time it is asked: its \
                     answers vary, equality is not defined there), {} not computed",
                    c.mismatches.len(),
                    c.varying(),
                    c.uncomputable.len()
                )
            } else {
                format!(
                    "{} differ, {} not computed",
                    c.mismatches.len(),
                    c.uncomputable.len()
                )
            }
        )?;
        outln!("  drawn from: {}", coverage_text(&c.coverage()))?;
        for m in c.mismatches.iter().take(SHOWN) {
            outln!("  {}", why(m))?;
        }
        for (pair, e) in c.uncomputable.iter().take(SHOWN) {
            outln!(
                "  {:#018x} -> {:#018x}: not computed: {e}",
                pair.source,
                pair.dest
            )?;
        }
        let s = p.sample;
        let all = self.records.all() as u64;
        outln!(
            "master SA: {} records ({} bytes) for the description and {} ({} bytes) for SLs and the check; \
             fetching every table would have cost it {all} PathRecords ({} bytes) in {} tables",
            d.records,
            d.bytes,
            s.records,
            s.bytes,
            all * 64,
            self.tables.all()
        )
    }

    fn json(&self, master: u16) -> serde_json::Value {
        let p = self.prepared;
        let f = &p.fabric;
        let served =
            |s: Served| json!({"queries": s.queries, "records": s.records, "bytes": s.bytes});
        let all = self.records.all() as u64;
        json!({
            "master_lid": master,
            "qos": p.qos,
            "fabric": {
                "endports": f.endports().len(),
                "switches": f.switch_count(),
                "destinations": f.alias_count(),
            },
            "description": {
                "master": served(p.description),
                "cut": p.cut,
                "seconds": p.read_time.as_secs_f64(),
            },
            "packet_life": f.subnet_timeout(),
            "opensm_config": p.describe_config(),
            "partitions": f.partitions().into_iter().map(|q| json!({
                "pkey": format!("{q:#06x}"),
                "sl": f.partition_sl(q),
                "unknown_because": p.unknown_sls.iter().find(|(u, _)| *u == q).map(|(_, w)| w),
            })).collect::<Vec<_>>(),
            "computed": {
                "default_tables": self.tables.default,
                "default_records": self.records.default,
                "partition_tables": self.tables.partitions,
                "partition_records": self.records.partitions,
                "key_tables": self.tables.at_keys,
                "key_records": self.records.at_keys,
                "keys_not_computed_because": p.keys_not_computed_because(),
                "not_computed": self.failed,
                "ways_nowhere": f.route_faults().1,
                "ways_nowhere_named": f.route_faults().0.iter().map(ToString::to_string).collect::<Vec<_>>(),
                "seconds": self.compute_time.as_secs_f64(),
                "paths_per_second": self.paths_per_second(),
            },
            "check": {
                "pairs": p.checked.pairs,
                "master_records": p.checked.records,
                "master": served(p.sample),
                "seconds": p.check_time.as_secs_f64(),
                "differences": p.checked.mismatches.iter().map(|m| json!({
                    "source": format!("{:#018x}", m.pair.source),
                    "dest": format!("{:#018x}", m.pair.dest),
                    "slid": m.lids.0,
                    "dlid": m.lids.1,
                    "table": m.pair.table.to_string(),
                    "field": m.difference.field,
                    "computed": m.difference.ours,
                    "master": m.difference.theirs,
                    "cause": if m.varies { VARIES } else { cause(m.difference.field) },
                    "varies": m.varies,
                })).collect::<Vec<_>>(),
                "not_computed": p.checked.uncomputable.len(),
                "coverage": coverage_json(&p.checked.coverage()),
            },
            "without_compute": {"tables": self.tables.all(), "records": all, "bytes": all * 64},
        })
    }
}
