//! Fabrics whose master gives P_Key tables to a known SA key, local-sa
//! nodes that wait for a distributor's load, and the PathRecords an SA
//! answers for pairs of LIDs compared byte for byte: what the tests of
//! the path engine and of the distributor's watch share.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use mad_codec::PathRecord;
use mad_codec::zerocopy::{FromBytes, IntoBytes};

use crate::{LocalSa, SimulatedFabric, Topology};

/// The master's SA key (OpenSM gives P_Key tables only for it), also the
/// local-sa nodes' SM_Key.
pub const KEY: &str = "0x5eed";

/// A fabric of `topology` whose OpenSM has `config` lines, `files`, and
/// [`KEY`] as its SA key.
pub fn start(topology: Topology, config: &[&str], files: &[(&str, &str)]) -> SimulatedFabric {
    let key = format!("sa_key {KEY}");
    let mut b = SimulatedFabric::builder(topology).opensm_config(
        config
            .iter()
            .copied()
            .chain([key.as_str()])
            .map(str::to_owned),
    );
    for (name, text) in files {
        b = b.opensm_file(*name, *text);
    }
    b.start().unwrap_or_else(|e| panic!("{e}"))
}

/// local-sa on each of `names`, waiting for a distributor's load (with
/// [`KEY`] as its SM_Key, and `extra` options) rather than asking OpenSM
/// for its table.
pub fn waiting_nodes<'f>(
    fabric: &'f SimulatedFabric,
    names: &[&str],
    extra: &[&str],
) -> Vec<LocalSa<'f>> {
    names
        .iter()
        .map(|n| {
            let mut args = vec!["--sm-key", KEY, "--load-wait", "300"];
            args.extend_from_slice(extra);
            LocalSa::start_unfilled(fabric, n, &args).unwrap_or_else(|e| panic!("{e}"))
        })
        .collect()
}

/// A topology with ibsim port options added to some of its port lines:
/// (node, port line prefix, options).
pub fn with_port_options(t: &Topology, edits: &[(&str, &str, &str)]) -> Topology {
    let mut out = String::new();
    let mut node = String::new();
    for line in t.text().lines() {
        if line.starts_with("Switch") || line.starts_with("Hca") {
            node = line.split('"').nth(1).unwrap_or_default().to_owned();
        }
        out.push_str(line);
        for (n, prefix, options) in edits {
            if node == *n && line.starts_with(prefix) {
                out.push(' ');
                out.push_str(options);
            }
        }
        out.push('\n');
    }
    Topology::parse(format!("{}-edited", t.name()), out).unwrap()
}

/// What to ask an SA: which SA, the pairs, the table.
#[derive(Debug, Clone, Copy)]
pub struct Ask<'a> {
    /// The SA's LID.
    pub sa_lid: u16,
    /// The destinations (and the sources, unless `sources` says).
    pub lids: &'a [u16],
    /// The sources, if not every one of `lids`.
    pub sources: Option<&'a [u16]>,
    /// The P_Key the Gets name, if any.
    pub pkey: Option<u16>,
    /// The ServiceID the Gets name, if any (a QoS key).
    pub service_id: Option<u64>,
    /// The QoS class the Gets name, if any (a QoS key).
    pub qos_class: Option<u16>,
}

/// What the SA at `sa_lid` answers, asked from `node` (`program`: the
/// `opensm-paths` program), for every pair from `source` to `lids`.
pub fn answers_from(
    fabric: &SimulatedFabric,
    node: &str,
    program: &Path,
    (sa_lid, source): (u16, u16),
    lids: &[u16],
) -> HashMap<(u16, u16), Option<PathRecord>> {
    let ask = Ask {
        sa_lid,
        lids,
        sources: Some(&[source]),
        pkey: None,
        service_id: None,
        qos_class: None,
    };
    answers(fabric, node, program, ask)
}

/// The SA's answer to a Get naming each pair of `ask` (the `opensm-paths`
/// program, run on `node`): the record, or none.
pub fn answers(
    fabric: &SimulatedFabric,
    node: &str,
    program: &Path,
    ask: Ask<'_>,
) -> HashMap<(u16, u16), Option<PathRecord>> {
    let list = |lids: &[u16]| {
        let l: Vec<String> = lids.iter().map(u16::to_string).collect();
        l.join(",")
    };
    let mut cmd = fabric
        .node(node)
        .unwrap()
        .command(program)
        .args([
            "--sa-lid",
            &ask.sa_lid.to_string(),
            "--lids",
            &list(ask.lids),
        ])
        .timeout(Duration::from_secs(300));
    if let Some(s) = ask.sources {
        cmd = cmd.args(["--sources", &list(s)]);
    }
    if let Some(p) = ask.pkey {
        cmd = cmd.args(["--pkey", &format!("{p:#x}")]);
    }
    if let Some(id) = ask.service_id {
        cmd = cmd.args(["--service-id", &format!("{id:#x}")]);
    }
    if let Some(class) = ask.qos_class {
        cmd = cmd.args(["--qos-class", &class.to_string()]);
    }
    let out = cmd.output().unwrap_or_else(|e| panic!("{e}"));
    assert!(out.status.success(), "opensm-paths: {}", out.stderr);
    out.stdout
        .lines()
        .map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (s, d) = (f[0].parse().unwrap(), f[1].parse().unwrap());
            let record = (f[3] != "-").then(|| {
                let bytes: Vec<u8> = (0..64)
                    .map(|i| u8::from_str_radix(&f[3][2 * i..2 * i + 2], 16).unwrap())
                    .collect();
                PathRecord::read_from_bytes(&bytes).unwrap()
            });
            ((s, d), record)
        })
        .collect()
}

/// Where the table records `ours` (by LID pair) and the SA's answers
/// `theirs` to Gets naming both LIDs differ, pair by pair, byte for byte:
/// a Get naming both LIDs is answered with its LID pair's table record at
/// Preference 0 (its query's first phase), so that is what `ours` stands
/// for; the SA's Preference is compared.
pub fn differences(
    ours: &HashMap<(u16, u16), PathRecord>,
    theirs: &HashMap<(u16, u16), Option<PathRecord>>,
) -> Vec<String> {
    let answered: HashMap<(u16, u16), Option<PathRecord>> = ours
        .iter()
        .map(|(pair, r)| {
            let mut r = *r;
            r.set_preference(0);
            (*pair, Some(r))
        })
        .collect();
    answer_differences(&answered, theirs)
}

/// Where two SAs' answers to the same Gets differ, pair by pair, byte for
/// byte.
pub fn answer_differences(
    ours: &HashMap<(u16, u16), Option<PathRecord>>,
    theirs: &HashMap<(u16, u16), Option<PathRecord>>,
) -> Vec<String> {
    let bytes =
        |r: Option<&Option<PathRecord>>| r.copied().flatten().map(|r| r.as_bytes().to_vec());
    let mut out = Vec::new();
    for (pair, t) in theirs {
        let o = ours.get(pair);
        if bytes(o) != bytes(Some(t)) {
            out.push(format!("{pair:?}: ours {o:?}, theirs {t:?}"));
        }
    }
    out.sort();
    out
}

/// A policy of levels by key: ServiceID 0x1060002 gets SL 2 and MTU 512,
/// QoS class 3 SL 3, 10 Gb/s and PacketLifeTime 12, and the RDS ServiceIDs
/// (qos-ulps, after the rules) SL 1.
pub const QOS_POLICY: &str = "
qos-levels
    qos-level
        name: default
        sl: 0
    end-qos-level
    qos-level
        name: small
        sl: 2
        mtu-limit: 2
    end-qos-level
    qos-level
        name: slow
        sl: 3
        rate-limit: 3
        packet-life: 12
    end-qos-level
end-qos-levels
qos-match-rules
    qos-match-rule
        service-id: 0x1060002
        qos-level-name: small
    end-qos-match-rule
    qos-match-rule
        qos-class: 3
        qos-level-name: slow
    end-qos-match-rule
end-qos-match-rules
qos-ulps
    any, service-id 0x0000000001060000-0x000000000106ffff : 1
end-qos-ulps
";
