//! A fabric read, computed and checked: what `--distribute --compute`
//! needs to know of it, and which tables the check proved.

use std::time::Duration;

use local_sa_core::opensm_config::qos_policy::QueryKeys;
use local_sa_core::path_engine::{Fabric, FabricRecords, Table};
use mad_codec::{NodeRecord, PkeyTableRecord};

pub mod checked;
pub mod description;
pub mod explain;
pub mod fabric_read;
pub mod keys;
pub mod opensm_input;
pub mod sample_check;
mod served;
pub mod tables;
mod untrusted;

pub use self::checked::{Checked, Coverage, Mismatch, coverage_json, coverage_text};
pub use self::served::Served;
pub use self::tables::{NodeTables, compute_tables};
pub use self::untrusted::Untrusted;

/// A fabric read, computed and checked.
pub struct Prepared {
    /// The fabric built from the description, with what the master told.
    pub fabric: Fabric,
    /// OpenSM's configuration, if given: a fabric read again gets it too
    /// (read again after a sweep of the master).
    pub opensm: Option<std::sync::Arc<opensm_input::OpenSmInput>>,
    /// Why the configuration given is not the master's, if it is not:
    /// the fabric was computed without it (the partitions' SLs asked of
    /// the master), and the summaries say so.
    pub opensm_unfit: Option<String>,
    /// The QoS policy OpenSM drops at this fabric, and why (the fabric is
    /// computed without it, as OpenSM answers).
    pub policy_dropped: Option<String>,
    /// The description it was built from (a watch compares the next
    /// read with it).
    pub records: std::sync::Arc<FabricRecords>,
    /// The master applies QoS.
    pub qos: bool,
    /// The P_Key tables of the description.
    pub pkey_tables: Vec<PkeyTableRecord>,
    /// The channel adapters' NodeRecords of the description (a names
    /// table's).
    pub adapters: Vec<NodeRecord>,
    /// Reading the description cost the master this.
    pub description: Served,
    /// Its multi-MAD answers came cut.
    pub cut: bool,
    /// The ServiceIDs and QoS classes whose tables are computed too, with
    /// the master's QoS policy known ([`Prepared::at_keys`]).
    pub asked_keys: Vec<QueryKeys>,
    /// Partitions whose SL the master did not tell, and why.
    pub unknown_sls: Vec<(u16, String)>,
    /// The partition probes and the sample cost the master this.
    pub sample: Served,
    /// What the sample found.
    pub checked: Checked,
    /// How long reading the description took.
    pub read_time: Duration,
    /// How long the SLs and the sample took.
    pub check_time: Duration,
}

/// Why tables at keys are not computed on a master that applies QoS.
const NEEDS_POLICY: &str = "the engine computes tables at a ServiceID or QoS class only from the \
     master's QoS policy, which --opensm-config gives";

/// Why they need not be on a master without QoS.
const NO_QOS: &str = "the master applies no QoS: a ServiceID or QoS class changes no path, and \
     a node answers such a query from its partition tables";

impl Prepared {
    /// OpenSM's configuration the fabric was computed with: the one given,
    /// if it is the master's.
    pub fn config(&self) -> Option<&opensm_input::OpenSmInput> {
        self.opensm
            .as_deref()
            .filter(|_| self.opensm_unfit.is_none())
    }

    /// OpenSM's configuration in a few words, and whether it was used.
    pub fn describe_config(&self) -> Option<String> {
        let input = self.opensm.as_ref()?;
        Some(match (&self.opensm_unfit, &self.policy_dropped) {
            (Some(why), _) => format!(
                "{}; not used: not the master's ({why}): computed without it, the partitions' SLs \
                 asked of the master",
                input.describe()
            ),
            (None, Some(why)) => format!("{}; its QoS policy dropped ({why})", input.describe()),
            (None, None) => input.describe(),
        })
    }

    /// Every port of the fabric, at its lowest LID.
    pub fn ports(&self) -> Vec<crate::fill::ports::FabricPort> {
        crate::fill::ports::Endpoints::from_endports(self.fabric.endports()).endpoints
    }

    /// The digest of each of `nodes`' tables computed from this fabric,
    /// for the nodes in it.
    pub fn digests<'g>(
        &self,
        nodes: impl IntoIterator<Item = &'g mad_codec::Gid>,
    ) -> std::collections::BTreeMap<mad_codec::Gid, u64> {
        let gids: std::collections::BTreeMap<u64, mad_codec::Gid> =
            nodes.into_iter().map(|g| (g.guid(), *g)).collect();
        let endports: Vec<_> = gids
            .keys()
            .filter_map(|g| self.fabric.endport(*g))
            .collect();
        compute_tables(&self.fabric, &endports, self.qos, self.at_keys(), false)
            .into_iter()
            .filter_map(|t| Some((*gids.get(&t.guid)?, t.fingerprint)))
            .collect()
    }

    /// The ServiceIDs and QoS classes whose tables are computed and
    /// checked: those asked, when the master's policy is known and it
    /// applies QoS (without QoS the nodes answer them from their tables).
    pub fn at_keys(&self) -> &[QueryKeys] {
        match self.config() {
            Some(_) if self.qos => &self.asked_keys,
            _ => &[],
        }
    }

    /// Why the tables at the ServiceIDs and QoS classes asked are not
    /// computed, if they were asked and are not.
    pub fn keys_not_computed_because(&self) -> Option<&'static str> {
        match (self.config(), self.qos) {
            _ if self.asked_keys.is_empty() => None,
            (_, false) => Some(NO_QOS),
            (None, true) => Some(NEEDS_POLICY),
            (Some(_), true) => None,
        }
    }

    /// Whether `table`'s tables may be computed and sent: every sampled
    /// pair of its kind equal, and (a partition's) its SL known; a table
    /// at a ServiceID or QoS class only with the master's policy known and
    /// its kind drawn. A difference in a default-table pair distrusts
    /// every table (the default tables carry every partition's paths), a
    /// difference in a partition's its tables at keys too.
    pub fn trusted(&self, table: Table) -> Result<(), Untrusted> {
        let differs = |table: Table| match self
            .checked
            .mismatches
            .iter()
            .find(|m| m.pair.table == table)
        {
            Some(m) => Err(Untrusted::Differs(Box::new(m.clone()))),
            None => Ok(()),
        };
        if let Some(config) = self.config()
            && let Some(engine) = config.options.sl_engine()
        {
            return Err(Untrusted::SlEngine {
                engine: engine.to_owned(),
                config: config.path.clone(),
            });
        }
        differs(Table::Default)?;
        if let Some((_, why)) = self.checked.uncomputable.first() {
            return Err(Untrusted::Uncomputable(why.clone()));
        }
        let Some(p) = table.pkey().map(|p| p & 0x7FFF) else {
            return Ok(());
        };
        if let Some((_, why)) = self.unknown_sls.iter().find(|(u, _)| *u == p) {
            return Err(Untrusted::UnknownSl {
                pkey: p,
                why: why.clone(),
            });
        }
        differs(Table::partition(p))?;
        if let Table::AtKey { .. } = table {
            if self.config().is_none() {
                return Err(Untrusted::NoPolicy(table));
            }
            if !self.checked.drawn.iter().any(|(t, _)| *t == table) {
                return Err(Untrusted::NotDrawn(table));
            }
            differs(table)?;
        }
        Ok(())
    }

    /// Why a table the nodes are sent would not be computed but taken
    /// from the master: the first kind of table of the fabric (the default
    /// ones, a partition's, one at a key) the check did not prove; `None`
    /// if it proved them all.
    pub fn unproven(&self) -> Option<Untrusted> {
        let partitions = self.unknown_sls.iter().map(|(p, _)| Table::partition(*p));
        let differing = self.checked.mismatches.iter().map(|m| m.pair.table);
        let at_keys = self.checked.drawn.iter().map(|(t, _)| *t);
        std::iter::once(Table::Default)
            .chain(partitions)
            .chain(differing)
            .chain(at_keys)
            .find_map(|t| self.trusted(t).err())
    }
}
