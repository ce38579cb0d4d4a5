//! The engine's tables and the keys the nodes' QoS caches keep them
//! under (and the master's queries name): a partition's table is the key
//! of its P_Key alone; a table at a ServiceID or QoS class, the key of
//! its P_Key and that field.

use local_sa_core::opensm_config::qos_policy::QueryKeys;
use local_sa_core::path_engine::Table;
use local_sa_core::path_query::QosKey;

/// The ServiceID and QoS class of `key`, as the engine's policy matches
/// them (its P_Key apart: the engine's table names it).
pub fn query_keys(key: &QosKey) -> QueryKeys {
    QueryKeys {
        service_id: key.service_id,
        qos_class: key.qos_class,
        pkey: None,
    }
}

/// The key a query for `table` names.
pub fn key_of(table: Table) -> QosKey {
    let keys = table.query_keys();
    QosKey {
        pkey: keys.pkey.map(|p| p & 0x7FFF),
        service_id: keys.service_id,
        qos_class: keys.qos_class,
        sl: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_names_the_key_its_query_carries() {
        let keys = QueryKeys {
            service_id: Some(0x0106_0000),
            ..QueryKeys::default()
        };
        let at = QosKey {
            pkey: Some(0x0001),
            service_id: Some(0x0106_0000),
            ..QosKey::default()
        };
        assert_eq!(key_of(Table::at(0x0001, keys)), at);
        assert_eq!(query_keys(&at), keys);
        assert_eq!(key_of(Table::Partition(0xFFFF)), QosKey::partition(0x7FFF));
        assert_eq!(key_of(Table::Default), QosKey::default());
    }
}
