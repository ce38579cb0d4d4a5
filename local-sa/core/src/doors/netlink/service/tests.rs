use mad_codec::zerocopy::IntoBytes;
use mad_codec::{AttributeId, Gid};

use super::*;
use crate::config::test_port as port;
use crate::doors::DatagramSender;
use crate::doors::netlink::wire::{F_ERR, reply_records};
use crate::names::hosts::NameSource;
use crate::path_flags;
use crate::request::LocalBody;

const PREFIX: u64 = Gid::DEFAULT_PREFIX;
/// The door's connection number.
const CONN: ConnId = 1 << 40;

/// The virtual clock's start.
static T0: std::sync::LazyLock<Instant> = std::sync::LazyLock::new(Instant::now);

/// Ports 1 and 2 of `ibsim0` (LIDs 4 and 5), and a hosts table naming
/// 10.0.0.9.
fn service(max_pending: usize) -> NetlinkService {
    let kp = |agent, port_num, lid| KernelPort {
        agent,
        device: "ibsim0".into(),
        port_num,
        port: port(lid),
    };
    let mut names = Names::new();
    names.insert(
        HostAddress::Ip("10.0.0.9".parse().unwrap()),
        Gid::new(PREFIX, 9),
        NameSource::HostsFile,
    );
    NetlinkService::new(
        NetlinkConfig {
            max_pending,
            ..NetlinkConfig::default()
        },
        CONN,
        vec![kp(0, 1, 4), kp(1, 2, 5)],
        names,
    )
}

fn resolve(port: u8, path_use: PathUse, dgid: Option<Gid>) -> Resolve {
    Resolve {
        device: "ibsim0".into(),
        port,
        path_use,
        service_id: None,
        dgid,
        sgid: None,
        tclass: None,
        pkey: Some(0xffff),
        qos_class: None,
    }
}

/// The door driven through the [`Door`] trait, as the daemon drives it.
trait Driven {
    /// A datagram from `from` at `now`: what the door does, in order.
    fn datagram(&mut self, now: Instant, from: DatagramSender, bytes: &[u8]) -> Vec<Output>;
    /// An agent's reply: what the door sends the kernel, if anything.
    fn reply(&mut self, reply: &LocalReply) -> Option<Bytes>;
    /// When the door's next deadline is due.
    fn deadline(&mut self) -> Option<Instant>;
    /// Deadlines up to `now` passed: what the door sends the kernel.
    fn expired(&mut self, now: Instant) -> Vec<Bytes>;
}

impl Driven for NetlinkService {
    fn datagram(&mut self, now: Instant, from: DatagramSender, bytes: &[u8]) -> Vec<Output> {
        self.handle_input(now, Input::Datagram { from, bytes });
        std::iter::from_fn(|| self.poll_output()).collect()
    }

    fn reply(&mut self, reply: &LocalReply) -> Option<Bytes> {
        self.handle_reply(*T0, reply);
        let sent = self.poll_output().map(replied);
        assert_eq!(self.poll_output(), None, "one reply per answer");
        sent
    }

    fn deadline(&mut self) -> Option<Instant> {
        self.poll_timeout()
    }

    fn expired(&mut self, now: Instant) -> Vec<Bytes> {
        self.handle_timeout(now);
        std::iter::from_fn(|| self.poll_output())
            .map(replied)
            .collect()
    }
}

fn one(outputs: Vec<Output>) -> Output {
    let [a] = <[Output; 1]>::try_from(outputs).unwrap_or_else(|a| panic!("{a:?}"));
    a
}

/// The bytes a Send carries, to the door's connection.
fn replied(output: Output) -> Bytes {
    match output {
        Output::Send { conn: CONN, bytes } => bytes,
        other => panic!("expected a reply, got {other:?}"),
    }
}

fn record(dlid: u16) -> PathRecord {
    let mut r = PathRecord::new_zeroed();
    r.set_sgid(Gid::new(PREFIX, 4));
    r.set_dgid(Gid::new(PREFIX, u64::from(dlid)));
    r.set_slid(4);
    r.set_dlid(dlid);
    r.set_pkey(0xffff);
    r
}

fn answer(id: u32, status: MadStatus, records: &[PathRecord], from_master: bool) -> LocalReply {
    LocalReply {
        conn: CONN,
        request: id,
        answers: Some(crate::request::RequestKind::PathQuery),
        status,
        from_master,
        body: LocalBody::Records {
            attribute: AttributeId::PATH_RECORD,
            stride: 64,
            data: records
                .iter()
                .flat_map(|r| r.as_bytes().to_vec())
                .collect::<Vec<u8>>()
                .into(),
        },
    }
}

fn flags_of(reply: &[u8]) -> u16 {
    Header::parse(reply).unwrap().flags
}

#[test]
fn a_resolve_asks_the_ports_agent_a_get_and_the_record_goes_back_flagged() {
    for (path_use, reversible, flags) in [
        (
            PathUse::GMP,
            true,
            path_flags::PRIMARY | path_flags::GMP | path_flags::BIDIRECTIONAL,
        ),
        (
            PathUse::UNIDIRECTIONAL,
            false,
            path_flags::PRIMARY | path_flags::OUTBOUND,
        ),
        (
            PathUse::ALL,
            true,
            path_flags::PRIMARY | path_flags::GMP | path_flags::BIDIRECTIONAL,
        ),
    ] {
        let mut s = service(8);
        let mut r = resolve(2, path_use, Some(Gid::new(PREFIX, 9)));
        r.service_id = Some(0x106);
        r.tclass = Some(3);
        r.qos_class = Some(0x12);
        let Output::Ask {
            agent, id, request, ..
        } = one(s.datagram(*T0, DatagramSender::Kernel, &wire::resolve_request(55, &r)))
        else {
            panic!("not asked");
        };
        assert_eq!(agent, 1, "port 2 is agent 1's");
        let Request::PathQuery { query, lookup } = request else {
            panic!("not a path query")
        };
        assert_eq!((query.method, lookup), (Method::GET, Lookup::Anywhere));
        let mut mask = pr::SGID | pr::DGID | pr::SERVICE_ID | pr::TCLASS | pr::PKEY | pr::QOS_CLASS;
        if reversible {
            mask |= pr::REVERSIBLE;
        }
        assert_eq!(query.mask, mask);
        let t = query.template;
        assert_eq!(t.sgid(), Gid::new(PREFIX, 5), "the port's own GID");
        assert_eq!(
            (
                t.dgid(),
                t.service_id(),
                t.tclass(),
                t.pkey(),
                t.qos_class()
            ),
            (Gid::new(PREFIX, 9), 0x106, 3, 0xffff, 0x12)
        );
        assert_eq!(t.reversible(), reversible);
        assert_eq!(s.pending(), 1);

        let reply = s
            .reply(&answer(id, MadStatus::OK, &[record(9)], false))
            .unwrap();
        let h = Header::parse(&reply).unwrap();
        assert_eq!((h.seq, h.kind, h.flags), (55, 0x1000, 0));
        let got = reply_records(&reply);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0, flags);
        assert_eq!(got[0].1.as_bytes(), record(9).as_bytes());
        assert_eq!(s.pending(), 0);
        let c = s.counters();
        assert_eq!(
            (c.resolves, c.answered, c.from_cache, c.failed),
            (1, 1, 1, 0)
        );
    }
}

#[test]
fn failures_get_err_so_that_the_kernel_asks_the_sa_itself() {
    let mut s = service(8);
    let ask = |s: &mut NetlinkService, seq| match one(s.datagram(
        *T0,
        DatagramSender::Kernel,
        &wire::resolve_request(seq, &resolve(1, PathUse::GMP, Some(Gid::new(PREFIX, 9)))),
    )) {
        Output::Ask { id, .. } => id,
        other => panic!("{other:?}"),
    };
    for status in [
        MadStatus::ERR_NO_RECORDS,
        MadStatus::BUSY,
        MadStatus::ERR_REQ_INVALID,
    ] {
        let id = ask(&mut s, 1);
        let reply = s.reply(&answer(id, status, &[], true)).unwrap();
        assert_eq!(flags_of(&reply), F_ERR, "{status}");
    }
    // OK without a record is no answer either.
    let id = ask(&mut s, 2);
    let reply = s.reply(&answer(id, MadStatus::OK, &[], true)).unwrap();
    assert_eq!(flags_of(&reply), F_ERR);
    // Another connection's reply, or an unknown request, is not the door's.
    let mut other = answer(id, MadStatus::OK, &[record(9)], true);
    assert_eq!(s.reply(&other), None);
    other.conn = 7;
    assert_eq!(s.reply(&other), None);
    assert_eq!(s.counters().failed, 4);
}

#[test]
fn an_unknown_port_or_no_dgid_gets_err_at_once() {
    let mut s = service(8);
    for r in [
        resolve(3, PathUse::GMP, Some(Gid::new(PREFIX, 9))),
        Resolve {
            device: "mlx5_0".into(),
            ..resolve(1, PathUse::GMP, Some(Gid::new(PREFIX, 9)))
        },
        resolve(1, PathUse::GMP, None),
    ] {
        let reply = replied(one(s.datagram(
            *T0,
            DatagramSender::Kernel,
            &wire::resolve_request(9, &r),
        )));
        let h = Header::parse(&reply).unwrap();
        assert_eq!((h.flags, h.seq, h.len), (F_ERR, 9, 16));
    }
    let c = s.counters();
    assert_eq!((c.unknown_port, c.failed, s.pending()), (2, 3, 0));
}

#[test]
fn past_the_pending_limit_resolves_get_err() {
    let mut s = service(2);
    let r = wire::resolve_request(1, &resolve(1, PathUse::GMP, Some(Gid::new(PREFIX, 9))));
    assert!(matches!(
        one(s.datagram(*T0, DatagramSender::Kernel, &r)),
        Output::Ask { .. }
    ));
    assert!(matches!(
        one(s.datagram(*T0, DatagramSender::Kernel, &r)),
        Output::Ask { .. }
    ));
    let reply = replied(one(s.datagram(*T0, DatagramSender::Kernel, &r)));
    assert_eq!(flags_of(&reply), F_ERR);
    assert_eq!(s.counters().refused_pending, 1);
}

#[test]
fn ip_resolve_answers_from_the_names_tables() {
    let mut s = service(8);
    let ask = |s: &mut NetlinkService, ip: &str| {
        replied(one(s.datagram(
            *T0,
            DatagramSender::Kernel,
            &wire::ip_resolve_request(
                4,
                &IpResolve {
                    ifindex: 3,
                    address: ip.parse().unwrap(),
                },
            ),
        )))
    };
    let reply = ask(&mut s, "10.0.0.9");
    assert_eq!(flags_of(&reply), 0);
    assert_eq!(&reply[20..36], &Gid::new(PREFIX, 9).0);
    assert_eq!(flags_of(&ask(&mut s, "10.0.0.10")), F_ERR);
    // Learned from the master: answered too; the files win.
    let mut learned = Names::new();
    learned.insert(
        HostAddress::Ip("10.0.0.10".parse().unwrap()),
        Gid::new(PREFIX, 10),
        NameSource::Directory,
    );
    learned.insert(
        HostAddress::Ip("10.0.0.9".parse().unwrap()),
        Gid::new(PREFIX, 99),
        NameSource::Directory,
    );
    s.set_learned_names(Arc::new(learned));
    assert_eq!(&ask(&mut s, "10.0.0.10")[20..36], &Gid::new(PREFIX, 10).0);
    assert_eq!(&ask(&mut s, "10.0.0.9")[20..36], &Gid::new(PREFIX, 9).0);
    let c = s.counters();
    assert_eq!((c.ip_resolves, c.answered, c.failed), (4, 3, 1));
}

#[test]
fn malformed_requests_get_err_and_everything_else_is_dropped() {
    let mut s = service(8);
    let mut bad =
        wire::resolve_request(6, &resolve(1, PathUse::GMP, Some(Gid::new(PREFIX, 9)))).to_vec();
    bad[wire::HEADER_LEN + wire::DEVICE_NAME_LEN + 1] = 7; // unknown path use
    let reply = replied(one(s.datagram(*T0, DatagramSender::Kernel, &bad)));
    assert_eq!(
        (flags_of(&reply), Header::parse(&reply).unwrap().seq),
        (F_ERR, 6)
    );
    // A cut header, and a reply-shaped message: nothing sent.
    assert!(
        s.datagram(*T0, DatagramSender::Kernel, &bad[..9])
            .is_empty()
    );
    bad[6..8].copy_from_slice(&0u16.to_ne_bytes());
    assert!(s.datagram(*T0, DatagramSender::Kernel, &bad).is_empty());
    assert_eq!(s.counters().malformed, 3);
}

#[test]
fn the_kernels_errors_are_counted_and_answered_with_nothing() {
    let mut s = service(8);
    let mut b = Vec::new();
    b.extend_from_slice(&36u32.to_ne_bytes());
    b.extend_from_slice(&2u16.to_ne_bytes());
    b.extend_from_slice(&0u16.to_ne_bytes());
    b.extend_from_slice(&[0; 8]);
    b.extend_from_slice(&(-1i32).to_ne_bytes());
    b.extend_from_slice(&[0; 16]);
    assert!(s.datagram(*T0, DatagramSender::Kernel, &b).is_empty());
    assert!(s.datagram(*T0, DatagramSender::Kernel, &b).is_empty());
    assert_eq!(s.counters().kernel_errors, 2);
}

#[test]
fn a_port_change_follows_into_the_template() {
    let mut s = service(8);
    s.handle_port_change(0, port(40));
    let Output::Ask { request, .. } = one(s.datagram(
        *T0,
        DatagramSender::Kernel,
        &wire::resolve_request(1, &resolve(1, PathUse::GMP, Some(Gid::new(PREFIX, 9)))),
    )) else {
        panic!()
    };
    let Request::PathQuery { query, .. } = request else {
        panic!()
    };
    assert_eq!(query.template.sgid(), Gid::new(PREFIX, 40));
}

#[test]
fn an_unanswered_resolve_gets_err_before_the_kernel_gives_up() {
    let mut s = service(8);
    let within = NetlinkConfig::default().answer_within();
    assert!(within < KERNEL_DEFAULT_TIMEOUT);
    assert_eq!(s.deadline(), None);
    let ask = |s: &mut NetlinkService, seq, at| match one(s.datagram(
        at,
        DatagramSender::Kernel,
        &wire::resolve_request(seq, &resolve(1, PathUse::GMP, Some(Gid::new(PREFIX, 9)))),
    )) {
        Output::Ask { id, .. } => id,
        other => panic!("{other:?}"),
    };
    let first = ask(&mut s, 1, *T0);
    let second = ask(&mut s, 2, *T0 + Duration::from_millis(100));
    let third = ask(&mut s, 3, *T0 + Duration::from_millis(200));
    assert_eq!(s.deadline(), Some(*T0 + within));
    // The first is answered in time; the second is not.
    assert!(
        s.reply(&answer(first, MadStatus::OK, &[record(9)], true))
            .is_some()
    );
    assert_eq!(
        s.deadline(),
        Some(*T0 + Duration::from_millis(100) + within)
    );
    assert!(s.expired(*T0 + within).is_empty(), "nothing is due yet");
    let late = *T0 + Duration::from_millis(150) + within;
    let errs = s.expired(late);
    assert_eq!(errs.len(), 1);
    let h = Header::parse(&errs[0]).unwrap();
    assert_eq!((h.flags, h.seq), (F_ERR, 2));
    // Its answer, when it comes, is not sent a second time.
    assert_eq!(
        s.reply(&answer(second, MadStatus::OK, &[record(9)], true)),
        None
    );
    assert!(
        s.reply(&answer(third, MadStatus::OK, &[record(9)], true))
            .is_some()
    );
    assert_eq!(s.deadline(), None);
    let c = s.counters();
    assert_eq!((c.past_deadline, c.failed, c.answered), (1, 1, 2));
}

#[test]
fn the_kernel_is_told_a_time_out_it_accepts_and_answers_come_before_it() {
    // Default agent: 1 s per attempt, 4 attempts.
    let worst = NetlinkConfig::worst_case(Duration::from_secs(1), 4);
    assert_eq!(worst, Duration::from_millis(4500));
    for (timeout, within) in [
        (Duration::from_millis(4500), 4050),
        (KERNEL_DEFAULT_TIMEOUT, 1800),
        (Duration::from_millis(100), 80),
        (Duration::from_millis(1), 20), // raised to the kernel's 40 ms
        (Duration::from_secs(3600), 199_500), // cut to its 200 s
    ] {
        let config = NetlinkConfig {
            kernel_timeout: timeout,
            ..NetlinkConfig::default()
        };
        assert_eq!(config.answer_within(), Duration::from_millis(within));
        let s = NetlinkService::new(config, CONN, Vec::new(), Names::new());
        let m = s.set_timeout_message(7);
        let mut messages = wire::messages(&m).into_iter();
        let (Some((_, Ok(message))), None) = (messages.next(), messages.next()) else {
            panic!("one SET_TIMEOUT");
        };
        let Body::SetTimeout(Some(ms)) = message.body else {
            panic!("{:?}", message.body)
        };
        assert_eq!(
            Duration::from_millis(u64::from(ms)),
            clamp_kernel_timeout(timeout)
        );
    }
}

#[test]
fn answered_resolves_behind_a_slow_one_do_not_pile_up() {
    let mut s = service(4);
    let mut ids = Vec::new();
    let mut at = *T0;
    // One slow RESOLVE, then many answered at once.
    for seq in 0..100 {
        at += Duration::from_millis(1);
        let Output::Ask { id, .. } = one(s.datagram(
            at,
            DatagramSender::Kernel,
            &wire::resolve_request(seq, &resolve(1, PathUse::GMP, Some(Gid::new(PREFIX, 9)))),
        )) else {
            panic!()
        };
        if seq > 0 {
            assert!(
                s.reply(&answer(id, MadStatus::OK, &[record(9)], true))
                    .is_some()
            );
        }
        ids.push(id);
        s.deadline();
        assert!(s.deadlines.len() <= DEADLINES_PER_PENDING * 4 + 1);
    }
    assert_eq!(s.pending(), 1);
    assert_eq!(
        s.deadline(),
        Some(*T0 + Duration::from_millis(1) + NetlinkConfig::default().answer_within())
    );
}

#[test]
fn only_the_kernel_is_answered_and_an_empty_datagram_stops_nothing() {
    let mut s = service(16);
    let query = wire::resolve_request(7, &resolve(1, PathUse::GMP, Some(Gid::new(PREFIX, 9))));
    // Another process sends the kernel's next query, sequence number and
    // all: nothing is asked, nothing sent back.
    for from in [DatagramSender::Process(4242), DatagramSender::Unknown] {
        assert!(s.datagram(*T0, from, &query).is_empty());
    }
    assert!(s.datagram(*T0, DatagramSender::Kernel, &[]).is_empty());
    let c = s.counters();
    assert_eq!(
        (c.not_from_kernel, c.empty, c.resolves, c.malformed),
        (2, 1, 0, 0)
    );
    assert_eq!(s.pending(), 0);
    // The kernel's own query after them is asked as ever.
    assert!(matches!(
        one(s.datagram(*T0, DatagramSender::Kernel, &query)),
        Output::Ask { .. }
    ));
}
