//! The path engine in process: one port's whole table computed from a
//! fabric's description (paths per second on one core), and building the
//! fabric from its records, for two-level fat trees of 1,024 to 10,240
//! hosts (made up: `path_engine::synthetic`, min-hop forwarding tables).
//! Run with `cargo bench -p local-sa-core --bench path_engine`.
#![allow(missing_docs)]

use divan::counter::ItemsCount;
use divan::{Bencher, black_box};
use local_sa_core::path_engine::synthetic::FatTree;
use local_sa_core::path_engine::{Fabric, Table};

fn main() {
    divan::main();
}

/// Leaves of 64 hosts and 32 spines: `hosts / 64` leaves.
fn tree(hosts: u16, lmc: u8) -> FatTree {
    FatTree {
        leaves: hosts / 64,
        hosts_per_leaf: 64,
        spines: 32,
        lmc,
    }
}

fn fabric(t: FatTree) -> Fabric {
    let mut f = Fabric::build(&t.records(), false).expect("a consistent fabric");
    f.set_partition_sl(0x7FFF, 0);
    f
}

/// One host's default table: every endport of the fabric (hosts and
/// switches), each bench iteration a different host.
#[divan::bench(args = [1_024, 4_096, 10_240], sample_count = 20)]
fn one_table(bencher: Bencher<'_, '_>, hosts: u16) {
    let f = fabric(tree(hosts, 0));
    let sources: Vec<u64> = f
        .endports()
        .iter()
        .filter(|e| !e.is_switch)
        .map(|e| e.guid)
        .collect();
    let per_table = f.endports().len();
    let mut out = Vec::with_capacity(per_table);
    let mut i = 0;
    bencher.counter(ItemsCount::new(per_table)).bench_local(|| {
        out.clear();
        f.table(sources[i % sources.len()], Table::Default, &mut out)
            .expect("a table");
        i += 7;
        black_box(out.len())
    });
}

/// The same with LMC 1: four records per pair of hosts.
#[divan::bench(args = [4_096], sample_count = 20)]
fn one_table_lmc_1(bencher: Bencher<'_, '_>, hosts: u16) {
    let f = fabric(tree(hosts, 1));
    let source = f
        .endports()
        .iter()
        .find(|e| !e.is_switch)
        .expect("a host")
        .guid;
    let mut out = Vec::new();
    f.table(source, Table::Default, &mut out).expect("a table");
    let per_table = out.len();
    bencher.counter(ItemsCount::new(per_table)).bench_local(|| {
        out.clear();
        f.table(source, Table::Default, &mut out).expect("a table");
        black_box(out.len())
    });
}

/// Building the fabric from its records: checking them and working out
/// every switch's way to every LID.
#[divan::bench(args = [1_024, 10_240], sample_count = 5)]
fn build(bencher: Bencher<'_, '_>, hosts: u16) {
    let records = tree(hosts, 0).records();
    bencher.bench_local(|| black_box(Fabric::build(&records, false).expect("built")));
}
