//! local-sa as the registration proxy of its node, with OpenSM as the
//! master: consumers on the node subscribe to notices and join multicast
//! groups through local-sa's local API, and OpenSM holds one registration
//! per distinct key for the port, whatever the number of consumers; what
//! the consumers let go of (or leave behind by closing) is withdrawn, and
//! a restarted OpenSM gets it all back without them doing anything.
//!
//! OpenSM's own view is read from its SA database dump (`sa_db_dump`,
//! rewritten after each sweep that changed it), which shows every record;
//! SA queries through the simulator would only show the first few of a
//! table (SIMULATOR.md).
//!
//! local-sa subscribes to traps 64 and 65 for itself (its path cache
//! follows ports in and out of service), so those two are always at
//! OpenSM for its port, next to whatever its consumers add; and to 66 and
//! 67 while the port is in some group (its members hear when a group is
//! deleted and created again).

// The consumer client, which other tests share; this one needs most of it.
#[allow(dead_code)]
mod api_client;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use api_client::Client;
use conformance::opensm_dump::SaDump;
use conformance::{LocalSa, SimulatedFabric, Topology, eventually};
use local_sa_core::memberships::GroupEvent;
use mad_codec::{Gid, JoinState, MadStatus, TrapDetails, TrapNumber};

/// What local-sa subscribes to for itself: ports coming and going, and
/// a switch port's link going up or down.
const OWN_TRAPS: [u16; 3] = [64, 65, 128];

/// What local-sa subscribes to for itself while the port is in a group.
const GROUP_CREATED: u16 = 66;
const GROUP_DELETED: u16 = 67;

/// A fat tree whose OpenSM dumps its SA database after every sweep, a
/// second apart.
fn fabric() -> SimulatedFabric {
    SimulatedFabric::builder(Topology::fat_tree(4, 4, 2))
        .opensm_config(["sa_db_dump TRUE", "sweep_interval 1"])
        .start()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// local-sa on `node` with its local API socket in the fabric's directory.
struct Agent<'f> {
    sa: LocalSa<'f>,
    socket: PathBuf,
    port: Gid,
    dump: PathBuf,
}

impl<'f> Agent<'f> {
    fn start(fabric: &'f SimulatedFabric, node: &str, extra: &[&str]) -> Self {
        let socket = fabric.dir().join(format!("{node}.sock"));
        let mut args = vec!["--api-socket", socket.to_str().unwrap()];
        args.extend_from_slice(extra);
        let sa = LocalSa::start(fabric, node, &args).unwrap_or_else(|e| panic!("{e}"));
        let guid = fabric.node(node).unwrap().port().unwrap().guid;
        Self {
            sa,
            socket,
            port: Gid::new(Gid::DEFAULT_PREFIX, guid),
            dump: fabric.opensm_dir().join("opensm-sa.dump"),
        }
    }

    fn client(&self) -> Client {
        Client::connect(&self.socket)
    }

    /// Waits until OpenSM's dump satisfies `done`; fails with `what` and
    /// the last dump if it does not within a minute.
    fn opensm_shows(&self, what: &str, done: impl Fn(&SaDump) -> bool) -> SaDump {
        let (dump, held) = SaDump::wait_for(&self.dump, Duration::from_secs(60), done);
        assert!(
            held,
            "OpenSM should show {what}; its SA database holds {dump:#?}\nlocal-sa: {}",
            self.sa.stderr()
        );
        dump
    }

    fn traps(&self, dump: &SaDump) -> Vec<u16> {
        dump.traps_of(self.port)
    }

    /// OpenSM holds `traps` (and local-sa's own) for this port.
    fn traps_at_opensm(&self, traps: &[u16]) -> SaDump {
        let mut want: Vec<u16> = OWN_TRAPS.iter().chain(traps).copied().collect();
        want.sort_unstable();
        want.dedup();
        self.opensm_shows(&format!("subscriptions to traps {want:?}"), |d| {
            self.traps(d) == want
        })
    }

    fn member_state(&self, dump: &SaDump, mgid: Gid) -> Option<u8> {
        dump.member_state(mgid, self.port)
    }

    /// Waits until its counters satisfy `done`.
    fn counters_show(&mut self, what: &str, done: impl Fn(&BTreeMap<String, u64>) -> bool) {
        self.sa
            .wait_until(what, Duration::from_secs(30), |c| {
                done(&c.iter().map(|(k, v)| (k.clone(), *v)).collect())
            })
            .unwrap_or_else(|e| panic!("{e}"));
    }
}

fn mgid(n: u64) -> Gid {
    Gid::new(0xff12_1234_0000_0000, n)
}

fn gid_of(fabric: &SimulatedFabric, node: &str) -> Gid {
    Gid::new(
        Gid::DEFAULT_PREFIX,
        fabric.node(node).unwrap().port().unwrap().guid,
    )
}

#[test]
fn three_subscribers_on_a_node_cost_opensm_one_subscription() {
    let fabric = fabric();
    let mut agent = Agent::start(&fabric, "h5", &[]);
    agent.traps_at_opensm(&[]);

    let mut clients: Vec<Client> = (0..3).map(|_| agent.client()).collect();
    for c in &mut clients {
        assert_eq!(c.subscribe(TrapNumber::ALL, true), MadStatus::OK);
    }
    let dump = agent.traps_at_opensm(&[0xFFFF]);
    assert_eq!(
        dump.subscriptions
            .iter()
            .filter(|s| s.subscriber == agent.port && s.trap == 0xFFFF)
            .count(),
        1,
        "one subscription to every trap for three subscribers"
    );

    // Unplug a host: every subscriber hears of it once.
    let gone = gid_of(&fabric, "h14");
    fabric.unlink("h14", 1).unwrap();
    let out_of_service = |n: &TrapDetails| *n == TrapDetails::GidOutOfService { gid: gone };
    for (i, c) in clients.iter_mut().enumerate() {
        assert!(
            c.wait_notice(Duration::from_secs(60), out_of_service),
            "subscriber {i} got trap 65 for h14"
        );
    }
    for (i, c) in clients.iter_mut().enumerate() {
        c.collect_notices(Duration::from_secs(2));
        assert_eq!(
            c.count_notices(out_of_service),
            1,
            "subscriber {i}: trap 65 exactly once"
        );
    }

    // Two of them go away (one unsubscribes, one just closes): the third
    // still hears when the host comes back.
    assert_eq!(clients[0].subscribe(TrapNumber::ALL, false), MadStatus::OK);
    drop(clients.remove(1));
    agent.counters_show("one consumer left subscribed", |c| c["subscribers"] == 2);
    agent.traps_at_opensm(&[0xFFFF]);
    fabric.relink("h14", 1).unwrap();
    assert!(
        clients[1].wait_notice(Duration::from_secs(60), |n| {
            *n == TrapDetails::GidInService { gid: gone }
        }),
        "the remaining subscriber got trap 64 for h14"
    );
    clients[0].collect_notices(Duration::from_millis(500));
    assert_eq!(
        clients[0].count_notices(|n| matches!(n, TrapDetails::GidInService { .. })),
        0,
        "an unsubscribed connection hears nothing more"
    );

    // The third closes: OpenSM is back to local-sa's own subscriptions.
    drop(clients);
    agent.traps_at_opensm(&[]);
    agent.counters_show("no consumer left", |c| {
        c["subscribers"] == 1 && c["subscriptions"] == OWN_TRAPS.len() as u64
    });
    // OpenSM's answer to an InformInfoRecord query agrees, as far as the
    // simulator delivers it (its first two records).
    let out = fabric
        .node("h6")
        .unwrap()
        .lsaquery()
        .args(["--master", "IIR", &agent.port.to_string(), "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", out.stderr);
    let traps: BTreeSet<&str> = out
        .stdout
        .lines()
        .filter_map(|l| l.split("\"trap_num\":").nth(1))
        .map(|t| t.trim_end_matches('}').split(',').next().unwrap_or(""))
        .collect();
    let own: BTreeSet<String> = OWN_TRAPS.iter().map(u16::to_string).collect();
    assert!(
        traps.len() >= 2 && traps.iter().all(|t| own.contains(*t)),
        "{}",
        out.stdout
    );
}

#[test]
fn four_members_on_a_node_are_one_member_at_opensm_with_their_union() {
    let fabric = fabric();
    let mut agent = Agent::start(&fabric, "h5", &[]);
    let group = mgid(0x42);
    let f = JoinState::FULL_MEMBER;
    let n = JoinState::NON_MEMBER;
    let son = JoinState::SEND_ONLY_NON_MEMBER;
    let sof = JoinState::SEND_ONLY_FULL_MEMBER;

    // Four JoinStates; the second asks only for a bit the first holds.
    let mut members: Vec<Client> = (0..4).map(|_| agent.client()).collect();
    for (c, bits) in members.iter_mut().zip([f | n, f, son, sof]) {
        assert_eq!(c.join(group, bits), MadStatus::OK, "join {bits:?}");
    }
    agent.opensm_shows("the port holding F|N|SON|SOF", |d| {
        agent.member_state(d, group) == Some(0xF)
    });
    agent.counters_show("three joins upstream, one completed locally", |c| {
        c["joins_upstream"] == 3 && c["joins_local"] == 1 && c["members"] == 4
    });

    // The full member leaves: the first member still holds F, so nothing
    // goes to OpenSM.
    // (The polls of the master's activity go on meanwhile.)
    let asked = |sa: &LocalSa<'_>| {
        let c = sa.counters();
        c["upstream_queries"] - c["sweep_polls"]
    };
    let upstream = asked(&agent.sa);
    assert_eq!(members[1].leave(group, f), MadStatus::OK);
    agent.counters_show("the leave counted", |c| c["members"] == 3);
    assert_eq!(asked(&agent.sa), upstream);

    // The send-only non-member leaves: SON goes.
    assert_eq!(members[2].leave(group, son), MadStatus::OK);
    agent.opensm_shows("F|N|SOF", |d| agent.member_state(d, group) == Some(0xB));
    // The send-only full member's connection closes: SOF goes.
    drop(members.remove(3));
    agent.opensm_shows("F|N", |d| agent.member_state(d, group) == Some(0x3));
    // The last member closes: the port leaves, and with no member left
    // OpenSM deletes the group. (OpenSM deletes a group, with all its
    // members, when its last FullMember leaves: the F|N member goes last
    // here so that every step above is a partial leave.)
    drop(members);
    agent.opensm_shows("the group gone", |d| {
        d.groups.iter().all(|g| g.mgid != group)
    });
    agent.counters_show("no group held", |c| c["groups"] == 0 && c["members"] == 0);
}

#[test]
fn opensm_refusals_reach_the_member_unchanged() {
    let fabric = fabric();
    let agent = Agent::start(&fabric, "h5", &[]);
    let missing = mgid(0x99);
    // A join to a group that does not exist, without what creating it
    // needs: OpenSM refuses it, to local-sa as to anyone.
    let direct = fabric
        .node("h6")
        .unwrap()
        .lsaquery()
        .args(["--master", "--join", &missing.to_string(), "-J", "1"])
        .output()
        .unwrap();
    assert_eq!(direct.status.code(), Some(1), "{}", direct.stderr);
    let theirs = direct
        .stderr
        .split("; status ")
        .nth(1)
        .and_then(|s| s.get(..6))
        .and_then(|s| u16::from_str_radix(s.trim_start_matches("0x"), 16).ok())
        .unwrap_or_else(|| panic!("a status in: {}", direct.stderr));
    let mut c = agent.client();
    let ours = c.join_without_create(missing, JoinState::FULL_MEMBER);
    assert_eq!(ours, MadStatus(theirs));
    assert!(!ours.is_ok());
    // Nothing was kept for the refused member.
    assert_eq!(c.list_groups(), 0);
}

#[test]
fn a_restarted_opensm_gets_every_registration_back_without_consumer_action() {
    let fabric = fabric();
    let mut agent = Agent::start(&fabric, "h5", &["--audit-interval", "1"]);
    let group = mgid(0x7);
    let mut subscriber = agent.client();
    let mut member = agent.client();
    assert_eq!(subscriber.subscribe(TrapNumber::ALL, true), MadStatus::OK);
    assert_eq!(member.join(group, JoinState::FULL_MEMBER), MadStatus::OK);
    agent.traps_at_opensm(&[0xFFFF, GROUP_CREATED, GROUP_DELETED]);
    agent.opensm_shows("the membership", |d| {
        agent.member_state(d, group) == Some(1)
    });

    std::fs::remove_file(&agent.dump).unwrap();
    let restart = Instant::now();
    fabric.restart_opensm().unwrap_or_else(|e| panic!("{e}"));
    agent.traps_at_opensm(&[0xFFFF, GROUP_CREATED, GROUP_DELETED]);
    agent.opensm_shows("the membership again", |d| {
        agent.member_state(d, group) == Some(1)
    });
    eprintln!(
        "OpenSM restarted: every registration back after {:.1} s",
        restart.elapsed().as_secs_f64()
    );
    agent.counters_show("one re-registration", |c| c["reregistrations"] >= 1);

    // The consumers did nothing, and still get what they asked for.
    let gone = gid_of(&fabric, "h14");
    fabric.unlink("h14", 1).unwrap();
    assert!(
        subscriber.wait_notice(Duration::from_secs(60), |n| {
            *n == TrapDetails::GidOutOfService { gid: gone }
        }),
        "a notice from the new OpenSM reached the subscriber"
    );
    assert_eq!(member.list_groups(), 1, "the member still holds its group");
}

#[test]
fn bad_frames_get_specific_errors_and_disturb_no_other_client() {
    use local_sa_core::doors::api::{Frame, api_error, kind, request_frame};
    use local_sa_core::request::Request;
    let fabric = fabric();
    let agent = Agent::start(&fabric, "h5", &["--api-mode", "660"]);
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&agent.socket).unwrap().permissions(),
    );
    assert_eq!(mode & 0o777, 0o660, "the socket has the mode asked for");

    let mut good = agent.client();
    assert_eq!(good.subscribe(TrapNumber::ALL, true), MadStatus::OK);
    let mut bad = agent.client();
    let error = |f: Option<Frame>| {
        let f = f.expect("an answer");
        assert_eq!(f.kind, kind::ERROR);
        (f.request, f.status)
    };
    // Another version, an unknown kind, a body of the wrong length.
    let mut v2 = request_frame(&Request::Hello, 7).encode().to_vec();
    v2[4] = 2;
    assert_eq!(error(bad.send_raw(&v2)), (7, api_error::VERSION));
    let unknown = Frame::new(0x33, 8, 0, Default::default()).encode();
    assert_eq!(error(bad.send_raw(&unknown)), (8, api_error::KIND));
    let short = Frame::new(kind::INFORM, 9, 0, vec![0u8; 10].into()).encode();
    assert_eq!(error(bad.send_raw(&short)), (9, api_error::BODY));
    // The connection still works after those.
    let hello = bad
        .send_raw(&request_frame(&Request::Hello, 10).encode())
        .unwrap();
    assert_eq!(
        (hello.kind, hello.request),
        (kind::HELLO_ANSWER, 10),
        "answers go on after a bad frame"
    );
    // A length nobody can frame: an error, then the connection closes.
    assert_eq!(
        error(bad.send_raw(&u32::MAX.to_be_bytes())),
        (0, api_error::LENGTH)
    );
    assert!(bad.is_closed());

    // The other client never noticed.
    assert_eq!(
        good.list_subscriptions(),
        OWN_TRAPS.len() + 1,
        "its subscription and local-sa's own"
    );
    assert_eq!(good.subscribe(TrapNumber::ALL, false), MadStatus::OK);
}

#[test]
fn mad_consumers_that_vanish_leave_nothing_behind() {
    let fabric = fabric();
    let mut agent = Agent::start(&fabric, "h5", &["--member-lease", "3"]);
    let sa_lid = fabric.node("h5").unwrap().port().unwrap().lid.to_string();

    // A subscriber on another node, subscribed through h5's local-sa with
    // a MAD: OpenSM holds the subscription for h5's port, and local-sa
    // sends the subscriber its own Reports.
    let subscriber = fabric
        .node("h6")
        .unwrap()
        .lsaquery()
        .args(["--sa-lid", &sa_lid, "--subscribe", "all", "--json"])
        .serve_requests()
        .spawn()
        .unwrap();
    agent.traps_at_opensm(&[0xFFFF]);
    agent.counters_show("the MAD subscriber", |c| c["subscribers"] == 2);
    let notices_before = agent.sa.counter("notices");
    fabric.unlink("h14", 1).unwrap();
    assert!(
        eventually(Duration::from_secs(60), || subscriber
            .stdout()
            .contains("\"trap_num\":65")),
        "the subscriber got no Report: {}",
        subscriber.stderr()
    );

    // It dies without unsubscribing. Its Reports go unanswered; after a
    // few notices in a row its lease ends and OpenSM's subscription goes.
    subscriber.kill();
    let mut plugged = false;
    let mut seen = notices_before + 1;
    while agent.sa.counter("leases_ended") == 0 {
        assert!(seen < notices_before + 8, "the lease never ended");
        plugged = !plugged;
        if plugged {
            fabric.relink("h14", 1).unwrap();
        } else {
            fabric.unlink("h14", 1).unwrap();
        }
        agent.counters_show("the next notice", |c| c["notices"] > seen);
        seen = agent.sa.counter("notices");
        // Each Report is tried for two seconds before it counts as missed.
        std::thread::sleep(Duration::from_secs(3));
    }
    agent.counters_show("only local-sa itself subscribed", |c| {
        c["subscribers"] == 1 && c["reports_in_flight"] == 0
    });
    agent.traps_at_opensm(&[]);

    // A member on h5 that joins with a MAD and never joins again: its
    // membership ends with its lease.
    let group = mgid(0x55);
    let out = fabric
        .node("h5")
        .unwrap()
        .lsaquery()
        .args([
            "--sa-lid",
            &sa_lid,
            "--join",
            &group.to_string(),
            "--create",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", out.stderr);
    agent.opensm_shows("the MAD member's membership", |d| {
        agent.member_state(d, group) == Some(1)
    });
    agent.opensm_shows("the group gone when the lease ended", |d| {
        d.groups.iter().all(|g| g.mgid != group)
    });
    agent.counters_show("two leases ended", |c| {
        c["leases_ended"] == 2 && c["groups"] == 0
    });
}

/// What the consumers hold, as the model: per connection its trap
/// subscriptions and its JoinState bits per group.
#[derive(Default, Clone)]
struct Holdings {
    traps: BTreeSet<u16>,
    groups: BTreeMap<u64, u8>,
}

/// A small deterministic generator (xorshift), so a failure repeats.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

#[test]
fn ten_thousand_random_registrations_leave_opensm_equal_to_the_model() {
    const OPS: usize = 10_000;
    const CLIENTS: usize = 4;
    const TRAPS: [u16; 5] = [64, 66, 67, 128, 0xFFFF];
    const GROUPS: [u64; 3] = [0x100, 0x101, 0x102];
    let fabric = fabric();
    let mut agent = Agent::start(&fabric, "h5", &[]);
    let mut rng = Rng(0x5EED_1234_ABCD_0001);
    let mut clients: Vec<Client> = (0..CLIENTS).map(|_| agent.client()).collect();
    let mut model: Vec<Holdings> = vec![Holdings::default(); CLIENTS];
    let (mut subscribes, mut unsubscribes, mut joins, mut leaves, mut closes) = (0, 0, 0, 0, 0);

    let check = |agent: &Agent<'_>, model: &[Holdings], at: usize| {
        let mut traps: Vec<u16> = model.iter().flat_map(|h| h.traps.clone()).collect();
        if model.iter().any(|h| !h.groups.is_empty()) {
            traps.extend([GROUP_CREATED, GROUP_DELETED]);
        }
        agent.traps_at_opensm(&traps);
        for g in GROUPS {
            let union = model
                .iter()
                .filter_map(|h| h.groups.get(&g))
                .fold(0, |a, b| a | b);
            let want = (union != 0).then_some(union);
            agent.opensm_shows(
                &format!("after {at} operations, group {g:#x} held as {want:?}"),
                |d| agent.member_state(d, mgid(g)) == want,
            );
        }
    };

    for op in 1..=OPS {
        let i = rng.below(CLIENTS as u64) as usize;
        let (c, held) = (&mut clients[i], &mut model[i]);
        match rng.below(100) {
            // Subscribe (again, maybe: that changes nothing).
            0..30 => {
                let t = TRAPS[rng.below(TRAPS.len() as u64) as usize];
                assert_eq!(c.subscribe(TrapNumber(t), true), MadStatus::OK, "op {op}");
                held.traps.insert(t);
                subscribes += 1;
            }
            // Unsubscribe one it holds.
            30..50 => {
                let Some(&t) = held
                    .traps
                    .iter()
                    .nth(rng.below(held.traps.len().max(1) as u64) as usize)
                else {
                    continue;
                };
                assert_eq!(c.subscribe(TrapNumber(t), false), MadStatus::OK, "op {op}");
                held.traps.remove(&t);
                unsubscribes += 1;
            }
            // Join: always as a full member (OpenSM drops a port that
            // holds no full membership), maybe with more.
            50..80 => {
                let g = GROUPS[rng.below(GROUPS.len() as u64) as usize];
                let bits = 0x1 | (rng.below(4) as u8) << 1;
                assert_eq!(c.join(mgid(g), JoinState(bits)), MadStatus::OK, "op {op}");
                *held.groups.entry(g).or_default() |= bits;
                joins += 1;
            }
            // Leave: some of the bits beside F, or all of them.
            80..97 => {
                let Some((&g, &bits)) = held
                    .groups
                    .iter()
                    .nth(rng.below(held.groups.len().max(1) as u64) as usize)
                else {
                    continue;
                };
                let drop = if rng.below(2) == 0 { bits } else { bits & 0x6 };
                if drop == 0 {
                    continue;
                }
                assert_eq!(c.leave(mgid(g), JoinState(drop)), MadStatus::OK, "op {op}");
                leaves += 1;
                let left = bits & !drop;
                if left == 0 {
                    held.groups.remove(&g);
                } else {
                    held.groups.insert(g, left);
                }
            }
            // The consumer goes away without a word, and another comes.
            _ => {
                *c = agent.client();
                *held = Holdings::default();
                closes += 1;
            }
        }
        c.forget_notices();
        if op % 2_500 == 0 {
            check(&agent, &model, op);
        }
    }

    // Everyone goes: nothing of theirs is left, at OpenSM or in local-sa.
    drop(clients);
    check(&agent, &[], OPS);
    agent.counters_show("nothing leaked, every join and leave counted", |c| {
        c["subscribers"] == 1
            && c["subscriptions"] == OWN_TRAPS.len() as u64
            && c["groups"] == 0
            && c["members"] == 0
            && c["upstream_in_flight"] == 0
            && c["joins_local"] + c["joins_upstream"] == joins
            && c["leaves"] == leaves
    });
    let c = agent.sa.counters();
    eprintln!(
        "{OPS} operations: {} subscribes, {} unsubscribes, {joins} joins ({} completed \
         locally), {leaves} leaves, {closes} connections closed; {} requests to OpenSM",
        subscribes, unsubscribes, c["joins_local"], c["upstream_queries"]
    );
    assert!(
        c["joins_local"] > 0 && c["joins_upstream"] > 0,
        "the run exercised both kinds of join"
    );
}

#[test]
fn a_killed_local_sa_leaves_nothing_behind_once_restarted() {
    let fabric = fabric();
    let agent = Agent::start(&fabric, "h5", &[]);
    let (only_then, shared) = (mgid(0x71), mgid(0x72));
    // Consumers of the first local-sa: a subscriber to trap 128, a member
    // of one group, a member of another. (Not a subscriber to every trap:
    // under the simulator, the trap 144 that a restarting local-sa's
    // IsSM flag causes would reach the new process as a Report before
    // umad2sim is ready for it, and crash it there.)
    let mut subscriber = agent.client();
    let mut member = agent.client();
    let mut other = agent.client();
    assert_eq!(subscriber.subscribe(TrapNumber(128), true), MadStatus::OK);
    assert_eq!(
        member.join(only_then, JoinState::FULL_MEMBER),
        MadStatus::OK
    );
    let full_non = JoinState::FULL_MEMBER | JoinState::NON_MEMBER;
    assert_eq!(other.join(shared, full_non), MadStatus::OK);
    agent.traps_at_opensm(&[128, GROUP_CREATED, GROUP_DELETED]);
    agent.opensm_shows("both memberships", |d| {
        agent.member_state(d, only_then) == Some(0x1) && agent.member_state(d, shared) == Some(0x3)
    });

    // SIGKILL: local-sa withdraws nothing, and its consumers are gone too.
    let (port, dump) = (agent.port, agent.dump.clone());
    agent.sa.kill();
    drop((subscriber, member, other));
    // OpenSM sweeps every second, rewriting its dump when anything changed.
    std::thread::sleep(Duration::from_secs(3));
    let (left, _) = SaDump::wait_for(&dump, Duration::from_secs(10), |_| true);
    assert!(
        left.traps_of(port).contains(&128)
            && left.member_state(only_then, port) == Some(0x1)
            && left.member_state(shared, port) == Some(0x3),
        "what the killed local-sa registered stays at OpenSM: {left:#?}"
    );

    // A new local-sa on the port, and a live consumer that holds part of
    // one group again and subscribes to something else.
    fabric.forget_dead_clients("h5").unwrap();
    let agent = Agent::start(&fabric, "h5", &[]);
    let mut live = agent.client();
    assert_eq!(live.join(shared, JoinState::FULL_MEMBER), MadStatus::OK);
    assert_eq!(live.subscribe(TrapNumber(129), true), MadStatus::OK);
    // OpenSM holds exactly what live consumers hold (and local-sa's own
    // traps): the dead subscriber's filter, the group nobody holds and
    // the Non bit nobody holds are gone.
    agent.traps_at_opensm(&[129, GROUP_CREATED, GROUP_DELETED]);
    agent.opensm_shows("only the live member's bit", |d| {
        agent.member_state(d, shared) == Some(0x1) && d.groups.iter().all(|g| g.mgid != only_then)
    });
    let log = agent.sa.stderr();
    assert!(
        log.contains("removing what a previous local-sa on this port left at the master"),
        "{log}"
    );
    // Once the live consumer goes, nothing of it is left either; a clean
    // exit removes the record of what local-sa holds.
    drop(live);
    agent.traps_at_opensm(&[]);
    let record = agent.sa.run_dir().join(
        std::fs::read_dir(agent.sa.run_dir())
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.file_name())
            .find(|n| n.to_string_lossy().ends_with(".registrations"))
            .expect("a registrations record beside the port lock"),
    );
    let (status, _) = agent.sa.stop();
    assert_eq!(status.and_then(|s| s.code()), Some(0));
    assert!(!record.exists(), "the record goes with a clean exit");
}

#[test]
fn the_kernels_bits_stay_and_members_hear_of_their_groups_deletion_and_return() {
    let fabric = fabric();
    let agent = Agent::start(&fabric, "h5", &[]);
    let master_join = |node: &str, args: &[&str]| {
        let out = fabric
            .node(node)
            .unwrap()
            .lsaquery()
            .arg("--master")
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "lsaquery {args:?}: {}", out.stderr);
    };

    // The kernel (here: a direct join from the same node, as IPoIB makes
    // through its own SA client) holds the port in a group as a full
    // member. A consumer of local-sa joins and leaves the same group: the
    // port's Full bit, which the kernel holds, stays at OpenSM.
    let kernels = mgid(0x81);
    master_join(
        "h5",
        &["--join", &kernels.to_string(), "--create", "-J", "1"],
    );
    agent.opensm_shows("the kernel's membership", |d| {
        agent.member_state(d, kernels) == Some(0x1)
    });
    let mut member = agent.client();
    assert_eq!(member.join(kernels, JoinState::FULL_MEMBER), MadStatus::OK);
    assert_eq!(member.leave(kernels, JoinState::FULL_MEMBER), MadStatus::OK);
    std::thread::sleep(Duration::from_secs(3));
    agent.opensm_shows("the kernel's Full bit still there", |d| {
        agent.member_state(d, kernels) == Some(0x1)
    });

    // Another node creates a group; the consumer joins it as a non-member.
    let group = mgid(0x82);
    master_join("h6", &["--join", &group.to_string(), "--create", "-J", "1"]);
    assert_eq!(member.join(group, JoinState::NON_MEMBER), MadStatus::OK);
    agent.opensm_shows("the consumer's Non bit", |d| {
        agent.member_state(d, group) == Some(0x2)
    });
    // Its only full member leaves: OpenSM deletes the group (trap 67),
    // and the consumer hears it.
    master_join("h6", &["--leave", &group.to_string(), "-J", "1"]);
    assert!(
        member.wait_group_event(Duration::from_secs(60), |e| *e == GroupEvent::Lost(group)),
        "the member hears its group was deleted: {}",
        agent.sa.stderr()
    );
    // The group is created again (trap 66): local-sa joins it again for
    // the consumer, and tells it.
    master_join("h6", &["--join", &group.to_string(), "--create", "-J", "1"]);
    assert!(
        member.wait_group_event(Duration::from_secs(60), |e| {
            matches!(e, GroupEvent::Recreated(r) if r.mgid() == group)
        }),
        "the member hears its group is back: {}",
        agent.sa.stderr()
    );
    agent.opensm_shows("the consumer's Non bit again", |d| {
        agent.member_state(d, group) == Some(0x2)
    });
}
