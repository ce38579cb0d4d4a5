//! Requests no ordinary SA client builds — a status set in the request,
//! another class version, an AttributeOffset in a Get — sent as raw bytes
//! (`mad-probe`) to OpenSM and to local-sa from the same node, and their
//! answers compared byte for byte: equal, except where the IBA requires
//! otherwise (docs/wire-contract.md names each such difference).

use std::time::Duration;

use conformance::{LocalSa, Node, SimulatedFabric, Topology};
use mad_codec::attr::path_record::mask as pr;
use mad_codec::header::SaMadHeader;
use mad_codec::zerocopy::FromZeros;
use mad_codec::{AttributeId, MadStatus, Method, PathRecord, SaMad, SaMadBuilder};

/// A PathRecord Get from `slid` to `dlid`, with `edit` applied to its header.
fn path_get(slid: u16, dlid: u16, edit: impl FnOnce(&mut SaMadHeader)) -> String {
    let mut t = PathRecord::new_zeroed();
    t.set_slid(slid);
    t.set_dlid(dlid);
    let mut b =
        SaMadBuilder::request(Method::GET, 0x0102_0304, AttributeId::PATH_RECORD).record(&t);
    b.header_mut().sa.set_component_mask(pr::SLID | pr::DLID);
    edit(b.header_mut());
    b.into_bytes().iter().map(|b| format!("{b:02x}")).collect()
}

/// What the SA at `lid` answers to `request` (hex), asked from `node`.
fn probe(node: &Node<'_>, lid: u16, request: &str) -> Vec<u8> {
    let out = node
        .command(env!("CARGO_BIN_EXE_mad-probe"))
        .args(["--sa-lid", &lid.to_string(), request])
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(out.status.success(), "mad-probe: {}", out.stderr);
    let hex = out.stdout.trim();
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

/// Bytes of a Get answer that are real: the headers and one record
/// (OpenSM leaves whatever its buffer held after them).
const GET_ANSWER: usize = SaMadHeader::LEN + 64;

/// Bytes of an answer that pass the simulator unchanged (it garbles the
/// rest of a MAD; SIMULATOR.md).
const THROUGH_THE_SIMULATOR: usize = 224;

fn parse(bytes: &[u8]) -> SaMad<'_> {
    SaMad::parse(bytes).unwrap_or_else(|e| panic!("undecodable answer: {e}"))
}

/// `bytes` with the MAD status replaced by `status`.
fn with_status(bytes: &[u8], status: MadStatus) -> Vec<u8> {
    let mut b = bytes.to_vec();
    b[4..6].copy_from_slice(&status.0.to_be_bytes());
    b
}

#[test]
fn odd_requests_answer_as_opensm_does_or_as_the_iba_requires() {
    let fabric = SimulatedFabric::builder(Topology::fat_tree(3, 4, 2))
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let _sa = LocalSa::start(&fabric, "h2", &[]).unwrap_or_else(|e| panic!("{e}"));
    let node = fabric.node("h2").unwrap();
    let me = node.port().unwrap();
    let peer = fabric.node("h5").unwrap().port().unwrap().lid;
    // Both answers to one request: OpenSM's, local-sa's.
    let ask = |request: &str| {
        (
            probe(&node, me.sm_lid, request),
            probe(&node, me.lid, request),
        )
    };

    // A plain Get: the same headers and record.
    let (opensm, ours) = ask(&path_get(me.lid, peer, |_| {}));
    assert_eq!(parse(&opensm).mad().status(), MadStatus::OK);
    assert_eq!(ours[..GET_ANSWER], opensm[..GET_ANSWER], "a plain Get");

    // Errors: the whole request echoed with the status, whatever status
    // and AttributeOffset the request carried.
    for (what, edit) in [
        ("AttributeOffset 8", (MadStatus::OK, 8)),
        ("AttributeOffset 0", (MadStatus::OK, 0)),
        ("status 0x001c", (MadStatus(0x001c), 8)),
    ] {
        let (opensm, ours) = ask(&path_get(me.lid, 999, |h| {
            h.mad.set_status(edit.0);
            h.sa.set_attribute_offset(edit.1);
        }));
        assert_eq!(parse(&opensm).mad().status(), MadStatus::ERR_NO_RECORDS);
        assert_eq!(
            ours[..THROUGH_THE_SIMULATOR],
            opensm[..THROUGH_THE_SIMULATOR],
            "a Get for an unknown DLID, {what}"
        );
    }

    // A status in a successful Get's request: OpenSM copies the request's
    // header into its answer, status included, so the answer reads as
    // that error; the IBA reserves the field in requests, and local-sa
    // answers OK. Nothing else differs.
    for status in [MadStatus::ERR_NO_RECORDS, MadStatus(0x001c)] {
        let (opensm, ours) = ask(&path_get(me.lid, peer, |h| h.mad.set_status(status)));
        assert_eq!(parse(&opensm).mad().status(), status, "OpenSM echoes it");
        assert_eq!(parse(&ours).mad().status(), MadStatus::OK);
        assert_eq!(
            ours[..GET_ANSWER],
            with_status(&opensm, MadStatus::OK)[..GET_ANSWER],
            "a Get carrying status {status}"
        );
    }

    // Class version 1: OpenSM answers it as version 2 here (through the
    // simulator). On hardware no agent of the port receives it — the
    // kernel's MAD layer finds agents by class version, and both
    // registered version 2 — so the kernel answers it 0x000C (method or
    // attribute unsupported), as the device does under the simulator.
    // (The core answers BAD_VERSION, IBA 13.4.4, to one it is handed.)
    let (opensm, ours) = ask(&path_get(me.lid, peer, |h| h.mad.set_class_version(1)));
    assert_eq!(parse(&opensm).mad().status(), MadStatus::OK);
    assert_eq!(
        parse(&ours).mad().status(),
        MadStatus::METHOD_ATTR_UNSUPPORTED
    );
}
