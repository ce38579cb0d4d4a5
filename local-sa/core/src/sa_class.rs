//! Whether this port's local-sa holds the SA class — registers for the
//! SA's request methods on QP1 and answers them — or leaves it to a
//! subnet manager that runs, or is set to run, on the port.
//!
//! On hardware only one agent may register for a class's request methods
//! on a port, and whoever starts first holds them. A cluster that boots
//! one image everywhere runs local-sa on its SM nodes too: had local-sa
//! taken the class there, OpenSM could not bind its SA (a standby, when it
//! must take over), or local-sa would restart for ever on the refusal. So
//! local-sa takes the class only where none of these holds
//! ([`SmSign`]):
//!
//! * the port's IsSM capability (an SM opened the port's `issm` device);
//! * an SM's service unit (OpenSM's) enabled or active on the node;
//! * the master SM at this port's LID answering: asked before local-sa
//!   takes the class, of the master's own SA (a master that stopped does
//!   not answer, and local-sa may then answer at its LID);
//! * another agent holding the methods (the kernel refused local-sa's
//!   registration).
//!
//! Leaving the class, local-sa says so once, and serves its other doors
//! — the ibacm socket, the kernel's queries, the local API — from the same
//! cache, as a client of the master. The driver registers and
//! unregisters; this only decides ([`SaClass::wanted`]).

use std::fmt;

/// A sign that a subnet manager runs, or is set to run, on the port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SmSign {
    /// The port's IsSM capability bit is set: an SM opened its `issm`
    /// device.
    IsSm,
    /// An SM's service unit is enabled, or active, on the node.
    Unit {
        /// The unit (`opensm.service`).
        name: String,
        /// "enabled" or "active".
        state: &'static str,
    },
    /// The master SM is this port and answered local-sa's question at its
    /// LID.
    MasterAnswers(u16),
    /// Another agent holds the SA class's methods on this port (the
    /// kernel refused local-sa's registration).
    HeldByAnother(RegistrationRefused),
}

/// The kernel refused local-sa's registration of the SA class's methods:
/// another agent (an SM's SA) holds one of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegistrationRefused {
    /// The error number the kernel gave, if the driver had one (EBUSY,
    /// EINVAL for "method in use").
    pub errno: Option<i32>,
}

impl RegistrationRefused {
    /// The refusal an I/O error from the registration says.
    pub fn of(e: &std::io::Error) -> Self {
        Self {
            errno: e.raw_os_error(),
        }
    }
}

impl fmt::Display for RegistrationRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.errno {
            Some(errno) => write!(f, "{}", std::io::Error::from_raw_os_error(errno)),
            None => f.write_str("refused by the kernel"),
        }
    }
}

impl std::error::Error for RegistrationRefused {}

impl fmt::Display for SmSign {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::IsSm => {
                f.write_str("the port's IsSM capability is set (a subnet manager opened it)")
            }
            Self::Unit { name, state } => write!(f, "{name} is {state} on this node"),
            Self::MasterAnswers(lid) => {
                write!(
                    f,
                    "the master SM is this port (LID {lid}) and its SA answers"
                )
            }
            Self::HeldByAnother(why) => {
                write!(f, "another agent holds the SA class on this port ({why})")
            }
        }
    }
}

/// What the driver is to do about the SA class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wanted {
    /// Hold it: answer the SA's requests on this port.
    Hold,
    /// Leave it to the subnet manager of this sign.
    Leave(SmSign),
    /// Not yet: whether the master at this port's LID answers is being
    /// asked.
    Wait,
}

/// Whether the master at this port's LID was asked, and what it said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MasterHere {
    /// The master is not this port, or nothing was asked yet.
    NotAsked,
    /// Asked, at this LID; no answer yet.
    Asking(u16),
    /// The master at this LID answered (an SM runs here) or not.
    Answered(u16, bool),
}

/// The SA class's decision for one port.
#[derive(Debug, Clone)]
pub struct SaClass {
    /// What the node says: IsSM, units.
    node: Vec<SmSign>,
    master: MasterHere,
    /// The kernel refused the registration.
    refused: Option<RegistrationRefused>,
    /// The driver holds the methods now.
    holding: bool,
}

impl Default for SaClass {
    fn default() -> Self {
        Self {
            node: Vec::new(),
            master: MasterHere::NotAsked,
            refused: None,
            holding: false,
        }
    }
}

impl SaClass {
    /// What the node says now (the port's capabilities, the SM units);
    /// true if that changed. A change lets the driver try the class
    /// again if the kernel refused it before.
    pub fn handle_node(&mut self, signs: Vec<SmSign>) -> bool {
        let changed = signs != self.node;
        if changed {
            self.refused = None;
        }
        self.node = signs;
        changed
    }

    /// Whether the driver should ask the master at `lid`, this port's
    /// (`at_master`: the port's SM LID is its own), not asked yet: the
    /// question goes out, and [`SaClass::wanted`] waits for its answer.
    pub fn take_master_question(&mut self, lid: u16, at_master: bool) -> bool {
        let ask = at_master && self.master == MasterHere::NotAsked && !self.holding;
        if ask {
            self.master = MasterHere::Asking(lid);
        }
        ask
    }

    /// The master at this port's LID answered (`true`) or not.
    pub fn handle_master_answer(&mut self, answered: bool) {
        if let MasterHere::Asking(lid) = self.master {
            self.master = MasterHere::Answered(lid, answered);
        }
    }

    /// The master moved (or the port's LID did): a new question at the
    /// next decision, if the master is this port, and the class tried
    /// again if the kernel refused it.
    pub fn master_moved(&mut self) {
        self.master = MasterHere::NotAsked;
        self.refused = None;
    }

    /// The driver holds the methods now (`Ok`), or the kernel refused
    /// them (`Err`: why; another agent holds them).
    pub fn handle_held(&mut self, held: Result<(), RegistrationRefused>) {
        match held {
            Ok(()) => {
                self.holding = true;
                self.refused = None;
            }
            Err(why) => {
                self.holding = false;
                self.refused = Some(why);
            }
        }
    }

    /// The driver let the methods go.
    pub fn handle_left(&mut self) {
        self.holding = false;
    }

    /// Whether the driver holds the methods.
    pub fn holding(&self) -> bool {
        self.holding
    }

    /// What the driver is to do: leave the class to a subnet manager if
    /// any sign says one runs or is set to run here, wait for the master's
    /// answer if it is being asked, else hold it.
    pub fn wanted(&self) -> Wanted {
        if let Some(sign) = self.node.first() {
            return Wanted::Leave(sign.clone());
        }
        if let Some(why) = self.refused {
            return Wanted::Leave(SmSign::HeldByAnother(why));
        }
        match self.master {
            MasterHere::Asking(_) => Wanted::Wait,
            MasterHere::Answered(lid, true) => Wanted::Leave(SmSign::MasterAnswers(lid)),
            MasterHere::NotAsked | MasterHere::Answered(_, false) => Wanted::Hold,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit() -> SmSign {
        SmSign::Unit {
            name: "opensm.service".into(),
            state: "enabled",
        }
    }

    #[test]
    fn a_port_with_no_sign_of_an_sm_holds_the_class_and_one_with_any_leaves_it() {
        let mut c = SaClass::default();
        assert_eq!(c.wanted(), Wanted::Hold);
        assert!(c.handle_node(vec![unit()]));
        assert_eq!(c.wanted(), Wanted::Leave(unit()));
        assert!(!c.handle_node(vec![unit()]), "the same signs: no change");
        // A standby OpenSM's IsSM appears on a port local-sa held.
        c.handle_held(Ok(()));
        c.handle_node(vec![SmSign::IsSm]);
        assert_eq!(c.wanted(), Wanted::Leave(SmSign::IsSm));
        // Gone (the unit disabled, OpenSM removed): local-sa takes it.
        c.handle_left();
        c.handle_node(Vec::new());
        assert_eq!(c.wanted(), Wanted::Hold);
    }

    #[test]
    fn at_the_master_s_lid_the_master_is_asked_first_and_one_that_answers_keeps_the_class() {
        let mut c = SaClass::default();
        assert!(!c.take_master_question(4, false), "not the master's port");
        assert!(c.take_master_question(4, true));
        assert!(!c.take_master_question(4, true), "asked once");
        assert_eq!(c.wanted(), Wanted::Wait);
        c.handle_master_answer(true);
        assert_eq!(c.wanted(), Wanted::Leave(SmSign::MasterAnswers(4)));
        // A master that stopped does not answer: local-sa answers at its
        // LID.
        c.master_moved();
        assert!(c.take_master_question(4, true));
        c.handle_master_answer(false);
        assert_eq!(c.wanted(), Wanted::Hold);
    }

    #[test]
    fn a_registration_the_kernel_refuses_leaves_the_class_to_whoever_holds_it() {
        let mut c = SaClass::default();
        c.handle_held(Err(RegistrationRefused { errno: Some(16) }));
        assert!(matches!(
            c.wanted(),
            Wanted::Leave(SmSign::HeldByAnother(_))
        ));
        assert!(!c.holding());
        // What the node says changed (OpenSM's unit stopped): tried again.
        c.handle_node(vec![SmSign::IsSm]);
        c.handle_node(Vec::new());
        assert_eq!(c.wanted(), Wanted::Hold);
    }
}
