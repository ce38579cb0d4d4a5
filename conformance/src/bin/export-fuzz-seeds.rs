//! Seeds the fuzz corpus from the golden vectors: writes every captured MAD
//! (and its payload, framed for the record-walking and RMPP targets, and
//! request/answer exchanges scripted for the SA-core target) into
//! `fuzz/corpus/<target>/golden-*.bin`; and scripted sessions of the
//! RMPP receiver, of the SA core answered by its master, and of the
//! memberships machine, as `script-*.bin`.
//!
//! Usage: `export-fuzz-seeds [FUZZ_DIR]` (default: the workspace's fuzz/)

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::{fs, io};

use conformance::golden;
use mad_codec::zerocopy::IntoBytes;
use mad_codec::{AttributeId, Gid, PathRecordRepr, SaMad};

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

/// A step of an SA-core script in which the master answers the request
/// the core sent `back` requests before its newest, with the SA status
/// whose upper byte is `status`, and `data`.
fn master_answer(back: u8, status: u8, data: &[u8]) -> Vec<u8> {
    let len = u16::try_from(data.len()).unwrap_or(u16::MAX).to_le_bytes();
    [&[6, back, status, len[0], len[1]][..], data].concat()
}

/// SA-core scripts in which the master answers what the core asks it at
/// start (its port's paths, ClassPortInfo, its two subscriptions, the
/// canary ServiceRecord: newest last), then clients ask.
fn core_sessions() -> Vec<(&'static str, Vec<u8>)> {
    // The harness's port: LID 2, GUID 0x1002.
    let gid = |lid: u16| Gid::new(Gid::DEFAULT_PREFIX, 0x1000 + u64::from(lid));
    let paths: Vec<u8> = (3..6u16)
        .flat_map(|dlid| {
            PathRecordRepr {
                sgid: gid(2),
                dgid: gid(dlid),
                slid: 2,
                dlid,
                pkey: 0xFFFF,
                ..PathRecordRepr::default()
            }
            .to_wire()
            .as_bytes()
            .to_vec()
        })
        .collect();
    let startup = [
        master_answer(4, 0, &paths),
        master_answer(3, 0, &[0; 72]),
        master_answer(2, 0, &[]),
        master_answer(1, 0, &[]),
        master_answer(0, 0, &[]),
    ]
    .concat();
    let get = {
        let mut t = PathRecordRepr::default().to_wire();
        t.set_slid(2);
        t.set_dlid(4);
        let mut b =
            mad_codec::SaMadBuilder::request(mad_codec::Method::GET, 1, AttributeId::PATH_RECORD)
                .record(&t);
        b.header_mut().sa.set_component_mask(
            mad_codec::attr::path_record::mask::SLID | mad_codec::attr::path_record::mask::DLID,
        );
        b.into_bytes()
    };
    vec![
        ("script-startup-answered.bin", startup.clone()),
        (
            "script-startup-then-a-get.bin",
            [startup.clone(), core_step(0, &get)].concat(),
        ),
        (
            "script-startup-cut-table.bin",
            [
                vec![7, 4, 0, 0xE8, 0],
                paths.iter().copied().cycle().take(232).collect(),
            ]
            .concat(),
        ),
        (
            "script-startup-refused.bin",
            [master_answer(4, 2, &[]), master_answer(2, 7, &[])].concat(),
        ),
    ]
}

/// Memberships-machine scripts (see its harness for the opcodes): members
/// join and leave two groups while the master answers, loses and
/// refuses, a member goes, a new master comes, time passes.
fn membership_sessions() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        (
            "script-two-members-one-group.bin",
            vec![0, 0x04, 1, 5, 0, 0x06, 2, 5, 0, 0x00, 1, 5, 0, 0x02, 2, 5],
        ),
        (
            "script-lost-and-refused.bin",
            vec![
                0, 0x04, 1, 1, 0, 2, 0, 0x0C, 1, 1, 0, 1, 0, 0x0D, 3, 5, 3, 10,
            ],
        ),
        (
            "script-new-master-and-a-lease.bin",
            vec![0, 0x04, 1, 0, 0x0E, 3, 5, 4, 5, 2, 2, 3, 40, 5],
        ),
    ]
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
        // The SA core (local_sa_core::fuzzing::sa_core): the request from
        // a client, the master's answer to the newest request the core
        // sent it (the request forwarded, if it was), then two seconds.
        if let (Some(request), Some(response)) = (v.mad("request"), v.mad("response")) {
            let answer = SaMad::parse(response).map_err(|e| e.to_string())?;
            let status = (answer.mad().status().0 >> 8) as u8;
            let script = [
                core_step(0, request),
                master_answer(0, status, answer.data()),
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
    n += 2;
    for (name, script) in core_sessions() {
        write(&corpus.join("sa_core"), name, &script).map_err(io)?;
        n += 1;
    }
    for (name, script) in membership_sessions() {
        write(&corpus.join("memberships"), name, &script).map_err(io)?;
        n += 1;
    }
    Ok(n)
}
