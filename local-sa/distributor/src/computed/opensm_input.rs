//! `--opensm-config FILE`: OpenSM's own configuration as an input of the
//! computation, for what its SA answers that it does not publish: the QoS
//! policy (`qos_policy_file`) and the partitions' names and SLs
//! (`partition_config_file`), read from the files `opensm.conf` names (a
//! relative name from the file's directory). A file OpenSM would refuse is
//! refused with its reason (exit status 2), and so is an option that
//! changes answers in a way the engine does not follow (`max_rate_enum`);
//! `enable_quirks` (Tavor's MTU), `allow_both_pkeys` and
//! `use_original_extended_sa_rates_only` (as OpenSM 3.3.23 applies it) it
//! follows.
//!
//! Given, it is checked against the master too: the master must apply
//! QoS exactly when the file says `qos TRUE`, and a partition's SL that
//! the master shows must be the file's; else it is not the configuration
//! the master runs with, and nothing is computed from it.

use std::path::{Path, PathBuf};

use local_sa_core::opensm_config::{NO_RATE_LIMIT, OpenSmOptions, PartitionConfig, QosPolicy};
use local_sa_core::path_engine::{Fabric, FabricRecords, QosLevels};

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
    /// Its options.
    pub options: OpenSmOptions,
    /// The partition file it names, read, if any.
    pub partitions: Option<(PathBuf, PartitionConfig)>,
    /// The QoS policy file it names, read, if OpenSM applies QoS.
    pub policy: Option<(PathBuf, QosPolicy)>,
}

impl OpenSmInput {
    /// Reads `path` and the files it names.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let read = |p: &Path| {
            std::fs::read_to_string(p)
                .map_err(|e| ConfigError::Refused(format!("--opensm-config: {}: {e}", p.display())))
        };
        let options = OpenSmOptions::parse(&read(path)?);
        for (line, why) in &options.ignored {
            tracing::warn!("{}, line {line}: OpenSM ignores it: {why}", path.display());
        }
        let named = |file: &str| {
            let p = Path::new(file);
            if p.is_absolute() {
                p.to_path_buf()
            } else {
                path.parent().unwrap_or(Path::new(".")).join(p)
            }
        };
        let partitions = match &options.partition_config_file {
            Some(f) => {
                let p = named(f);
                let config = PartitionConfig::parse(&read(&p)?, options.qos).map_err(|e| {
                    ConfigError::Refused(format!("--opensm-config: {}: {e}", p.display()))
                })?;
                Some((p, config))
            }
            None => None,
        };
        let policy = match (&options.qos_policy_file, options.qos) {
            (Some(f), true) => {
                let p = named(f);
                let policy = QosPolicy::parse(&read(&p)?).map_err(|e| {
                    ConfigError::Refused(format!("--opensm-config: {}: {e}", p.display()))
                })?;
                Some((p, policy))
            }
            // Without QoS OpenSM reads no policy.
            _ => None,
        };
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
        })
    }

    /// Applies it to `fabric` (built from `records`, on a master that
    /// applies QoS if `master_qos`): the partitions' SLs and the QoS
    /// policy, its SELF the port at `master_lid`.
    pub fn apply(
        &self,
        fabric: &mut Fabric,
        records: &FabricRecords,
        master_qos: bool,
        master_lid: u16,
    ) -> Result<(), ConfigError> {
        let here = self.path.display();
        if self.options.qos != master_qos {
            return Err(ConfigError::DoesNotFit(format!(
                "--opensm-config: {here} says qos {}, but the master {} QoS (its ClassPortInfo): it is not \
                     the configuration the master runs with",
                if self.options.qos { "TRUE" } else { "FALSE" },
                if master_qos {
                    "applies"
                } else {
                    "does not apply"
                }
            )));
        }
        fabric.set_tavor_quirk(self.options.enable_quirks);
        fabric.set_original_rates_only(self.options.use_original_extended_sa_rates_only);
        fabric.set_allow_both_pkeys(self.options.allow_both_pkeys);
        // Each partition's SL as the file gives it; one the file does not
        // name gets OpenSM's default SL (its ERR 1F1C), as does every
        // partition without a file.
        let partitions = self.partitions.as_ref().map(|(_, c)| c);
        for pkey in fabric.partitions() {
            let sl = partitions.and_then(|c| c.by_pkey(pkey)).map_or(0, |p| p.sl);
            fabric.set_partition_sl(pkey, sl);
        }
        fabric.set_subnet_timeout(self.options.subnet_timeout);
        if let Some((file, policy)) = &self.policy {
            let master_port = fabric.endport_at(master_lid).map(|e| e.guid);
            let levels =
                QosLevels::resolve(policy.clone(), fabric, records, partitions, master_port)
                    .map_err(|e| {
                        ConfigError::DoesNotFit(format!("--opensm-config: {}: {e}", file.display()))
                    })?;
            fabric.set_qos_levels(levels);
        }
        Ok(())
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
        format!("{}: {}", self.path.display(), parts.join(", "))
    }
}
