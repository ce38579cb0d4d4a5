//! What the tests under a real systemd share: the fabric, the package's
//! files, the drop-in that runs local-sa on the simulated fabric, and
//! what local-sa shows inside the namespace.

// Each test file uses a part.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use conformance::systemd::{Installed, PackageForm, Systemd, package};
use conformance::{SimulatedFabric, Topology};
use mad_codec::Gid;

/// The node local-sa serves.
pub(crate) const NODE: &str = "h2";

/// The simulator's environment for local-sa.service, as a runtime
/// drop-in (what `systemctl edit --runtime` writes): umad2sim's variables,
/// a state directory to work in (umad2sim writes its node's sysfs into
/// the working directory), the output appended to the fabric's
/// `local-sa.log`. Nothing else of the unit changes: its sandbox is as
/// shipped.
pub(crate) fn simulator_environment(fabric: &SimulatedFabric) -> String {
    format!(
        "[Service]\n\
         Environment=LD_PRELOAD={} SIM_HOST={NODE} IBSIM_SOCKNAME={}\n\
         StateDirectory=local-sa-simulator\n\
         WorkingDirectory=/var/lib/local-sa-simulator\n\
         StandardOutput=append:{}/local-sa.log\n\
         StandardError=append:{}/local-sa.log\n",
        fabric.preload().display(),
        fabric.sockname(),
        fabric.dir().display(),
        fabric.dir().display(),
    )
}

/// The package whose layout the tests install: the Debian package's, or
/// the RPM's when `LOCAL_SA_SYSTEMD_LAYOUT=rpm` (scripts/test.sh runs the
/// tests under systemd once more so).
pub(crate) fn layout() -> PackageForm {
    match std::env::var("LOCAL_SA_SYSTEMD_LAYOUT").as_deref() {
        Ok("rpm") => PackageForm::RpmTree,
        _ => PackageForm::Tree,
    }
}

/// Where the layout keeps a unit's options file `name`: `/etc/default`
/// (Debian) or `/etc/sysconfig` (RPM).
pub(crate) fn options_file(name: &str) -> String {
    match layout() {
        PackageForm::RpmTree => format!("/etc/sysconfig/{name}"),
        _ => format!("/etc/default/{name}"),
    }
}

/// The built package installed (its files where `dpkg -i`, or `rpm -i`,
/// puts them, laid out in `dir`), with `options` in the unit's options
/// file, where an administrator gives them.
pub(crate) fn package_with_options(dir: &Path, options: &str) -> Vec<Installed> {
    let tree = package(dir, "0.0.0+test", layout()).unwrap_or_else(|e| panic!("{e}"));
    vec![
        Installed::Package(tree),
        Installed::File(
            options_file("local-sa"),
            format!("LOCAL_SA_OPTIONS=\"{options}\"\n"),
        ),
    ]
}

/// systemd with `installed` in its root, local-sa.service given the
/// simulator's environment and `service`'s lines.
pub(crate) fn boot_installed(
    fabric: &SimulatedFabric,
    installed: Vec<Installed>,
    service: &str,
) -> Systemd {
    let units = [(
        "local-sa.service.d/simulator.conf",
        format!("{}{service}", simulator_environment(fabric)),
    )];
    Systemd::boot(
        &fabric.dir().join("systemd"),
        &installed,
        &units,
        &[fabric.dir()],
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// local-sa's own subscriptions at the master: GIDs in and out of service,
/// link state changes.
pub(crate) const OWN_TRAPS: [u16; 3] = [64, 65, 128];

/// The GID of [`NODE`]'s port.
pub(crate) fn node_gid(fabric: &SimulatedFabric) -> Gid {
    Gid::new(
        Gid::DEFAULT_PREFIX,
        fabric.node(NODE).unwrap().port().unwrap().guid,
    )
}

/// OpenSM's SA database dump (`sa_db_dump`, rewritten every sweep).
pub(crate) fn sa_dump(fabric: &SimulatedFabric) -> PathBuf {
    fabric.opensm_dir().join("opensm-sa.dump")
}

/// A fat tree whose OpenSM dumps its SA database after every sweep.
pub(crate) fn fabric() -> SimulatedFabric {
    SimulatedFabric::builder(Topology::fat_tree(3, 4, 2))
        .opensm_config(["sa_db_dump TRUE", "sweep_interval 1"])
        .start()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The number `file` inside the namespace holds (a port file).
pub(crate) fn number_in(sd: &Systemd, file: &str) -> Result<u16, String> {
    let out = sd.run("cat", &[file]);
    out.stdout
        .trim()
        .parse()
        .map_err(|_| format!("{file}: {}{}", out.stdout, out.stderr))
}

/// The counter `name` of local-sa's counters file, once it has one.
pub(crate) fn counter(sd: &Systemd, name: &str) -> Option<u64> {
    let dir = sd.inside("/run/local-sa");
    let file = std::fs::read_dir(&dir)
        .ok()?
        .filter_map(Result::ok)
        .find(|e| e.file_name().to_string_lossy().ends_with(".counters"))?;
    let text = std::fs::read_to_string(file.path()).ok()?;
    text.lines().find_map(|l| {
        let (n, v) = l.split_once(' ')?;
        (n == name).then(|| v.trim().parse().ok()).flatten()
    })
}

/// The main process's PID, as the namespace sees it.
pub(crate) fn main_pid(sd: &Systemd) -> String {
    sd.property("local-sa.service", "MainPID")
}
