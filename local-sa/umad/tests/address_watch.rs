//! The rtnetlink watch sees an address come and go. The test runs itself
//! again inside a private network namespace (`unshare -rn`: a user
//! namespace too, so it needs no root where unprivileged namespaces are
//! allowed), where adding an address to its own loopback changes nothing
//! outside, and the only changes are the test's own.

use std::io;
use std::process::Command;
use std::time::{Duration, Instant};

use umad::address_watch::AddressWatch;

/// Set in the copy of the test that runs inside the namespace.
const INSIDE: &str = "UMAD_ADDRESS_WATCH_INSIDE";

/// Waits up to a second for the watch to report a change.
fn changed_within_a_second(watch: &AddressWatch) -> bool {
    let deadline = Instant::now() + Duration::from_secs(1);
    while Instant::now() < deadline {
        match watch.take_changes() {
            Ok(true) => return true,
            Ok(false) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => panic!("reading the watch: {e}"),
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

fn ip(args: &[&str]) {
    let status = Command::new("ip")
        .args(args)
        .status()
        .expect("ip (iproute2)");
    assert!(status.success(), "ip {args:?}");
}

#[test]
fn an_address_added_or_removed_is_announced() {
    if std::env::var_os(INSIDE).is_none() {
        let me = std::env::current_exe().unwrap();
        let out = Command::new("unshare")
            .args(["-rn"])
            .arg(&me)
            .args([
                "--exact",
                "an_address_added_or_removed_is_announced",
                "--nocapture",
            ])
            .env(INSIDE, "1")
            .output()
            .expect("unshare (util-linux)");
        assert!(
            out.status.success(),
            "inside a private network namespace:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        return;
    }
    let watch = AddressWatch::open().unwrap();
    assert!(!changed_within_a_second(&watch), "nothing changed yet");
    ip(&["link", "set", "lo", "up"]);
    assert!(changed_within_a_second(&watch), "the link came up");
    ip(&["addr", "add", "192.0.2.77/32", "dev", "lo"]);
    assert!(changed_within_a_second(&watch), "an address was added");
    ip(&["addr", "del", "192.0.2.77/32", "dev", "lo"]);
    assert!(changed_within_a_second(&watch), "an address was removed");
    assert!(!changed_within_a_second(&watch), "and nothing since");
}
