//! QoS-table loads: a distributor's sources' whole tables at one QoS key,
//! put in the QoS cache as if the port had asked them itself (the
//! `QOS_TABLES` bit of a PathRecord Set; docs/wire-contract.md).
//!
//! The Set's ComponentMask names the key's fields; the first record
//! carries their values (the master answers a query naming a ServiceID or
//! QoS class with records that carry neither, so the key cannot be read
//! from its answer); the others are the master's records as it gave them,
//! which are kept and answered byte for byte. Unlike path loads, these
//! leave every other answer kept from the master in place: they change no
//! record of the tables.

use std::collections::HashMap;

use mad_codec::attr::path_record::mask as pr;
use mad_codec::{ComponentMask, PathRecord};

use crate::agent::answers::qos_cache::{Origin, QosCache, by_destination};
use crate::load_flags::QOS_TABLES;
use crate::path_query::{QosKey, SourceKey};

/// The fields a QoS key may name.
const KEY_FIELDS: ComponentMask = pr::PKEY.union(pr::SERVICE_ID).union(pr::QOS_CLASS);

/// What a QoS-table load put in the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::agent) struct QosLoad {
    /// Records kept, and records given.
    pub(in crate::agent) stored: usize,
    pub(in crate::agent) given: usize,
    /// Sources whose tables it carried.
    pub(in crate::agent) sources: usize,
}

impl QosCache {
    /// A Set with `QOS_TABLES` (`flags`, `mask`) whose records are
    /// `records`: each source's table at the key kept as if the port had
    /// asked for it; or what is wrong with it (nothing changes).
    pub(in crate::agent) fn load(
        &mut self,
        flags: u32,
        mask: ComponentMask,
        records: &[PathRecord],
    ) -> Result<QosLoad, &'static str> {
        let tables = qos_tables(flags, mask, records)?;
        let mut load = QosLoad {
            stored: 0,
            given: 0,
            sources: tables.len(),
        };
        for (key, table) in tables {
            load.given += table.len();
            load.stored += self.insert_table(&key, by_destination(table), Origin::Loaded);
        }
        Ok(load)
    }
}

/// A QoS-table load's tables by source and key, checked; the error says
/// what is wrong (the answer is ERR_REQ_INVALID, and nothing changes).
fn qos_tables(
    flags: u32,
    mask: ComponentMask,
    records: &[PathRecord],
) -> Result<HashMap<SourceKey, Vec<PathRecord>>, &'static str> {
    if flags != QOS_TABLES {
        return Err("QOS_TABLES goes with no other AttributeModifier bit");
    }
    if mask == ComponentMask::NONE || !KEY_FIELDS.contains(mask) {
        return Err(
            "a QoS table's ComponentMask names P_Key, ServiceID or QoS class, and only those",
        );
    }
    let Some((key_record, table)) = records.split_first() else {
        return Err("no key record");
    };
    if table.iter().any(|r| r.slid() == 0 || r.dlid() == 0) {
        return Err("a record with SLID or DLID 0");
    }
    let qos = QosKey::of(mask, key_record, true);
    let mut by_source: HashMap<SourceKey, Vec<PathRecord>> = HashMap::new();
    for r in table {
        let key = SourceKey {
            src: r.sgid().guid(),
            qos,
        };
        by_source.entry(key).or_default().push(*r);
    }
    Ok(by_source)
}
