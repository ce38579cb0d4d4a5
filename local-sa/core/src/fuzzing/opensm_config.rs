//! OpenSM's configuration files from any bytes: the options, partitions,
//! node name map and QoS policy parsers refuse or take them without a
//! panic (a rescan of the options as well), and a policy they take meets a
//! small fabric — named ports, IPoIB partitions checked, or the policy
//! dropped — and gives every path a level without one either (asked with
//! a P_Key, a ServiceID or a QoS class or none).

use crate::opensm_config::qos_policy::QueryKeys;
use crate::opensm_config::{NodeNameMap, OpenSmOptions, PartitionConfig, QosPolicy};
use crate::path_engine::synthetic::FatTree;
use crate::path_engine::{Fabric, QosLevels, Table};

/// The input, as text, is each file in turn.
pub fn opensm_config(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let options = OpenSmOptions::parse(&text);
    let _ = OpenSmOptions::default().rescanned(&OpenSmOptions::default(), &options);
    let partitions = PartitionConfig::parse(&text, options.qos).ok();
    let names = NodeNameMap::parse(&text).ok();
    let Ok(policy) = QosPolicy::parse(&text) else {
        return;
    };
    let (spec, _) = FatTree {
        leaves: 2,
        hosts_per_leaf: 2,
        spines: 1,
        lmc: 1,
    }
    .spec();
    let records = spec.records();
    let Ok(mut fabric) = Fabric::build(&records, false) else {
        return;
    };
    for p in fabric.partitions() {
        fabric.set_partition_sl(p, 0);
    }
    let master = fabric.endports().first().map(|e| e.guid);
    let held = (partitions.as_ref(), names.as_ref());
    let Ok(levels) = QosLevels::resolve(policy, &fabric, &records, held, master) else {
        return;
    };
    fabric.set_qos_levels(levels);
    let mut out = Vec::new();
    for e in fabric.endports() {
        // A policy's rules match these ServiceIDs and classes when it
        // names them (the RDS ULP's, a class of the corpus').
        let service = QueryKeys {
            service_id: Some(0x0106_0001),
            ..QueryKeys::default()
        };
        let class = QueryKeys {
            qos_class: Some(3),
            ..QueryKeys::default()
        };
        for table in [
            Table::Default,
            Table::Partition(0xFFFF),
            Table::Partition(0x8001),
            Table::at(0x7FFF, service),
            Table::at(0x0001, class),
        ] {
            out.clear();
            if fabric.table(e.guid, table, &mut out).is_ok() {
                assert!(out.iter().all(|r| r.sl() < 16 && r.mtu().0 <= 5));
            }
        }
    }
}
