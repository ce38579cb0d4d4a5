//! Why one of OpenSM's files is refused.

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
