//! local-sa under systemd's `Type=notify` (local-sa.service), with a fake
//! service manager: a datagram socket named by `NOTIFY_SOCKET`, as
//! systemd sets it. READY=1 comes only once the port has its first table
//! from OpenSM (or, with no table, once `--ready-timeout` has passed, and
//! says so); WATCHDOG=1 comes twice per `WATCHDOG_USEC` from start to
//! end; SIGTERM brings STOPPING=1.

use std::cell::{Cell, RefCell};
use std::io::{Read as _, Write as _};
use std::os::fd::OwnedFd;
use std::os::unix::net::{UnixDatagram, UnixStream};
use std::time::{Duration, Instant};

use conformance::acm_client::{resolve_lid, resolved};
use conformance::{LocalSa, SimulatedFabric, Topology};

/// The fake service manager, with a descriptor store as systemd's:
/// `FDSTORE=1` with `FDNAME=` keeps what comes with it, `FDSTOREREMOVE=1`
/// lets go of a name's, and a kept socket whose connection has ended is
/// let go too (systemd watches them for POLLHUP).
struct Manager {
    socket: UnixDatagram,
    path: std::path::PathBuf,
    store: RefCell<Vec<(String, OwnedFd)>>,
    /// How many ibacm clients were ever handed to the store.
    clients_ever_stored: Cell<usize>,
}

impl Manager {
    fn bind(fabric: &SimulatedFabric, name: &str) -> Self {
        let path = fabric.dir().join(name);
        let socket = UnixDatagram::bind(&path).unwrap();
        socket
            .set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        Self {
            socket,
            path,
            store: RefCell::new(Vec::new()),
            clients_ever_stored: Cell::new(0),
        }
    }

    /// Takes one message, acting on it as the store does; `None` after
    /// 100 ms without one.
    fn next(&self) -> Option<String> {
        let mut buf = [0; 4096];
        let (n, fds) = umad::fd_store::recv_with_fds(&self.socket, &mut buf).ok()?;
        let message = String::from_utf8_lossy(&buf[..n]).into_owned();
        let field = |name: &str| {
            message
                .lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix('='))
                .map(str::to_owned)
        };
        let name = field("FDNAME").unwrap_or_else(|| "stored".into());
        let mut store = self.store.borrow_mut();
        if field("FDSTORE").as_deref() == Some("1") {
            if name.starts_with("acm-client-") {
                let ever = &self.clients_ever_stored;
                ever.set(ever.get() + fds.len());
            }
            store.extend(fds.into_iter().map(|fd| (name.clone(), fd)));
        } else if field("FDSTOREREMOVE").as_deref() == Some("1") {
            store.retain(|(n, _)| *n != name);
        }
        Some(message)
    }

    /// The messages received until one starts with `prefix` (that one
    /// last), or panics after `limit`.
    fn until(&self, prefix: &str, limit: Duration) -> Vec<String> {
        let deadline = Instant::now() + limit;
        let mut seen = Vec::new();
        while Instant::now() < deadline {
            if let Some(message) = self.next() {
                let done = message.starts_with(prefix);
                seen.push(message);
                if done {
                    return seen;
                }
            }
        }
        panic!("no {prefix} within {limit:?}; received {seen:?}");
    }

    /// Takes messages until the store holds `count` ibacm clients, or
    /// panics after `limit`.
    fn until_stored(&self, count: usize, limit: Duration) {
        let deadline = Instant::now() + limit;
        let clients = || {
            let store = self.store.borrow();
            store
                .iter()
                .filter(|(n, _)| n.starts_with("acm-client-"))
                .count()
        };
        while clients() < count {
            assert!(
                Instant::now() < deadline,
                "{} clients stored after {limit:?}",
                clients()
            );
            self.next();
        }
    }

    /// Takes every message already sent.
    fn drain(&self) {
        while self.next().is_some() {}
    }

    /// What the store passes the next start, names and descriptors, once
    /// the ended connections are let go; the store keeps them too.
    fn passed(&self) -> (Vec<String>, Vec<OwnedFd>) {
        self.drain();
        let mut store = self.store.borrow_mut();
        store.retain(|(name, fd)| !name.starts_with("acm-client") || !ended(fd));
        store
            .iter()
            .map(|(name, fd)| (name.clone(), fd.try_clone().unwrap()))
            .unzip()
    }
}

fn pings(messages: &[String]) -> usize {
    messages.iter().filter(|m| *m == "WATCHDOG=1").count()
}

/// Whether a stored client socket's connection has ended (POLLHUP, which
/// systemd watches for).
fn ended(fd: &OwnedFd) -> bool {
    use std::os::fd::AsFd as _;
    umad::fd_store::hung_up(fd.as_fd()).unwrap_or(true)
}

#[test]
fn ready_once_the_table_is_in_watchdog_throughout_and_stopping_at_the_end() {
    let fabric = fabric();
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
    let fabric = fabric();
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

/// An ibacm client, connected to `sa`'s socket, that has had one path
/// resolved to `dlid`.
fn answered_client(sa: &LocalSa<'_>, dlid: u16) -> UnixStream {
    let client = UnixStream::connect(sa.acm_socket()).unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    resolved(client, dlid, 1)
}

/// The simulated fabric these tests run on.
fn fabric() -> SimulatedFabric {
    SimulatedFabric::builder(Topology::fat_tree(3, 4, 2))
        .start()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// local-sa on h2 under `manager`'s descriptor store, given `passed`
/// (what the store passes a new start: names and descriptors).
fn start_managed<'f>(
    fabric: &'f SimulatedFabric,
    manager: &Manager,
    args: &[&str],
    (names, fds): (Vec<String>, Vec<OwnedFd>),
) -> LocalSa<'f> {
    let env = [
        ("NOTIFY_SOCKET", manager.path.as_os_str()),
        ("FDSTORE", "64".as_ref()),
    ];
    let sockets = names.iter().map(String::as_str).zip(fds).collect();
    LocalSa::start_passing_with_env(fabric, "h2", args, sockets, &env)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A client that has sent `sa` half a request, once `sa` has read it.
fn half_sent_client(sa: &mut LocalSa<'_>, dlid: u16) -> UnixStream {
    let mut halfway = UnixStream::connect(sa.acm_socket()).unwrap();
    halfway
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    halfway.write_all(&resolve_lid(dlid, 2)[..20]).unwrap();
    sa.wait_until(
        "both clients, half a request read",
        Duration::from_secs(5),
        |c| c.get("door_acm_connections") == Some(&2) && c.get("door_partial_bytes") == Some(&20),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    halfway
}

/// librdmacm never reconnects: a client that connected before a restart
/// is served on its old connection after it, however the last local-sa
/// ended. The stand-in manager keeps what local-sa hands its store and
/// passes it to the next local-sa as systemd does; a connection in the
/// middle of a message is closed instead, never kept.
/// `end` ends the first local-sa and says how many clients it leaves in
/// the store, and its log.
fn clients_are_kept(end: impl FnOnce(LocalSa<'_>) -> (usize, String)) {
    let fabric = fabric();
    let manager = Manager::bind(&fabric, "notify.sock");
    let mut sa = start_managed(&fabric, &manager, &[], Default::default());
    manager.until("READY=1", Duration::from_secs(60));
    let dest = fabric.node("h9").unwrap().port().unwrap();
    // A short connection (ib_acme's): closed before it is a second old.
    drop(answered_client(&sa, dest.lid));
    let mut client = answered_client(&sa, dest.lid);
    let mut halfway = half_sent_client(&mut sa, dest.lid);
    // Each lasting one is stored once it is a second old; the short one
    // never was.
    manager.until_stored(2, Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(1500));
    manager.drain();
    assert_eq!(manager.clients_ever_stored.get(), 2);

    let (kept_at_end, log) = end(sa);
    let (names, fds) = manager.passed();
    let clients = |names: &[String]| {
        names
            .iter()
            .filter(|n| n.starts_with("acm-client-"))
            .count()
    };
    assert_eq!(clients(&names), kept_at_end, "{names:?}\n{log}");
    assert!(names.iter().any(|n| n == "acm-ledger"), "{names:?}");

    fabric
        .forget_dead_clients("h2")
        .unwrap_or_else(|e| panic!("{e}"));
    // The next local-sa, given the store's descriptors.
    let mut sa = start_managed(&fabric, &manager, &[], (names, fds));
    let mut end = [0u8; 1];
    assert_eq!(
        halfway.read(&mut end).unwrap_or(0),
        0,
        "the half-sent one was closed"
    );
    resolved(&mut client, dest.lid, 3);
    // Still kept, and only it: the busy one is out of the store.
    let (names, _) = manager.passed();
    assert_eq!(clients(&names), 1, "{names:?}");
    sa.wait_until("the kept client counted", Duration::from_secs(5), |c| {
        c.get("acm_clients_kept") == Some(&1)
    })
    .unwrap_or_else(|e| panic!("{e}"));
    drop(sa);
}

#[test]
fn ibacm_clients_are_kept_across_a_restart_and_served_on_their_old_connection() {
    clients_are_kept(|sa| {
        let (status, log) = sa.stop();
        assert!(status.is_some_and(|s| s.success()), "{log}");
        // The one in the middle of a request is closed as it stops.
        (1, log)
    });
}

#[test]
fn ibacm_clients_are_kept_across_a_crash_and_those_mid_request_closed() {
    clients_are_kept(|sa| {
        // Both stay in the store; the ledger tells the next local-sa
        // which one to close.
        sa.kill();
        (2, String::new())
    });
}

/// TCP clients (`server_mode loop`, librdmacm's and ib_acme's older way)
/// are kept as the Unix ones are, and served on their old connection by
/// the next local-sa, listening on a port of its own.
#[test]
fn tcp_ibacm_clients_are_kept_across_a_restart() {
    let fabric = fabric();
    let manager = Manager::bind(&fabric, "notify.sock");
    let ports = fabric.dir().join("acm-ports");
    std::fs::create_dir_all(&ports).unwrap();
    let args = [
        "--acm-server-mode",
        "loop",
        "--acm-server-port",
        "0",
        "--acm-port-dir",
        ports.to_str().unwrap(),
    ];
    let sa = start_managed(&fabric, &manager, &args, Default::default());
    manager.until("READY=1", Duration::from_secs(60));
    let port: u16 = std::fs::read_to_string(ports.join("ibacm-tcp.port"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let dest = fabric.node("h9").unwrap().port().unwrap();
    let client = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut client = resolved(client, dest.lid, 1);
    manager.until_stored(1, Duration::from_secs(10));

    let (status, log) = sa.stop();
    assert!(status.is_some_and(|s| s.success()), "{log}");
    let passed = manager.passed();
    assert!(
        passed.0.iter().any(|n| n.starts_with("acm-client-")),
        "{:?}\n{log}",
        passed.0
    );
    fabric
        .forget_dead_clients("h2")
        .unwrap_or_else(|e| panic!("{e}"));
    let mut sa = start_managed(&fabric, &manager, &args, passed);
    resolved(&mut client, dest.lid, 2);
    sa.wait_until("the kept client counted", Duration::from_secs(5), |c| {
        c.get("acm_clients_kept") == Some(&1)
    })
    .unwrap_or_else(|e| panic!("{e}"));
    drop(sa);
}

#[test]
fn a_local_sa_restarted_after_a_crash_answers_from_the_tables_it_kept_with_opensm_frozen() {
    use conformance::path_answers::{Ask, answer_differences, answers};
    let fabric = fabric();
    let manager = Manager::bind(&fabric, "notify.sock");
    let env = [("NOTIFY_SOCKET", manager.path.as_os_str())];
    let mut sa =
        LocalSa::spawn_with_env(&fabric, "h2", &[], &env).unwrap_or_else(|e| panic!("{e}"));
    manager.until("READY=1", Duration::from_secs(60));
    let kept = sa.run_dir().join("ibsim0-1.tables");
    sa.wait_until("its tables kept", Duration::from_secs(10), |_| {
        kept.exists()
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let program = std::path::Path::new(env!("CARGO_BIN_EXE_opensm-paths"));
    let lids: Vec<u16> = (1..=12)
        .map(|i| fabric.node(&format!("h{i}")).unwrap().port().unwrap().lid)
        .collect();
    let me = fabric.node("h2").unwrap().port().unwrap();
    let ask = |sa_lid: u16| Ask {
        sa_lid,
        lids: &lids,
        sources: Some(std::slice::from_ref(&me.lid)),
        pkey: None,
        service_id: None,
        qos_class: None,
    };
    let opensm = answers(&fabric, "h1", program, ask(me.sm_lid));
    sa.kill();
    fabric.forget_dead_clients("h2").unwrap();

    fabric.with_opensm_frozen(|| {
        let started = Instant::now();
        let mut sa =
            LocalSa::spawn_with_env(&fabric, "h2", &[], &env).unwrap_or_else(|e| panic!("{e}"));
        let ready = manager.until("READY=1", Duration::from_secs(30));
        assert!(
            ready.last().unwrap().contains("17 paths"),
            "ready with its kept table: {ready:?}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        let ours = answers(&fabric, "h2", program, ask(me.lid));
        let differ = answer_differences(&ours, &opensm);
        assert!(differ.is_empty(), "{}", differ.join("\n"));
        sa.wait_until("counted", Duration::from_secs(5), |c| {
            c.get("refreshes_kept") == Some(&1)
        })
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(sa.counter("refreshes"), 0, "no table asked of the master");
        assert!(
            sa.stderr()
                .contains("tables were kept from before the restart")
        );
    });
}
