//! The administrators' hold on local-sa's cache on the fabric:
//! `lsaquery --dump` shows what OpenSM gave, `--flush` empties it (queries
//! then go to OpenSM), `--refresh` fills it again at once; anyone but
//! root and local-sa's own user is refused; what `--dump --json` writes,
//! `--load` reads back.

use std::time::Duration;

use conformance::{LocalSa, SimulatedFabric, Topology};

/// Lines sorted: two JSON dumps compared as sets of records.
fn sorted(text: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    lines.sort_unstable();
    lines
}

#[test]
fn administrators_dump_flush_and_refresh_the_cache() {
    let fabric = SimulatedFabric::builder(Topology::fat_tree(3, 4, 2))
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut sa =
        LocalSa::start(&fabric, "h2", &["--sm-key", "0x5a"]).unwrap_or_else(|e| panic!("{e}"));
    let node = fabric.node("h2").unwrap();
    let me = node.port().unwrap();
    let far = fabric.node("h9").unwrap().port().unwrap();
    let api = sa.api_socket().to_owned();
    let lsaquery = |args: &[&str]| {
        let out = node
            .lsaquery()
            .arg("--api-socket")
            .arg(&api)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "lsaquery {args:?}: {}{}",
            out.stdout,
            out.stderr
        );
        out
    };

    // The dump is OpenSM's table of this port's paths, record for record
    // (asked of OpenSM one destination at a time: ibsim cuts multi-MAD
    // answers).
    let dump = lsaquery(&["--dump", "--json"]);
    let held = sorted(&dump.stdout).len();
    assert_eq!(held as u64, sa.counter("records"));
    assert!(held > 10, "{}", dump.stdout);
    assert!(
        dump.stderr.contains(&format!("{held} PathRecords")),
        "{}",
        dump.stderr
    );
    // A reader that goes away (`lsaquery ... | head -1`) ends the output
    // quietly, with exit status 0, whatever is being printed.
    for args in [
        &["--dump"][..],
        &["-p"],
        &["-p", "--json"],
        &["-p", "--dlid", &far.lid.to_string(), "-d"],
    ] {
        let out = node
            .lsaquery()
            .arg("--api-socket")
            .arg(&api)
            .args(args)
            .closed_stdout()
            .output()
            .unwrap();
        assert!(
            out.status.success() && !out.stderr.contains("panicked"),
            "lsaquery {args:?} into a closed pipe: {}\n{}",
            out.status,
            out.stderr
        );
    }
    let mut opensm = String::new();
    for line in dump.stdout.lines() {
        let dlid = json_number(line, "dlid");
        let out = node
            .lsaquery()
            .args(["--master", "-p", "--slid", &me.lid.to_string()])
            .args(["--dlid", &dlid.to_string(), "--json"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", out.stderr);
        opensm.push_str(&out.stdout);
    }
    assert_eq!(sorted(&dump.stdout), sorted(&opensm));
    // In text, as -p prints them.
    let text = lsaquery(&["--dump"]);
    assert_eq!(text.stdout.matches("PathRecord dump:").count(), held);

    // Someone else is refused, and nothing changes.
    let program = conformance::program("lsaquery").unwrap();
    let nobody = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&program)
        .arg("--api-socket")
        .arg(&api)
        .arg("--flush")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&nobody.stderr);
    assert_eq!(nobody.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("only root and local-sa's own user"),
        "{stderr}"
    );
    assert_eq!(sa.counter("records") as usize, held);

    // Flush: everything goes; a query is still answered, by the master.
    let flushed = lsaquery(&["--flush"]);
    assert!(
        flushed
            .stdout
            .contains(&format!("{held} PathRecords dropped")),
        "{}",
        flushed.stdout
    );
    sa.wait_until("the cache empty", Duration::from_secs(20), |c| {
        c.get("records") == Some(&0)
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let upstream = sa.counter("upstream_queries");
    let path = node
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
    assert!(path.status.success(), "{}", path.stderr);
    assert_eq!(path.stdout.matches("PathRecord dump:").count(), 1);
    sa.wait_until("the query forwarded", Duration::from_secs(20), |c| {
        c.get("upstream_queries").is_some_and(|n| *n > upstream)
    })
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(lsaquery(&["--dump"]).stdout.is_empty(), "nothing cached");

    // Refresh: the table is back at once.
    let refreshed = lsaquery(&["--refresh"]);
    assert!(
        refreshed
            .stdout
            .contains(&format!("0 PathRecords before, {held} after")),
        "{}",
        refreshed.stdout
    );
    let dump = lsaquery(&["--dump", "--json"]);
    assert_eq!(sorted(&dump.stdout), sorted(&opensm));

    // What --dump --json writes, --load reads: flushed, then loaded from
    // the dump, the cache holds the same records.
    let file = fabric.dir().join("h2-dump.json");
    std::fs::write(&file, &dump.stdout).unwrap();
    lsaquery(&["--flush"]);
    let load = lsaquery(&["--load", file.to_str().unwrap(), "--smkey", "0x5a"]);
    assert!(load.stdout.contains(&format!("{held}")), "{}", load.stdout);
    let reloaded = lsaquery(&["--dump", "--json"]);
    assert_eq!(sorted(&reloaded.stdout), sorted(&dump.stdout));
}

/// The number after `"key":` in a JSON line.
fn json_number(line: &str, key: &str) -> u64 {
    let at = line.find(&format!("\"{key}\":")).expect("the key") + key.len() + 3;
    line[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .expect("a number")
}
