//! The real `ib_acme` (rdma-core's ibacm client) against local-sa's ibacm
//! door on the simulated fabric, with OpenSM as the master: every path
//! field ib_acme prints equals OpenSM's PathRecord for the same pair, its
//! SA verification (`-v`, which asks the master through the door) passes,
//! names and IP addresses resolve through the hosts file, and its
//! performance and endpoint queries print live figures.
//!
//! ibacm's own daemon is not started: it opens verbs devices and sends
//! its address resolution on a UD QP, which the simulator does not carry
//! (umad2sim emulates umad only).

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use conformance::sa_compare::opensm_path;
use conformance::{LocalSa, SimulatedFabric, Topology};
use mad_codec::{Gid, PathRecord};

/// The adapter every simulated node has (umad2sim's name).
const SIM_CA: &str = "ibsim0";

/// ib_acme, from Debian's ibacm package.
const IB_ACME: &str = "ib_acme";

/// Runs ib_acme against `socket`; its stdout, and whether it exited 0.
fn ib_acme(socket: &Path, args: &[&str]) -> (String, bool) {
    let out = Command::new(IB_ACME)
        .arg("-S")
        .arg(socket)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {IB_ACME} (install the ibacm package): {e}"));
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.success(),
    )
}

/// The fields of the first "Path information" block ib_acme printed.
fn printed_path(out: &str) -> HashMap<String, String> {
    out.lines()
        .skip_while(|l| !l.starts_with("Path information"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| {
            let (k, v) = l.trim().split_once(": ")?;
            Some((k.to_owned(), v.to_owned()))
        })
        .collect()
}

/// `lsaquery --resolve DEST --json` through `socket`: its output, which
/// must be a success.
fn lsaquery_resolve(socket: &Path, dest: &str) -> String {
    let out = Command::new(conformance::program("lsaquery").unwrap_or_else(|e| panic!("{e}")))
        .arg("--acm-socket")
        .arg(socket)
        .args(["--resolve", dest, "--json"])
        .output()
        .unwrap();
    let json = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{json}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    json
}

/// ib_acme's printout of `r`, field by field (acme.c's show_path).
fn as_ib_acme_prints(r: &PathRecord) -> HashMap<String, String> {
    let fields = [
        ("dgid", std::net::Ipv6Addr::from(r.dgid()).to_string()),
        ("sgid", std::net::Ipv6Addr::from(r.sgid()).to_string()),
        ("dlid", r.dlid().to_string()),
        ("slid", r.slid().to_string()),
        ("flow label", format!("{:#x}", r.flow_label())),
        ("hop limit", r.hop_limit().to_string()),
        ("tclass", r.tclass().to_string()),
        ("reversible", u8::from(r.reversible()).to_string()),
        ("pkey", format!("{:#x}", r.pkey())),
        ("sl", r.sl().to_string()),
        ("mtu", u8::from(r.mtu()).to_string()),
        ("rate", u8::from(r.rate()).to_string()),
        ("packet lifetime", r.packet_life().to_string()),
    ];
    fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

#[test]
fn ib_acme_resolves_through_local_sa_like_opensm_answers() {
    let fabric = SimulatedFabric::builder(Topology::fat_tree(3, 4, 2))
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let dest = fabric.node("h9").unwrap().port().unwrap();
    let dest_gid = Gid::new(Gid::DEFAULT_PREFIX, dest.guid);
    let src_node = fabric.node("h2").unwrap();
    let src = src_node.port().unwrap();
    let hosts = fabric.dir().join("ibacm_hosts.data");
    std::fs::write(
        &hosts,
        format!(
            "# written by the test\nH9_1 {gid}\n10.0.0.9 {gid}\nfd00::9 {gid}\n",
            gid = dest_gid
        ),
    )
    .unwrap();
    let addr = fabric.dir().join("ibacm_addr.cfg");
    std::fs::write(&addr, format!("H2_1 {SIM_CA} 1 default\n")).unwrap();
    let sa = LocalSa::start(
        &fabric,
        "h2",
        &[
            "--acm-hosts",
            hosts.to_str().unwrap(),
            "--acm-addr",
            addr.to_str().unwrap(),
        ],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let socket = sa.acm_socket();
    let expected = as_ib_acme_prints(&opensm_path(&src_node, src.lid, dest.lid));

    // By LID, by GID, by name and by IP: the same path, OpenSM's.
    let dgid = std::net::Ipv6Addr::from(dest_gid).to_string();
    for (format, destination) in [
        ("l", dest.lid.to_string()),
        ("g", dgid.clone()),
        ("n", "H9_1".to_owned()),
        ("i", "10.0.0.9".to_owned()),
        ("i", "fd00::9".to_owned()),
    ] {
        let (out, ok) = ib_acme(socket, &["-f", format, "-d", &destination, "-v"]);
        assert!(ok, "ib_acme -f {format} -d {destination} failed:\n{out}");
        assert_eq!(
            printed_path(&out),
            expected,
            "-f {format} -d {destination}:\n{out}"
        );
        assert!(
            out.contains("SA verification: success"),
            "-f {format}: the master disagrees:\n{out}"
        );
    }

    // Cached only (-c), many times (-C): answered from the cache.
    let (out, ok) = ib_acme(socket, &["-f", "g", "-d", &dgid, "-c", "-C", "1000"]);
    assert!(ok, "{out}");
    assert_eq!(printed_path(&out), expected);

    // A destination nobody knows: a clean error, the daemon unaffected.
    let (out, ok) = ib_acme(socket, &["-f", "n", "-d", "no-such-host"]);
    assert!(!ok && out.contains("failed"), "{out}");
    let (out, ok) = ib_acme(socket, &["-f", "l", "-d", "999"]);
    assert!(!ok, "a LID nobody has resolved:\n{out}");
    let (out, ok) = ib_acme(socket, &["-f", "l", "-d", &dest.lid.to_string()]);
    assert!(ok, "the daemon serves on after errors:\n{out}");

    // Counters: combined (row and column), per endpoint, every endpoint.
    let (out, ok) = ib_acme(socket, &["-P"]);
    assert!(ok, "{out}");
    let rows: Vec<&str> = out.lines().filter(|l| l.contains(',')).collect();
    assert_eq!(
        rows[0],
        "svc,Error Count,Resolve Count,No Data,Addr Query Count,Addr Cache Count,Route Query Count,Route Cache Count"
    );
    let counts: Vec<u64> = rows[1]
        .split(',')
        .skip(1)
        .map(|v| v.parse().unwrap())
        .collect();
    // 5 resolves with -v (5 more to the master), 1000 cached, 3 after.
    assert_eq!(counts[1], 5 + 5 + 1000 + 3, "resolve count:\n{out}");
    assert!(counts[0] >= 1, "the errors are counted:\n{out}");
    assert!(counts[6] >= 1000, "cache hits are counted:\n{out}");
    assert_eq!(
        counts[4], 3,
        "names and IPs found in the hosts file:\n{out}"
    );
    let (out, _) = ib_acme(socket, &["-P", "col"]);
    assert!(out.contains("Resolve Count : "), "{out}");
    let (out, ok) = ib_acme(socket, &["-P", "1"]);
    assert!(ok && out.lines().count() >= 3, "{out}");
    let (out, _) = ib_acme(socket, &["-P", "all"]);
    assert!(
        out.lines().filter(|l| l.contains(',')).count() >= 2,
        "{out}"
    );

    // lsaquery --resolve: the same path through the same protocol.
    let json = lsaquery_resolve(socket, "H9_1");
    assert!(
        json.starts_with(r#"{"schema":1,"path_flags":["primary","outbound","inbound-reverse","gmp"],"path":{"schema":1,"record":"PathRecord""#),
        "{json}"
    );
    assert!(json.contains(&format!(r#""dlid":{}"#, dest.lid)), "{json}");
    assert!(
        json.contains(r#"{"schema":1,"source":"H2_1"}"#),
        "the source it chose:\n{json}"
    );
    let out = Command::new(conformance::program("lsaquery").unwrap())
        .arg("--acm-socket")
        .arg(socket)
        .args(["--resolve", "no-such-host"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("no-such-host: EDESTADDR"), "{err}");

    // Endpoints: this port with its P_Key, named by the address file.
    let (out, ok) = ib_acme(socket, &["-e"]);
    assert!(ok, "{out}");
    let line = out
        .lines()
        .find(|l| l.contains(",local-sa"))
        .unwrap_or_else(|| panic!("no endpoint listed:\n{out}"));
    assert!(line.contains(",1,0xffff,1,local-sa,H2_1"), "{line}");
    drop(sa);
}

/// Names and IP addresses without hosts files: node names from OpenSM's
/// NodeRecords, and host names and IPs that two other local-sa instances
/// published in the directory at OpenSM.
#[test]
fn names_and_ips_come_from_the_master_and_other_local_sa_nodes() {
    let fabric = SimulatedFabric::builder(Topology::fat_tree(3, 4, 2))
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let storage = LocalSa::start(
        &fabric,
        "h9",
        &[
            "--host-name",
            "storage-9",
            "--address",
            "10.9.0.9",
            "--address",
            "fd00::99",
        ],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let compute = LocalSa::start(
        &fabric,
        "h5",
        &["--host-name", "compute-5", "--address", "10.5.0.5"],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let empty = fabric.dir().join("empty_hosts.data");
    std::fs::write(&empty, "").unwrap();
    let mut sa = LocalSa::start(
        &fabric,
        "h2",
        &[
            "--acm-hosts",
            empty.to_str().unwrap(),
            "--host-name",
            "client-2.cluster.example",
            "--address",
            "10.2.0.2",
            // Names fetched again every 2 s, to see a withdrawal.
            "--refresh-interval",
            "2",
        ],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    // Every host's NodeDescription, and three names and four addresses
    // from the directory.
    let hosts = fabric.topology().hcas().len() as u64;
    sa.wait_until("names from the master", Duration::from_secs(60), |c| {
        c.get("names").is_some_and(|n| *n >= hosts + 3 + 4)
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let socket = sa.acm_socket();
    let src_node = fabric.node("h2").unwrap();
    let src = src_node.port().unwrap();
    for (node, format, destination) in [
        ("h9", "n", "storage-9"),
        ("h9", "i", "10.9.0.9"),
        ("h9", "i", "fd00::99"),
        ("h9", "n", "h9"),
        ("h5", "i", "10.5.0.5"),
        ("h5", "n", "compute-5"),
        ("h7", "n", "h7"),
    ] {
        let dest = fabric.node(node).unwrap().port().unwrap();
        let expected = as_ib_acme_prints(&opensm_path(&src_node, src.lid, dest.lid));
        let (out, ok) = ib_acme(socket, &["-f", format, "-d", destination, "-v"]);
        assert!(ok, "ib_acme -f {format} -d {destination} failed:\n{out}");
        assert_eq!(
            printed_path(&out),
            expected,
            "-f {format} -d {destination}:\n{out}"
        );
        assert!(out.contains("SA verification: success"), "{out}");
    }
    // A source is any name or address of this node: its host name in
    // full and short, ib_acme -A's name for its port, its --address, its
    // NodeDescription's first word; never another host's.
    let dest = fabric.node("h5").unwrap().port().unwrap();
    let expected = as_ib_acme_prints(&opensm_path(&src_node, src.lid, dest.lid));
    for (format, source, destination) in [
        ("n", "client-2.cluster.example", "compute-5"),
        ("n", "client-2", "compute-5"),
        ("n", "client-2-1", "compute-5"),
        ("n", "h2", "compute-5"),
        ("i", "10.2.0.2", "10.5.0.5"),
    ] {
        let (out, ok) = ib_acme(socket, &["-f", format, "-s", source, "-d", destination]);
        assert!(
            ok,
            "ib_acme -f {format} -s {source} -d {destination} failed:\n{out}"
        );
        assert_eq!(printed_path(&out), expected, "-s {source}:\n{out}");
    }
    for (format, source, destination) in [("i", "10.9.0.9", "10.5.0.5"), ("n", "h9", "h5")] {
        let (out, ok) = ib_acme(socket, &["-f", format, "-s", source, "-d", destination]);
        assert!(!ok, "another host's {source} taken as this node's:\n{out}");
    }
    let (out, ok) = ib_acme(socket, &["-e"]);
    assert!(ok, "{out}");
    assert!(
        out.contains("client-2,client-2.cluster.example,client-2-1,10.2.0.2"),
        "the endpoint lists what it owns:\n{out}"
    );
    // A clean exit withdraws the directory record: after the next fetch
    // nobody resolves the name or its addresses.
    let (_, log) = storage.stop();
    assert!(!log.contains("panicked"), "{log}");
    sa.wait_until("storage-9 withdrawn", Duration::from_secs(30), |c| {
        c.get("names").is_some_and(|n| *n == hosts + 4)
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let (out, ok) = ib_acme(sa.acm_socket(), &["-f", "i", "-d", "10.9.0.9"]);
    assert!(!ok, "a withdrawn address still resolves:\n{out}");
    drop(compute);
    drop(sa);
}

/// With LMC 1 every port has two LIDs, and the switches route each
/// separately: a resolve by name carries the primary path and an
/// alternate to the destination's other LID, both OpenSM's records.
#[test]
fn with_lmc_a_path_set_carries_an_alternate_path() {
    let fabric = SimulatedFabric::builder(Topology::fat_tree(3, 4, 2))
        .opensm_config(["lmc 1"])
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut sa = LocalSa::start(&fabric, "h2", &[]).unwrap_or_else(|e| panic!("{e}"));
    sa.wait_until("names from the master", Duration::from_secs(60), |c| {
        c.get("names").is_some_and(|n| *n >= 12)
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let src_node = fabric.node("h2").unwrap();
    let src = src_node.port().unwrap();
    let dest = fabric.node("h9").unwrap().port().unwrap();
    let json = lsaquery_resolve(sa.acm_socket(), "h9");
    // The paths, then the source local-sa chose (this host's name).
    let lines: Vec<&str> = json.lines().filter(|l| l.contains("path_flags")).collect();
    assert_eq!(lines.len(), 2, "a primary and an alternate path:\n{json}");
    assert!(
        json.lines()
            .nth(2)
            .is_some_and(|l| l.contains(r#""source":"#)),
        "{json}"
    );
    assert!(
        lines[0].starts_with(r#"{"schema":1,"path_flags":["primary","#),
        "{json}"
    );
    assert!(
        lines[1].starts_with(r#"{"schema":1,"path_flags":["alternate","#),
        "{json}"
    );
    let field = |line: &str, key: &str| -> u16 {
        let at = line.find(&format!("\"{key}\":")).unwrap() + key.len() + 3;
        line[at..]
            .split([',', '}'])
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    assert_eq!(field(lines[0], "dlid"), dest.lid, "{json}");
    assert_eq!(
        field(lines[1], "dlid"),
        dest.lid + 1,
        "the other LID:\n{json}"
    );
    // Each is OpenSM's record for its LID pair.
    for line in &lines {
        let (slid, dlid) = (field(line, "slid"), field(line, "dlid"));
        let expected = opensm_path(&src_node, slid, dlid);
        assert_eq!(
            (
                expected.slid(),
                expected.dlid(),
                u8::from(expected.mtu()),
                expected.sl()
            ),
            (
                slid,
                dlid,
                field(line, "mtu") as u8 & 0x3F,
                field(line, "sl") as u8
            ),
            "{line}"
        );
    }
    assert!(src.lid % 2 == 0, "base LIDs are aligned to the LMC");
    drop(sa);
}

/// An address of the host for the duration of a test: added to the
/// loopback interface, removed when dropped.
struct HostAddress(&'static str);

impl HostAddress {
    fn add(cidr: &'static str) -> Self {
        let status = Command::new("ip")
            .args(["addr", "add", cidr, "dev", "lo"])
            .status()
            .expect("ip (iproute2)");
        assert!(status.success(), "ip addr add {cidr} dev lo (needs root)");
        Self(cidr)
    }
}

impl Drop for HostAddress {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["addr", "del", self.0, "dev", "lo"])
            .status();
    }
}

/// The IPoIB interfaces' addresses are this node's, followed live. The
/// simulated fabric has no IPoIB interface, so local-sa runs in a private
/// mount namespace whose /sys/class/net shows the loopback interface as
/// the IPoIB interface of its port (type 32, on ibsim0, port 1, P_Key
/// 0xffff): its real addresses, and an address added to it while local-sa
/// runs, are then that endpoint's — accepted as a source within a second
/// of `ip addr add`, refused within a second of `ip addr del`.
#[test]
fn ipoib_addresses_are_this_nodes_and_followed_without_a_restart() {
    let fabric = SimulatedFabric::builder(Topology::fat_tree(3, 4, 2))
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let _server = LocalSa::start(
        &fabric,
        "h9",
        &["--host-name", "storage-9", "--address", "10.9.0.9"],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let fake_ipoib = format!(
        "mount -t tmpfs local-sa-test /sys/class/net\n\
         mkdir -p /sys/class/net/lo/device/infiniband/{SIM_CA}\n\
         echo 32 > /sys/class/net/lo/type\n\
         echo 0 > /sys/class/net/lo/dev_port\n\
         echo 0xffff > /sys/class/net/lo/pkey"
    );
    let mut sa =
        LocalSa::start_in_private_mounts(&fabric, "h2", &["--host-name", "node-a"], &fake_ipoib)
            .unwrap_or_else(|e| panic!("{e}"));
    let hosts = fabric.topology().hcas().len() as u64;
    sa.wait_until("names from the master", Duration::from_secs(60), |c| {
        c.get("names").is_some_and(|n| *n >= hosts + 3)
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let socket = sa.acm_socket().to_path_buf();
    // A resolve from `source` to h9's address: answered when the source
    // is this node's, refused (Cannot assign requested address) if not.
    let accepted = |source: &str| ib_acme(&socket, &["-f", "i", "-s", source, "-d", "10.9.0.9"]).1;
    assert!(accepted("127.0.0.1"), "the interface's own address");
    assert!(!accepted("192.0.2.201"), "not yet this host's");
    let added = HostAddress::add("192.0.2.201/32");
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    while !accepted("192.0.2.201") {
        assert!(
            std::time::Instant::now() < deadline,
            "not followed within 3 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(added);
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    while accepted("192.0.2.201") {
        assert!(
            std::time::Instant::now() < deadline,
            "removal not followed within 3 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let (_, log) = sa.stop();
    assert!(log.contains("this endpoint's addresses changed"), "{log}");
}
