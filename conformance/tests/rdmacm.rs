//! The real librdmacm (rdma-core 44) asking local-sa, as every rdma_cm
//! application does: `rdma_getaddrinfo()` by destination IP, with
//! RAI_NUMERICHOST, with a source IP, by host name, and the RAI_ROUTEONLY
//! request `rdma_resolve_route()` sends on InfiniBand. Each answer is
//! OpenSM's PathRecord for the pair; what local-sa cannot resolve gets
//! librdmacm's normal "no route", and so does a machine without local-sa.
//!
//! librdmacm runs in a private mount namespace with a fake verbs device
//! and local-sa's socket at `/run/ibacm.sock` (`conformance::rdmacm`).

use std::time::Duration;

use conformance::rdmacm::{Librdmacm, Reach, RoutePath};
use conformance::sa_compare::opensm_path;
use conformance::{LocalSa, SimulatedFabric, Topology};
use mad_codec::zerocopy::IntoBytes;

/// `IBV_PATH_FLAG_PRIMARY` (`infiniband/sa.h`).
const PRIMARY: u32 = 1 << 1;

/// The destination: local-sa on h9, publishing the name `node-b` and the
/// address 192.0.2.41 in the directory.
fn node_b(fabric: &SimulatedFabric) -> LocalSa<'_> {
    LocalSa::start(
        fabric,
        "h9",
        &["--host-name", "node-b", "--address", "192.0.2.41"],
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn rdma_getaddrinfo_and_route_resolution_get_opensms_path_from_local_sa() {
    let fabric = SimulatedFabric::builder(Topology::fat_tree(3, 4, 2))
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let librdmacm = Librdmacm::prepare(fabric.dir()).unwrap_or_else(|e| panic!("{e}"));
    let server = node_b(&fabric);
    let mut sa = LocalSa::start(
        &fabric,
        "h2",
        &["--host-name", "node-a", "--address", "192.0.2.22"],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    // Every host's NodeDescription, and both nodes' names and addresses.
    let hosts = fabric.topology().hcas().len() as u64;
    sa.wait_until("the directory", Duration::from_secs(60), |c| {
        c.get("names").is_some_and(|n| *n >= hosts + 4)
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let (src_node, dest_node) = (fabric.node("h2").unwrap(), fabric.node("h9").unwrap());
    let (src, dest) = (src_node.port().unwrap(), dest_node.port().unwrap());
    let expected = opensm_path(&src_node, src.lid, dest.lid);
    let hosts_file = fabric.dir().join("etc-hosts");
    std::fs::write(&hosts_file, "127.0.0.1 localhost\n192.0.2.41 node-b\n").unwrap();
    let socket = sa.acm_socket();

    for args in [
        &["192.0.2.41"][..],
        &["--numeric", "192.0.2.41"],
        &["--src", "192.0.2.22", "192.0.2.41"],
        &["--route-only", "--src", "192.0.2.22", "192.0.2.41"],
        &["node-b"],
    ] {
        let paths = librdmacm
            .ask(Reach::Socket(socket), Some(&hosts_file), args)
            .unwrap_or_else(|e| panic!("{args:?}: {e}"));
        let primary: Vec<&RoutePath> = paths.iter().filter(|p| p.flags & PRIMARY != 0).collect();
        assert_eq!(primary.len(), 1, "{args:?}: {paths:?}");
        assert_eq!(
            primary[0].record,
            expected.as_bytes(),
            "{args:?}: librdmacm's path is not OpenSM's"
        );
    }
    // A destination nobody published, and a source that is another
    // host's: no route, librdmacm's normal outcome.
    for args in [
        &["192.0.2.99"][..],
        &["--route-only", "--src", "192.0.2.41", "192.0.2.41"],
    ] {
        let paths = librdmacm
            .ask(Reach::Socket(socket), None, args)
            .unwrap_or_else(|e| panic!("{args:?}: {e}"));
        assert!(paths.is_empty(), "{args:?}: {paths:?}");
    }
    // Without local-sa, librdmacm behaves as without ibacm.
    let socket = socket.to_path_buf();
    let (_, log) = sa.stop();
    assert!(!log.contains("panicked"), "{log}");
    let paths = librdmacm
        .ask(Reach::Socket(&socket), None, &["192.0.2.41"])
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(paths.is_empty(), "{paths:?}");
    drop(server);
}

/// A node moving from ibacm keeps its options file: `server_mode loop`
/// serves ib_acme and librdmacm over TCP on 127.0.0.1, found through the
/// port files ibacm writes; the options local-sa has no use for are named
/// in its log; the port files go when local-sa does.
#[test]
fn ibacms_options_file_and_tcp_server_mode_serve_librdmacm_and_ib_acme() {
    let fabric = SimulatedFabric::builder(Topology::fat_tree(3, 4, 2))
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let librdmacm = Librdmacm::prepare(fabric.dir()).unwrap_or_else(|e| panic!("{e}"));
    let server = node_b(&fabric);
    let opts = fabric.dir().join("ibacm_opts.cfg");
    std::fs::write(
        &opts,
        "# ib_acme -O\nlog_file /var/log/ibacm.log\nlock_file /run/ibacm.pid\n\
         server_mode loop\ntimeout 2500\nroute_preload full_opensm_v1\nserver_mode sideways\n",
    )
    .unwrap();
    let port_dir = fabric.dir().join("h2-run-ibacm");
    std::fs::create_dir_all(&port_dir).unwrap();
    let mut sa = LocalSa::start(
        &fabric,
        "h2",
        &[
            "--acm-options",
            opts.to_str().unwrap(),
            // A free port: tests run side by side.
            "--acm-server-port",
            "0",
            "--acm-port-dir",
            port_dir.to_str().unwrap(),
        ],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let hosts = fabric.topology().hcas().len() as u64;
    sa.wait_until("the directory", Duration::from_secs(60), |c| {
        c.get("names").is_some_and(|n| *n >= hosts + 2)
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let port: u16 = std::fs::read_to_string(port_dir.join("ibacm.port"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_ne!(port, 0);
    let (src_node, dest_node) = (fabric.node("h2").unwrap(), fabric.node("h9").unwrap());
    let (src, dest) = (src_node.port().unwrap(), dest_node.port().unwrap());
    let expected = opensm_path(&src_node, src.lid, dest.lid);
    let paths = librdmacm
        .ask(Reach::PortDir(&port_dir), None, &["192.0.2.41"])
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(paths.len(), 1, "{paths:?}");
    assert_eq!(paths[0].record, expected.as_bytes());
    let dlid = dest.lid.to_string();
    let out = librdmacm
        .run(
            Reach::PortDir(&port_dir),
            None,
            &["ib_acme", "-S", "localhost", "-f", "l", "-d", &dlid],
        )
        .unwrap_or_else(|e| panic!("{e}"));
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{printed}");
    assert!(printed.contains(&format!("dlid: {dlid}")), "{printed}");
    let (_, log) = sa.stop();
    for unused in ["log_file", "lock_file", "route_preload"] {
        assert!(
            log.lines()
                .any(|l| l.contains("does not use") && l.contains(unused)),
            "{unused} not named:\n{log}"
        );
    }
    assert!(
        log.contains("server_mode \\\"sideways\\\"") || log.contains("server_mode \"sideways\""),
        "{log}"
    );
    assert!(!port_dir.join("ibacm.port").exists());
    assert!(!port_dir.join("ibacm-tcp.port").exists());
    drop(server);
}
