//! The package's units under a real systemd (Debian's, as PID 1 of a
//! namespace: [`conformance::systemd`]), on the simulated fabric: the
//! units as shipped, with one drop-in that points ExecStart at the built
//! binary and gives it the simulator's environment.

use std::path::Path;
use std::time::Duration;

use conformance::systemd::Systemd;
use conformance::{Fabric, Topology};

/// The node local-sa serves.
const NODE: &str = "h2";

fn dist(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../local-sa/daemon/dist")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The drop-in: the built binary, the simulator's environment, and
/// what the simulator needs of the file system (its node's directory,
/// written by umad2sim, and the fabric's, which lies under /tmp).
fn simulator_drop_in(fabric: &Fabric, work: &Path, args: &str) -> String {
    let binary = conformance::program("local-sa").unwrap_or_else(|e| panic!("{e}"));
    format!(
        "[Service]\n\
         ExecStart=\n\
         ExecStart={} --config none {args} $LOCAL_SA_OPTIONS\n\
         Environment=LD_PRELOAD={} SIM_HOST={NODE} IBSIM_SOCKNAME={}\n\
         WorkingDirectory={}\n\
         ReadWritePaths={}\n\
         PrivateTmp=no\n\
         StandardOutput=append:{}/local-sa.log\n\
         StandardError=append:{}/local-sa.log\n",
        binary.display(),
        fabric.preload().display(),
        fabric.sockname(),
        work.display(),
        work.display(),
        fabric.dir().display(),
        fabric.dir().display(),
    )
}

fn boot(fabric: &Fabric, args: &str) -> Systemd {
    let dir = fabric.dir().join("systemd");
    let work = fabric.dir().join("systemd-work");
    std::fs::create_dir_all(&work).unwrap();
    let units = [
        ("local-sa.service", dist("local-sa.service")),
        ("local-sa.socket", dist("local-sa.socket")),
        ("local-sa-netlink.socket", dist("local-sa-netlink.socket")),
        (
            "local-sa.service.d/simulator.conf",
            simulator_drop_in(fabric, &work, args),
        ),
    ];
    std::fs::create_dir_all(&dir).unwrap();
    Systemd::boot(&dir, &units, &[fabric.dir()]).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn the_socket_unit_starts_and_the_first_ib_acme_starts_local_sa() {
    let fabric = Fabric::builder(Topology::fat_tree(3, 4, 2))
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let sd = boot(&fabric, "");
    let start = sd.systemctl(&["start", "local-sa.socket"]);
    eprintln!("{}{}", start.stdout, start.stderr);
    sd.wait_state("local-sa.socket", "active", Duration::from_secs(10))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(sd.property("local-sa.service", "ActiveState"), "inactive");
    let out = sd.run("ib_acme", &["-f", "l", "-d", "1", "-s", "5"]);
    eprintln!("ib_acme: {}{}", out.stdout, out.stderr);
    sd.wait_state("local-sa.service", "active", Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{e}"));
}
