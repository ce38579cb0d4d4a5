//! Under systemd, local-sa logs to the journal with structured fields:
//! when its standard error is the stream systemd's `JOURNAL_STREAM` names,
//! each event goes to journald's socket as a native-protocol datagram
//! (MESSAGE, PRIORITY, SYSLOG_IDENTIFIER, TARGET and the event's own
//! fields, upper-cased after `F_`), and nothing goes to standard error.
//!
//! The test stands in for journald at its socket,
//! `/run/systemd/journal/socket`; on a machine where a real journald
//! listens there it cannot, and says so and passes without checking.

use std::collections::HashMap;
use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::time::{Duration, Instant};

use conformance::{SimulatedFabric, Topology};

const JOURNAL_SOCKET: &str = "/run/systemd/journal/socket";

/// One journald native-protocol datagram: `NAME=value` lines, or `NAME`,
/// a newline, a 64-bit little-endian length and that many bytes.
fn fields(mut datagram: &[u8]) -> HashMap<String, String> {
    let mut out = HashMap::new();
    while !datagram.is_empty() {
        let Some(end) = datagram.iter().position(|b| *b == b'=' || *b == b'\n') else {
            break;
        };
        let name = String::from_utf8_lossy(&datagram[..end]).into_owned();
        if datagram[end] == b'=' {
            let rest = &datagram[end + 1..];
            let stop = rest.iter().position(|b| *b == b'\n').unwrap_or(rest.len());
            out.insert(name, String::from_utf8_lossy(&rest[..stop]).into_owned());
            datagram = rest.get(stop + 1..).unwrap_or(&[]);
        } else {
            let rest = &datagram[end + 1..];
            let Some(len) = rest
                .get(..8)
                .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
            else {
                break;
            };
            let len = len as usize;
            let Some(value) = rest.get(8..8 + len) else {
                break;
            };
            out.insert(name, String::from_utf8_lossy(value).into_owned());
            datagram = rest.get(8 + len + 1..).unwrap_or(&[]);
        }
    }
    out
}

/// Removes the stand-in socket and the directories made for it.
struct StandIn {
    made: Vec<&'static str>,
}

impl Drop for StandIn {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(JOURNAL_SOCKET);
        for dir in self.made.iter().rev() {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

#[test]
fn logs_go_to_the_journal_with_their_fields() {
    if Path::new(JOURNAL_SOCKET).exists() {
        eprintln!("a journald listens at {JOURNAL_SOCKET}: this test needs its place; not run");
        return;
    }
    let made: Vec<&str> = ["/run/systemd", "/run/systemd/journal"]
        .into_iter()
        .filter(|d| !Path::new(d).exists())
        .collect();
    std::fs::create_dir_all("/run/systemd/journal").unwrap();
    let _stand_in = StandIn { made };
    let journal = UnixDatagram::bind(JOURNAL_SOCKET).unwrap();
    journal
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();

    let fabric = SimulatedFabric::builder(Topology::fat_tree(3, 4, 2))
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let node = fabric.node("h2").unwrap();
    let local_sa = conformance::program("local-sa").unwrap();
    let dir = fabric.dir();
    // systemd sets JOURNAL_STREAM to the device and inode of the stream it
    // gives the service as standard error; a shell does it here.
    let daemon = node
        .command("sh")
        .args([
            "-c".as_ref(),
            "JOURNAL_STREAM=$(stat -L -c %d:%i /proc/self/fd/2) exec \"$0\" \"$@\"".as_ref(),
            local_sa.as_os_str(),
            "--acm-socket".as_ref(),
            dir.join("h2.acm.sock").as_os_str(),
            "--api-socket".as_ref(),
            dir.join("h2.api.sock").as_os_str(),
            "--run-dir".as_ref(),
            dir.join("h2.run").as_os_str(),
            "--log-level".as_ref(),
            "info".as_ref(),
            // This machine's units are not the simulated node's.
            "--sm-unit".as_ref(),
            "none".as_ref(),
        ])
        .serve_requests()
        .spawn()
        .unwrap();

    // The daemon says at start that it publishes this host, with fields.
    let mut buf = vec![0u8; 64 * 1024];
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen = Vec::new();
    let publishing = loop {
        assert!(
            Instant::now() < deadline,
            "no such entry among {seen:#?}; stderr: {}",
            daemon.stderr()
        );
        let Ok(n) = journal.recv(&mut buf) else {
            continue;
        };
        let entry = fields(&buf[..n]);
        if entry
            .get("MESSAGE")
            .is_some_and(|m| m.contains("publishing this host"))
        {
            break entry;
        }
        seen.push(entry);
    };
    assert_eq!(
        publishing.get("PRIORITY").map(String::as_str),
        Some("5"),
        "info is notice: {publishing:?}"
    );
    assert_eq!(
        publishing.get("SYSLOG_IDENTIFIER").map(String::as_str),
        Some("local-sa"),
        "{publishing:?}"
    );
    // The event's own fields, with tracing-journald's "F_" before them.
    assert!(
        publishing.get("F_HOST").is_some_and(|h| !h.is_empty()),
        "{publishing:?}"
    );
    assert!(publishing.contains_key("F_PORT"), "{publishing:?}");
    assert!(
        publishing
            .get("TARGET")
            .is_some_and(|t| t.starts_with("local_sa")),
        "{publishing:?}"
    );
    let stderr = daemon.stderr();
    assert!(
        !stderr.contains("publishing this host"),
        "the journal, not standard error: {stderr}"
    );
    drop(daemon);
}
