//! `local-sa --metrics`: on the fabric, after a query answered from the
//! cache OpenSM filled, Prometheus' GET /metrics shows it — the port's
//! hits, its records as the counters file has them, and the doors'
//! counters — in the text exposition format.

use std::io::{Read as _, Write as _};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use conformance::{LocalSa, SimulatedFabric, Topology};

fn scrape(socket: &std::path::Path) -> String {
    let mut s = UnixStream::connect(socket).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: local-sa\r\n\r\n")
        .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

/// The value of the sample line starting with `series ` in `body`.
fn sample(body: &str, series: &str) -> Option<u64> {
    body.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.parse().ok())
}

#[test]
fn a_query_shows_in_the_metrics() {
    let fabric = SimulatedFabric::builder(Topology::fat_tree(3, 4, 2))
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let socket = fabric.dir().join("metrics.sock");
    let mut sa = LocalSa::start(&fabric, "h2", &["--metrics", socket.to_str().unwrap()])
        .unwrap_or_else(|e| panic!("{e}"));
    let node = fabric.node("h2").unwrap();
    let me = node.port().unwrap();
    let far = fabric.node("h9").unwrap().port().unwrap();
    let out = node
        .lsaquery()
        .args([
            "-p",
            "--slid",
            &me.lid.to_string(),
            "--dlid",
            &far.lid.to_string(),
        ])
        .output()
        .unwrap();
    assert!(out.stdout.contains("PathRecord dump:"), "{}", out.stderr);
    sa.wait_until("the hit counted", Duration::from_secs(10), |c| {
        c.get("hits").is_some_and(|h| *h >= 1)
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let records = sa.counter("records");

    // Rendered every --stats-interval (1 s): wait for the hit to show.
    // The port's label is its adapter and port number.
    let port_label = |body: &str| {
        body.lines()
            .find_map(|l| l.strip_prefix("local_sa_hits_total{port=\""))
            .and_then(|rest| rest.split_once('"'))
            .map(|(label, _)| format!("{{port=\"{label}\"}}"))
    };
    let mut response = String::new();
    for _ in 0..50 {
        response = scrape(&socket);
        let hits = port_label(&response)
            .and_then(|port| sample(&response, &format!("local_sa_hits_total{port}")));
        if hits.is_some_and(|h| h >= 1) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let port = port_label(&response).unwrap_or_else(|| panic!("no port label:\n{response}"));
    assert!(port.ends_with("/1\"}"), "{port}");
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(
        head.contains("Content-Type: text/plain; version=0.0.4"),
        "{head}"
    );
    assert!(
        sample(body, &format!("local_sa_hits_total{port}")).is_some_and(|h| h >= 1),
        "{body}"
    );
    assert_eq!(
        sample(body, &format!("local_sa_records{port}")),
        Some(records),
        "{body}"
    );
    assert!(
        body.contains("# TYPE local_sa_hits_total counter\n"),
        "{body}"
    );
    assert!(body.contains("# TYPE local_sa_records gauge\n"), "{body}");
    assert!(
        sample(body, "local_sa_door_connections").is_some(),
        "{body}"
    );
    assert!(body.contains("local_sa_build_info{version=\""), "{body}");

    // The breakdowns: the query's answer by attribute, method and status,
    // the master's answer times (the first fill at least), the store's
    // bytes.
    let label = port.trim_start_matches('{').trim_end_matches('}');
    assert!(
        sample(
            body,
            &format!(
                "local_sa_answers_total{{{label},attribute=\"PATH_RECORD\",method=\"GET_TABLE\",status=\"OK\"}}"
            )
        )
        .is_some_and(|n| n >= 1),
        "{body}"
    );
    assert!(
        body.contains("# TYPE local_sa_upstream_latency_seconds histogram\n"),
        "{body}"
    );
    let answered = sample(
        body,
        &format!("local_sa_upstream_latency_seconds_count{port}"),
    );
    assert!(answered.is_some_and(|n| n >= 1), "{body}");
    assert_eq!(
        sample(
            body,
            &format!("local_sa_upstream_latency_seconds_bucket{{{label},le=\"+Inf\"}}")
        ),
        answered,
        "{body}"
    );
    assert!(
        sample(body, &format!("local_sa_cache_bytes{port}")).is_some_and(|b| b > records * 64),
        "a record is 64 bytes and more: {body}"
    );
}
