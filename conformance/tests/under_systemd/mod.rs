//! What the tests under a real systemd share: the fabric, the package's
//! files, the drop-in that runs local-sa on the simulated fabric, and
//! what local-sa shows inside the namespace.

// Each test file uses a part.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use conformance::systemd::Systemd;
use conformance::{Fabric, Topology};
use mad_codec::Gid;

/// The node local-sa serves.
pub(crate) const NODE: &str = "h2";

/// A file of the package's `dist/`.
pub(crate) fn dist_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../local-sa/daemon/dist")
        .join(name)
}

pub(crate) fn dist(name: &str) -> String {
    let path = dist_path(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The simulator's environment for local-sa.service, and what the
/// simulator needs of the file system (its node's directory `work`,
/// written by umad2sim, and the fabric's, which lies under /tmp); its
/// output appended to the fabric's `local-sa.log`.
pub(crate) fn simulator_environment(fabric: &Fabric, work: &Path) -> String {
    format!(
        "[Service]\n\
         Environment=LD_PRELOAD={} SIM_HOST={NODE} IBSIM_SOCKNAME={}\n\
         WorkingDirectory={}\n\
         ReadWritePaths={}\n\
         PrivateTmp=no\n\
         StandardOutput=append:{}/local-sa.log\n\
         StandardError=append:{}/local-sa.log\n",
        fabric.preload().display(),
        fabric.sockname(),
        work.display(),
        work.display(),
        fabric.dir().display(),
        fabric.dir().display(),
    )
}

/// The drop-in: [`simulator_environment`] and the built binary. `args` go
/// before the unit's `$LOCAL_SA_OPTIONS` (with `--config none` unless they
/// name a file), `service` lines at the end.
pub(crate) fn simulator_drop_in(fabric: &Fabric, work: &Path, args: &str, service: &str) -> String {
    let binary = conformance::program("local-sa").unwrap_or_else(|e| panic!("{e}"));
    let config = if args.contains("--config") {
        ""
    } else {
        "--config none "
    };
    format!(
        "{}ExecStart=\n\
         ExecStart={} {config}{args} $LOCAL_SA_OPTIONS\n\
         {service}",
        simulator_environment(fabric, work),
        binary.display(),
    )
}

/// local-sa's own subscriptions at the master: GIDs in and out of service,
/// link state changes.
pub(crate) const OWN_TRAPS: [u16; 3] = [64, 65, 128];

/// The GID of [`NODE`]'s port.
pub(crate) fn node_gid(fabric: &Fabric) -> Gid {
    Gid::new(
        Gid::DEFAULT_PREFIX,
        fabric.node(NODE).unwrap().port().unwrap().guid,
    )
}

/// OpenSM's SA database dump (`sa_db_dump`, rewritten every sweep).
pub(crate) fn sa_dump(fabric: &Fabric) -> PathBuf {
    fabric.opensm_dir().join("opensm-sa.dump")
}

/// A fat tree whose OpenSM dumps its SA database after every sweep.
pub(crate) fn fabric() -> Fabric {
    Fabric::builder(Topology::fat_tree(3, 4, 2))
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
