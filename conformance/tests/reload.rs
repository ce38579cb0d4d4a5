//! SIGHUP: local-sa reads its configuration again and applies it while
//! running — log level, connection limits — keeping everything it holds;
//! a configuration with errors changes nothing, and settings that need a
//! restart are named.

// The consumer client registration_proxy uses; this test needs a part.
#[allow(dead_code)]
mod api_client;

use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use api_client::Client;
use conformance::{LocalSa, SimulatedFabric, Topology, closed_by_peer, eventually};
use mad_codec::{MadStatus, TrapNumber};

/// True if the daemon closed `stream` within a moment.
fn closed(stream: &UnixStream) -> bool {
    closed_by_peer(stream, Duration::from_millis(200))
}

/// Waits until local-sa's log contains `text` `times` times.
fn log_shows(sa: &LocalSa<'_>, text: &str, times: usize) {
    assert!(
        eventually(Duration::from_secs(20), || sa
            .stderr()
            .matches(text)
            .count()
            >= times),
        "the log should show {text:?} {times} time(s):\n{}",
        sa.stderr()
    );
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
}

#[test]
fn sighup_applies_a_new_configuration_and_keeps_everything_held() {
    let fabric = SimulatedFabric::builder(Topology::fat_tree(3, 4, 2))
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let config = fabric.dir().join("local-sa.toml");
    write(
        &config,
        "log-level = \"info\"\nmax-connections-per-user = 1024\n",
    );
    let mut sa = LocalSa::start(&fabric, "h2", &["--config", config.to_str().unwrap()])
        .unwrap_or_else(|e| panic!("{e}"));
    let mut consumer = Client::connect(sa.api_socket());
    assert_eq!(consumer.subscribe(TrapNumber(145), true), MadStatus::OK);
    // local-sa's own traps 64, 65 and 128, and the consumer's.
    let subscriptions = 4;
    sa.wait_until("the subscription counted", Duration::from_secs(5), |c| {
        c["subscriptions"] == subscriptions
    })
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(!sa.stderr().contains(" DEBUG "), "info level at first");

    // Debug logs, and two connections per user.
    write(
        &config,
        "log-level = \"debug\"\nmax-connections-per-user = 2\n",
    );
    sa.hang_up();
    log_shows(&sa, "configuration reloaded", 1);
    assert_eq!(sa.try_wait(), None, "SIGHUP does not end local-sa");
    // The consumer holds one connection: one more is let in, the next
    // closed at once.
    let second = UnixStream::connect(sa.api_socket()).unwrap();
    let third = UnixStream::connect(sa.api_socket()).unwrap();
    assert!(!closed(&second) && closed(&third), "the new per-user limit");
    sa.wait_until("the refusal counted", Duration::from_secs(5), |c| {
        c["door_refused_per_user"] == 1
    })
    .unwrap_or_else(|e| panic!("{e}"));
    // Everything held before stays: the consumer's connection and its
    // subscription.
    assert_eq!(consumer.list_subscriptions(), subscriptions as usize);
    assert_eq!(sa.counter("subscriptions"), subscriptions);
    assert!(
        eventually(Duration::from_secs(20), || sa.stderr().contains(" DEBUG ")),
        "debug lines once reloaded"
    );

    // A file with an error changes nothing.
    write(
        &config,
        "log-level = \"info\"\nmax-connections-per-user = \"lots\"\n",
    );
    sa.hang_up();
    log_shows(&sa, "the configuration has errors: nothing changed", 1);
    drop(second);
    sa.wait_until(
        "the closed connection given back",
        Duration::from_secs(5),
        |c| c["door_connections"] == 1,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let fourth = UnixStream::connect(sa.api_socket()).unwrap();
    let fifth = UnixStream::connect(sa.api_socket()).unwrap();
    assert!(!closed(&fourth) && closed(&fifth), "still two per user");

    // A setting fixed at start is named, and the rest applies.
    write(
        &config,
        "log-level = \"info\"\nmax-connections-per-user = 1024\napi-mode = 600\n",
    );
    sa.hang_up();
    log_shows(&sa, "configuration reloaded", 2);
    log_shows(&sa, "take effect only when local-sa restarts", 1);
    assert!(sa.stderr().contains("api-mode"), "{}", sa.stderr());
    let more: Vec<UnixStream> = (0..3)
        .map(|_| UnixStream::connect(sa.api_socket()).unwrap())
        .collect();
    assert!(more.iter().all(|s| !closed(s)), "the limit is back to 1024");

    drop((consumer, fourth, more));
    let (status, log) = sa.stop();
    assert_eq!(status.and_then(|s| s.code()), Some(0), "{log}");
}
