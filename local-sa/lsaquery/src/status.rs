//! `lsaquery --status`: how each local-sa on this node is doing, through
//! its local API's STATUS (docs/local-api.md): the port and its master,
//! how fresh its paths are, what it holds for its consumers, its last
//! warnings. Every served port by default; -C/-P or --api-socket for one.

use std::fmt::Write as _;
use std::path::PathBuf;

use local_sa_core::request::{Request, StatusReport};

use crate::cli::Cli;
use crate::local_api::{Connection, default_socket};
use crate::stop::Stop;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use crate::json::{self, JSON_SCHEMA, Scalar};

/// Prints the status of the local-sa behind each socket asked about.
pub(crate) fn run(cli: &Cli) -> Result<(), Stop> {
    let sockets: Vec<PathBuf> = match &cli.api_socket {
        Some(p) => vec![p.clone()],
        None => umad::port::Sysfs::default()
            .select_all(cli.ca.as_deref(), cli.port)
            .map_err(|e| Stop::new(3, e.to_string()))?
            .iter()
            .map(|p| default_socket(&p.ca, p.port))
            .collect(),
    };
    let mut unreachable = None;
    for socket in &sockets {
        match smol::block_on(ask(socket, cli.json)) {
            Ok(report) if cli.json => outln!("{}", json(socket, &report))?,
            Ok(report) => out!("{}", human(&report))?,
            Err(f) => {
                eprintln!("lsaquery: {}", f.message);
                unreachable = Some(f);
            }
        }
    }
    match unreachable {
        // A failure already printed: the exit status alone.
        Some(f) => Err(Stop::new(f.code, String::new())),
        None => Ok(()),
    }
}

async fn ask(socket: &std::path::Path, json: bool) -> Result<StatusReport, Stop> {
    let mut conn = Connection::open(socket, json)?;
    let answer = conn.call(&Request::Status).await?;
    let text = String::from_utf8(answer.body.to_vec())
        .map_err(|_| Stop::new(4, "local-sa's STATUS answer is not text"))?;
    Ok(StatusReport::from_text(&text))
}

/// Milliseconds as a person reads them.
fn ago(ms: &str) -> String {
    let Ok(ms) = ms.parse::<u64>() else {
        return ms.to_owned();
    };
    match ms {
        0..=999 => format!("{ms} ms"),
        1_000..=9_999 => format!("{:.1} s", ms as f64 / 1000.0),
        10_000..=5_999_999 => format!("{} s", ms / 1000),
        _ if ms < 48 * 3_600_000 => format!("{} min", ms / 60_000),
        _ => format!("{} h", ms / 3_600_000),
    }
}

/// Who keeps the port's tables fresh, and how stale they can get.
fn upkeep(r: &StatusReport) -> Option<String> {
    let kept_by = r.get("kept_by")?;
    let mut line = if let Some(distributor) = kept_by.strip_prefix("distributor lid=") {
        format!(
            "kept by the distributor at LID {distributor} (lease {} s, {} left{}); no refresh of its own",
            r.get("lease_s").unwrap_or("?"),
            r.get("lease_left_ms").map_or_else(|| "?".to_owned(), ago),
            r.get("lease_renewed_every_ms")
                .map_or_else(String::new, |ms| format!(", renewed every {}", ago(ms)))
        )
    } else {
        format!(
            "kept by this port: a refresh every {} s at most; a change no notice announces is seen within {} s",
            r.get("refresh_interval_s").unwrap_or("?"),
            r.get("worst_staleness_s").unwrap_or("?")
        )
    };
    if r.get("change_refresh_pending") == Some("yes") {
        line.push_str("; a refresh after a fabric change is due");
    }
    if r.get("tables_in_doubt") == Some("yes") {
        line.push_str(
            "; in doubt since the master's last sweep: the paths asked are asked of the master until the refresh",
        );
    }
    if let Some(ms) = r.get("next_check_in_ms") {
        let _ = write!(line, "; next check against the master in {}", ago(ms));
    }
    for (name, what) in [
        ("change_notices", "link-change notices"),
        ("sweeps_seen", "heavy sweeps seen without their notice"),
        (
            "doubt_queries",
            "queries asked of the master while in doubt",
        ),
        ("checks_failed", "checks that differed"),
        ("leases_lapsed", "leases lapsed"),
        (
            "loads_fenced",
            "loads refused from a distributor not holding the lease",
        ),
    ] {
        if let Some(n) = r.get(name).filter(|n| *n != "0") {
            let _ = write!(line, "; {n} {what}");
        }
    }
    Some(line)
}

/// The report as a few lines a person reads.
pub(crate) fn human(r: &StatusReport) -> String {
    let v = |name: &str| r.get(name).unwrap_or("?");
    let mut out = String::new();
    let master = r.get("master_sa_lid").map_or_else(
        || "master SA not heard from yet".to_owned(),
        |l| format!("master SA at LID {l}"),
    );
    let _ = writeln!(
        out,
        "{}: {}, LID {}, SM LID {}; {master}",
        v("port"),
        v("port_state"),
        v("lid"),
        v("sm_lid"),
    );
    let mut paths = format!("{} ({} table)", v("records"), v("table"));
    match (r.get("last_refresh_age_ms"), r.get("last_refresh_took_ms")) {
        (Some(age), Some(took)) => {
            let _ = write!(paths, ", refreshed {} ago in {}", ago(age), ago(took));
        }
        (Some(age), None) => {
            let _ = write!(paths, ", loaded {} ago", ago(age));
        }
        _ => paths.push_str(", not refreshed yet"),
    }
    if let Some(ms) = r.get("refreshing_for_ms") {
        let _ = write!(paths, "; refreshing for {}", ago(ms));
    } else if let Some(ms) = r.get("next_refresh_in_ms") {
        let _ = write!(paths, "; next in {}", ago(ms));
    }
    let failures = v("refresh_failures_in_a_row");
    if failures != "0" {
        let _ = write!(paths, "; {failures} failed in a row");
    }
    let _ = writeln!(out, "  paths        {paths}");
    if let Some(upkeep) = upkeep(r) {
        let _ = writeln!(out, "  upkeep       {upkeep}");
    }
    let tables: Vec<String> = r
        .all("partition")
        .map(|line| match PartitionLine::parse(line) {
            Some(p) => format!("{} {} ({} paths)", p.pkey, p.state, p.records),
            None => line.to_owned(),
        })
        .collect();
    if !tables.is_empty() {
        let _ = writeln!(out, "  partitions   {}", tables.join("; "));
    }
    let directory = match r.get("directory") {
        Some("published") => "; this port's name and addresses are in the directory at the master",
        Some(_) => "; this port's name and addresses are not in the directory at the master yet",
        None => "",
    };
    let _ = writeln!(out, "  names        {}{directory}", v("names"));
    let _ = writeln!(
        out,
        "  consumers    {} subscriptions for {} subscribers; {} groups, {} memberships",
        v("subscriptions"),
        v("subscribers"),
        v("groups"),
        v("members")
    );
    let recent = match (r.get("hits_last_minute"), r.get("misses_last_minute")) {
        (Some(h), Some(m)) => format!(" (last minute: {h} from the cache, {m} not)"),
        _ => String::new(),
    };
    let _ = writeln!(
        out,
        "  queries      {} from the cache, {} not{recent}; {} waiting for the master, {} it never answered; {} error answers",
        v("hits"),
        v("misses"),
        v("upstream_in_flight"),
        v("upstream_failures"),
        v("errors")
    );
    if let Some(entries) = r.get("qos_cache_entries") {
        let qos = match r.get("master_qos") {
            Some("yes") => "the master applies QoS",
            Some(_) => "the master applies no QoS",
            None => "whether the master applies QoS is not known yet",
        };
        let _ = writeln!(
            out,
            "  QoS cache    {entries} port pairs, {} bytes; {} answers from it, {} pairs and {} whole tables asked, {} records loaded, {} dropped for room ({qos})",
            v("qos_cache_bytes"),
            v("qos_cache_hits"),
            v("qos_cache_fetches"),
            v("qos_cache_tables"),
            v("qos_cache_loaded"),
            v("qos_cache_evicted"),
        );
    }
    if let (Some(queued), Some(refused)) = (r.get("queries_queued"), r.get("upstream_refused")) {
        let _ = writeln!(
            out,
            "  to master    {queued} queries waiting for a place there; {refused} answered BUSY for too many waiting"
        );
    }
    if let Some(rate) = r.get("registrations_per_s") {
        let _ = writeln!(
            out,
            "  registering  {} waiting, {} at the master, {rate}/s; refused: {} joins, {} creations, {} subscriptions",
            v("registrations_waiting"),
            v("registrations_in_flight"),
            v("refused_groups"),
            v("refused_group_creations"),
            v("refused_subscriptions"),
        );
    }
    for (i, line) in r.all("registrant").enumerate() {
        let label = if i == 0 { "registrants" } else { "" };
        let text = match Registrant::parse(line) {
            Some(g) => format!(
                "{}: {} groups ({} created), {} subscriptions; {} refused",
                g.owner, g.groups, g.created, g.subscriptions, g.refused
            ),
            None => line.to_owned(),
        };
        let _ = writeln!(out, "  {label:<12} {text}");
    }
    let uptime = r
        .get("uptime_s")
        .map_or_else(|| "?".to_owned(), |s| ago(&format!("{s}000")));
    let _ = writeln!(
        out,
        "  daemon       local-sa {}, pid {}, up {uptime}; {} local connections",
        v("version"),
        v("pid"),
        v("door_connections")
    );
    let warnings: Vec<&str> = r.all("recent_warning").collect();
    if warnings.is_empty() {
        let _ = writeln!(out, "  warnings     none");
    }
    for (i, w) in warnings.iter().enumerate() {
        let (secs, text) = w.split_once(' ').unwrap_or(("?", w));
        let label = if i == 0 { "warnings" } else { "" };
        let _ = writeln!(out, "  {label:<12} {secs} s ago: {text}");
    }
    out
}

/// The report as one JSON object (docs/json.md): numbers as numbers, the
/// warnings as a list.
pub(crate) fn json(socket: &std::path::Path, r: &StatusReport) -> String {
    json::line(&StatusJson {
        socket: socket.display().to_string(),
        report: r,
    })
}

/// `--status --json`: the schema and socket, the report's `name value`
/// lines in their order, then its repeated lines as lists.
struct StatusJson<'a> {
    socket: String,
    report: &'a StatusReport,
}

/// A repeated line: its fields, or the line as it came if it did not
/// parse.
#[derive(Serialize)]
#[serde(untagged)]
enum Parsed<'a, T> {
    Fields(T),
    Line(&'a str),
}

impl Serialize for StatusJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("schema", &JSON_SCHEMA)?;
        map.serialize_entry("socket", &self.socket)?;
        let mut warnings = Vec::new();
        let mut registrants = Vec::new();
        let mut partitions = Vec::new();
        for (name, value) in &self.report.0 {
            match name.as_str() {
                "recent_warning" => warnings.push(value.as_str()),
                "partition" => partitions
                    .push(PartitionLine::parse(value).map_or(Parsed::Line(value), Parsed::Fields)),
                "registrant" => registrants
                    .push(Registrant::parse(value).map_or(Parsed::Line(value), Parsed::Fields)),
                _ => map.serialize_entry(name, &Scalar::of(value))?,
            }
        }
        map.serialize_entry("partitions", &partitions)?;
        map.serialize_entry("registrants", &registrants)?;
        map.serialize_entry("recent_warnings", &warnings)?;
        map.end()
    }
}

/// A `partition` line of the report: `<P_Key> complete|incomplete
/// records=N`.
#[derive(Serialize)]
pub(crate) struct PartitionLine<'a> {
    pub(crate) pkey: &'a str,
    pub(crate) state: &'a str,
    pub(crate) records: u64,
}

impl<'a> PartitionLine<'a> {
    pub(crate) fn parse(line: &'a str) -> Option<Self> {
        let mut words = line.split_whitespace();
        let (pkey, state) = (words.next()?, words.next()?);
        let records = words.next()?.strip_prefix("records=")?.parse().ok()?;
        Some(Self {
            pkey,
            state,
            records,
        })
    }
}

/// A `registrant` line of the report: `<owner> groups=N created=N
/// subscriptions=N refused=N`.
#[derive(Serialize)]
struct Registrant<'a> {
    owner: &'a str,
    groups: u64,
    created: u64,
    subscriptions: u64,
    refused: u64,
}

impl<'a> Registrant<'a> {
    fn parse(line: &'a str) -> Option<Self> {
        let at = line.find(" groups=")?;
        let (owner, rest) = (&line[..at], &line[at + 1..]);
        let mut values = rest.split(' ').map(|kv| kv.split_once('='));
        let mut next = |key: &str| match values.next() {
            Some(Some((k, v))) if k == key => v.parse().ok(),
            _ => None,
        };
        Some(Self {
            owner,
            groups: next("groups")?,
            created: next("created")?,
            subscriptions: next("subscriptions")?,
            refused: next("refused")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report() -> StatusReport {
        StatusReport::from_text(
            "port_gid fe80::10:3\nlid 5\nsm_lid 1\nmaster_sa_lid 1\ntable complete\nrecords 17\n\
             names 3\ndirectory published\nlast_refresh_age_ms 2500\nlast_refresh_took_ms 12\nnext_refresh_in_ms 597500\n\
             refresh_failures_in_a_row 0\nsubscriptions 3\nsubscribers 2\ngroups 1\nmembers 2\n\
             hits 10\nmisses 2\nhits_last_minute 4\nmisses_last_minute 1\nupstream_in_flight 0\nupstream_failures 0\nerrors 0\nversion 0.1.0\n\
             pid 42\nuptime_s 3\nport ibsim0/1\nport_state Active\ndoor_connections 1\n\
             recent_warning 12 WARN the master refused a subscription change status=0x0200\n",
        )
    }

    #[test]
    fn a_person_reads_where_things_stand() {
        let text = human(&report());
        assert_eq!(
            text,
            "ibsim0/1: Active, LID 5, SM LID 1; master SA at LID 1\n\
             \x20 paths        17 (complete table), refreshed 2.5 s ago in 12 ms; next in 597 s\n\
             \x20 names        3; this port's name and addresses are in the directory at the master\n\
             \x20 consumers    3 subscriptions for 2 subscribers; 1 groups, 2 memberships\n\
             \x20 queries      10 from the cache, 2 not (last minute: 4 from the cache, 1 not); 0 waiting for the master, 0 it never answered; 0 error answers\n\
             \x20 daemon       local-sa 0.1.0, pid 42, up 3.0 s; 1 local connections\n\
             \x20 warnings     12 s ago: WARN the master refused a subscription change status=0x0200\n"
        );
    }

    #[test]
    fn the_upkeep_line_says_who_keeps_the_tables_and_how_stale_they_can_get() {
        let own = human(&StatusReport::from_text(
            "kept_by this port\nrefresh_interval_s 2000\nworst_staleness_s 2500\nchange_notices 2\nchecks_failed 0\n",
        ));
        assert!(
            own.contains(
                "  upkeep       kept by this port: a refresh every 2000 s at most; a change no notice announces \
                 is seen within 2500 s; 2 link-change notices\n"
            ),
            "{own}"
        );
        let leased = human(&StatusReport::from_text(
            "kept_by distributor lid=14\nlease_s 63\nlease_left_ms 41000\nnext_check_in_ms 21600000\n",
        ));
        assert!(
            leased.contains(
                "  upkeep       kept by the distributor at LID 14 (lease 63 s, 41 s left); no refresh of its \
                 own; next check against the master in 360 min\n"
            ),
            "{leased}"
        );
    }

    #[test]
    fn the_qos_cache_line_says_whether_the_master_applies_qos() {
        let text = human(&StatusReport::from_text(
            "master_sa_lid 1\nmaster_qos yes\nqos_cache_entries 7\nqos_cache_bytes 1040\n\
             qos_cache_hits 30\nqos_cache_fetches 7\nqos_cache_tables 2\nqos_cache_evicted 0\nqos_cache_loaded 40\n",
        ));
        assert!(
            text.contains(
                "  QoS cache    7 port pairs, 1040 bytes; 30 answers from it, 7 pairs and 2 whole tables asked, 40 records loaded, 0 dropped for room (the master applies QoS)\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn each_partition_table_is_listed_with_its_state() {
        let report = StatusReport::from_text(
            "records 12\npartition 0x8001 complete records=11\npartition 0x8002 incomplete records=0\n",
        );
        let text = human(&report);
        assert!(
            text.contains(
                "  partitions   0x8001 complete (11 paths); 0x8002 incomplete (0 paths)\n"
            ),
            "{text}"
        );
        let j = json(std::path::Path::new("/s"), &report);
        assert!(
            j.contains(",\"partitions\":[{\"pkey\":\"0x8001\",\"state\":\"complete\",\"records\":11},{\"pkey\":\"0x8002\",\"state\":\"incomplete\",\"records\":0}],"),
            "{j}"
        );
    }

    #[test]
    fn json_has_numbers_strings_and_the_warnings() {
        let j = json(
            std::path::Path::new("/run/local-sa/ibsim0-1.sock"),
            &report(),
        );
        assert!(j.starts_with("{\"schema\":1,\"socket\":\"/run/local-sa/ibsim0-1.sock\",\"port_gid\":\"fe80::10:3\",\"lid\":5,"), "{j}");
        assert!(j.contains(",\"table\":\"complete\","), "{j}");
        assert!(j.ends_with(",\"registrants\":[],\"recent_warnings\":[\"12 WARN the master refused a subscription change status=0x0200\"]}"), "{j}");
        let parsed: serde_json::Value = serde_json::from_str(&j).unwrap();
        assert_eq!(parsed["records"], 17);
    }

    fn registering() -> StatusReport {
        StatusReport::from_text(
            "registrations_waiting 900\nregistrations_in_flight 16\nrefused_groups 936\n\
             refused_group_creations 4\nrefused_subscriptions 0\nregistrations_per_s 312.5\n\
             registrant uid 1000 groups=64 created=16 subscriptions=2 refused=940\n\
             registrant port fe80::10:9 groups=0 created=0 subscriptions=1 refused=0\n",
        )
    }

    #[test]
    fn registrations_and_their_owners_read_as_sentences() {
        let text = human(&registering());
        assert!(
            text.contains(
                "  registering  900 waiting, 16 at the master, 312.5/s; refused: 936 joins, 4 creations, 0 subscriptions\n\
                 \x20 registrants  uid 1000: 64 groups (16 created), 2 subscriptions; 940 refused\n\
                 \x20              port fe80::10:9: 0 groups (0 created), 1 subscriptions; 0 refused\n"
            ),
            "{text}"
        );
        let j = json(std::path::Path::new("/s"), &registering());
        let parsed: serde_json::Value = serde_json::from_str(&j).unwrap();
        assert_eq!(parsed["registrants"][0]["owner"], "uid 1000");
        assert_eq!(parsed["registrants"][0]["refused"], 940);
        assert_eq!(parsed["registrants"][1]["subscriptions"], 1);
        assert_eq!(parsed["refused_groups"], 936);
    }
}
