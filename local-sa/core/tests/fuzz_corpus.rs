//! Replays the SA-core fuzz corpus and its past crashes through the fuzz
//! harness on stable Rust, so what the fuzzer found stays fixed without
//! cargo-fuzz or nightly.

use std::fs;
use std::path::{Path, PathBuf};

fn inputs(kind: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz")
        .join(kind)
        .join("sa_core");
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

fn replay(kind: &str) -> usize {
    let files = inputs(kind);
    for file in &files {
        let data = fs::read(file).unwrap();
        let result = std::panic::catch_unwind(|| local_sa_core::agent::fuzzing::drive(&data));
        assert!(result.is_ok(), "{} broke the SA core", file.display());
    }
    files.len()
}

#[test]
fn corpus_replays_cleanly() {
    let n = replay("corpus");
    assert!(
        n >= 20,
        "only {n} SA-core corpus inputs: run export-fuzz-seeds"
    );
}

#[test]
fn past_crashes_stay_fixed() {
    replay("regressions");
}
