//! Replays the fuzz corpus and every past crash through the fuzz harnesses
//! on stable Rust, so what the fuzzers found stays fixed without
//! cargo-fuzz or nightly.

use std::fs;
use std::path::{Path, PathBuf};

use mad_codec::fuzzing;

/// A fuzz harness.
type Harness = fn(&[u8]);

const TARGETS: [(&str, Harness); 4] = [
    ("mad_parse", fuzzing::parse_mad),
    ("mad_roundtrip", fuzzing::round_trip),
    ("sa_records", fuzzing::walk_records),
    ("rmpp_reassembly", fuzzing::rmpp_reassembly),
];

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz")
}

fn inputs(dir: &Path) -> Vec<PathBuf> {
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
    let mut total = 0;
    for (target, harness) in TARGETS {
        for file in inputs(&fuzz_dir().join(kind).join(target)) {
            let data = fs::read(&file).unwrap();
            let result = std::panic::catch_unwind(|| harness(&data));
            assert!(
                result.is_ok(),
                "{} broke the {target} harness",
                file.display()
            );
            total += 1;
        }
    }
    total
}

#[test]
fn corpus_replays_cleanly() {
    let n = replay("corpus");
    // The golden vectors alone seed about a hundred inputs.
    assert!(n >= 100, "only {n} corpus inputs: run export-fuzz-seeds");
    for (target, _) in TARGETS {
        assert!(
            !inputs(&fuzz_dir().join("corpus").join(target)).is_empty(),
            "no corpus for {target}"
        );
    }
}

#[test]
fn past_crashes_stay_fixed() {
    replay("regressions");
}
