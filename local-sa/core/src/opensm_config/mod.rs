//! OpenSM's own configuration, read as OpenSM reads it, for what its SA
//! answers that the SA does not publish: the options file
//! ([`options`]), the partitions file ([`partitions`]: names and SLs) and
//! the QoS policy file ([`qos_policy`]: port groups, levels, match rules,
//! the simplified `qos-ulps`). Each is parsed from its text (the caller
//! reads the files); a file OpenSM would refuse, or stop reading, is
//! refused with OpenSM's reason and the line ([`ConfigError`]).

pub mod options;
pub mod partitions;
pub mod qos_policy;

pub use options::Options;
pub use partitions::{Partition, PartitionConfig};
pub use qos_policy::QosPolicy;

/// Which of OpenSM's files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigFile {
    /// `partition_config_file`.
    Partitions,
    /// `qos_policy_file`.
    QosPolicy,
}

/// A file OpenSM would refuse, or stop reading: where, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The file.
    pub file: ConfigFile,
    /// The line (1 the first; 0 for the file as a whole).
    pub line: usize,
    /// OpenSM's reason.
    pub reason: String,
}

impl ConfigError {
    pub(crate) fn partitions(line: usize, reason: &str) -> Self {
        Self {
            file: ConfigFile::Partitions,
            line,
            reason: reason.to_owned(),
        }
    }

    pub(crate) fn policy(line: usize, reason: impl Into<String>) -> Self {
        Self {
            file: ConfigFile::QosPolicy,
            line,
            reason: reason.into(),
        }
    }
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let file = match self.file {
            ConfigFile::Partitions => "the partitions file",
            ConfigFile::QosPolicy => "the QoS policy file",
        };
        let at = if self.line > 0 {
            format!("{file}, line {}", self.line)
        } else {
            file.to_owned()
        };
        write!(f, "{at}: OpenSM refuses it: {}", self.reason)
    }
}

impl std::error::Error for ConfigError {}
