//! local-sa under systemd's `Type=notify` (local-sa.service), with a fake
//! service manager: a datagram socket named by `NOTIFY_SOCKET`, as
//! systemd sets it. READY=1 comes only once the port has its first table
//! from OpenSM (or, with no table, once `--ready-timeout` has passed, and
//! says so); WATCHDOG=1 comes twice per `WATCHDOG_USEC` from start to
//! end; SIGTERM brings STOPPING=1.

use std::os::unix::net::UnixDatagram;
use std::time::{Duration, Instant};

use conformance::{Fabric, LocalSa, Topology};

/// The fake service manager.
struct Manager {
    socket: UnixDatagram,
    path: std::path::PathBuf,
}

impl Manager {
    fn bind(fabric: &Fabric, name: &str) -> Self {
        let path = fabric.dir().join(name);
        let socket = UnixDatagram::bind(&path).unwrap();
        socket
            .set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        Self { socket, path }
    }

    /// The messages received until one starts with `prefix` (that one
    /// last), or panics after `limit`.
    fn until(&self, prefix: &str, limit: Duration) -> Vec<String> {
        let deadline = Instant::now() + limit;
        let mut seen = Vec::new();
        let mut buf = [0; 4096];
        while Instant::now() < deadline {
            if let Ok(n) = self.socket.recv(&mut buf) {
                let message = String::from_utf8_lossy(&buf[..n]).into_owned();
                let done = message.starts_with(prefix);
                seen.push(message);
                if done {
                    return seen;
                }
            }
        }
        panic!("no {prefix} within {limit:?}; received {seen:?}");
    }
}

fn pings(messages: &[String]) -> usize {
    messages.iter().filter(|m| *m == "WATCHDOG=1").count()
}

#[test]
fn ready_once_the_table_is_in_watchdog_throughout_and_stopping_at_the_end() {
    let fabric = Fabric::builder(Topology::fat_tree(3, 4, 2))
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let manager = Manager::bind(&fabric, "notify.sock");
    let started = Instant::now();
    // The table is asked for only after 3 s (--load-wait): READY must wait
    // for it.
    let mut sa = LocalSa::spawn_with_env(
        &fabric,
        "h2",
        &["--load-wait", "3"],
        &[
            ("NOTIFY_SOCKET", manager.path.as_os_str()),
            ("WATCHDOG_USEC", "400000".as_ref()),
        ],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let before = manager.until("READY=1", Duration::from_secs(60));
    let waited = started.elapsed();
    let ready = before.last().unwrap();
    assert!(
        waited >= Duration::from_secs(3),
        "READY after {waited:?}, before the table"
    );
    let paths: u64 = ready
        .strip_prefix("READY=1\nSTATUS=serving 1 port(s), ")
        .and_then(|rest| rest.strip_suffix(" paths"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("unexpected READY message {ready:?}"));
    assert!(paths > 0, "{ready}");
    sa.wait_until("the paths it was ready with", Duration::from_secs(5), |c| {
        c.get("records") == Some(&paths)
    })
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(pings(&before) >= 3, "pinged while starting: {before:?}");

    let after = manager.until("WATCHDOG=1", Duration::from_secs(2));
    assert_eq!(pings(&after), 1, "pinged once ready: {after:?}");
    let (status, log) = sa.stop();
    assert!(status.is_some_and(|s| s.success()), "{log}");
    let end = manager.until("STOPPING=1", Duration::from_secs(2));
    assert!(
        end.last()
            .unwrap()
            .contains("STATUS=withdrawing registrations"),
        "{end:?}"
    );
}

#[test]
fn without_a_table_ready_comes_at_the_ready_timeout_and_says_why() {
    let fabric = Fabric::builder(Topology::fat_tree(3, 4, 2))
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let manager = Manager::bind(&fabric, "notify.sock");
    let mut sa = LocalSa::spawn_with_env(
        &fabric,
        "h2",
        &["--load-wait", "600", "--ready-timeout", "1"],
        &[("NOTIFY_SOCKET", manager.path.as_os_str())],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let messages = manager.until("READY=1", Duration::from_secs(30));
    let ready = messages.last().unwrap();
    assert!(
        ready.starts_with("READY=1\nSTATUS=serving; no paths yet for ")
            && ready.ends_with("(their queries go to the master meanwhile)"),
        "{ready}"
    );
    assert_eq!(pings(&messages), 0, "no WATCHDOG_USEC, no pings");
    sa.wait_until("counters written", Duration::from_secs(5), |c| {
        !c.is_empty()
    })
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(sa.counter("refreshes"), 0, "still waiting for a load");
    assert!(sa.stderr().contains("--ready-timeout passed"));
}
