//! `lsaquery --bench` against OpenSM and against local-sa on the
//! simulated fabric: every query sent is answered and counted, a status
//! other than success counted as such, and an SA that answers nothing
//! (OpenSM ignoring a wrong SM_Key) told with exit status 4.

use std::time::Duration;

use conformance::path_answers::start;
use conformance::{LocalSa, RunOutput, SimulatedFabric, Topology};

fn bench(fabric: &SimulatedFabric, at: &str, args: &[&str]) -> RunOutput {
    fabric
        .node(at)
        .unwrap()
        .lsaquery()
        .args(args)
        .args(["--method", "get", "--json"])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The run's JSON object.
fn report(out: &RunOutput) -> serde_json::Value {
    serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| panic!("{e}: {out:?}"))
}

#[test]
fn every_query_is_answered_and_counted_by_opensm_and_by_local_sa_and_silence_is_told() {
    let fabric = start(Topology::fat_tree(3, 4, 2), &[], &[]);
    let lid = |node: &str| fabric.node(node).unwrap().port().unwrap().lid;
    let pair = format!("{}:{}", lid("h2"), lid("h7"));
    let _sa = LocalSa::start(&fabric, "h2", &[]).unwrap_or_else(|e| panic!("{e}"));
    for aim in [&["--master"][..], &[]] {
        let mut args = aim.to_vec();
        args.extend(["--src-to-dst", &pair, "--bench", "300", "--window", "8"]);
        let out = bench(&fabric, "h2", &args);
        assert!(out.status.success(), "{aim:?}: {out:?}");
        let r = report(&out);
        assert_eq!(
            (
                &r["sent"],
                &r["answered"],
                &r["error_status"],
                &r["unanswered"]
            ),
            (&300.into(), &300.into(), &0.into(), &0.into()),
            "{aim:?}: {r}"
        );
        assert_eq!(r["window"], 8);
        assert!(
            r["latency_us"]["p50"].as_u64().unwrap() <= r["latency_us"]["max"].as_u64().unwrap()
        );
    }
    // A destination no port has: every answer is an error status.
    let out = bench(
        &fabric,
        "h2",
        &[
            "--master",
            "--src-to-dst",
            &format!("{}:999", lid("h2")),
            "--bench",
            "20",
        ],
    );
    let r = report(&out);
    assert_eq!(
        (&r["answered"], &r["error_status"]),
        (&20.into(), &20.into()),
        "{r}"
    );
    // A key OpenSM ignores: nothing answers, and the run says so.
    let out = bench(
        &fabric,
        "h2",
        &[
            "--master",
            "--smkey",
            "0x1234",
            "--timeout",
            "100",
            "--retries",
            "0",
            "--src-to-dst",
            &pair,
            "--bench",
            "5",
        ],
    );
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    assert!(
        out.stderr.contains("no query was answered"),
        "{}",
        out.stderr
    );
    let r = report(&out);
    assert_eq!(
        (&r["answered"], &r["unanswered"]),
        (&0.into(), &5.into()),
        "{r}"
    );
}
