//! Replays the registry fuzz corpus and its past crashes through the fuzz
//! harness on stable Rust.

use std::fs;
use std::path::{Path, PathBuf};

fn inputs(kind: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz")
        .join(kind)
        .join("registry_ops");
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
        let result = std::panic::catch_unwind(|| informinfo::fuzzing::registry_ops(&data));
        assert!(result.is_ok(), "{} broke the registry", file.display());
    }
    files.len()
}

#[test]
fn corpus_replays_cleanly() {
    assert!(
        replay("corpus") >= 3,
        "the registry corpus is missing its seeds"
    );
}

#[test]
fn past_crashes_stay_fixed() {
    replay("regressions");
}
