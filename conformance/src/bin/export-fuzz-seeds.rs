//! Seeds the fuzz corpus from the golden vectors: writes every captured MAD
//! (and its payload, framed for the record-walking and RMPP targets, and
//! request/answer exchanges scripted for the SA-core target) into
//! `fuzz/corpus/<target>/golden-*.bin`.
//!
//! Usage: export-fuzz-seeds [FUZZ_DIR]   (default: the workspace's fuzz/)

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::{fs, io};

use conformance::golden;
use mad_codec::{AttributeId, SaMad};

fn main() -> ExitCode {
    let fuzz_dir = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz"));
    match export(&fuzz_dir) {
        Ok(n) => {
            println!(
                "wrote {n} seed files under {}",
                fuzz_dir.join("corpus").display()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("export-fuzz-seeds: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The selector byte `mad_codec::fuzzing::walk_records` maps to each
/// attribute.
fn record_kind(attr: AttributeId) -> Option<u8> {
    Some(match attr {
        AttributeId::PATH_RECORD => 0,
        AttributeId::MC_MEMBER_RECORD => 1,
        AttributeId::NODE_RECORD => 2,
        AttributeId::SERVICE_RECORD => 3,
        AttributeId::INFORM_INFO_RECORD => 4,
        AttributeId::INFORM_INFO => 5,
        _ => return None,
    })
}

/// One MAD step of an SA-core script: opcode (0 client, 1 master), client
/// LID 9, the length, the MAD.
fn core_step(op: u8, mad: &[u8]) -> Vec<u8> {
    let len = u16::try_from(mad.len()).unwrap_or(u16::MAX).to_le_bytes();
    [&[op, 9, len[0], len[1]][..], mad].concat()
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<()> {
    fs::create_dir_all(dir)?;
    fs::write(dir.join(name), bytes)
}

fn export(fuzz_dir: &Path) -> Result<usize, String> {
    let corpus = fuzz_dir.join("corpus");
    let mut n = 0;
    let io = |e: io::Error| e.to_string();
    for v in golden::load_all()? {
        for section in ["request", "response", "mad"] {
            let Some(bytes) = v.mad(section) else {
                continue;
            };
            let file = format!("golden-{}-{section}.bin", v.name);
            for target in ["mad_parse", "mad_roundtrip"] {
                write(&corpus.join(target), &file, bytes).map_err(io)?;
                n += 1;
            }
            let Ok(mad) = SaMad::parse(bytes) else {
                continue;
            };
            if let Some(kind) = record_kind(mad.mad().attribute_id()) {
                let offset = mad.sa().attribute_offset().to_be_bytes();
                let framed = [&[kind, offset[0], offset[1]][..], mad.data()].concat();
                write(&corpus.join("sa_records"), &file, &framed).map_err(io)?;
                n += 1;
            }
            let perfect = [&[0u8][..], mad.data()].concat();
            write(&corpus.join("rmpp_reassembly"), &file, &perfect).map_err(io)?;
            n += 1;
        }
        // The SA core (local_sa::agent::fuzzing::drive): the request from a
        // client, the answer as if from the master, then two seconds.
        if let (Some(request), Some(response)) = (v.mad("request"), v.mad("response")) {
            let script = [
                core_step(0, request),
                core_step(1, response),
                vec![2, 0xD0, 0x07],
            ]
            .concat();
            write(
                &corpus.join("sa_core"),
                &format!("golden-{}.bin", v.name),
                &script,
            )
            .map_err(io)?;
            n += 1;
        }
    }
    // Scripted receiver sessions (see fuzzing::rmpp_reassembly): a valid
    // three-segment transfer, then one with a duplicate and a gap.
    let step = |kind: u8, flags: u8, seg: u8, paylen: u16, fill: u8| {
        let pl = paylen.to_be_bytes();
        [kind, flags, seg, 1, 1, 0, pl[0], pl[1], fill, 0]
    };
    let valid = [
        vec![1u8],
        step(0, 0x3, 1, 620, 0xA1).to_vec(),
        step(0, 0x1, 2, 0, 0xA2).to_vec(),
        step(0, 0x5, 3, 220, 0xA3).to_vec(),
    ]
    .concat();
    write(
        &corpus.join("rmpp_reassembly"),
        "script-valid-3-segments.bin",
        &valid,
    )
    .map_err(io)?;
    let messy = [
        vec![1u8],
        step(0, 0x3, 1, 620, 0xB1).to_vec(),
        step(0, 0x5, 3, 220, 0xB3).to_vec(),
        step(0, 0x3, 1, 620, 0xB1).to_vec(),
        step(0, 0x1, 2, 0, 0xB2).to_vec(),
        step(1, 0x1, 1, 5, 0).to_vec(),
    ]
    .concat();
    write(
        &corpus.join("rmpp_reassembly"),
        "script-reordered-duplicate.bin",
        &messy,
    )
    .map_err(io)?;
    Ok(n + 2)
}
