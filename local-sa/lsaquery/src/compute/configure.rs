//! What the master does not publish, given to a fabric just built: from
//! OpenSM's own files (`--opensm-config`) when they are the master's
//! configuration, else asked of the master (each partition's SL, from
//! one path in it). A configuration that is not the master's — its QoS
//! bit, or a port group it names, does not fit the fabric read — is said
//! in the log and the summary, and the fabric is computed without it: the
//! check then proves what the master's answers are, or the tables come
//! from the master.

use std::sync::Arc;

use local_sa_core::path_engine::{Fabric, FabricRecords};
use local_sa_distributor::computed::Served;
use local_sa_distributor::computed::opensm_input::{ConfigError, OpenSmInput};
use umad::Address;

use super::check::learn_partition_sls;
use crate::session::Session;
use crate::stop::Stop;

/// What configuring a fabric found.
pub(crate) struct Configured {
    /// Why the configuration given is not the master's, if it is not.
    pub(crate) unfit: Option<String>,
    /// The QoS policy OpenSM drops at this fabric, and why.
    pub(crate) policy_dropped: Option<String>,
    /// Partitions whose SL the master did not tell, and why.
    pub(crate) unknown_sls: Vec<(u16, String)>,
}

/// Gives `fabric` (built from `records`, read from `master`, which
/// applies QoS if `qos`) what the master does not publish: `input`'s, if
/// it fits, else the partitions' SLs asked of the master (`served` counts
/// what that cost).
pub(crate) async fn configure(
    session: &mut Session,
    (master, window): (Address, usize),
    input: Option<&Arc<OpenSmInput>>,
    (fabric, records, qos): (&mut Fabric, &FabricRecords, bool),
    served: &mut Served,
) -> Result<Configured, Stop> {
    let unfit = match input.map(|i| i.apply(fabric, records, qos, master.lid)) {
        None => None,
        Some(Ok(policy_dropped)) => {
            return Ok(Configured {
                unfit: None,
                policy_dropped,
                unknown_sls: Vec::new(),
            });
        }
        Some(Err(ConfigError::DoesNotFit(why))) => {
            tracing::warn!(
                "OpenSM's configuration is not the master's: {why}; the tables are computed without it \
                 (the partitions' SLs asked of the master), and the check says what else differs"
            );
            Some(why)
        }
        Some(Err(e)) => return Err(e.into()),
    };
    let unknown_sls = learn_partition_sls(session, master, window, fabric, served).await?;
    Ok(Configured {
        unfit,
        policy_dropped: None,
        unknown_sls,
    })
}
