//! OpenSM's own configuration, read as OpenSM reads it, for what its SA
//! answers that the SA does not publish: the options file
//! ([`options`]), the partitions file ([`partitions`]: names and SLs) and
//! the QoS policy file ([`qos_policy`]: port groups, levels, match rules,
//! the simplified `qos-ulps`), and the node name map its `port-name`s
//! look nodes up by ([`node_names`]). Each is parsed from its text (the caller
//! reads the files); a file OpenSM would refuse, or stop reading, is
//! refused with OpenSM's reason and the line ([`ConfigError`]).

mod error;
pub mod node_names;
pub mod options;
pub mod partitions;
pub mod qos_policy;

pub use error::{ConfigError, ConfigFile};
pub use node_names::NodeNameMap;
pub use options::{NO_RATE_LIMIT, OpenSmOptions};
pub use partitions::{Partition, PartitionConfig};
pub use qos_policy::QosPolicy;
