//! The README's demo (`scripts/demo.sh` runs the release build of this
//! binary), run whole: it checks every claim it prints and fails naming
//! the one that does not hold.

use std::process::Command;

#[test]
fn the_demo_shows_what_it_says() {
    let out = Command::new(env!("CARGO_BIN_EXE_demo"))
        .output()
        .expect("the demo runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the demo failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    // It went to its end.
    assert!(
        stdout.contains("local-sa stopped on SIGTERM; stopping the fabric."),
        "{stdout}"
    );
}
