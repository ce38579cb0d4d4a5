//! Why a kind of table may not be computed and sent: the check did not
//! prove it, or what it needs is not known. Such tables come from the
//! master, and the summary says why.

use std::fmt;
use std::path::PathBuf;

use local_sa_core::path_engine::Table;

use super::checked::Mismatch;
use super::explain::why;

/// Why tables of one kind are not trusted.
#[derive(Debug, Clone)]
pub enum Untrusted {
    /// OpenSM's routing engine gives each path an SL of its own, which
    /// the SA does not publish.
    SlEngine {
        /// The engine (`dfsssp`).
        engine: String,
        /// The opensm.conf that names it.
        config: PathBuf,
    },
    /// A sampled pair of this kind (or of the default tables, which carry
    /// every partition's paths) differs from the master's.
    Differs(Box<Mismatch>),
    /// A sampled pair could not be computed: why.
    Uncomputable(String),
    /// The SL of this partition is not known: why.
    UnknownSl {
        /// The partition's P_Key (without the membership bit).
        pkey: u16,
        /// Why it is not known.
        why: String,
    },
    /// A table at a ServiceID or QoS class, without the master's QoS
    /// policy (--opensm-config gives it).
    NoPolicy(Table),
    /// A table at a key the check drew no pair from.
    NotDrawn(Table),
}

impl fmt::Display for Untrusted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::SlEngine { engine, config } => write!(
                f,
                "OpenSM's routing engine {engine} ({}: routing_engine) gives each path an SL of its own, \
                 which the SA does not publish: the engine does not compute SLs it cannot know",
                config.display()
            ),
            Self::Differs(m) => f.write_str(&why(m)),
            Self::Uncomputable(why) => write!(f, "a sampled pair could not be computed: {why}"),
            Self::UnknownSl { pkey, why } => {
                write!(f, "the SL of partition {pkey:#06x} is not known: {why}")
            }
            Self::NoPolicy(table) => write!(
                f,
                "the table at {table} needs the master's QoS policy, which --opensm-config gives"
            ),
            Self::NotDrawn(table) => write!(f, "the check drew no pair from the table at {table}"),
        }
    }
}

impl std::error::Error for Untrusted {}
