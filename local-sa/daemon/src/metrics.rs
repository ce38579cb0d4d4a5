//! The counters in Prometheus' text exposition format (version 0.0.4),
//! for `--metrics`: each port's counters labelled `port="<ca>/<port>"`,
//! the doors' and the kernel door's for the daemon as a whole. Counters
//! are named `local_sa_<name>_total`, gauges `local_sa_<name>`; HELP is
//! the counter's own documentation.

use std::fmt::Write as _;

use local_sa_core::agent::Registrant;
use local_sa_core::counters::{Described, Kind};
use local_sa_core::stats::Stats;

/// One port's part of the exposition.
pub(crate) struct PortMetrics {
    /// `<ca>/<port>`.
    pub(crate) label: String,
    /// Its counters, in the same order for every port.
    pub(crate) counters: Vec<Described>,
    /// Its answers by attribute, method and status, and the master's
    /// answer times.
    pub(crate) stats: Stats,
    /// Who holds its registrations (and was refused some), the most
    /// first.
    pub(crate) registrants: Vec<Registrant>,
}

/// Owners per port the metrics show, the most registrations first.
const METRIC_REGISTRANTS: usize = 32;

/// The doors' and the kernel door's counters: kind and meaning.
const DAEMON_COUNTERS: [(&str, Kind, &str); 25] = [
    (
        "door_connections",
        Kind::Gauge,
        "Local connections (local API and ibacm protocol) open now.",
    ),
    (
        "door_api_connections",
        Kind::Gauge,
        "Local API connections (registrations, cache control, status) open now.",
    ),
    (
        "door_acm_connections",
        Kind::Gauge,
        "ibacm-protocol connections (ib_acme, librdmacm, lsaquery --resolve) open now.",
    ),
    (
        "door_refused_total",
        Kind::Counter,
        "Local connections refused: as many as allowed (--max-connections) were open.",
    ),
    (
        "door_refused_per_user",
        Kind::Counter,
        "Local connections refused: the user had as many as allowed (--max-connections-per-user) open.",
    ),
    (
        "door_slow_readers",
        Kind::Counter,
        "Local connections closed for not reading what was queued for them.",
    ),
    (
        "door_slow_senders",
        Kind::Counter,
        "Local connections closed for a frame that took too long, or a first frame that never came.",
    ),
    (
        "door_refused_memory",
        Kind::Counter,
        "Local connections closed because their frame would pass the bytes all frames being received may hold.",
    ),
    (
        "acm_clients_kept",
        Kind::Gauge,
        "ibacm clients in the service manager's descriptor store now, to be served on by the next local-sa after a restart or a crash.",
    ),
    (
        "acm_clients_not_kept",
        Kind::Counter,
        "ibacm connections open a second or more that the descriptor store could not take (all its slots taken, or the service manager refused).",
    ),
    (
        "door_partial_bytes",
        Kind::Gauge,
        "Bytes of local requests received in part (read, their frame not yet whole), every connection together.",
    ),
    (
        "netlink_resolves",
        Kind::Counter,
        "RDMA_NL_LS RESOLVEs (PathRecord queries) received from the kernel.",
    ),
    (
        "netlink_ip_resolves",
        Kind::Counter,
        "RDMA_NL_LS IP_RESOLVEs received from the kernel.",
    ),
    (
        "netlink_answered",
        Kind::Counter,
        "Replies to the kernel with a record or a GID.",
    ),
    (
        "netlink_from_cache",
        Kind::Counter,
        "RESOLVEs answered from the cache without the master.",
    ),
    (
        "netlink_failed",
        Kind::Counter,
        "Replies to the kernel with RDMA_NL_LS_F_ERR.",
    ),
    (
        "netlink_malformed",
        Kind::Counter,
        "Netlink messages that could not be decoded (answered ERR or dropped).",
    ),
    (
        "netlink_not_from_kernel",
        Kind::Counter,
        "Netlink datagrams from a sender other than the kernel, dropped unread.",
    ),
    (
        "netlink_empty",
        Kind::Counter,
        "Empty netlink datagrams, ignored.",
    ),
    (
        "netlink_unknown_port",
        Kind::Counter,
        "RESOLVEs for a device or port this daemon does not serve.",
    ),
    (
        "netlink_refused_pending",
        Kind::Counter,
        "RESOLVEs refused because as many as allowed were waiting.",
    ),
    (
        "netlink_past_deadline",
        Kind::Counter,
        "RESOLVEs answered ERR because the master had not answered in time (counted in failed too).",
    ),
    (
        "netlink_kernel_errors",
        Kind::Counter,
        "Errors the kernel sent back for messages of local-sa's.",
    ),
    (
        "netlink_replies_dropped",
        Kind::Counter,
        "Replies to the kernel dropped because its socket was full.",
    ),
    (
        "metrics_refused",
        Kind::Counter,
        "Metrics connections refused at the limit on connections open.",
    ),
];

/// A metric's exposition name.
fn metric_name(name: &str, kind: Kind) -> String {
    match kind {
        Kind::Counter if !name.ends_with("_total") => format!("local_sa_{name}_total"),
        _ => format!("local_sa_{name}"),
    }
}

/// `# HELP` and `# TYPE` lines.
fn header(out: &mut String, metric: &str, kind: Kind, help: &str) {
    let kind = match kind {
        Kind::Counter => "counter",
        Kind::Gauge => "gauge",
    };
    typed_header(out, metric, kind, help);
}

/// `# HELP` and `# TYPE` lines for a metric of type `kind` (`histogram`
/// too).
fn typed_header(out: &mut String, metric: &str, kind: &str, help: &str) {
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    let help = help.replace('\\', "\\\\");
    let _ = writeln!(out, "# HELP {metric} {help}\n# TYPE {metric} {kind}");
}

/// A label value, escaped.
fn label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The exposition: `ports`' counters and breakdowns, then `daemon`'s
/// counters.
pub(crate) fn render(ports: &[PortMetrics], daemon: &[(&str, u64)]) -> String {
    let mut out = String::new();
    header(
        &mut out,
        "local_sa_build_info",
        Kind::Gauge,
        "local-sa's version.",
    );
    let _ = writeln!(
        out,
        "local_sa_build_info{{version=\"{}\"}} 1",
        env!("CARGO_PKG_VERSION")
    );
    if let Some(first) = ports.first() {
        for (i, d) in first.counters.iter().enumerate() {
            let metric = metric_name(d.name, d.kind);
            header(&mut out, &metric, d.kind, d.help);
            for p in ports {
                if let Some(c) = p.counters.get(i) {
                    let _ = writeln!(out, "{metric}{{port=\"{}\"}} {}", label(&p.label), c.value);
                }
            }
        }
        render_answers(&mut out, ports);
        render_latency(&mut out, ports);
        render_registrants(&mut out, ports);
    }
    for (name, value) in daemon {
        let (kind, help) = DAEMON_COUNTERS
            .iter()
            .find(|(n, _, _)| n == name)
            .map_or((Kind::Counter, "A local-sa counter."), |(_, k, h)| (*k, *h));
        let metric = metric_name(name, kind);
        header(&mut out, &metric, kind, help);
        let _ = writeln!(out, "{metric} {value}");
    }
    out
}

/// An exposition with a sample of every metric local-sa serves (one port,
/// one answer, one registrant, every daemon counter), from which the
/// catalogue in docs/metrics.md is written.
pub(crate) fn example() -> String {
    let mut stats = Stats::default();
    stats.answers.count(local_sa_core::stats::AnswerKey {
        attribute: mad_codec::AttributeId::PATH_RECORD,
        method: mad_codec::Method::GET_TABLE,
        status: mad_codec::MadStatus::OK,
    });
    stats
        .upstream_latency
        .observe(std::time::Duration::from_micros(500));
    let port = PortMetrics {
        label: "mlx5_0/1".into(),
        counters: local_sa_core::Counters::default().described(),
        stats,
        registrants: vec![Registrant {
            owner: local_sa_core::quota::Owner::User(0),
            groups: 0,
            created: 0,
            subscriptions: 0,
            refused: 0,
        }],
    };
    let daemon: Vec<(&str, u64)> = DAEMON_COUNTERS.iter().map(|(n, _, _)| (*n, 0)).collect();
    render(&[port], &daemon)
}

/// A wire code's name, or its number.
fn code_name(name: Option<&str>, value: u16) -> String {
    name.map_or_else(|| format!("{value:#06x}"), str::to_owned)
}

/// `local_sa_answers_total{port, attribute, method, status}`.
fn render_answers(out: &mut String, ports: &[PortMetrics]) {
    let metric = "local_sa_answers_total";
    header(
        out,
        metric,
        Kind::Counter,
        "Answers to SA requests from the fabric, by the request's attribute and method and the \
         status answered (attribute \"other\": past the limit on series).",
    );
    for p in ports {
        let port = label(&p.label);
        for (key, n) in p.stats.answers.series() {
            let _ = writeln!(
                out,
                "{metric}{{port=\"{port}\",attribute=\"{}\",method=\"{}\",status=\"{}\"}} {n}",
                code_name(key.attribute.name(), key.attribute.0),
                code_name(key.method.name(), u16::from(key.method.0)),
                key.status.names(),
            );
        }
        let others = p.stats.answers.others();
        if others > 0 {
            let _ = writeln!(
                out,
                "{metric}{{port=\"{port}\",attribute=\"other\",method=\"other\",status=\"other\"}} {others}"
            );
        }
    }
}

/// Per owner (a user, a requester port) of a port's registrations: what
/// it holds and what was refused to it, for the owners with the most.
fn render_registrants(out: &mut String, ports: &[PortMetrics]) {
    type Value = fn(&Registrant) -> u64;
    let series: [(&str, Kind, &str, Value); 4] = [
        (
            "local_sa_registrant_groups",
            Kind::Gauge,
            "Distinct multicast groups an owner (a local user, a requester port) holds or is joining through this port now.",
            |r| r.groups as u64,
        ),
        (
            "local_sa_registrant_created_groups",
            Kind::Gauge,
            "Of them, groups its joins created at the master, now.",
            |r| r.created as u64,
        ),
        (
            "local_sa_registrant_subscriptions",
            Kind::Gauge,
            "Distinct notice subscriptions an owner holds through this port now.",
            |r| r.subscriptions as u64,
        ),
        (
            "local_sa_registrant_refused_total",
            Kind::Counter,
            "Registrations refused to an owner for its limits.",
            |r| r.refused,
        ),
    ];
    for (metric, kind, help, value) in series {
        header(out, metric, kind, help);
        for p in ports {
            let port = label(&p.label);
            for r in p.registrants.iter().take(METRIC_REGISTRANTS) {
                let owner = label(&r.owner.to_string());
                let _ = writeln!(
                    out,
                    "{metric}{{port=\"{port}\",owner=\"{owner}\"}} {}",
                    value(r)
                );
            }
        }
    }
}

/// `local_sa_upstream_latency_seconds`, a histogram.
fn render_latency(out: &mut String, ports: &[PortMetrics]) {
    let metric = "local_sa_upstream_latency_seconds";
    typed_header(
        out,
        metric,
        "histogram",
        "How long the master SA took to answer this port's requests (from the first attempt; \
         unanswered requests are counted in upstream_failures).",
    );
    for p in ports {
        let port = label(&p.label);
        let h = &p.stats.upstream_latency;
        for (bound_micros, n) in h.cumulative() {
            let le = bound_micros as f64 / 1e6;
            let _ = writeln!(out, "{metric}_bucket{{port=\"{port}\",le=\"{le}\"}} {n}");
        }
        let _ = writeln!(
            out,
            "{metric}_bucket{{port=\"{port}\",le=\"+Inf\"}} {}\n{metric}_sum{{port=\"{port}\"}} {}\n\
             {metric}_count{{port=\"{port}\"}} {}",
            h.count(),
            h.sum_micros() as f64 / 1e6,
            h.count()
        );
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use local_sa_core::Counters;
    use local_sa_core::quota::Owner;
    use local_sa_core::stats::AnswerKey;
    use mad_codec::{AttributeId, MadStatus, Method};

    use super::*;

    #[test]
    fn counters_and_gauges_per_port_with_help() {
        let a = Counters {
            hits: 5,
            records: 7,
            ..Counters::default()
        };
        let b = Counters {
            hits: 1,
            ..Counters::default()
        };
        let mut stats = Stats::default();
        stats.answers.count(AnswerKey {
            attribute: AttributeId::PATH_RECORD,
            method: Method::GET_TABLE,
            status: MadStatus::OK,
        });
        stats.answers.count(AnswerKey {
            attribute: AttributeId(0x7777),
            method: Method::GET,
            status: MadStatus(0x000C),
        });
        stats.upstream_latency.observe(Duration::from_micros(1_500));
        let port = |label: &str, counters: &Counters, stats: Stats| PortMetrics {
            label: label.into(),
            counters: counters.described(),
            stats,
            registrants: vec![Registrant {
                owner: Owner::User(1000),
                groups: 64,
                created: 16,
                subscriptions: 2,
                refused: 936,
            }],
        };
        let text = render(
            &[
                port("mlx5_0/1", &a, stats),
                port("mlx5_0/\"2\"", &b, Stats::default()),
            ],
            &[("door_connections", 3), ("door_refused_total", 2)],
        );
        assert!(
            text.contains(
                "# HELP local_sa_hits_total PathRecord queries answered from the cache.\n\
             # TYPE local_sa_hits_total counter\n\
             local_sa_hits_total{port=\"mlx5_0/1\"} 5\n\
             local_sa_hits_total{port=\"mlx5_0/\\\"2\\\"\"} 1\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("# TYPE local_sa_records gauge\nlocal_sa_records{port=\"mlx5_0/1\"} 7\n")
        );
        assert!(
            text.contains("# TYPE local_sa_door_connections gauge\nlocal_sa_door_connections 3\n")
        );
        assert!(text.contains(
            "# TYPE local_sa_door_refused_total counter\nlocal_sa_door_refused_total 2\n"
        ));
        assert!(text.starts_with("# HELP local_sa_build_info"));
        assert!(text.contains(
            "local_sa_answers_total{port=\"mlx5_0/1\",attribute=\"PATH_RECORD\",method=\"GET_TABLE\",status=\"OK\"} 1\n"
        ));
        assert!(text.contains(
            "attribute=\"0x7777\",method=\"GET\",status=\"METHOD_ATTR_UNSUPPORTED\"} 1\n"
        ));
        assert!(text.contains("# TYPE local_sa_upstream_latency_seconds histogram\n"));
        assert!(text.contains(
            "local_sa_upstream_latency_seconds_bucket{port=\"mlx5_0/1\",le=\"0.001\"} 0\n\
             local_sa_upstream_latency_seconds_bucket{port=\"mlx5_0/1\",le=\"0.0025\"} 1\n"
        ));
        assert!(text.contains("local_sa_upstream_latency_seconds_sum{port=\"mlx5_0/1\"} 0.0015\n"));
        assert!(text.contains("local_sa_upstream_latency_seconds_count{port=\"mlx5_0/1\"} 1\n"));
        assert!(text.contains(
            "# TYPE local_sa_registrant_groups gauge\n\
             local_sa_registrant_groups{port=\"mlx5_0/1\",owner=\"uid 1000\"} 64\n"
        ));
        assert!(text.contains(
            "local_sa_registrant_refused_total{port=\"mlx5_0/1\",owner=\"uid 1000\"} 936\n"
        ));
        // Every sample line is `name{labels} value` or `name value`.
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let (name, value) = line.rsplit_once(' ').unwrap();
            assert!(value.parse::<f64>().is_ok(), "{line}");
            assert!(name.starts_with("local_sa_"), "{line}");
        }
    }

    #[test]
    fn every_daemon_counter_is_described() {
        use crate::door_limits::DoorLimitCounters;
        let mut names: Vec<&str> = DoorLimitCounters::default()
            .fields()
            .iter()
            .map(|(n, _)| *n)
            .collect();
        names.extend(
            local_sa_core::doors::netlink::NetlinkCounters::default()
                .fields()
                .iter()
                .map(|(n, _)| *n),
        );
        names.extend([
            "netlink_replies_dropped",
            "metrics_refused",
            "acm_clients_kept",
            "acm_clients_not_kept",
        ]);
        for name in &names {
            assert!(DAEMON_COUNTERS.iter().any(|(n, _, _)| n == name), "{name}");
        }
        assert_eq!(names.len(), DAEMON_COUNTERS.len());
    }
}
