//! The health part: what local-sa's STATUS says of the port and its
//! tables, and whether ibacm also runs on this node (two resolvers for one
//! socket name is a misconfiguration: whichever bound last answers).

use std::path::Path;

use local_sa_core::request::StatusReport;

use super::report::{Part, Verdict};

/// Runs the health part on local-sa's status (`Err`: why there is none)
/// and the processes under `proc`.
pub(super) fn check(status: &Result<StatusReport, String>, sm_lid: u16, proc: &Path) -> Part {
    let s = match status {
        Ok(s) => s,
        Err(why) => {
            return Part::not_checked(
                "health",
                format!("local-sa's status was not available: {why}"),
            )
            .next("systemctl status local-sa   (is local-sa running for this port?)");
        }
    };
    let v = |name: &str| s.get(name).unwrap_or("?");
    let mut problems = Vec::new();
    let mut notes = Vec::new();
    if let Some(state) = s.get("port_state")
        && !state.eq_ignore_ascii_case("active")
    {
        problems.push(format!("the port is {state}, not Active"));
    }
    match s.get("master_sa_lid") {
        None => problems.push("local-sa has not heard from the master SA".to_owned()),
        Some(l) if l != sm_lid.to_string() => problems.push(format!(
            "local-sa's master SA is at LID {l}, the port's SM LID is {sm_lid}"
        )),
        Some(_) => {}
    }
    if s.get("table") != Some("complete") {
        problems.push(format!(
            "this port's table is {} ({} records)",
            v("table"),
            v("records")
        ));
    }
    for p in s.all("partition") {
        if !p.contains(" complete ") {
            problems.push(format!("partition table {p}"));
        }
    }
    let ibacm = ibacm_processes(proc);
    if !ibacm.is_empty() {
        problems.push(format!(
            "ibacm also runs on this node (pid {}): two resolvers for one socket",
            ibacm.join(", ")
        ));
    }
    let refused: u64 = [
        "upstream_refused",
        "refused_groups",
        "refused_group_creations",
        "refused_subscriptions",
    ]
    .iter()
    .filter_map(|n| s.get(n)?.parse::<u64>().ok())
    .sum();
    if let (Some(h), Some(m)) = (s.get("hits_last_minute"), s.get("misses_last_minute")) {
        notes.push(format!(
            "in the last minute: {h} path queries answered from the cache, {m} forwarded or waiting for the master (before this check)"
        ));
    }
    notes.push(format!(
        "since start: {} queries answered from the cache, {} not; {} the master never answered; {refused} refused for limits",
        v("hits"),
        v("misses"),
        v("upstream_failures")
    ));
    if let Some(age) = s.get("last_refresh_age_ms") {
        notes.push(format!("paths refreshed {age} ms ago"));
    }
    for w in s.all("recent_warning") {
        notes.push(format!("warning: {w}"));
    }
    let port = format!(
        "port {} {}, LID {}, master SA at LID {}",
        v("port"),
        v("port_state"),
        v("lid"),
        v("master_sa_lid")
    );
    let mut part = if problems.is_empty() {
        Part::new(
            "health",
            Verdict::Ok,
            format!("{port}; tables complete; {} records", v("records")),
        )
    } else {
        Part::new(
            "health",
            Verdict::Different,
            format!("{port}; {}", problems.join("; ")),
        )
        .next("lsaquery --status")
    };
    part.details = notes;
    part
}

/// The PIDs of processes named `ibacm` under `proc`.
fn ibacm_processes(proc: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(proc) else {
        return Vec::new();
    };
    let mut pids: Vec<String> = entries
        .flatten()
        .filter_map(|e| {
            let pid = e.file_name().into_string().ok()?;
            pid.bytes().all(|b| b.is_ascii_digit()).then_some(())?;
            let comm = std::fs::read_to_string(e.path().join("comm")).ok()?;
            (comm.trim_end() == "ibacm").then_some(pid)
        })
        .collect();
    pids.sort();
    pids
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(lines: &str) -> Result<StatusReport, String> {
        Ok(StatusReport::from_text(lines))
    }

    const HEALTHY: &str = "port mlx5_0/1\nport_state Active\nlid 4\nmaster_sa_lid 1\n\
        table complete\nrecords 26\npartition 0x8001 complete records=26\nhits 5\nmisses 1\n\
        hits_last_minute 3\nmisses_last_minute 0\n";

    #[test]
    fn a_healthy_port_is_ok_and_its_warnings_are_listed() {
        let dir = std::env::temp_dir().join(format!("verify-health-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let with_warning = format!("{HEALTHY}recent_warning 12 the master is slow\n");
        let part = check(&status(&with_warning), 1, &dir);
        assert_eq!(part.verdict, Verdict::Ok, "{part:?}");
        for said in [
            "the master is slow",
            "in the last minute: 3 path queries answered from the cache, 0 forwarded",
        ] {
            assert!(part.details.iter().any(|d| d.contains(said)), "{said:?}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_incomplete_table_another_master_or_a_running_ibacm_is_named() {
        let dir = std::env::temp_dir().join(format!("verify-ibacm-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("4242")).unwrap();
        std::fs::write(dir.join("4242/comm"), "ibacm\n").unwrap();
        let sick = HEALTHY
            .replace("table complete", "table incomplete")
            .replace("0x8001 complete", "0x8001 incomplete");
        let part = check(&status(&sick), 9, &dir);
        assert_eq!(part.verdict, Verdict::Different);
        for said in [
            "table is incomplete",
            "partition table 0x8001 incomplete",
            "master SA is at LID 1, the port's SM LID is 9",
            "ibacm also runs on this node (pid 4242)",
        ] {
            assert!(part.reason.contains(said), "{said:?} in {}", part.reason);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn without_a_status_nothing_is_claimed() {
        let part = check(&Err("no socket".into()), 1, Path::new("/nonexistent"));
        assert_eq!(part.verdict, Verdict::NotChecked);
    }
}
