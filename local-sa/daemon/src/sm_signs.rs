//! What the node says of a subnet manager on a port: the port's IsSM
//! capability, and an SM's service unit enabled or active under systemd.
//! The core decides from these (and from asking the master at the port's
//! LID) whether local-sa takes the port's SA class
//! ([`local_sa_core::sa_class`]).
//!
//! Read from files only — no process started, no D-Bus — so that the
//! check costs a few system calls every [`SM_SIGNS_EVERY`] and works under
//! the unit's `ProtectSystem=strict`:
//!
//! * enabled: a link to the unit in a `.wants`/`.requires`/`.upholds`
//!   directory of systemd's unit directories (what `systemctl enable`
//!   makes; `/run/systemd/system` for `enable --runtime`), unless the
//!   unit is masked;
//! * active: `/run/systemd/units/invocation:<unit>`, which systemd
//!   keeps while the unit runs and removes when it becomes inactive. On
//!   hardware the port's IsSM capability shows a running SM however it
//!   was started (the SM sets it when it opens the port's `issm` device);
//!   the simulator never sets it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use local_sa_core::sa_class::SmSign;

/// How often the node's signs are read again.
pub(crate) const SM_SIGNS_EVERY: Duration = Duration::from_secs(2);

/// The PortInfo CapabilityMask bit of a port whose SM opened its `issm`
/// device (IBA 14.2.5.6, PortInfo.CapabilityMask bit 1).
const CAP_IS_SM: u32 = 1 << 1;

/// The unit directories where `systemctl enable` (and a package's static
/// links) put a unit's `.wants`/`.requires`/`.upholds` links, relative to
/// the root.
const UNIT_DIRS: [&str; 4] = [
    "etc/systemd/system",
    "run/systemd/system",
    "usr/lib/systemd/system",
    "lib/systemd/system",
];

/// Where systemd marks the units that run (relative to the root).
const RUNNING_DIR: &str = "run/systemd/units";

/// The units to look for, and the root their files are under.
#[derive(Debug, Clone)]
pub(crate) struct SmSigns {
    root: PathBuf,
    units: Vec<String>,
}

impl SmSigns {
    /// Looks for `units` under `/`.
    pub(crate) fn new(units: Vec<String>) -> Self {
        Self::under("/", units)
    }

    /// Looks for `units` under `root` (a test's directory).
    pub(crate) fn under(root: impl Into<PathBuf>, units: Vec<String>) -> Self {
        Self {
            root: root.into(),
            units,
        }
    }

    /// What the node says of an SM on a port whose capability mask is
    /// `cap_mask`: its IsSM bit first, then each unit active or enabled.
    pub(crate) fn read(&self, cap_mask: u32) -> Vec<SmSign> {
        let mut signs = Vec::new();
        if cap_mask & CAP_IS_SM != 0 {
            signs.push(SmSign::IsSm);
        }
        for unit in &self.units {
            if let Some(state) = self.unit_state(unit) {
                signs.push(SmSign::Unit {
                    name: unit.clone(),
                    state,
                });
            }
        }
        signs
    }

    /// "active" if the unit runs, "enabled" if it is set to run at boot.
    fn unit_state(&self, unit: &str) -> Option<&'static str> {
        let running = self
            .root
            .join(RUNNING_DIR)
            .join(format!("invocation:{unit}"));
        if running.symlink_metadata().is_ok() {
            return Some("active");
        }
        (!self.masked(unit) && self.linked(unit)).then_some("enabled")
    }

    /// Whether a unit directory links the unit to /dev/null.
    fn masked(&self, unit: &str) -> bool {
        UNIT_DIRS[..2].iter().any(|dir| {
            std::fs::read_link(self.root.join(dir).join(unit))
                .is_ok_and(|to| to == Path::new("/dev/null"))
        })
    }

    /// Whether a target (or another unit) wants, requires or upholds the
    /// unit.
    fn linked(&self, unit: &str) -> bool {
        UNIT_DIRS.iter().any(|dir| {
            let Ok(entries) = std::fs::read_dir(self.root.join(dir)) else {
                return false;
            };
            entries.flatten().any(|e| {
                let name = e.file_name();
                let name = name.to_string_lossy();
                [".wants", ".requires", ".upholds"]
                    .iter()
                    .any(|s| name.ends_with(s))
                    && e.path().join(unit).symlink_metadata().is_ok()
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn opensm(root: &Path) -> SmSigns {
        SmSigns::under(root, vec!["opensm.service".into()])
    }

    #[test]
    fn a_port_an_sm_opened_says_so_whatever_the_units() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(opensm(dir.path()).read(0x0050_c048), Vec::new());
        assert_eq!(opensm(dir.path()).read(0x0050_c04a), vec![SmSign::IsSm]);
    }

    #[test]
    fn a_unit_enabled_for_a_target_is_a_sign_and_one_masked_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let wants = dir
            .path()
            .join("etc/systemd/system/multi-user.target.wants");
        std::fs::create_dir_all(&wants).unwrap();
        let signs = opensm(dir.path());
        assert!(signs.read(0).is_empty(), "installed but not enabled");
        symlink(
            "/usr/lib/systemd/system/opensm.service",
            wants.join("opensm.service"),
        )
        .unwrap();
        let enabled = vec![SmSign::Unit {
            name: "opensm.service".into(),
            state: "enabled",
        }];
        assert_eq!(signs.read(0), enabled);
        // A link into another unit's directory is not the unit's.
        assert!(
            SmSigns::under(dir.path(), vec!["opensmd.service".into()])
                .read(0)
                .is_empty()
        );
        symlink(
            "/dev/null",
            dir.path().join("etc/systemd/system/opensm.service"),
        )
        .unwrap();
        assert!(signs.read(0).is_empty(), "masked: it cannot start");
    }

    #[test]
    fn a_unit_enabled_at_run_time_or_running_is_a_sign() {
        let dir = tempfile::tempdir().unwrap();
        let signs = opensm(dir.path());
        let wants = dir
            .path()
            .join("run/systemd/system/rdma-hw.target.requires");
        std::fs::create_dir_all(&wants).unwrap();
        symlink("../opensm.service", wants.join("opensm.service")).unwrap();
        assert_eq!(
            signs.read(0),
            vec![SmSign::Unit {
                name: "opensm.service".into(),
                state: "enabled"
            }]
        );
        std::fs::remove_file(wants.join("opensm.service")).unwrap();
        let running = dir.path().join(RUNNING_DIR);
        std::fs::create_dir_all(&running).unwrap();
        symlink(
            "0123456789abcdef",
            running.join("invocation:opensm.service"),
        )
        .unwrap();
        assert_eq!(
            signs.read(0x2),
            vec![
                SmSign::IsSm,
                SmSign::Unit {
                    name: "opensm.service".into(),
                    state: "active"
                }
            ]
        );
    }
}
