//! `--verify`: a read-only check, on a live fabric, that local-sa on this
//! node answers what the master SA answers, through every door, and
//! holds at the master what it says it holds. Nothing is changed at the
//! master or in local-sa, and no SM_Key is sent.
//!
//! 1. paths: a sample of destinations × each P_Key × no ServiceID and
//!    each `--service-id`, the same Get to both; this port's table from
//!    both as sets ([`paths`]);
//! 2. doors: the same destinations through the ibacm socket, by GID, LID,
//!    host name and published IP; the kernel's door as far as it can be
//!    seen from here, its counters before and after ([`doors`]);
//! 3. registrations against the master's records for the port
//!    ([`registrations`]);
//! 4. health: local-sa's STATUS, and ibacm beside it ([`health`]).
//!
//! Master queries go `--window` at a time, at most `--query-rate` a second; a
//! master that stops answering ends a part as NOT CHECKED after a few
//! time-outs, not one per destination.

mod asking;
mod doors;
mod health;
mod local;
mod paths;
mod registrations;
mod report;

use std::path::Path;
use std::time::Duration;

use umad::Address;

use self::asking::Pace;
use self::report::{Part, VerifyReport};
use crate::cli::Cli;
use crate::client::Client;
use crate::local_api::default_socket;
use crate::resolve::DEFAULT_SOCKET;
use crate::stop::Stop;

/// rdma_cm's ServiceID for TCP port space, port 0: what is asked "with a
/// ServiceID" when none is given.
const RDMA_CM_SERVICE_ID: u64 = 0x0000_0000_0106_0000;

/// Runs `--verify` and prints its report; the exit status says how it
/// came out ([`VerifyReport::exit_code`]).
pub(crate) fn run(cli: &Cli) -> Result<(), Stop> {
    if cli.rate.is_some() {
        // saquery's -R/--rate selects PathRecords by their Rate field;
        // taking it here as queries per second would change what it means
        // between two commands, and ignoring it would check at a rate the
        // operator did not ask for.
        return Err(Stop::new(
            2,
            "--rate is the PathRecord Rate field (as in saquery); with --verify, give queries per second as --query-rate",
        ));
    }
    let sysfs = umad::port::Sysfs::default();
    let port = sysfs
        .select(cli.ca.as_deref(), cli.port)
        .map_err(|e| Stop::new(3, e.to_string()))?;
    if port.sm_lid == 0 {
        return Err(Stop::new(
            3,
            format!("{port} knows no SM LID: there is no master SA to compare with"),
        ));
    }
    let pkeys = match cli.pkey {
        Some(p) => vec![p],
        None => sysfs.endpoint_facts(&port).pkeys,
    };
    let pkeys = if pkeys.is_empty() {
        vec![0xffff]
    } else {
        pkeys
    };
    let service_ids: Vec<u64> = if cli.service_ids.is_empty() {
        vec![RDMA_CM_SERVICE_ID]
    } else {
        // The first of each range: a range is one QoS key in a policy.
        cli.service_ids.iter().map(|r| *r.start()).collect()
    };
    let api_socket = cli
        .api_socket
        .clone()
        .unwrap_or_else(|| default_socket(&port.ca, port.port));
    let acm_socket = cli
        .acm_socket
        .clone()
        .unwrap_or_else(|| DEFAULT_SOCKET.into());
    let timeout = Duration::from_millis(cli.timeout_ms.max(1));
    let pace = Pace {
        window: cli.window.max(1),
        rate: cli.query_rate,
    };
    let (transport, mut client) =
        Client::on_port(&port, &[], timeout, cli.retries).map_err(|e| Stop::new(3, e))?;
    let local = Address::gsi(port.lid, port.sm_sl);
    let master = Address::gsi(port.sm_lid, port.sm_sl);
    let me = port.gid;
    let result = smol::block_on(async {
        let (status, held) = local::status_and_registrations(&api_socket).await;
        let scope = paths::Scope {
            me,
            my_lid: port.lid,
            pkeys,
            service_ids,
            sample: cli.sample.0,
        };
        let mut report = VerifyReport::default();
        // Where local-sa leaves the port's SA class to a subnet manager,
        // an SA request at this LID reaches the SM (or nothing): the
        // master's answers are compared with themselves only to find the
        // destinations the other doors are asked for.
        let left = status
            .as_ref()
            .ok()
            .and_then(|s| s.get("sa_class"))
            .filter(|c| *c != "held");
        let local = if left.is_some() { master } else { local };
        let (part, found) = paths::check(&mut client, local, master, &scope, pace).await?;
        report.parts.push(match left {
            Some(class) => Part::not_checked(
                "paths",
                format!(
                    "local-sa answers no SA request at LID {} (SA class: {class}); its \
                     cache is checked through its other doors",
                    port.lid
                ),
            ),
            None => part,
        });
        let local = doors::Local {
            acm_socket: &acm_socket,
            api_socket: &api_socket,
            timeout,
            status: status.as_ref().ok(),
        };
        report
            .parts
            .push(doors::check(&mut client, master, me, &found, &local, pace).await?);
        report
            .parts
            .push(registrations::check(&mut client, master, me, held, pace).await?);
        report
            .parts
            .push(health::check(&status, port.sm_lid, Path::new("/proc")));
        Ok::<_, Stop>(report)
    });
    drop(client);
    transport.shutdown();
    let report = result?;
    if cli.json {
        outln!("{}", report.json())?;
    } else {
        out!("{}", report.text())?;
    }
    match report.exit_code() {
        0 => Ok(()),
        code => Err(Stop::new(code, String::new())),
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[test]
    fn the_path_record_rate_field_is_not_taken_for_a_query_rate() {
        let cli = Cli::try_parse_from(["lsaquery", "--verify", "--rate", "50"]).unwrap();
        let refused = run(&cli).unwrap_err();
        assert_eq!(refused.code, 2);
        assert!(
            refused.message.contains("--query-rate"),
            "{}",
            refused.message
        );
    }
}
