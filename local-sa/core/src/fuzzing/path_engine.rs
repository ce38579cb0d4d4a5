//! The path engine fed a description the master might give, broken: a
//! small fat tree's records (LMC, QoS and OpenSM's `enable_quirks`,
//! `allow_both_pkeys` and `use_original_extended_sa_rates_only` chosen by
//! the first byte), then
//! each four bytes of the input an edit — one byte of one record of one
//! type set to a value, or a record dropped or repeated. Building the
//! fabric either fails with an error or succeeds; every table of every
//! endport then computes without a panic, and each record it holds is from
//! the endport and to a port the fabric has at that LID.

use mad_codec::zerocopy::IntoBytes;

use crate::path_engine::synthetic::FatTree;
use crate::path_engine::{Fabric, FabricRecords, Table};

/// One broken description.
pub fn path_engine(data: &[u8]) {
    let Some((&first, edits)) = data.split_first() else {
        return;
    };
    let tree = FatTree {
        leaves: 2,
        hosts_per_leaf: 2,
        spines: 2,
        lmc: first % 3,
    };
    let qos = first & 0x80 != 0;
    let (mut spec, _) = tree.spec();
    if qos {
        spec.sl2vl([0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 15]);
    }
    let mut records = spec.records();
    for edit in edits.chunks_exact(4) {
        apply(&mut records, edit);
    }
    let Ok(mut fabric) = Fabric::build(&records, qos) else {
        return;
    };
    fabric.set_tavor_quirk(first & 0x04 != 0);
    fabric.set_allow_both_pkeys(first & 0x08 != 0);
    fabric.set_original_rates_only(first & 0x10 != 0);
    for (i, p) in fabric.partitions().into_iter().enumerate() {
        // Some partitions without an SL: their tables are refused.
        if i % 3 != 2 {
            fabric.set_partition_sl(p, (i % 16) as u8);
        }
    }
    let mut out = Vec::new();
    for e in fabric.endports() {
        let tables = [Table::Default, Table::Partition(0xFFFF)]
            .into_iter()
            .chain(
                fabric
                    .pkey_table(e)
                    .entries()
                    .iter()
                    .map(|p| Table::partition(*p)),
            );
        for table in tables {
            out.clear();
            if fabric.table(e.guid, table, &mut out).is_err() {
                continue;
            }
            for r in &out {
                assert!(e.lids().contains(&r.slid()), "a record from the endport");
                let dest = fabric
                    .endport_at(r.dlid())
                    .expect("a destination the fabric has");
                assert!(dest.lids().contains(&r.dlid()));
            }
        }
    }
}

/// One edit: `[kind, index, offset, value]`.
fn apply(r: &mut FabricRecords, edit: &[u8]) {
    let (kind, index, offset, value) = (edit[0], edit[1], edit[2], edit[3]);
    macro_rules! edit {
        ($list:expr) => {{
            let list = &mut $list;
            if list.is_empty() {
                return;
            }
            let i = usize::from(index) % list.len();
            match kind >> 4 {
                // Drop the record.
                0 => {
                    list.remove(i);
                }
                // Repeat it.
                1 => {
                    let copy = list[i];
                    list.push(copy);
                }
                // Set one of its bytes.
                _ => {
                    let bytes = list[i].as_mut_bytes();
                    let at = usize::from(offset) % bytes.len();
                    bytes[at] = value;
                }
            }
        }};
    }
    match kind % 7 {
        0 => edit!(r.nodes),
        1 => edit!(r.ports),
        2 => edit!(r.links),
        3 => edit!(r.lfts),
        4 => edit!(r.pkeys),
        5 => edit!(r.guids),
        _ => edit!(r.sl2vl),
    }
}
