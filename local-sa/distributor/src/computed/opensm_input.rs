//! `--opensm-config FILE`: OpenSM's own configuration as an input of the
//! computation, for what its SA answers that it does not publish: the QoS
//! policy (`qos_policy_file`) and the partitions' names and SLs
//! (`partition_config_file`), read from the files `opensm.conf` names (a
//! relative name from the file's directory) or, where it names none, from
//! OpenSM's own defaults (`/etc/opensm/partitions.conf`,
//! `/etc/opensm/qos-policy.conf`; one that does not exist is none, as
//! OpenSM takes it). An option that changes answers in a way the engine
//! does not follow (`max_rate_enum`) is refused (exit status 2);
//! `enable_quirks` (Tavor's MTU), `allow_both_pkeys` and
//! `use_original_extended_sa_rates_only` (as OpenSM 3.3.23 applies it) it
//! follows.
//!
//! A QoS policy OpenSM refuses (its ERR AC03 or AC04: a line it cannot
//! parse, a rule naming a level that does not exist, no default level, an
//! IPoIB rule whose partition has fewer than two full members) is dropped
//! whole by OpenSM, which then runs with the partitions' SLs alone: so are
//! the computed tables, and the reason is kept to be said.
//!
//! OpenSM reads the policy and the partitions again at every heavy sweep,
//! and rescans `opensm.conf` when it is told to (SIGHUP) or a trap forces
//! the sweep, taking a new value only for the options it can change while
//! it runs (`qos`, `subnet_timeout`, `enable_quirks`, ...; not the file
//! names, `allow_both_pkeys` or `lmc`) and only where the file's value
//! changed: [`OpenSmInput::reread`] does the same and says what changed.
//!
//! Given, it is checked against the master too: the master must apply
//! QoS exactly when the file says `qos TRUE`, and a partition's SL that
//! the master shows must be the file's; else it is not the configuration
//! the master runs with, and nothing is computed from it.

use std::path::{Path, PathBuf};

use local_sa_core::opensm_config::{
    NO_RATE_LIMIT, NodeNameMap, OpenSmOptions, Partition, PartitionConfig, QosPolicy,
};
use local_sa_core::path_engine::{Fabric, FabricRecords, QosLevels, ResolveError};

/// OpenSM's partitions file when `opensm.conf` names none.
pub const DEFAULT_PARTITIONS_FILE: &str = "/etc/opensm/partitions.conf";

/// OpenSM's QoS policy file when `opensm.conf` names none.
pub const DEFAULT_POLICY_FILE: &str = "/etc/opensm/qos-policy.conf";

/// OpenSM's node name map when `opensm.conf` names none (its build's
/// default, used where it exists).
pub const DEFAULT_NODE_NAME_MAP: &str = "/etc/opensm/ib-node-name-map";

/// Why OpenSM's configuration is not used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigError {
    /// A file cannot be read, or OpenSM would refuse it, or it asks for
    /// what the engine does not follow: the command line was wrong.
    Refused(String),
    /// It is not the configuration the master runs with, or does not fit
    /// the fabric read.
    DoesNotFit(String),
}

impl ConfigError {
    /// What went wrong, in a sentence.
    pub fn message(&self) -> &str {
        match self {
            Self::Refused(m) | Self::DoesNotFit(m) => m,
        }
    }
}

/// OpenSM's configuration, read.
#[derive(Debug, Clone)]
pub struct OpenSmInput {
    /// The `opensm.conf` given.
    pub path: PathBuf,
    /// Its options, as OpenSM holds them.
    pub options: OpenSmOptions,
    /// The partition file it names (or OpenSM's default), read, if it
    /// exists.
    pub partitions: Option<(PathBuf, PartitionConfig)>,
    /// The QoS policy file it names (or OpenSM's default), read, if
    /// OpenSM applies QoS and takes it.
    pub policy: Option<(PathBuf, QosPolicy)>,
    /// The policy file OpenSM drops whole, and why (it then runs without
    /// a policy).
    pub policy_dropped: Option<String>,
    /// The node name map OpenSM knows nodes by (its `port-name`s look
    /// them up by it), if it reads one.
    pub node_names: Option<(PathBuf, NodeNameMap)>,
    /// `opensm.conf`'s own values as last read: a rescan takes an option
    /// whose value in the file changed.
    file_options: OpenSmOptions,
}

/// What a second read of OpenSM's files found.
#[derive(Debug)]
pub enum Reread {
    /// Nothing OpenSM would take differs.
    Same,
    /// The configuration OpenSM takes now, and what changed, a line each.
    Changed(Box<OpenSmInput>, Vec<String>),
}

/// How a file is read: its text, `None` if it does not exist.
type ReadFile<'a> = &'a dyn Fn(&Path) -> std::io::Result<Option<String>>;

/// Reads a file from the file system.
fn from_disk(p: &Path) -> std::io::Result<Option<String>> {
    match std::fs::read_to_string(p) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

impl OpenSmInput {
    /// Reads `path` and the files it names.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        Self::load_with(path, &from_disk)
    }

    /// Reads `path` and the files it names with `read`.
    pub fn load_with(path: &Path, read: ReadFile<'_>) -> Result<Self, ConfigError> {
        let text = read_named(read, path, "--opensm-config")?.ok_or_else(|| {
            ConfigError::Refused(format!("--opensm-config: {}: no such file", path.display()))
        })?;
        let options = OpenSmOptions::parse(&text);
        for (line, why) in &options.ignored {
            tracing::warn!("{}, line {line}: OpenSM ignores it: {why}", path.display());
        }
        Self::with_options(path, options.clone(), options, read)
    }

    /// Reads OpenSM's files again, as OpenSM does at a heavy sweep: the
    /// options it can change while it runs, where the file's value
    /// changed; the partitions and the policy whole.
    pub fn reread(&self) -> Result<Reread, ConfigError> {
        self.reread_with(&from_disk)
    }

    /// [`OpenSmInput::reread`] with `read`.
    pub fn reread_with(&self, read: ReadFile<'_>) -> Result<Reread, ConfigError> {
        let text = read_named(read, &self.path, "--opensm-config")?;
        // OpenSM keeps what it has when the file is gone.
        let file_options =
            text.map_or_else(|| self.file_options.clone(), |t| OpenSmOptions::parse(&t));
        let options = self.options.rescanned(&self.file_options, &file_options);
        let mut again = Self::with_options(&self.path, options, file_options, read)?;
        // OpenSM opens its node name map when it starts, never again.
        again.node_names = self.node_names.clone();
        // A change OpenSM does not take (a comment, an option it reads
        // only when it starts, a partition's members: the master's P_Key
        // tables tell those) is none.
        let changes = changes(self, &again);
        Ok(if changes.is_empty() {
            Reread::Same
        } else {
            Reread::Changed(Box::new(again), changes)
        })
    }

    /// The configuration of `options` (`file_options`: the file's own),
    /// with the partitions and policy files read.
    fn with_options(
        path: &Path,
        options: OpenSmOptions,
        file_options: OpenSmOptions,
        read: ReadFile<'_>,
    ) -> Result<Self, ConfigError> {
        let named = |file: Option<&String>, default: &str| {
            let Some(file) = file else {
                return PathBuf::from(default);
            };
            let p = Path::new(file);
            if p.is_absolute() {
                p.to_path_buf()
            } else {
                path.parent().unwrap_or(Path::new(".")).join(p)
            }
        };
        let partitions_path = named(
            options.partition_config_file.as_ref(),
            DEFAULT_PARTITIONS_FILE,
        );
        let partitions = match read_named(read, &partitions_path, "--opensm-config")? {
            Some(text) => {
                let config = PartitionConfig::parse(&text, options.qos).map_err(|e| {
                    ConfigError::Refused(format!(
                        "--opensm-config: {}: {e}",
                        partitions_path.display()
                    ))
                })?;
                Some((partitions_path, config))
            }
            None => None,
        };
        let (policy, policy_dropped) = if options.qos {
            let p = named(options.qos_policy_file.as_ref(), DEFAULT_POLICY_FILE);
            match read_named(read, &p, "--opensm-config")? {
                Some(text) => match QosPolicy::parse(&text) {
                    Ok(policy) => (Some((p, policy)), None),
                    Err(e) => {
                        let why = format!(
                            "{}: {e}: OpenSM drops the whole policy (its ERR AC03/AC04) and \
                             applies the partitions' SLs alone; so do the computed tables",
                            p.display()
                        );
                        tracing::warn!("{why}");
                        (None, Some(why))
                    }
                },
                // OpenSM's default that does not exist is no policy; a
                // file named that does not exist is its ERR AC01, and no
                // policy either.
                None if options.qos_policy_file.is_none() => (None, None),
                None => {
                    let why = format!(
                        "{}: no such file: OpenSM runs without a QoS policy (its ERR AC01); so do \
                         the computed tables",
                        p.display()
                    );
                    tracing::warn!("{why}");
                    (None, Some(why))
                }
            }
        } else {
            // Without QoS OpenSM reads no policy.
            (None, None)
        };
        let node_names = node_name_map(path, &options, read, &named)?;
        if options.max_rate_enum != NO_RATE_LIMIT {
            return Err(ConfigError::Refused(format!(
                "--opensm-config: {}: max_rate_enum {} lowers the rates OpenSM answers (OpenSM \
                     3.3.24 and later), which the path engine does not follow: the tables are not \
                     computed from it",
                path.display(),
                options.max_rate_enum
            )));
        }
        Ok(Self {
            path: path.to_path_buf(),
            options,
            partitions,
            policy,
            policy_dropped,
            node_names,
            file_options,
        })
    }

    /// Applies it to `fabric` (built from `records`, on a master that
    /// applies QoS if `master_qos`): the partitions' SLs and the QoS
    /// policy, its SELF the port at `master_lid`. A configuration that is
    /// not the master's (`DoesNotFit`) changes nothing. `Some`: the policy
    /// OpenSM drops at this fabric, and why (the partitions' SLs alone
    /// apply, as at OpenSM).
    pub fn apply(
        &self,
        fabric: &mut Fabric,
        records: &FabricRecords,
        master_qos: bool,
        master_lid: u16,
    ) -> Result<Option<String>, ConfigError> {
        let here = self.path.display();
        if self.options.qos != master_qos {
            return Err(ConfigError::DoesNotFit(format!(
                "{here} says qos {}, but the master {} QoS (its ClassPortInfo): it is not \
                     the configuration the master runs with",
                if self.options.qos { "TRUE" } else { "FALSE" },
                if master_qos {
                    "applies"
                } else {
                    "does not apply"
                }
            )));
        }
        let partitions = self.partitions.as_ref().map(|(_, c)| c);
        self.partitions_fit(fabric)?;
        let names = self.node_names.as_ref().map(|(_, m)| m);
        let (levels, dropped) = match &self.policy {
            Some((file, policy)) => {
                let master_port = fabric.endport_at(master_lid).map(|e| e.guid);
                let held = (partitions, names);
                match QosLevels::resolve(policy.clone(), fabric, records, held, master_port) {
                    Ok(levels) => (Some(levels), None),
                    Err(e @ ResolveError::Dropped(_)) => {
                        let why = format!("{}: {e}", file.display());
                        tracing::warn!("{why}; so do the computed tables");
                        (None, Some(why))
                    }
                    Err(ResolveError::Unknown(why)) => {
                        return Err(ConfigError::DoesNotFit(format!(
                            "{}: {why}",
                            file.display()
                        )));
                    }
                }
            }
            None => (None, None),
        };
        fabric.set_tavor_quirk(self.options.enable_quirks);
        fabric.set_original_rates_only(self.options.use_original_extended_sa_rates_only);
        fabric.set_allow_both_pkeys(self.options.allow_both_pkeys);
        // Each partition's SL as the file gives it; one the file does not
        // name gets OpenSM's default SL (its ERR 1F1C), as does every
        // partition without a file.
        for pkey in fabric.partitions() {
            let sl = partitions.and_then(|c| c.by_pkey(pkey)).map_or(0, |p| p.sl);
            fabric.set_partition_sl(pkey, sl);
        }
        fabric.set_subnet_timeout(self.options.subnet_timeout);
        if let Some(levels) = levels {
            fabric.set_qos_levels(levels);
        }
        Ok(dropped)
    }

    /// Whether the master's P_Key tables hold only partitions OpenSM made
    /// from this configuration (its partitions file, and the default
    /// one): a partition it does not name was made from another file (a
    /// `-P` on OpenSM's command line, another machine's file), whose SLs
    /// and names local-sa does not know. A file with a partition that
    /// gives no P_Key (OpenSM makes one up) cannot tell.
    fn partitions_fit(&self, fabric: &Fabric) -> Result<(), ConfigError> {
        let config = self.partitions.as_ref().map(|(_, c)| c);
        if config.is_some_and(|c| c.partitions.iter().any(|p| p.pkey.is_none())) {
            return Ok(());
        }
        let unknown = (fabric.partitions().into_iter())
            .filter(|p| *p != local_sa_core::opensm_config::partitions::DEFAULT_PKEY)
            .find(|p| config.is_none_or(|c| c.by_pkey(*p).is_none()));
        match (unknown, &self.partitions) {
            (None, _) => Ok(()),
            (Some(pkey), Some((file, _))) => Err(ConfigError::DoesNotFit(format!(
                "the master's P_Key tables hold partition {pkey:#06x}, which {} does not name: it \
                 is not the partitions file the master runs with",
                file.display()
            ))),
            (Some(pkey), None) => Err(ConfigError::DoesNotFit(format!(
                "the master's P_Key tables hold partition {pkey:#06x}, but {} names no partitions \
                 file and OpenSM's default ({DEFAULT_PARTITIONS_FILE}) is not there: the master \
                 runs with one local-sa was not given (OpenSM's -P?)",
                self.path.display()
            ))),
        }
    }

    /// What it gives, in a few words, for the summaries.
    pub fn describe(&self) -> String {
        let mut parts = vec![format!(
            "qos {}",
            if self.options.qos { "TRUE" } else { "FALSE" }
        )];
        if let Some((p, c)) = &self.partitions {
            parts.push(format!(
                "{} partitions from {}",
                c.partitions.len(),
                p.display()
            ));
        }
        if let Some((p, policy)) = &self.policy {
            parts.push(format!(
                "QoS policy of {} levels and {} match rules from {}",
                policy.levels.len(),
                policy.rules.len(),
                p.display()
            ));
        }
        if let Some(why) = &self.policy_dropped {
            parts.push(format!("no QoS policy ({why})"));
        }
        if let Some((p, map)) = &self.node_names {
            parts.push(format!("{} node names from {}", map.len(), p.display()));
        }
        if let Some(engine) = self.options.sl_engine() {
            parts.push(format!("routing engine {engine}, with SLs of its own"));
        }
        format!("{}: {}", self.path.display(), parts.join(", "))
    }
}

/// The node name map OpenSM reads, if any: the one `options` names (one
/// that cannot be read or parsed is none, as OpenSM warns and goes on),
/// else its default where it exists.
fn node_name_map(
    conf: &Path,
    options: &OpenSmOptions,
    read: ReadFile<'_>,
    named: &dyn Fn(Option<&String>, &str) -> PathBuf,
) -> Result<Option<(PathBuf, NodeNameMap)>, ConfigError> {
    let p = named(options.node_name_map_name.as_ref(), DEFAULT_NODE_NAME_MAP);
    let Some(text) = read_named(read, &p, "--opensm-config")? else {
        if options.node_name_map_name.is_some() {
            tracing::warn!(
                "{}: node_name_map_name {}: no such file: OpenSM reads no node name map",
                conf.display(),
                p.display()
            );
        }
        return Ok(None);
    };
    match NodeNameMap::parse(&text) {
        Ok(map) => Ok(Some((p, map))),
        Err(line) => {
            tracing::warn!(
                "{}: OpenSM fails to parse it at {line} and reads no node name map",
                p.display()
            );
            Ok(None)
        }
    }
}

/// Reads `p` with `read`; an error that is not its absence is refused,
/// naming `option`.
fn read_named(read: ReadFile<'_>, p: &Path, option: &str) -> Result<Option<String>, ConfigError> {
    read(p).map_err(|e| ConfigError::Refused(format!("{option}: {}: {e}", p.display())))
}

/// What differs between two readings OpenSM would take, a line each.
fn changes(before: &OpenSmInput, after: &OpenSmInput) -> Vec<String> {
    let mut out = options_changed(&before.options, &after.options);
    let partitions = |i: &OpenSmInput| i.partitions.as_ref().map(|(_, c)| c.partitions.clone());
    out.extend(partitions_changed(
        &partitions(before).unwrap_or_default(),
        &partitions(after).unwrap_or_default(),
    ));
    let policy = |i: &OpenSmInput| i.policy.as_ref().map(|(_, p)| p.clone());
    match (policy(before), policy(after)) {
        (Some(a), Some(b)) => out.extend(policy_changed(&a, &b)),
        (None, Some(b)) => out.push(format!(
            "QoS policy: {} levels and {} match rules taken",
            b.levels.len(),
            b.rules.len()
        )),
        (Some(_), None) => out.push(match &after.policy_dropped {
            Some(why) => format!("QoS policy dropped: {why}"),
            None => "QoS policy: none now".to_owned(),
        }),
        (None, None) => {}
    }
    out
}

fn options_changed(a: &OpenSmOptions, b: &OpenSmOptions) -> Vec<String> {
    let mut out = Vec::new();
    let flag = |v: bool| if v { "TRUE" } else { "FALSE" };
    for (name, x, y) in [
        ("qos", a.qos, b.qos),
        ("enable_quirks", a.enable_quirks, b.enable_quirks),
        (
            "use_original_extended_sa_rates_only",
            a.use_original_extended_sa_rates_only,
            b.use_original_extended_sa_rates_only,
        ),
    ] {
        if x != y {
            out.push(format!("option {name}: {} -> {}", flag(x), flag(y)));
        }
    }
    for (name, x, y) in [
        ("subnet_timeout", a.subnet_timeout, b.subnet_timeout),
        ("max_rate_enum", a.max_rate_enum, b.max_rate_enum),
    ] {
        if x != y {
            out.push(format!("option {name}: {x} -> {y}"));
        }
    }
    if a.sa_key != b.sa_key {
        out.push("option sa_key changed".to_owned());
    }
    out
}

fn partitions_changed(a: &[Partition], b: &[Partition]) -> Vec<String> {
    let name = |p: &Partition| match (&p.name, p.pkey) {
        (Some(n), Some(k)) => format!("{n} ({k:#06x})"),
        (Some(n), None) => n.clone(),
        (None, Some(k)) => format!("{k:#06x}"),
        (None, None) => "a partition".to_owned(),
    };
    let same = |x: &Partition, y: &Partition| x.pkey == y.pkey && x.name == y.name;
    let mut out = Vec::new();
    for p in a {
        match b.iter().find(|q| same(p, q)) {
            None => out.push(format!("partition {} removed", name(p))),
            Some(q) if q.sl != p.sl => {
                out.push(format!("partition {}: sl {} -> {}", name(p), p.sl, q.sl));
            }
            Some(_) => {}
        }
    }
    for q in b.iter().filter(|q| !a.iter().any(|p| same(p, q))) {
        out.push(format!("partition {} added (sl {})", name(q), q.sl));
    }
    out
}

fn policy_changed(a: &QosPolicy, b: &QosPolicy) -> Vec<String> {
    let mut out = Vec::new();
    for l in &a.levels {
        match b.levels.iter().find(|m| m.name == l.name) {
            None => out.push(format!("QoS level {} removed", l.name)),
            Some(m) => {
                let mut fields = Vec::new();
                let opt = |v: Option<u8>| v.map_or_else(|| "none".to_owned(), |v| v.to_string());
                for (field, x, y) in [
                    ("sl", l.sl, m.sl),
                    ("mtu-limit", l.mtu_limit, m.mtu_limit),
                    ("rate-limit", l.rate_limit, m.rate_limit),
                    ("packet-life", l.packet_life, m.packet_life),
                ] {
                    if x != y {
                        fields.push(format!("{field} {} -> {}", opt(x), opt(y)));
                    }
                }
                if l.pkeys != m.pkeys {
                    fields.push("pkey".to_owned());
                }
                if !fields.is_empty() {
                    out.push(format!("QoS level {}: {}", l.name, fields.join(", ")));
                }
            }
        }
    }
    for m in b
        .levels
        .iter()
        .filter(|m| !a.levels.iter().any(|l| l.name == m.name))
    {
        out.push(format!("QoS level {} added", m.name));
    }
    for g in &a.port_groups {
        match b.port_groups.iter().find(|h| h.name == g.name) {
            None => out.push(format!("port group {} removed", g.name)),
            Some(h) if !same_members(g, h) => out.push(format!("port group {}: members", g.name)),
            Some(_) => {}
        }
    }
    for h in (b.port_groups.iter()).filter(|h| !a.port_groups.iter().any(|g| g.name == h.name)) {
        out.push(format!("port group {} added", h.name));
    }
    let rules = |p: &QosPolicy| {
        (p.rules.iter())
            .map(|r| {
                let name = p.levels[r.level].name.clone();
                let mut r = r.clone();
                (r.line, r.level) = (0, 0);
                (r, name)
            })
            .collect::<Vec<_>>()
    };
    if rules(a) != rules(b) {
        out.push(format!(
            "QoS match rules: {} -> {}",
            a.rules.len(),
            b.rules.len()
        ));
    }
    if a.levels[a.default_level].name != b.levels[b.default_level].name {
        out.push("QoS default level".to_owned());
    }
    out
}

/// Whether two port groups of one name hold the same ports (what they
/// say, wherever in the file).
fn same_members(
    a: &local_sa_core::opensm_config::qos_policy::PortGroup,
    b: &local_sa_core::opensm_config::qos_policy::PortGroup,
) -> bool {
    a.guids == b.guids
        && a.port_names == b.port_names
        && a.pkeys == b.pkeys
        && a.partitions == b.partitions
        && a.node_types == b.node_types
}

#[cfg(test)]
mod tests;
