use mad_codec::attr::path_record::mask as pr;
use mad_codec::{
    ComponentMask, Gid, MadStatus, Method, Mtu, PathRecord, PathRecordRepr, Rate, Selector,
};

use super::*;
use crate::partitions::Partitions;
use crate::store::PathStore;

const PREFIX: u64 = Gid::DEFAULT_PREFIX;
// OpenSM's port table sorts GUIDs byte-swapped, so these three sort C, B,
// A although numerically C < A < B: 0x200000 comes before 0x100001.

/// Source port, LID 1; last in OpenSM's table order.
const A: u64 = 0x0000_0000_0010_0001;
/// LID 2.
const B: u64 = 0x0000_0000_0020_0000;
/// LIDs 4 and 5 (LMC 1); first in table order.
const C: u64 = 0x0000_0000_0010_0000;

fn gid(guid: u64) -> Gid {
    Gid::new(PREFIX, guid)
}

/// OpenSM's unconstrained answer for one LID pair.
fn base(sguid: u64, slid: u16, dguid: u64, dlid: u16, preference: u8) -> PathRecord {
    PathRecordRepr {
        sgid: gid(sguid),
        dgid: gid(dguid),
        slid,
        dlid,
        reversible: true,
        pkey: 0xFFFF,
        mtu_selector: Selector::Exactly,
        mtu: Mtu::MTU_2048,
        rate_selector: Selector::Exactly,
        rate: Rate::GBPS_10,
        packet_life_selector: Selector::Exactly,
        packet_life: if sguid == dguid { 0 } else { 18 },
        preference,
        ..PathRecordRepr::default()
    }
    .to_wire()
}

/// Every path from A as a bulk GetTable (SGID = A) returns them.
fn store() -> PathStore {
    let mut s = PathStore::new();
    for r in [
        base(A, 1, A, 1, 0),
        base(A, 1, B, 2, 0),
        base(A, 1, C, 4, 0),
        base(A, 1, C, 5, 2),
    ] {
        s.insert(r, 1);
    }
    s
}

fn ask(store: &PathStore, method: Method, mask: ComponentMask, req: &PathRecord) -> Outcome {
    ask_with(store, method, mask, req, false)
}

fn ask_with(
    store: &PathStore,
    method: Method,
    mask: ComponentMask,
    req: &PathRecord,
    qos: bool,
) -> Outcome {
    let complete = FastSet::from_iter([A]);
    let k = Knowledge {
        store,
        subnet_prefix: PREFIX,
        complete_sources: &complete,
        master_qos: qos,
        partitions: &Partitions::default(),
        in_doubt: false,
    };
    evaluate(&k, method, mask, req)
}

fn template(f: impl FnOnce(&mut PathRecord)) -> PathRecord {
    let mut r = PathRecordRepr::default().to_wire();
    f(&mut r);
    r
}

fn records(o: Outcome) -> Vec<PathRecord> {
    match o {
        Outcome::Records(r) => r,
        other => panic!("expected records, got {other:?}"),
    }
}

fn lid_pairs(rs: &[PathRecord]) -> Vec<(u16, u16)> {
    rs.iter().map(|r| (r.slid(), r.dlid())).collect()
}

fn get_a_to_b(extra: ComponentMask, f: impl FnOnce(&mut PathRecord)) -> Outcome {
    let req = template(|r| {
        r.set_slid(1);
        r.set_dlid(2);
        f(r);
    });
    ask(&store(), Method::GET, pr::SLID | pr::DLID | extra, &req)
}

#[test]
fn a_pair_by_lids_or_gids_is_the_stored_path() {
    let s = store();
    let by_lids = records(ask(
        &s,
        Method::GET_TABLE,
        pr::SLID | pr::DLID,
        &template(|r| {
            r.set_slid(1);
            r.set_dlid(2);
        }),
    ));
    assert_eq!(by_lids, [base(A, 1, B, 2, 0)]);
    let by_gids = records(ask(
        &s,
        Method::GET,
        pr::SGID | pr::DGID,
        &template(|r| {
            r.set_sgid(gid(A));
            r.set_dgid(gid(B));
        }),
    ));
    assert_eq!(by_gids, by_lids);
}

#[test]
fn a_gid_and_a_lid_naming_different_ports_is_invalid() {
    let req = template(|r| {
        r.set_sgid(gid(A));
        r.set_slid(2);
        r.set_dlid(4);
    });
    assert_eq!(
        ask(&store(), Method::GET, pr::SGID | pr::SLID | pr::DLID, &req),
        Outcome::Status(MadStatus::ERR_REQ_INVALID)
    );
}

#[test]
fn the_request_sgid_is_echoed_verbatim() {
    // A link-local SGID names A even under another subnet prefix.
    let local = Gid::new(0xfe80_0000_0000_0000, A);
    let s = store();
    let complete = FastSet::from_iter([A]);
    let k = Knowledge {
        store: &s,
        subnet_prefix: 0xfec0_0000_0000_0000,
        complete_sources: &complete,
        master_qos: false,
        partitions: &Partitions::default(),
        in_doubt: false,
    };
    let req = template(|r| {
        r.set_sgid(local);
        r.set_dlid(2);
    });
    let out = records(evaluate(&k, Method::GET, pr::SGID | pr::DLID, &req));
    assert_eq!(out[0].sgid(), local);
}

fn mtu_of(o: Outcome) -> Option<Mtu> {
    match o {
        Outcome::Records(r) => Some(r[0].mtu()),
        Outcome::Status(MadStatus::ERR_NO_RECORDS) => None,
        other => panic!("{other:?}"),
    }
}

#[test]
fn mtu_selectors_as_opensm_applies_them() {
    // Observed on OpenSM with a 2048 path: "=4096" fails, "=1024" gives
    // 1024, "<2048" gives 1024, "<1024" gives 512.
    let mtu = |sel: Selector, m: Mtu| {
        mtu_of(get_a_to_b(pr::MTU_SELECTOR | pr::MTU, |r| {
            r.set_mtu_selector(sel);
            r.set_mtu(m);
        }))
    };
    assert_eq!(mtu(Selector::Exactly, Mtu::MTU_4096), None);
    assert_eq!(mtu(Selector::Exactly, Mtu::MTU_1024), Some(Mtu::MTU_1024));
    assert_eq!(mtu(Selector::LessThan, Mtu::MTU_2048), Some(Mtu::MTU_1024));
    assert_eq!(mtu(Selector::LessThan, Mtu::MTU_1024), Some(Mtu::MTU_512));
    assert_eq!(mtu(Selector::LessThan, Mtu::MTU_4096), Some(Mtu::MTU_2048));
    assert_eq!(mtu(Selector::LessThan, Mtu::MTU_256), None);
    assert_eq!(
        mtu(Selector::GreaterThan, Mtu::MTU_1024),
        Some(Mtu::MTU_2048)
    );
    assert_eq!(mtu(Selector::GreaterThan, Mtu::MTU_2048), None);
    assert_eq!(mtu(Selector::Best, Mtu::MTU_256), Some(Mtu::MTU_2048));
    // The selector alone, without the value bit, is ignored.
    let alone = get_a_to_b(pr::MTU_SELECTOR, |r| {
        r.set_mtu_selector(Selector::Exactly);
        r.set_mtu(Mtu::MTU_4096);
    });
    assert_eq!(mtu_of(alone), Some(Mtu::MTU_2048));
}

#[test]
fn rate_selectors_follow_bandwidth_not_codes() {
    let rate = |sel: Selector, r: Rate| match get_a_to_b(pr::RATE_SELECTOR | pr::RATE, |t| {
        t.set_rate_selector(sel);
        t.set_rate(r);
    }) {
        Outcome::Records(rs) => Some(rs[0].rate()),
        Outcome::Status(MadStatus::ERR_NO_RECORDS) => None,
        other => panic!("{other:?}"),
    };
    // Observed: "=5G" fails on a 10G path; "<10G" gives 5G (code 5).
    assert_eq!(rate(Selector::Exactly, Rate::GBPS_5), None);
    assert_eq!(rate(Selector::Exactly, Rate::GBPS_10), Some(Rate::GBPS_10));
    assert_eq!(rate(Selector::LessThan, Rate::GBPS_10), Some(Rate::GBPS_5));
    // 5 Gb/s has a higher code than 10 Gb/s but less bandwidth.
    assert_eq!(
        rate(Selector::GreaterThan, Rate::GBPS_5),
        Some(Rate::GBPS_10)
    );
    assert_eq!(rate(Selector::GreaterThan, Rate::GBPS_14), None);
    assert_eq!(rate(Selector::LessThan, Rate::GBPS_14), Some(Rate::GBPS_10));
    // OpenSM's order ranks 100 Gb/s (EDR, 125 Gb/s in 8b/10b terms) above
    // 120 Gb/s (12x QDR): "less than 100" of a faster path gives 120.
    assert_eq!(
        select_rate(Rate::GBPS_200, Selector::LessThan, Rate::GBPS_100),
        Some(Rate::GBPS_120)
    );
    assert_eq!(
        select_rate(Rate::GBPS_120, Selector::GreaterThan, Rate::GBPS_100),
        None
    );
    assert_eq!(
        select_rate(Rate::GBPS_25, Selector::GreaterThan, Rate::GBPS_30),
        Some(Rate::GBPS_25)
    );
    assert_eq!(rate(Selector::LessThan, Rate::GBPS_2_5), None);
}

#[test]
fn a_rate_selector_on_a_rate_opensm_may_have_lowered_goes_to_the_master() {
    // OpenSM applies the selector to the path's rate before lowering a
    // rate only 2x or HDR give (the fixups, or the original-rates option):
    // a held 40 Gb/s may be a 50 Gb/s path lowered.
    let asked = |held: u8, sel: Selector, wanted: u8| {
        let mut s = PathStore::new();
        let mut r = base(A, 1, B, 2, 0);
        r.set_rate(Rate(held));
        s.insert(r, 1);
        let req = template(|t| {
            t.set_slid(1);
            t.set_dlid(2);
            t.set_rate_selector(sel);
            t.set_rate(Rate(wanted));
        });
        ask(
            &s,
            Method::GET,
            pr::SLID | pr::DLID | pr::RATE_SELECTOR | pr::RATE,
            &req,
        )
    };
    let lowered = |o: Outcome| matches!(o, Outcome::Forward(ForwardReason::LoweredRate));
    let answered = |o: Outcome| matches!(o, Outcome::Records(_));
    for held in [6, 7, 15, 18] {
        for sel in [Selector::Exactly, Selector::GreaterThan, Selector::LessThan] {
            assert!(lowered(asked(held, sel, 3)), "{held} {sel:?}");
        }
        // "The largest" compares nothing: the held record is the answer.
        assert!(answered(asked(held, Selector::Best, 3)), "{held}");
    }
    // "Less than 300 Gb/s" of a 400 Gb/s path gives 200 Gb/s, held here;
    // "less than 600" gives 400, a rate OpenSM lowers for ends without
    // HDR: asked.
    assert!(answered(asked(21, Selector::LessThan, 18)));
    assert!(lowered(asked(22, Selector::LessThan, 22)));
    // An HDR path's own rate, held as OpenSM answered it, answers as held.
    assert!(answered(asked(21, Selector::Exactly, 21)));
    // Rates no lowering gives are answered here.
    assert!(answered(asked(16, Selector::GreaterThan, 7)));
    assert!(answered(asked(3, Selector::Exactly, 3)));
}

#[test]
fn packet_lifetime_selectors() {
    let plt = |sel: Selector, v: u8| match get_a_to_b(
        pr::PACKET_LIFE_TIME_SELECTOR | pr::PACKET_LIFE_TIME,
        |t| {
            t.set_packet_life_selector(sel);
            t.set_packet_life(v);
        },
    ) {
        Outcome::Records(rs) => Some(rs[0].packet_life()),
        Outcome::Status(MadStatus::ERR_NO_RECORDS) => None,
        other => panic!("{other:?}"),
    };
    // Observed: lifetime 18, "<18" gives 17, "<1" fails.
    assert_eq!(plt(Selector::LessThan, 18), Some(17));
    assert_eq!(plt(Selector::LessThan, 1), None);
    assert_eq!(plt(Selector::Exactly, 10), Some(10));
    assert_eq!(plt(Selector::Exactly, 20), None);
    assert_eq!(plt(Selector::GreaterThan, 17), Some(18));
}

#[test]
fn upfront_checks_come_first() {
    let s = store();
    let bad_mtu = template(|r| r.set_mtu(Mtu(9)));
    assert_eq!(
        ask(&s, Method::GET_TABLE, pr::MTU_SELECTOR | pr::MTU, &bad_mtu),
        Outcome::Status(MadStatus::ERR_REQ_INVALID)
    );
    assert!(
        matches!(
            ask(&s, Method::GET_TABLE, pr::MTU, &bad_mtu),
            Outcome::Forward(_)
        ),
        "one bit: no check"
    );
    let bad_rate = template(|r| r.set_rate(Rate(25)));
    assert_eq!(
        ask(&s, Method::GET, pr::RATE_SELECTOR | pr::RATE, &bad_rate),
        Outcome::Status(MadStatus::ERR_REQ_INVALID)
    );
    let one_sid = template(|r| r.set_service_id(0x10));
    assert_eq!(
        ask(&s, Method::GET, pr::SERVICE_ID_MSB, &one_sid),
        Outcome::Status(MadStatus::ERR_REQ_INSUFFICIENT_COMPONENTS)
    );
}

#[test]
fn pkey_sl_raw_traffic_and_reversible() {
    let one = |extra, f: fn(&mut PathRecord)| records(get_a_to_b(extra, f)).remove(0);
    assert_eq!(
        one(pr::PKEY, |r| r.set_pkey(0x7FFF)).pkey(),
        0x7FFF,
        "limited default key echoed"
    );
    assert_eq!(one(pr::SL, |r| r.set_sl(7)).sl(), 7, "requested SL echoed");
    assert_eq!(
        one(pr::RAW_TRAFFIC | pr::PKEY, |r| {
            r.set_raw_traffic(true);
            r.set_pkey(0x7FFF);
        })
        .pkey(),
        0,
        "raw traffic: P_Key 0"
    );
    // Another partition: the pair's paths asked with its key.
    assert_eq!(
        get_a_to_b(pr::PKEY, |r| r.set_pkey(0x8001)),
        Outcome::Pair(PairKey {
            src: A,
            dst: B,
            qos: QosKey::partition(0x0001),
        })
    );
    // Reversible 1 drops paths whose reverse failed; 0 is "don't care".
    let mut s = store();
    let mut one_way = base(A, 1, B, 2, 0);
    one_way.set_reversible(false);
    s.insert(one_way, 1);
    let req = |rev: bool| {
        template(|r| {
            r.set_slid(1);
            r.set_dlid(2);
            r.set_reversible(rev);
        })
    };
    let mask = pr::SLID | pr::DLID | pr::REVERSIBLE;
    assert_eq!(
        ask(&s, Method::GET, mask, &req(true)),
        Outcome::Status(MadStatus::ERR_NO_RECORDS)
    );
    assert_eq!(records(ask(&s, Method::GET, mask, &req(false))).len(), 1);
}

#[test]
fn a_source_alone_walks_destinations_in_opensm_order() {
    let s = store();
    let from_a = template(|r| r.set_sgid(gid(A)));
    let all = records(ask(&s, Method::GET_TABLE, pr::SGID, &from_a));
    // Table order: C (both LIDs), then B, then A.
    assert_eq!(lid_pairs(&all), [(1, 4), (1, 5), (1, 2), (1, 1)]);
    assert_eq!(all[1].preference(), 2);
    assert_eq!(all[3].packet_life(), 0, "the loopback path");
    // NumbPath caps each port pair, not the table.
    let one_each = template(|r| {
        r.set_sgid(gid(A));
        r.set_numb_path(1);
    });
    assert_eq!(
        lid_pairs(&records(ask(
            &s,
            Method::GET_TABLE,
            pr::SGID | pr::NUMB_PATH,
            &one_each
        ))),
        [(1, 4), (1, 2), (1, 1)]
    );
    // NumbPath 0: an empty table.
    let none = template(|r| r.set_sgid(gid(A)));
    assert!(records(ask(&s, Method::GET_TABLE, pr::SGID | pr::NUMB_PATH, &none)).is_empty());
    // A Get stops at the first port pair with a path.
    assert_eq!(
        lid_pairs(&records(ask(&s, Method::GET, pr::SGID, &from_a))),
        [(1, 4)]
    );
}

#[test]
fn lmc_pairs_come_in_opensm_phases() {
    // Both ends LMC 1: A answers to 1 and 2, C to 4 and 5.
    let mut s = PathStore::new();
    for (sl, dl, pref) in [(1, 4, 0), (2, 5, 0), (1, 5, 2), (2, 4, 2)] {
        s.insert(base(A, sl, C, dl, pref), 1);
    }
    let req = template(|r| {
        r.set_sgid(gid(A));
        r.set_dgid(gid(C));
    });
    let all = records(ask(&s, Method::GET_TABLE, pr::SGID | pr::DGID, &req));
    assert_eq!(lid_pairs(&all), [(1, 4), (2, 5), (1, 5), (2, 4)]);
    let mut three = req;
    three.set_numb_path(3);
    assert_eq!(
        lid_pairs(&records(ask(
            &s,
            Method::GET_TABLE,
            pr::SGID | pr::DGID | pr::NUMB_PATH,
            &three
        ))),
        [(1, 4), (2, 5), (1, 5)]
    );
    // DLID narrows the destination's range; Preference follows this query's
    // phases, not the stored records'.
    let mut to5 = req;
    to5.set_dlid(5);
    let narrowed = records(ask(&s, Method::GET_TABLE, pr::SGID | pr::DLID, &to5));
    assert_eq!(lid_pairs(&narrowed), [(1, 5), (2, 5)]);
    assert_eq!((narrowed[0].preference(), narrowed[1].preference()), (0, 2));
}

#[test]
fn what_the_store_cannot_know_is_forwarded() {
    let s = store();
    let unknown = template(|r| {
        r.set_slid(1);
        r.set_dlid(77);
    });
    assert_eq!(
        ask(&s, Method::GET, pr::SLID | pr::DLID, &unknown),
        Outcome::Forward(ForwardReason::UnknownEndpoint)
    );
    let to_a = template(|r| r.set_dgid(gid(A)));
    assert_eq!(
        ask(&s, Method::GET_TABLE, pr::DGID, &to_a),
        Outcome::Forward(ForwardReason::NoSource)
    );
    assert_eq!(
        ask(&s, Method::GET_TABLE, ComponentMask::NONE, &to_a),
        Outcome::Forward(ForwardReason::NoSource)
    );
    let mcast = template(|r| {
        r.set_sgid(gid(A));
        r.set_dgid("ff12:401b:ffff::ffff:ffff".parse().unwrap());
    });
    assert_eq!(
        ask(&s, Method::GET, pr::SGID | pr::DGID, &mcast),
        Outcome::Forward(ForwardReason::Multicast)
    );
    // From B the store is not complete: a pair it lacks is asked upstream.
    let from_b = template(|r| {
        r.set_slid(2);
        r.set_dlid(1);
    });
    assert_eq!(
        ask(&s, Method::GET, pr::SLID | pr::DLID, &from_b),
        Outcome::Forward(ForwardReason::IncompleteSource)
    );
    let all_from_b = template(|r| r.set_slid(2));
    assert_eq!(
        ask(&s, Method::GET_TABLE, pr::SLID, &all_from_b),
        Outcome::Forward(ForwardReason::IncompleteSource)
    );
    // A master with QoS: an SL it did not choose is its to judge, pair by
    // pair.
    let sl = template(|r| {
        r.set_slid(1);
        r.set_dlid(2);
        r.set_sl(3);
    });
    assert_eq!(
        ask_with(&s, Method::GET, pr::SLID | pr::DLID | pr::SL, &sl, true),
        Outcome::Pair(PairKey {
            src: A,
            dst: B,
            qos: QosKey {
                sl: Some(3),
                ..QosKey::default()
            }
        })
    );
    let all_sl_3 = template(|r| {
        r.set_slid(1);
        r.set_sl(3);
    });
    assert_eq!(
        ask_with(&s, Method::GET_TABLE, pr::SLID | pr::SL, &all_sl_3, true),
        Outcome::Forward(ForwardReason::MasterQos)
    );
    assert!(matches!(
        ask_with(&s, Method::GET, pr::SLID | pr::DLID, &sl, true),
        Outcome::Records(_)
    ));
}

/// A GetTable of all of a source's paths with a ServiceID under QoS.
fn from_a_with_sid(qos: bool) -> Outcome {
    let req = template(|r| {
        r.set_slid(1);
        r.set_service_id(0x1060001);
    });
    ask_with(
        &store(),
        Method::GET_TABLE,
        pr::SLID | pr::SERVICE_ID,
        &req,
        qos,
    )
}

#[test]
fn under_qos_the_fields_a_policy_matches_on_make_a_pair_key() {
    let both = |f: fn(&mut PathRecord)| {
        template(|r| {
            r.set_slid(1);
            r.set_dlid(4);
            f(r);
        })
    };
    let qos_mask = pr::SLID | pr::DLID | pr::PKEY | pr::SERVICE_ID | pr::QOS_CLASS;
    let req = both(|r| {
        r.set_pkey(0x0001);
        r.set_service_id(0x1060001);
        r.set_qos_class(5);
    });
    let key = PairKey {
        src: A,
        dst: C,
        qos: QosKey {
            pkey: Some(0x0001),
            service_id: Some(0x1060001),
            qos_class: Some(5),
            sl: None,
        },
    };
    assert_eq!(
        ask_with(&store(), Method::GET, qos_mask, &req, true),
        Outcome::Pair(key)
    );
    // Without QoS the ServiceID and class change nothing; the P_Key names
    // another partition than the stored paths' own.
    assert_eq!(
        ask_with(&store(), Method::GET, qos_mask, &req, false),
        Outcome::Pair(PairKey {
            qos: QosKey::partition(0x8001),
            ..key
        })
    );
    let default_key = both(|r| r.set_pkey(0xFFFF));
    let mask = pr::SLID | pr::DLID | pr::PKEY;
    assert!(matches!(
        ask_with(&store(), Method::GET, mask, &default_key, false),
        Outcome::Records(_)
    ));
    assert!(matches!(
        ask_with(&store(), Method::GET, mask, &default_key, true),
        Outcome::Pair(_)
    ));
    // TClass picks nothing: answered from the store, QoS or not.
    let tclass = both(|r| r.set_tclass(0x20));
    assert!(matches!(
        ask_with(
            &store(),
            Method::GET,
            pr::SLID | pr::DLID | pr::TCLASS,
            &tclass,
            true
        ),
        Outcome::Records(_)
    ));
    // Every destination at once, or raw traffic: only the master.
    assert_eq!(
        from_a_with_sid(true),
        Outcome::Forward(ForwardReason::MasterQos)
    );
    assert!(matches!(from_a_with_sid(false), Outcome::Records(r) if r.len() == 4));
    let raw = both(|r| {
        r.set_raw_traffic(true);
        r.set_pkey(0x0001);
    });
    assert_eq!(
        ask_with(&store(), Method::GET, mask | pr::RAW_TRAFFIC, &raw, true),
        Outcome::Forward(ForwardReason::MasterQos)
    );
    // The GetTable that asks for the pair.
    let (m, t) = key.query(PREFIX);
    assert_eq!(
        m,
        pr::SGID | pr::DGID | pr::PKEY | pr::SERVICE_ID | pr::QOS_CLASS
    );
    assert_eq!((t.sgid(), t.dgid()), (gid(A), gid(C)));
    assert_eq!(
        (t.pkey(), t.service_id(), t.qos_class()),
        (0x8001, 0x1060001, 5)
    );
}

/// What a QoS master answers for A → C (LMC 1) with a ServiceID in its
/// policy and P_Key 0x8001: SL 1, a lower MTU (a QoS level's limit).
fn pair_records() -> Vec<PathRecord> {
    [base(A, 1, C, 4, 0), base(A, 1, C, 5, 2)]
        .map(|mut r| {
            r.set_sl(1);
            r.set_pkey(0x8001);
            r.set_mtu(Mtu::MTU_1024);
            r
        })
        .to_vec()
}

fn from_pair(
    records: &[PathRecord],
    method: Method,
    mask: ComponentMask,
    f: impl FnOnce(&mut PathRecord),
) -> Outcome {
    let s = store();
    let complete = FastSet::from_iter([A]);
    let k = Knowledge {
        store: &s,
        subnet_prefix: PREFIX,
        complete_sources: &complete,
        master_qos: true,
        partitions: &Partitions::default(),
        in_doubt: false,
    };
    let req = template(|r| {
        r.set_sgid(gid(A));
        r.set_dgid(gid(C));
        r.set_pkey(0x0001);
        r.set_service_id(0x1060001);
        f(r);
    });
    let key = PairKey {
        src: A,
        dst: C,
        qos: QosKey::of(mask, &req, true),
    };
    evaluate_pair(&k, records, &key, method, mask, &req)
}

#[test]
fn a_pairs_records_answer_every_query_with_its_key() {
    let mask = pr::SGID | pr::DGID | pr::PKEY | pr::SERVICE_ID;
    let table = records(from_pair(&pair_records(), Method::GET_TABLE, mask, |_| {}));
    assert_eq!(lid_pairs(&table), [(1, 4), (1, 5)]);
    for r in &table {
        // The key echoed as asked (limited member), the master's SL and MTU.
        assert_eq!((r.pkey(), r.sl(), r.mtu()), (0x0001, 1, Mtu::MTU_1024));
    }
    // A Get takes the first of the preferred phase.
    let one = records(from_pair(&pair_records(), Method::GET, mask, |_| {}));
    assert_eq!(lid_pairs(&one), [(1, 4)]);
    // Selectors apply to the master's answer: MTU > 1024 has none.
    let sel = mask | pr::MTU_SELECTOR | pr::MTU;
    let above = |r: &mut PathRecord| {
        r.set_mtu_selector(Selector::GreaterThan);
        r.set_mtu(Mtu::MTU_1024);
    };
    assert_eq!(
        from_pair(&pair_records(), Method::GET, sel, above),
        Outcome::Status(MadStatus::ERR_NO_RECORDS)
    );
    // The SL the master chose is echoed; another is the master's to judge.
    let sl = |v| move |r: &mut PathRecord| r.set_sl(v);
    assert_eq!(
        records(from_pair(
            &pair_records(),
            Method::GET,
            mask | pr::SL,
            sl(1)
        ))[0]
            .sl(),
        1
    );
    let Outcome::Pair(narrower) = from_pair(&pair_records(), Method::GET, mask | pr::SL, sl(2))
    else {
        panic!("SL 2 is asked of the master");
    };
    assert_eq!(narrower.qos.sl, Some(2));
    assert_eq!(narrower.query(PREFIX).0, mask | pr::SL);
    // Asked with that SL, the master's answer carries it.
    let mut with_sl_2 = pair_records();
    with_sl_2.iter_mut().for_each(|r| r.set_sl(2));
    let r = Knowledge {
        store: &store(),
        subnet_prefix: PREFIX,
        complete_sources: &FastSet::from_iter([A]),
        master_qos: true,
        partitions: &Partitions::default(),
        in_doubt: false,
    };
    let req = template(|t| {
        t.set_sgid(gid(A));
        t.set_dgid(gid(C));
        t.set_pkey(0x0001);
        t.set_service_id(0x1060001);
        t.set_sl(2);
    });
    assert!(matches!(
        evaluate_pair(&r, &with_sl_2, &narrower, Method::GET, mask | pr::SL, &req),
        Outcome::Records(v) if v[0].sl() == 2
    ));
    // Had it answered another SL, the master is asked the query itself.
    assert_eq!(
        evaluate_pair(
            &r,
            &pair_records(),
            &narrower,
            Method::GET,
            mask | pr::SL,
            &req
        ),
        Outcome::Forward(ForwardReason::MasterQos)
    );
    // The master had none: none, whatever else is asked.
    assert_eq!(
        from_pair(&[], Method::GET, mask, |_| {}),
        Outcome::Status(MadStatus::ERR_NO_RECORDS)
    );
    assert_eq!(
        from_pair(&[], Method::GET_TABLE, mask, |_| {}),
        Outcome::Records(Vec::new())
    );
}

/// Tables in doubt (the master swept after a change they may not show)
/// answer nothing of their own: a port pair's paths are asked of the
/// master, many destinations' the query itself; what needs no route is
/// still answered here.
#[test]
fn tables_in_doubt_leave_routes_to_the_master() {
    let s = store();
    let complete = FastSet::from_iter([A]);
    let k = Knowledge {
        store: &s,
        subnet_prefix: PREFIX,
        complete_sources: &complete,
        master_qos: false,
        partitions: &Partitions::default(),
        in_doubt: true,
    };
    let a_to_b = template(|r| {
        r.set_slid(1);
        r.set_dlid(2);
    });
    let pair = Outcome::Pair(PairKey {
        src: A,
        dst: B,
        qos: QosKey::default(),
    });
    let by_lids = pr::SLID | pr::DLID;
    assert_eq!(evaluate(&k, Method::GET, by_lids, &a_to_b), pair);
    assert_eq!(evaluate(&k, Method::GET_TABLE, by_lids, &a_to_b), pair);
    let from_a = template(|r| r.set_sgid(gid(A)));
    assert_eq!(
        evaluate(&k, Method::GET_TABLE, pr::SGID, &from_a),
        Outcome::Forward(ForwardReason::TablesInDoubt)
    );
    // A query wrong in itself is still refused here.
    let bad_mtu = template(|r| {
        r.set_slid(1);
        r.set_dlid(2);
        r.set_mtu(Mtu(9));
    });
    let mtu = pr::MTU_SELECTOR | pr::MTU;
    assert_eq!(
        evaluate(&k, Method::GET, by_lids | mtu, &bad_mtu),
        Outcome::Status(MadStatus::ERR_REQ_INVALID)
    );
    // The master's answer for the pair, not the held one, is what the
    // query comes to.
    let mut moved = base(A, 1, B, 2, 0);
    moved.set_rate(Rate::GBPS_40);
    let Outcome::Records(answer) = evaluate_pair(
        &k,
        &[moved],
        &PairKey {
            src: A,
            dst: B,
            qos: QosKey::default(),
        },
        Method::GET,
        by_lids,
        &a_to_b,
    ) else {
        panic!("records from the master's answer");
    };
    assert_eq!(answer[0].rate(), Rate::GBPS_40);
    assert_ne!(
        s.get(1, 2).unwrap().rate(),
        Rate::GBPS_40,
        "not the held rate"
    );
}
