//! A master that does not answer, told as such: OpenSM drops, without an
//! answer, any SA request whose SM_Key is neither 0 nor its `sa_key`, so
//! a wrong `--smkey` looks like a dead master. lsaquery names the key and
//! that rule; a distributor states its fallback to the master's tables
//! with what it cost, or with `--no-fallback` refuses it; a watch whose
//! master does not answer at its start waits for it instead of exiting.

use std::time::Duration;

use conformance::path_answers::{KEY, start};
use conformance::{LocalSa, NodeProcess, RunOutput, SimulatedFabric, Topology, eventually};

/// What the nodes take loads with: the key the distributor is given, not
/// OpenSM's [`KEY`].
const NODES_KEY: &str = "0x1";

fn fabric() -> SimulatedFabric {
    start(Topology::fat_tree(3, 4, 2), &[], &[])
}

fn lsaquery(fabric: &SimulatedFabric, at: &str, args: &[&str]) -> RunOutput {
    fabric
        .node(at)
        .unwrap()
        .lsaquery()
        .args(args)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Says that the master ignored requests carrying `key`, and why.
fn names_the_key(text: &str, key: &str) {
    assert!(
        text.contains(&format!("SM_Key {key}"))
            && text.contains("OpenSM ignores, without an answer, every SA request whose SM_Key is neither 0 nor its own sa_key"),
        "{text}"
    );
}

#[test]
fn a_query_with_another_key_than_opensm_s_is_told_as_ignored_for_its_key() {
    let fabric = fabric();
    // P_KeyTableRecords: a trusted query, sent with the key given.
    let out = lsaquery(&fabric, "h2", &["--master", "PKTR", "--smkey", NODES_KEY]);
    assert_eq!(out.status.code(), Some(4), "{}{}", out.stdout, out.stderr);
    names_the_key(&out.stderr, NODES_KEY);
    // With OpenSM's key it is answered.
    let out = lsaquery(&fabric, "h2", &["--master", "PKTR", "--smkey", KEY]);
    assert!(out.status.success(), "{}{}", out.stdout, out.stderr);
}

#[test]
fn a_distributor_with_another_key_states_its_fallback_or_refuses_it() {
    let fabric = fabric();
    let mut node = LocalSa::start_unfilled(
        &fabric,
        "h2",
        &["--sm-key", NODES_KEY, "--load-wait", "300"],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let args = ["--distribute", "--compute", "--smkey", NODES_KEY];

    // Refused: nothing sent, exit status 5, the cause named.
    let mut refusing = args.to_vec();
    refusing.push("--no-fallback");
    let out = lsaquery(&fabric, "h9", &refusing);
    assert_eq!(out.status.code(), Some(5), "{}{}", out.stdout, out.stderr);
    names_the_key(&out.stderr, NODES_KEY);
    assert!(
        out.stderr.contains("--no-fallback: nothing sent"),
        "{}",
        out.stderr
    );
    assert_eq!(node.counter("loaded"), 0, "a load reached the node");

    // Taken, and said so with its cost.
    let out = lsaquery(&fabric, "h9", &args);
    assert!(out.status.success(), "{}{}", out.stdout, out.stderr);
    names_the_key(&out.stdout, NODES_KEY);
    assert!(
        out.stdout
            .contains("the fill fell back to the master's tables: it served ")
            && out.stderr.contains("they come from the master instead"),
        "{}{}",
        out.stdout,
        out.stderr
    );
    node.filled_by_a_load().unwrap_or_else(|e| panic!("{e}"));
}

/// `lsaquery --distribute --compute --watch` on h9 with `key`.
fn watch<'f>(fabric: &'f SimulatedFabric, key: &str) -> NodeProcess<'f> {
    fabric
        .node("h9")
        .unwrap()
        .lsaquery()
        .args(["--distribute", "--compute", "--watch", "--smkey", key])
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The lines of the watch's log that say it waits for the master.
fn retries(watch: &NodeProcess<'_>) -> Vec<String> {
    watch
        .stderr()
        .lines()
        .filter(|l| l.contains("trying again in"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_watch_waits_for_a_master_that_does_not_answer_at_its_start() {
    let fabric = fabric();
    let mut nodes: Vec<LocalSa<'_>> = ["h2", "h5"]
        .iter()
        .map(|n| {
            LocalSa::start_unfilled(&fabric, n, &["--sm-key", KEY, "--load-wait", "300"])
                .unwrap_or_else(|e| panic!("{e}"))
        })
        .collect();

    // Another key than OpenSM's: every attempt says why it went unanswered.
    let mut waiting = watch(&fabric, NODES_KEY);
    assert!(
        eventually(Duration::from_secs(60), || retries(&waiting).len() >= 2),
        "{}",
        waiting.stderr()
    );
    assert_eq!(waiting.try_wait(), None, "{}", waiting.stderr());
    names_the_key(&retries(&waiting)[0], NODES_KEY);
    waiting.stop(Duration::from_secs(10));

    // No master at all at the start; it comes, and the watch fills.
    fabric.stop_opensm();
    let watching = watch(&fabric, KEY);
    assert!(
        eventually(Duration::from_secs(60), || !retries(&watching).is_empty()),
        "{}",
        watching.stderr()
    );
    fabric.start_opensm().unwrap_or_else(|e| panic!("{e}"));
    for sa in &mut nodes {
        sa.wait_until("filled by the watch", Duration::from_secs(90), |c| {
            c.get("refreshes_loaded").is_some_and(|n| *n >= 1)
        })
        .unwrap_or_else(|e| panic!("{e}\n{}", watching.stderr()));
    }
    let status = watching.stop(Duration::from_secs(30));
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
}
