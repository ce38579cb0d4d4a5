//! Replays the core's fuzz corpora and their past crashes through the fuzz
//! harnesses on stable Rust, so what the fuzzers found stays fixed without
//! cargo-fuzz or nightly.

use std::fs;
use std::path::{Path, PathBuf};

use local_sa_core::fuzzing;

/// The files of `fuzz/<kind>/<target>/`, sorted.
fn inputs(kind: &str, target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz")
        .join(kind)
        .join(target);
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// Runs every input of `fuzz/<kind>/<target>/` through `harness`.
fn replay(kind: &str, target: &str, harness: fn(&[u8])) -> usize {
    let files = inputs(kind, target);
    for file in &files {
        let data = fs::read(file).unwrap();
        let result = std::panic::catch_unwind(|| harness(&data));
        assert!(
            result.is_ok(),
            "{} broke the {target} harness",
            file.display()
        );
    }
    files.len()
}

#[test]
fn sa_core_corpus_replays_cleanly() {
    let n = replay("corpus", "sa_core", fuzzing::sa_core);
    assert!(
        n >= 20,
        "only {n} SA-core corpus inputs: run export-fuzz-seeds"
    );
}

#[test]
fn memberships_corpus_replays_cleanly() {
    replay("corpus", "memberships", fuzzing::memberships);
}

#[test]
fn acm_corpus_replays_cleanly() {
    replay("corpus", "acm", fuzzing::acm);
}

#[test]
fn netlink_corpus_replays_cleanly() {
    let n = replay("corpus", "netlink", fuzzing::netlink);
    assert!(n >= 5, "only {n} netlink corpus inputs");
}

#[test]
fn past_crashes_stay_fixed() {
    replay("regressions", "sa_core", fuzzing::sa_core);
    replay("regressions", "memberships", fuzzing::memberships);
}

#[test]
fn path_engine_corpus_replays_cleanly() {
    replay("corpus", "path_engine", fuzzing::path_engine);
    replay("regressions", "path_engine", fuzzing::path_engine);
}

#[test]
fn kept_tables_corpus_replays_cleanly() {
    let n = replay("corpus", "kept_tables", fuzzing::kept_tables);
    assert!(n >= 3, "only {n} kept_tables corpus inputs");
    replay("regressions", "kept_tables", fuzzing::kept_tables);
}

#[test]
fn opensm_config_corpus_replays_cleanly() {
    let n = replay("corpus", "opensm_config", fuzzing::opensm_config);
    assert!(n >= 4, "only {n} opensm_config corpus inputs");
}
