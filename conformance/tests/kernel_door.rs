//! The kernel door on the fabric: local-sa gets one end of a datagram
//! socketpair as its inherited `netlink` socket (these machines' kernel
//! has no NETLINK_RDMA), and the test speaks the kernel's RDMA_NL_LS bytes
//! on the other end, as `sa_query.c` and `addr.c` would.

use std::time::Duration;

use conformance::kernel_end::Kernel;
use conformance::saquery::{PATIENT, printed_answer};
use conformance::{LocalSa, SimulatedFabric, Topology};
use local_sa_core::doors::netlink::wire::{
    self, F_ERR, Header, IpResolve, PathUse, Resolve, reply_records,
};
use local_sa_core::path_flags;
use mad_codec::Gid;
use mad_codec::zerocopy::IntoBytes;

fn gid(guid: u64) -> Gid {
    Gid::new(Gid::DEFAULT_PREFIX, guid)
}

#[test]
fn the_kernels_queries_are_answered_from_the_cache_as_opensm_would() {
    let fabric = SimulatedFabric::builder(Topology::fat_tree(3, 4, 2))
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let (ours, kernel) = Kernel::pair(Duration::from_secs(20));
    let _far =
        LocalSa::start(&fabric, "h9", &["--address", "10.9.0.9"]).unwrap_or_else(|e| panic!("{e}"));
    let mut sa = LocalSa::start_passing(&fabric, "h2", &[], "netlink", ours)
        .unwrap_or_else(|e| panic!("{e}"));
    let node = fabric.node("h2").unwrap();
    let me = node.port().unwrap();
    let far = fabric.node("h9").unwrap().port().unwrap();

    // At start, local-sa tells the kernel how long to wait.
    let set_timeout = kernel.reply();
    let h = Header::parse(&set_timeout).unwrap();
    assert_eq!((h.kind, h.flags), (0x1001, wire::F_REQUEST));

    // RESOLVE for each path use: OpenSM's record, the kernel's flags.
    let device = "ibsim0";
    // rdma_cm's route resolution names a ServiceID (its port space and
    // port: RDMA_PS_TCP, port 0x1234); IPoIB and the others do not.
    const RDMA_CM_SERVICE_ID: u64 = 0x0000_0000_0106_1234;
    for (seq, path_use, service_id) in [
        (10, PathUse::GMP, None),
        (11, PathUse::UNIDIRECTIONAL, None),
        (12, PathUse::ALL, None),
        (13, PathUse::GMP, Some(RDMA_CM_SERVICE_ID)),
    ] {
        let request = Resolve {
            device: device.into(),
            port: 1,
            path_use,
            service_id,
            dgid: Some(gid(far.guid)),
            sgid: Some(gid(me.guid)),
            tclass: None,
            pkey: Some(0xffff),
            qos_class: None,
        };
        let reply = kernel.ask(&wire::resolve_request(seq, &request));
        let h = Header::parse(&reply).unwrap();
        assert_eq!((h.seq, h.kind, h.flags), (seq, 0x1000, 0), "{path_use}");
        let records = reply_records(&reply);
        assert_eq!(records.len(), 1, "{path_use}");
        let (flags, record) = records[0];
        assert_eq!(flags, path_use.record_flags());
        // OpenSM's answer to the same Get.
        let mut args = vec![
            "--master".to_owned(),
            PATIENT[0].to_owned(),
            PATIENT[1].to_owned(),
            PATIENT[2].to_owned(),
            PATIENT[3].to_owned(),
            "-p".into(),
            "--sgid".into(),
            gid(me.guid).to_string(),
            "--dgid".into(),
            gid(far.guid).to_string(),
            "--pkey".into(),
            "0xffff".into(),
            "--method".into(),
            "get".into(),
            "-d".into(),
        ];
        if path_use.reversible() {
            args.extend(["--reversible".into(), "1".into()]);
        }
        if let Some(id) = service_id {
            args.extend(["--service_id".into(), format!("{id:#x}")]);
        }
        let out = node.lsaquery().args(&args).output().unwrap();
        let (_, opensm) = printed_answer(&out.stdout)
            .unwrap_or_else(|| panic!("no answer from OpenSM:\n{}{}", out.stdout, out.stderr));
        assert_eq!(
            record.as_bytes(),
            &opensm[..64],
            "{path_use}: the record OpenSM gives"
        );
        assert_eq!(
            flags & path_flags::PRIMARY,
            path_flags::PRIMARY,
            "{path_use}"
        );
    }

    // A destination nobody has, a port not served, a malformed RESOLVE:
    // ERR, so that the kernel asks the SA itself at once.
    let unknown = Resolve {
        device: device.into(),
        port: 1,
        path_use: PathUse::GMP,
        service_id: None,
        dgid: Some(gid(0xdead_beef)),
        sgid: None,
        tclass: None,
        pkey: None,
        qos_class: None,
    };
    let reply = kernel.ask(&wire::resolve_request(20, &unknown));
    assert_eq!(Header::parse(&reply).unwrap().flags, F_ERR);
    let other_port = Resolve {
        port: 2,
        ..unknown.clone()
    };
    let reply = kernel.ask(&wire::resolve_request(21, &other_port));
    assert_eq!(Header::parse(&reply).unwrap().flags, F_ERR);
    let mut lying = wire::resolve_request(22, &unknown).to_vec();
    let first_attr = wire::HEADER_LEN + wire::RESOLVE_HEADER_LEN;
    lying[first_attr..first_attr + 2].copy_from_slice(&999u16.to_ne_bytes());
    let reply = kernel.ask(&lying);
    assert_eq!(
        (
            Header::parse(&reply).unwrap().flags,
            Header::parse(&reply).unwrap().seq
        ),
        (F_ERR, 22)
    );

    // IP_RESOLVE of the address h9's local-sa published in the directory.
    sa.wait_until("h9's address learned", Duration::from_secs(60), |c| {
        c.get("names").is_some_and(|n| *n > 0)
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let mut answered = None;
    for attempt in 0..30 {
        let reply = kernel.ask(&wire::ip_resolve_request(
            30 + attempt,
            &IpResolve {
                ifindex: 1,
                address: "10.9.0.9".parse().unwrap(),
            },
        ));
        if Header::parse(&reply).unwrap().flags == 0 {
            answered = Some(reply);
            break;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    let reply = answered.expect("10.9.0.9 resolved within 30 s");
    assert_eq!(&reply[20..36], &gid(far.guid).0);

    // The kernel refusing our replies (a daemon without CAP_NET_ADMIN
    // gets EPERM for each): counted each time, logged once.
    for seq in 40..43u32 {
        let mut refusal = Vec::new();
        refusal.extend_from_slice(&36u32.to_ne_bytes());
        refusal.extend_from_slice(&2u16.to_ne_bytes()); // NLMSG_ERROR
        refusal.extend_from_slice(&0u16.to_ne_bytes());
        refusal.extend_from_slice(&seq.to_ne_bytes());
        refusal.extend_from_slice(&0u32.to_ne_bytes());
        refusal.extend_from_slice(&(-1i32).to_ne_bytes()); // -EPERM
        refusal.extend_from_slice(&[0; 16]);
        kernel.0.send(&refusal).unwrap();
    }

    // Counted (the counters file is written every few seconds); the
    // malformed RESOLVE counts as malformed only.
    let counted = sa.wait_until("the kernel door's counters", Duration::from_secs(20), |c| {
        c.get("netlink_resolves") == Some(&6)
            && c.get("netlink_ip_resolves").is_some_and(|n| *n >= 1)
            && c.get("netlink_kernel_errors") == Some(&3)
    });
    let c = sa.counters();
    assert!(counted.is_ok(), "{c:?}");
    assert_eq!(
        (c["netlink_malformed"], c["netlink_unknown_port"]),
        (1, 1),
        "{c:?}"
    );
    // The four paths came from the cache (the port's table), not from
    // the master; one answer, the address.
    assert_eq!(
        (c["netlink_from_cache"], c["netlink_answered"]),
        (4, 5),
        "{c:?}"
    );
    let refusals = sa
        .stderr()
        .matches("the kernel refused a netlink message")
        .count();
    assert_eq!(refusals, 1, "three refusals, one log line");
}

/// A RESOLVE from h2's port 1 to `dgid`, as `ib_nl_make_request` sends it.
fn resolve_to(dgid: Gid, path_use: PathUse) -> Resolve {
    Resolve {
        device: "ibsim0".into(),
        port: 1,
        path_use,
        service_id: None,
        dgid: Some(dgid),
        sgid: None,
        tclass: None,
        pkey: Some(0xffff),
        qos_class: None,
    }
}

/// How many RESOLVEs the kernel has in flight at once in the pipelined
/// run.
const PIPELINED: u32 = 10_000;

/// How many junk datagrams follow the empty one.
const JUNK: usize = 206;

#[test]
fn ten_thousand_pipelined_resolves_bad_messages_and_a_silent_master() {
    let fabric = SimulatedFabric::builder(Topology::fat_tree(3, 4, 2))
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let (ours, kernel) = Kernel::pair(Duration::from_secs(30));
    // The kernel is told to wait 10 s (the door answers ERR at 9.5 s); the
    // master gets 30 s per attempt, so a RESOLVE it leaves unanswered meets
    // the door's deadline first. The deadline is far beyond what the
    // pipelined RESOLVEs below take even on a loaded machine: a RESOLVE
    // answered late would be an ERR, and the test is about answers.
    let args = ["--netlink-timeout", "10000", "--upstream-timeout", "30000"];
    let mut sa = LocalSa::start_passing(&fabric, "h2", &args, "netlink", ours)
        .unwrap_or_else(|e| panic!("{e}"));
    let set_timeout = kernel.reply();
    let told =
        wire::messages(&set_timeout)
            .into_iter()
            .find_map(|(_, m)| match m.map(|m| m.body) {
                Ok(wire::Body::SetTimeout(ms)) => ms,
                _ => None,
            });
    assert_eq!(
        told,
        Some(10_000),
        "the SET_TIMEOUT carries --netlink-timeout"
    );

    // Every host of the fabric, each path use, 10,000 RESOLVEs written
    // without waiting, read back as they come.
    let hosts: Vec<Gid> = fabric
        .topology()
        .hcas()
        .iter()
        .map(|h| gid(fabric.node(h).unwrap().port().unwrap().guid))
        .collect();
    let uses = [PathUse::GMP, PathUse::UNIDIRECTIONAL, PathUse::ALL];
    let writer = {
        let socket = kernel.0.try_clone().unwrap();
        let hosts = hosts.clone();
        std::thread::spawn(move || {
            for seq in 0..PIPELINED {
                let i = seq as usize;
                let r = resolve_to(hosts[i % hosts.len()], uses[i / hosts.len() % uses.len()]);
                socket.send(&wire::resolve_request(seq, &r)).unwrap();
            }
        })
    };
    let mut seen = vec![0u32; PIPELINED as usize];
    let mut errors = 0;
    for _ in 0..PIPELINED {
        let reply = kernel.reply();
        let h = Header::parse(&reply).unwrap();
        let i = h.seq as usize;
        assert!(i < seen.len(), "a reply to a RESOLVE never sent: seq {i}");
        seen[i] += 1;
        if h.flags & F_ERR != 0 {
            errors += 1;
            continue;
        }
        let records = reply_records(&reply);
        assert_eq!(records.len(), 1, "seq {i}");
        let (flags, record) = records[0];
        let path_use = uses[i / hosts.len() % uses.len()];
        assert_eq!(flags, path_use.record_flags(), "seq {i}");
        assert_eq!(record.dgid(), hosts[i % hosts.len()], "seq {i}");
    }
    writer.join().unwrap();
    assert!(seen.iter().all(|n| *n == 1), "each RESOLVE answered once");
    // h2's own GID is among the hosts: a path to itself exists too.
    assert_eq!(errors, 0, "every host is reachable");

    // Malformed messages: a cut header is dropped; an unknown operation
    // and another client's message get ERR with their sequence numbers,
    // as does a RESOLVE naming no device (a port not served). Nothing
    // else happens.
    let valid = wire::resolve_request(50, &resolve_to(hosts[0], PathUse::GMP)).to_vec();
    kernel.0.send(&valid[..9]).unwrap();
    let mut unknown_op = valid.clone();
    unknown_op[4..6].copy_from_slice(&(4u16 << 10 | 9).to_ne_bytes());
    unknown_op[8..12].copy_from_slice(&51u32.to_ne_bytes());
    let mut other_client = valid.clone();
    other_client[4..6].copy_from_slice(&(3u16 << 10).to_ne_bytes());
    other_client[8..12].copy_from_slice(&52u32.to_ne_bytes());
    let mut nameless = valid.clone();
    nameless[wire::HEADER_LEN..wire::HEADER_LEN + wire::DEVICE_NAME_LEN].fill(0);
    nameless[8..12].copy_from_slice(&53u32.to_ne_bytes());
    for (message, seq) in [(unknown_op, 51), (other_client, 52), (nameless, 53)] {
        let reply = kernel.ask(&message);
        let h = Header::parse(&reply).unwrap();
        assert_eq!((h.flags, h.seq), (F_ERR, seq));
    }
    // The door still answers.
    let reply = kernel.ask(&valid);
    assert_eq!(Header::parse(&reply).unwrap().flags, 0);

    // An empty datagram is not the end of the socket, and junk after it
    // (too short to hold a header: dropped, counted) stops nothing.
    kernel.0.send(&[]).unwrap();
    for n in 0..JUNK {
        kernel.0.send(&[0xa5; 15][..1 + n % 15]).unwrap();
    }
    let reply = kernel.ask(&valid);
    assert_eq!(
        Header::parse(&reply).unwrap().flags,
        0,
        "answered after junk"
    );

    // The master goes silent (OpenSM stopped, not killed: under ibsim a
    // MAD to a LID nobody serves comes back undelivered at once): a
    // RESOLVE the cache cannot answer gets ERR at the door's deadline
    // (10 s less half a second), long before the agent's own attempt at
    // the master times out (30 s); the past-deadline counter says which.
    let started = std::time::Instant::now();
    let reply = fabric.with_opensm_frozen(|| {
        kernel.ask(&wire::resolve_request(
            60,
            &resolve_to(gid(0xdead_beef), PathUse::GMP),
        ))
    });
    let waited = started.elapsed();
    let h = Header::parse(&reply).unwrap();
    assert_eq!((h.flags, h.seq), (F_ERR, 60));
    eprintln!("ERR for a RESOLVE the master left unanswered after {waited:?}");

    let counted = sa.wait_until("the kernel door's counters", Duration::from_secs(20), |c| {
        c.get("netlink_past_deadline") == Some(&1)
    });
    let c = sa.counters();
    assert!(counted.is_ok(), "{c:?}");
    assert_eq!(
        (
            c["netlink_resolves"],
            c["netlink_malformed"],
            c["netlink_answered"],
            c["netlink_from_cache"],
        ),
        (
            u64::from(PIPELINED) + 4,
            3 + JUNK as u64,
            u64::from(PIPELINED) + 2,
            u64::from(PIPELINED) + 2
        ),
        "{c:?}"
    );
    assert_eq!(c["netlink_empty"], 1, "{c:?}");
    assert_eq!(c["netlink_unknown_port"], 1, "{c:?}");
    assert_eq!(c["netlink_replies_dropped"], 0, "{c:?}");
}
