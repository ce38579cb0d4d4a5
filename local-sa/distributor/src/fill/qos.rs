//! Tables at QoS keys: on a master that applies QoS, each node's paths at
//! each `--service-id` and `--qos-class` on each of its P_Keys — the key
//! of rdma_cm's and the kernel's queries (SGID, DGID, P_Key, ServiceID) —
//! sent for its QoS cache as Sets with QOS_TABLES (docs/wire-contract.md),
//! so that a job's first queries at those keys do not reach the master.

use local_sa_core::path_query::QosKey;
use mad_codec::PathRecord;
use mad_codec::zerocopy::FromZeros;

use super::delta::Push;
use super::partitions::NodePartitions;
use super::tally::QosOutcome;

/// At most this many ServiceIDs and QoS classes together: each costs the
/// master one table per node and P_Key.
pub const MAX_KEYS: usize = 64;

/// Which tables at QoS keys the nodes get.
#[derive(Debug, Default)]
pub struct QosPlan {
    /// The keys without a P_Key; none when the tables are not sent.
    keys: Vec<QosKey>,
    outlook: QosOutcome,
}

impl QosPlan {
    /// The plan for `keys`, given what the master said of the nodes'
    /// partitions and its QoS (`None`: it did not), and whether the tables
    /// come from a dump.
    pub fn new(keys: &[QosKey], partitions: Option<&NodePartitions>, from_file: bool) -> Self {
        let not_sent = |why| Self {
            keys: Vec::new(),
            outlook: QosOutcome::NotSent(why),
        };
        if keys.is_empty() {
            return Self::default();
        }
        if from_file {
            // The QoS cache holds only answers the master gave since the
            // last event that could change them; a file cannot say so.
            return not_sent(
                "tables at a ServiceID or QoS class come only from the master, never from a dump",
            );
        }
        match partitions {
            None => not_sent("the master did not say the nodes' P_Keys and its QoS"),
            Some(p) if !p.master_qos() => not_sent(
                "the master applies no QoS: the nodes answer ServiceIDs and QoS classes from their tables",
            ),
            Some(_) => Self {
                keys: keys.to_vec(),
                outlook: QosOutcome::Sent(keys.len()),
            },
        }
    }

    /// Whether the nodes are sent tables at keys.
    pub fn sends(&self) -> bool {
        !self.keys.is_empty()
    }

    /// What becomes of the tables.
    pub fn outlook(&self) -> QosOutcome {
        self.outlook.clone()
    }

    /// A node's keys, on each of its partitions `pkeys` (low 15 bits).
    pub fn keys_of<'a>(&'a self, pkeys: &'a [u16]) -> impl Iterator<Item = QosKey> + 'a {
        pkeys.iter().flat_map(move |p| {
            self.keys.iter().map(move |k| QosKey {
                pkey: Some(*p),
                ..*k
            })
        })
    }
}

/// True for a partition's key (a P_Key and nothing else).
pub fn is_partition(key: &QosKey) -> bool {
    key.service_id.is_none() && key.qos_class.is_none() && key.sl.is_none()
}

/// The Set of a node's table at `key`: the key record, then the records.
pub fn push(key: &QosKey, records: &[PathRecord]) -> Push {
    let mut key_record = PathRecord::new_zeroed();
    let mask = key.apply(&mut key_record);
    Push::AtKey {
        mask,
        records: std::iter::once(key_record)
            .chain(records.iter().copied())
            .collect(),
    }
}

/// More keys asked than a distribution sends: how many.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooManyKeys(pub usize);

impl std::fmt::Display for TooManyKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "--service-id and --qos-class name {} keys, more than the {MAX_KEYS} a distribution sends \
             (each costs the master a table per node and P_Key): give the ServiceIDs the jobs use, not whole ranges",
            self.0
        )
    }
}

impl std::error::Error for TooManyKeys {}

/// The keys of `--service-id` and `--qos-class` (ranges expanded, each
/// once), at most [`MAX_KEYS`].
pub fn keys(
    service_ids: &[std::ops::RangeInclusive<u64>],
    qos_classes: &[std::ops::RangeInclusive<u16>],
) -> Result<Vec<QosKey>, TooManyKeys> {
    let count = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
    let asked = service_ids
        .iter()
        .map(|r| count(r.end() - r.start()).saturating_add(1))
        .chain(
            qos_classes
                .iter()
                .map(|r| usize::from(r.end() - r.start()) + 1),
        )
        .fold(0usize, usize::saturating_add);
    if asked > MAX_KEYS {
        return Err(TooManyKeys(asked));
    }
    let ids: std::collections::BTreeSet<u64> = service_ids.iter().flat_map(|r| r.clone()).collect();
    let classes: std::collections::BTreeSet<u16> =
        qos_classes.iter().flat_map(|r| r.clone()).collect();
    Ok(ids
        .into_iter()
        .map(|id| QosKey {
            service_id: Some(id),
            ..QosKey::default()
        })
        .chain(classes.into_iter().map(|c| QosKey {
            qos_class: Some(c),
            ..QosKey::default()
        }))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_expanded_once_and_bounded() {
        let k = keys(&[0x10..=0x11, 0x11..=0x11], &[3..=3]).unwrap();
        assert_eq!(k.len(), 3);
        assert_eq!(k[0].service_id, Some(0x10));
        assert_eq!(k[2].qos_class, Some(3));
        let too_many = keys(&[0x0106_0000..=0x0106_FFFF], &[]).unwrap_err();
        assert_eq!(too_many, TooManyKeys(65536));
        assert!(too_many.to_string().contains("65536 keys"), "{too_many}");
    }

    #[test]
    fn tables_at_keys_go_only_where_the_master_applies_qos() {
        let asked = keys(&[0x10..=0x10], &[]).unwrap();
        let qos = NodePartitions::new(&[], true);
        let no_qos = NodePartitions::new(&[], false);
        assert_eq!(
            QosPlan::new(&[], Some(&qos), false).outlook(),
            QosOutcome::NotAsked
        );
        assert_eq!(
            QosPlan::new(&asked, Some(&qos), false).outlook(),
            QosOutcome::Sent(1)
        );
        for (partitions, from_file) in [(Some(&no_qos), false), (None, false), (Some(&qos), true)] {
            let plan = QosPlan::new(&asked, partitions, from_file);
            assert!(matches!(plan.outlook(), QosOutcome::NotSent(_)), "{plan:?}");
            assert_eq!(plan.keys_of(&[0x7FFF]).count(), 0);
        }
    }

    #[test]
    fn a_key_goes_on_each_partition_of_the_node_and_its_record_names_it() {
        let plan = QosPlan {
            keys: keys(&[0x0106_0001..=0x0106_0001], &[]).unwrap(),
            outlook: QosOutcome::Sent(1),
        };
        let per_node: Vec<QosKey> = plan.keys_of(&[0x7FFF, 0x0001]).collect();
        assert_eq!(per_node.len(), 2);
        assert_eq!(
            (per_node[1].pkey, per_node[1].service_id),
            (Some(0x0001), Some(0x0106_0001))
        );
        assert!(!is_partition(&per_node[0]));
        assert!(is_partition(&QosKey::partition(0x0001)));
        let Push::AtKey { mask, records } = push(&per_node[1], &[PathRecord::new_zeroed()]) else {
            panic!("a QoS table's push");
        };
        use mad_codec::attr::path_record::mask as pr;
        assert_eq!(mask, pr::PKEY | pr::SERVICE_ID);
        assert_eq!(
            (records.len(), records[0].pkey(), records[0].service_id()),
            (2, 0x8001, 0x0106_0001)
        );
    }
}
