//! The same PathRecord query asked of local-sa and of OpenSM through
//! lsaquery on one node, and the two answers compared: statuses equal, and
//! records equal byte for byte wherever OpenSM's answer arrives whole (the
//! simulator cuts OpenSM's multi-MAD answers to their first two records;
//! those two must equal local-sa's first two).

use mad_codec::header::RmppType;
use mad_codec::{MAD_LEN, MadStatus, Method, SaMad};

use crate::Node;
use crate::saquery::{PATIENT, parse_mad_dump};

/// Bytes of a simulator-cut answer that hold whole records.
const WHOLE_OF_CUT: usize = 168;

/// What an SA answered to one query.
#[derive(Debug)]
pub struct SaAnswer {
    /// The answer's MAD status.
    pub status: MadStatus,
    /// The data of a successful answer: one record for Get, the records of
    /// a table; empty for errors.
    pub data: Vec<u8>,
    /// The answer came cut by the simulator: only `data[..168]` is real.
    pub cut: bool,
}

impl SaAnswer {
    /// The whole records of the answer.
    pub fn records(&self) -> Vec<&[u8]> {
        let len = if self.cut {
            WHOLE_OF_CUT / 64 * 64
        } else {
            self.data.len()
        };
        self.data[..len.min(self.data.len())]
            .chunks_exact(64)
            .collect()
    }
}

/// Runs lsaquery with `-d` on `node`, aimed by `aim` (`--master` or
/// nothing for local-sa), and decodes the answer it printed.
pub fn ask(node: &Node<'_>, aim: &[&str], args: &[String]) -> SaAnswer {
    // OpenSM's answers are the reference: asked patiently.
    let patience: &[&str] = if aim.contains(&"--master") {
        &PATIENT
    } else {
        &[]
    };
    let out = node
        .lsaquery()
        .args(aim)
        .args(patience)
        .args(args)
        .arg("-d")
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let Some(mad) = parse_mad_dump(&out.stdout).and_then(|d| d.response) else {
        panic!(
            "lsaquery {aim:?} {args:?}: no answer printed ({})\n{}{}",
            out.status, out.stdout, out.stderr
        );
    };
    let m = SaMad::parse(&mad).unwrap_or_else(|e| panic!("{args:?}: undecodable answer: {e}"));
    let status = m.mad().status();
    let cut =
        mad.len() == MAD_LEN && m.rmpp().is_active() && m.rmpp().rmpp_type() == RmppType::NONE;
    let data = if status.is_ok() {
        if m.mad().method() == Method::GET_RESP {
            m.data()[..64].to_vec()
        } else {
            m.data().to_vec()
        }
    } else {
        Vec::new()
    };
    SaAnswer { status, data, cut }
}

/// Compares local-sa's and OpenSM's answers; a description of the
/// difference, if any.
pub fn compare(node: &Node<'_>, args: &[String]) -> Option<String> {
    let theirs = ask(node, &["--master"], args);
    let ours = ask(node, &[], args);
    differ(args, &theirs, &ours)
}

/// Each query of `queries` asked of local-sa on `node`, against OpenSM's
/// answers `theirs` (asked before, in the same order): the differences.
pub fn differences(node: &Node<'_>, queries: &[Vec<String>], theirs: &[SaAnswer]) -> Vec<String> {
    queries
        .iter()
        .zip(theirs)
        .filter_map(|(q, t)| differ(q, t, &ask(node, &[], q)))
        .collect()
}

/// Fails with every difference listed, if there are any among `asked`
/// queries (`when`: the circumstances, for the message).
pub fn assert_none_differ(differences: &[String], asked: usize, when: &str) {
    assert!(
        differences.is_empty(),
        "{when}{} of {asked} queries differ:\n{}",
        differences.len(),
        differences.join("\n")
    );
}

/// How local-sa's answer `ours` to `args` differs from OpenSM's `theirs`,
/// if it does.
pub fn differ(args: &[String], theirs: &SaAnswer, ours: &SaAnswer) -> Option<String> {
    if theirs.status != ours.status {
        return Some(format!(
            "{args:?}: status {} from local-sa, {} from OpenSM",
            ours.status, theirs.status
        ));
    }
    let (t, o) = (theirs.records(), ours.records());
    if theirs.cut {
        if o.len() < t.len() || o[..t.len()] != t[..] {
            return Some(format!(
                "{args:?}: OpenSM's first {} records (of a cut answer) differ",
                t.len()
            ));
        }
    } else if o != t {
        return Some(format!(
            "{args:?}: {} records from local-sa, {} from OpenSM, or different bytes",
            o.len(),
            t.len()
        ));
    }
    None
}

/// OpenSM's reversible PathRecord from `slid` to `dlid` in the default
/// partition (what ibacm and librdmacm ask for), through
/// `lsaquery --master` on `node`, asked [`PATIENT`]ly.
pub fn opensm_path(node: &Node<'_>, slid: u16, dlid: u16) -> mad_codec::PathRecord {
    use mad_codec::zerocopy::FromBytes as _;
    let (slid, dlid) = (slid.to_string(), dlid.to_string());
    let out = node
        .lsaquery()
        .arg("--master")
        .args(PATIENT)
        .args([
            "-p", "--slid", &slid, "--dlid", &dlid, "--pkey", "0xffff", "-r", "1",
        ])
        .arg("-d")
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let (_, data) = crate::saquery::printed_answer(&out.stdout)
        .unwrap_or_else(|| panic!("no answer from OpenSM: {}{}", out.stdout, out.stderr));
    mad_codec::PathRecord::read_from_bytes(&data[..64]).unwrap()
}
