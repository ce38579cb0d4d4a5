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

/// librdmacm never reconnects: a client that connected before a restart
/// is served on its old connection after it. The stand-in manager keeps
/// what local-sa hands its store at SIGTERM and passes it to the next
/// local-sa as systemd does; a connection in the middle of a message is
/// closed instead, never kept.
#[test]
fn ibacm_clients_are_kept_across_a_restart_and_served_on_their_old_connection() {
    use std::io::{Read as _, Write as _};
    use std::os::unix::net::UnixStream;

    use conformance::acm_client::{path_dlid, read_reply, resolve_lid};

    let fabric = Fabric::builder(Topology::fat_tree(3, 4, 2))
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let manager = Manager::bind(&fabric, "notify.sock");
    let env = [
        ("NOTIFY_SOCKET", manager.path.as_os_str()),
        ("FDSTORE", "64".as_ref()),
    ];
    let mut sa = LocalSa::start_passing_with_env(&fabric, "h2", &[], Vec::new(), &env)
        .unwrap_or_else(|e| panic!("{e}"));
    manager.until("READY=1", Duration::from_secs(60));
    let dest = fabric.node("h9").unwrap().port().unwrap();
    let mut client = UnixStream::connect(sa.acm_socket()).unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    client.write_all(&resolve_lid(dest.lid, 1)).unwrap();
    let (_, status, _, body) = read_reply(&mut client).unwrap();
    assert_eq!((status, path_dlid(&body)), (0, Some(dest.lid)));
    // Half a message when the stop comes.
    let mut halfway = UnixStream::connect(sa.acm_socket()).unwrap();
    halfway
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    halfway.write_all(&resolve_lid(dest.lid, 2)[..20]).unwrap();
    sa.wait_until("both clients", Duration::from_secs(5), |c| {
        c.get("door_acm_connections") == Some(&2)
    })
    .unwrap_or_else(|e| panic!("{e}"));

    let (status, log) = sa.stop();
    assert!(status.is_some_and(|s| s.success()), "{log}");
    // What the manager's store got.
    let mut kept = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if let Ok((n, fds)) = umad::fd_store::recv_with_fds(&manager.socket, &mut buf) {
            let message = String::from_utf8_lossy(&buf[..n]).into_owned();
            if message == "FDSTORE=1\nFDNAME=acm-client" {
                kept.extend(fds);
                break;
            }
        }
    }
    assert_eq!(kept.len(), 1, "the idle client, only: {log}");
    let mut end = [0u8; 1];
    assert_eq!(
        halfway.read(&mut end).unwrap_or(0),
        0,
        "the half-sent one was closed"
    );

    // The next local-sa, given the store's descriptors.
    let sockets = kept.into_iter().map(|fd| ("acm-client", fd)).collect();
    let sa = LocalSa::start_passing_with_env(&fabric, "h2", &[], sockets, &env)
        .unwrap_or_else(|e| panic!("{e}"));
    client.write_all(&resolve_lid(dest.lid, 3)).unwrap();
    let (_, status, tid, body) = read_reply(&mut client).unwrap();
    assert_eq!((status, tid, path_dlid(&body)), (0, 3, Some(dest.lid)));
    // It took them back: the store is emptied, to be filled at its exit.
    let seen = manager.until("FDSTOREREMOVE=1\nFDNAME=acm-client", Duration::from_secs(5));
    assert!(!seen.is_empty());
    drop(sa);
}
