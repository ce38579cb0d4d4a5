//! The SA class on a port where a subnet manager runs or is set to run:
//! left to it, as its signs come and go, and at the master's own LID only
//! where the master answers.

use std::time::Duration;

use mad_codec::AttributeId;

use super::bench::{Bench, HOSTS, MASTER_LID};
use super::fake_master::{FakeMaster, gid};
use crate::agent::AgentConfig;
use crate::config::PortIdentity;
use crate::sa_class::{RegistrationRefused, SmSign, Wanted};

fn status_line(b: &Bench) -> String {
    (b.core.status(b.now).get("sa_class"))
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn a_port_s_sa_class_follows_the_signs_of_a_subnet_manager_on_it() {
    let mut b = Bench::started();
    assert_eq!(b.core.sa_class(), Wanted::Hold);
    b.core.handle_sa_class_held(Ok(()));
    assert_eq!(b.core.counters().sa_class_held, 1);
    assert_eq!(status_line(&b), "held");
    // A standby OpenSM starts on the node: its unit active, then the
    // port's IsSM capability.
    let unit = SmSign::Unit {
        name: "opensm.service".into(),
        state: "active",
    };
    b.core
        .handle_sm_signs(b.now, vec![unit.clone(), SmSign::IsSm]);
    assert_eq!(b.core.sa_class(), Wanted::Leave(unit));
    b.core.handle_sa_class_left();
    assert_eq!(b.core.counters().sa_class_held, 0);
    assert!(
        status_line(&b).starts_with("left to the subnet manager: opensm.service is active"),
        "{}",
        status_line(&b)
    );
    // The agent goes on as a client of the master: its table, its
    // answers to the other doors.
    assert!(b.core.is_ready());
    // OpenSM removed from the node: the class is local-sa's again.
    b.core.handle_sm_signs(b.now, Vec::new());
    assert_eq!(b.core.sa_class(), Wanted::Hold);
}

#[test]
fn a_registration_the_kernel_refuses_leaves_the_class_to_the_agent_that_holds_it() {
    let mut b = Bench::started();
    b.core
        .handle_sa_class_held(Err(RegistrationRefused { errno: Some(16) }));
    assert!(matches!(
        b.core.sa_class(),
        Wanted::Leave(SmSign::HeldByAnother(_))
    ));
    assert_eq!(b.core.counters().sa_class_held, 0);
}

/// A port at the master SM's LID.
fn at_the_master(master: FakeMaster) -> Bench {
    let port = PortIdentity {
        lid: MASTER_LID,
        lmc: 0,
        gid: gid(MASTER_LID),
        sm_lid: MASTER_LID,
        sm_sl: 0,
    };
    Bench::with_port(master, AgentConfig::default(), port)
}

#[test]
fn at_the_master_s_lid_the_class_waits_for_its_answer_and_is_left_to_one_that_answers() {
    let b = at_the_master(FakeMaster::new(MASTER_LID, HOSTS));
    assert!(b.master.count(AttributeId::SM_INFO_RECORD) >= 1, "asked");
    assert_eq!(
        b.core.sa_class(),
        Wanted::Leave(SmSign::MasterAnswers(MASTER_LID))
    );
}

#[test]
fn at_the_master_s_lid_a_master_that_stopped_leaves_the_class_to_local_sa() {
    let mut master = FakeMaster::new(MASTER_LID, HOSTS);
    master.answering = false;
    let mut b = at_the_master(master);
    assert_eq!(b.core.sa_class(), Wanted::Wait, "asked, no answer yet");
    b.advance(Duration::from_secs(10));
    assert_eq!(b.core.sa_class(), Wanted::Hold);
}
