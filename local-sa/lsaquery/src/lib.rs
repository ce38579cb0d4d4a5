//! lsaquery: a saquery-style client for local-sa and any other SA. The
//! program is this library's [`main`]; its parts (option parsing, the
//! printers, the record files, the distributor's delta) are modules here,
//! each tested on its own.

// First, so that its `out!` and `outln!` are known to every module below.
#[macro_use]
mod stdout;
mod bench;
mod cache_control;
mod carrier;
mod cli;
mod client;
mod compute;
mod diag_file;
mod distribute;
mod fan_out;
mod generate;
mod ibdiag_conf;
mod json;
mod key_prompt;
mod listing;
mod load;
mod local_api;
mod node_names;
mod print;
mod progress;
mod query;
mod records_file;
mod registration;
mod resolve;
mod session;
mod snapshot;
mod status;
mod stop;
mod verify;
mod warm;

use std::process::ExitCode;
use std::time::Duration;

use local_sa_core::requester::{Answer, Attempts};
use mad_codec::records::SaRecord;
use mad_codec::{ClassPortInfo, McMemberRecord, Method, NodeRecord, SaMad};
use umad::Address;
use umad::port::{PortFacts, Sysfs};

use crate::cli::Cli;
use crate::client::Client;
use crate::listing::Listing;
use crate::print::Printed;
use crate::query::names::Names;
use crate::query::{Kind, Query};
use crate::session::Session;
use crate::stop::Stop;

/// What this run does.
enum Mode {
    Query(Query),
    Bench(Query),
    Load(std::path::PathBuf),
    DeleteNamed(std::path::PathBuf),
    DeleteMatching(Query),
    Distribute(distribute::DistributeOptions),
    Watch(
        distribute::DistributeOptions,
        distribute::watch::WatchOptions,
    ),
    Compute(compute::ComputeOptions),
    Subscribe(mad_codec::TrapNumber),
    Join(mad_codec::Gid),
    Leave(mad_codec::Gid),
}

impl Mode {
    fn from_cli(cli: &Cli, names: Names<'_>) -> Result<Self, Stop> {
        let usage = |e: String| Stop::new(2, e);
        let modes = [
            cli.subscribe.is_some(),
            cli.join.is_some(),
            cli.leave.is_some(),
            cli.load.is_some(),
            cli.delete.is_some(),
            cli.delete_matching,
            cli.bench.is_some(),
            cli.distribute || cli.compute,
        ];
        if modes.iter().filter(|m| **m).count() > 1 {
            return Err(usage(
                "--subscribe, --join, --leave, --load, --delete, --delete-matching, --bench and --distribute go \
                 one at a time"
                    .into(),
            ));
        }
        let opensm = match (&cli.opensm_config, cli.compute) {
            (Some(path), true) => Some(std::sync::Arc::new(
                local_sa_distributor::computed::opensm_input::OpenSmInput::load(path)?,
            )),
            _ => None,
        };
        let at_keys = local_sa_distributor::fill::qos::keys(&cli.service_ids, &cli.qos_classes)
            .map_err(|e| usage(e.to_string()))?;
        let compute = cli.compute.then(|| compute::ComputeOptions {
            sample: cli.check_sample.0,
            seed: cli.check_seed,
            master_window: cli.master_window,
            snapshot: cli.snapshot.clone(),
            opensm,
            at_keys: at_keys
                .iter()
                .map(local_sa_distributor::computed::keys::query_keys)
                .collect(),
        });
        if let (Some(options), false) = (&compute, cli.distribute) {
            return Ok(Self::Compute(options.clone()));
        }
        if cli.distribute {
            let options = distribute::DistributeOptions {
                compute,
                no_fallback: cli.no_fallback,
                shard: cli.shard,
                targets: cli.targets.clone().map(|l| l.0),
                from: cli.from.clone(),
                delta: cli.delta.clone(),
                snapshot: cli.snapshot.clone(),
                window: cli.window,
                master_window: cli.master_window,
                attempts: cli.retries + 1,
                table_attempts: Attempts {
                    timeout: Duration::from_millis(cli.table_timeout_ms.max(1)),
                    retries: cli.retries,
                },
                probe_timeout: Duration::from_millis(cli.timeout_ms.max(1)),
                qos_keys: at_keys,
            };
            if !cli.watch {
                return Ok(Self::Distribute(options));
            }
            let interval = Duration::from_secs(cli.watch_interval.max(1));
            let settle = Duration::from_secs(cli.settle);
            let renew = Duration::from_secs(cli.watch_renew.max(1));
            let lease = cli.lease.unwrap_or_else(|| {
                distribute::watch::WatchOptions::default_lease(interval, settle)
            });
            if u64::from(lease) < renew.as_secs() * 2 {
                return Err(Stop::new(
                    2,
                    format!(
                        "--lease {lease} is shorter than two renewals (--watch-renew {}): the nodes \
                         would take the watch as gone between them",
                        renew.as_secs()
                    ),
                ));
            }
            let watch = distribute::watch::WatchOptions {
                interval,
                settle,
                renew,
                lease,
                check: cli.watch_check,
                activity_poll: Duration::from_secs(cli.watch_poll),
                api_socket: cli.api_socket.clone(),
                metrics_file: cli.metrics_file.clone(),
            };
            return Ok(Self::Watch(options, watch));
        }
        if let Some(path) = &cli.load {
            return Ok(Self::Load(path.clone()));
        }
        if let Some(path) = &cli.delete {
            return Ok(Self::DeleteNamed(path.clone()));
        }
        if cli.delete_matching {
            return query::path_template(cli, names)
                .map(Self::DeleteMatching)
                .map_err(usage);
        }
        if cli.bench.is_some() {
            return query::from_cli(cli, names).map(Self::Bench).map_err(usage);
        }
        if let Some(t) = &cli.subscribe {
            return registration::trap_number(t)
                .map(Mode::Subscribe)
                .map_err(usage);
        }
        if let Some(g) = cli.join {
            return Ok(Self::Join(g));
        }
        if let Some(g) = cli.leave {
            return Ok(Self::Leave(g));
        }
        query::from_cli(cli, names).map(Self::Query).map_err(usage)
    }
}

/// The `lsaquery` program: parses the command line, runs it, and says
/// how it ended.
pub fn main() -> ExitCode {
    let cli = match parse_command_line() {
        Ok(cli) => cli,
        Err(f) => {
            eprintln!("lsaquery: {}", f.message);
            return ExitCode::from(f.code);
        }
    };
    let level = match cli.verbose {
        0 => tracing_subscriber::filter::LevelFilter::WARN,
        1 => tracing_subscriber::filter::LevelFilter::INFO,
        _ => tracing_subscriber::filter::LevelFilter::DEBUG,
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::builder()
                .with_default_directive(level.into())
                .from_env_lossy(),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
    match run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            if !f.message.is_empty() {
                eprintln!("lsaquery: {}", f.message);
            }
            ExitCode::from(f.code)
        }
    }
}

/// The command line, with infiniband-diags' defaults (ibdiag.conf) where
/// it gives no CA, port, time-out or SM_Key.
fn parse_command_line() -> Result<Cli, Stop> {
    use clap::parser::ValueSource;
    use clap::{CommandFactory, FromArgMatches};
    let matches = Cli::command().get_matches();
    let mut cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let defaults = ibdiag_conf::Defaults::open(cli.config.as_deref())
        .map_err(|e| Stop::new(2, format!("infiniband-diags defaults {e}")))?;
    let unset = |id: &str| matches.value_source(id) != Some(ValueSource::CommandLine);
    if cli.ca.is_none() {
        cli.ca = defaults.ca;
    }
    if cli.port.is_none() {
        cli.port = defaults.port;
    }
    if let Some(t) = defaults.timeout_ms.filter(|_| unset("timeout_ms")) {
        cli.timeout_ms = t;
    }
    if let Some(k) = defaults.sa_key.filter(|_| unset("smkey")) {
        cli.smkey = k;
    }
    // OpenSM's configuration from the settings file only where OpenSM
    // runs: a distributor next to the master need not be on its node.
    if cli.compute && cli.opensm_config.is_none() {
        cli.opensm_config = defaults.opensm_config.filter(|p| p.exists());
    }
    Ok(cli)
}

fn run(cli: &Cli) -> Result<(), Stop> {
    if let Some(what) = &cli.generate {
        return generate::run(what);
    }
    if let Some(dest) = &cli.resolve {
        return resolve_path(cli, dest);
    }
    if let Some(hosts) = &cli.warm {
        return warm::run(cli, hosts);
    }
    if cli.verify {
        return verify::run(cli);
    }
    if cli.status {
        return status::run(cli);
    }
    if cli.refresh || cli.flush || cli.dump {
        return cache_control::run(cli);
    }
    // Node names are looked up once the session is up; this first pass
    // tells what is asked, and where.
    let mode = Mode::from_cli(cli, Names::Pending)?;
    let node_names =
        node_names::NodeNameMap::open(cli.node_name_map.as_deref()).map_err(|e| Stop::new(2, e))?;
    let port = Sysfs::default()
        .select(cli.ca.as_deref(), cli.port)
        .map_err(|e| Stop::new(3, e.to_string()))?;
    if cli.sa_lid.is_none()
        && !cli.master
        && let Some(result) = through_local_api(cli, &mode, &port)
    {
        return result;
    }
    // A distributor fetches from the master SA unless told otherwise, and
    // so does a query for records local-sa does not keep (NodeRecords,
    // ServiceRecords), which it would refuse.
    let relayed = match &mode {
        Mode::Query(q) | Mode::Bench(q) => !q.kind.served_by_local_sa(),
        _ => false,
    };
    let sa_lid = match cli.sa_lid {
        Some(lid) => lid,
        None if cli.master || cli.distribute || cli.compute || relayed => port.sm_lid,
        None => port.lid,
    };
    if sa_lid == 0 {
        return Err(Stop::new(
            3,
            format!("{port} knows no SM LID; give the SA's with --sa-lid"),
        ));
    }
    // Reports are requests from the SA: only a subscriber receives them,
    // and a watch on a node without local-sa, which subscribes itself.
    let takes_reports = match &mode {
        Mode::Subscribe(_) => true,
        Mode::Watch(_, watch) => {
            !distribute::watch::local_sa_reachable(watch.api_socket.as_deref(), &port)
        }
        _ => false,
    };
    let timeout = Duration::from_millis(cli.timeout_ms.max(1));
    let open = |methods: &[Method]| {
        Client::on_port(&port, methods, timeout, cli.retries).map_err(|e| Stop::new(3, e))
    };
    let (transport, client) = if !takes_reports {
        open(&[])?
    } else {
        match open(&[Method::REPORT]) {
            Ok(c) => c,
            Err(e) if matches!(mode, Mode::Watch(..)) => {
                // Another agent receives this port's Reports (a local-sa
                // starting meanwhile, another subscriber): the watch
                // follows the master's activity.
                tracing::warn!(
                    "cannot receive the SA's Reports on {port} ({}): no fabric change notices, \
                     the watch follows the master's activity",
                    e.message
                );
                open(&[])?
            }
            Err(e) => return Err(e),
        }
    };
    let mut session = Session {
        dest: Address {
            pkey_index: cli.pkey_index.unwrap_or(0),
            ..Address::gsi(sa_lid, port.sm_sl)
        },
        port,
        client,
        sm_key: cli.smkey,
        debug: cli.debug > 0,
        show_errors: cli.errors,
        json: cli.json,
        show_keys: cli.show_keys,
        node_names,
    };
    let result = smol::block_on(async {
        let gid = session.port.gid;
        let session = &mut session;
        let wanted = query::node_names(cli);
        let resolved;
        let mode = if wanted.is_empty() {
            mode
        } else {
            resolved = lookup_names(session, &wanted).await?;
            Mode::from_cli(cli, Names::Resolved(&resolved))?
        };
        match &mode {
            Mode::Query(q) => query(session, q).await,
            Mode::Bench(q) => bench::run(session, q, cli.bench.unwrap_or(0), cli.window).await,
            Mode::Load(path) => load::load(session, path, cli.replace, cli.partitions).await,
            Mode::DeleteNamed(path) => load::delete_named(session, path, cli.partitions).await,
            Mode::DeleteMatching(q) => load::delete_matching(session, q, cli.partitions).await,
            Mode::Distribute(options) => distribute::run(session, options).await,
            Mode::Watch(options, watch) => distribute::watch::run(session, options, watch).await,
            Mode::Compute(options) => compute::run(session, options).await,
            Mode::Subscribe(trap) => registration::subscribe(session, cli, *trap).await,
            Mode::Join(mgid) => {
                registration::membership(
                    session,
                    cli,
                    Method::SET,
                    registration::join_record(cli, gid, *mgid),
                )
                .await
            }
            Mode::Leave(mgid) => {
                registration::membership(
                    session,
                    cli,
                    Method::DELETE,
                    registration::leave_record(cli, gid, *mgid),
                )
                .await
            }
        }
    });
    drop(session);
    transport.shutdown();
    result
}

/// Registrations go through the local API unless an SA is named: returns
/// the outcome when this run does.
fn through_local_api(cli: &Cli, mode: &Mode, port: &PortFacts) -> Option<Result<(), Stop>> {
    // This node's registrations, unfiltered: a filter (an argument, or
    // MCMemberRecord options) asks an SA.
    let listing = |q: &Query| {
        matches!(
            q.kind,
            Kind::InformInfoRecord | Kind::McGroups | Kind::McMemberRecord | Kind::McMembers
        ) && q.argument.is_none()
            && q.mask == mad_codec::ComponentMask::NONE
    };
    match mode {
        Mode::Subscribe(_) | Mode::Join(_) => {}
        Mode::Query(q) if listing(q) => {}
        Mode::Leave(_) => {
            return Some(Err(Stop::new(
                2,
                "through the local API a membership ends when the lsaquery that joined stops; \
                 --leave sends a Delete MAD to an SA named with --sa-lid or --master",
            )));
        }
        _ => return None,
    }
    let path = cli
        .api_socket
        .clone()
        .unwrap_or_else(|| local_api::default_socket(&port.ca, port.port));
    let gid = port.gid;
    let run = async move {
        let mut conn = local_api::Connection::open(&path, cli.json)?;
        match mode {
            Mode::Subscribe(trap) => local_api::subscribe(&mut conn, cli, *trap).await,
            Mode::Join(mgid) => {
                local_api::join(&mut conn, cli, registration::join_record(cli, gid, *mgid)).await
            }
            Mode::Query(q) => {
                let groups = q.kind == Kind::McGroups;
                local_api::list(
                    &mut conn,
                    groups,
                    matches!(q.kind, Kind::McMemberRecord | Kind::McMembers),
                    cli.show_keys,
                )
                .await
            }
            _ => Ok(()),
        }
    };
    Some(smol::block_on(run))
}

/// Each node name's LID, from the SA's NodeRecords (the first port whose
/// NodeDescription is the name, as saquery takes it).
async fn lookup_names(
    session: &mut Session,
    wanted: &[String],
) -> Result<std::collections::HashMap<String, u16>, Stop> {
    let mut found = std::collections::HashMap::new();
    for name in wanted {
        let nodes = fetch::<NodeRecord>(session, &query::node_by_name(name)).await?;
        let Some(r) = nodes.first() else {
            return Err(Stop::new(
                1,
                format!(
                    "no node is named {name:?} at the SA at LID {} (a name is a node's whole \
                     NodeDescription; the query names are in --help)",
                    session.dest.lid
                ),
            ));
        };
        found.insert(name.clone(), r.lid());
    }
    Ok(found)
}

async fn query(session: &mut Session, query: &Query) -> Result<(), Stop> {
    match query.kind {
        Kind::SmPorts => {
            // saquery -s: two lists under their headings (JSON lines
            // tell them apart by their capability_mask).
            if !session.json {
                outln!("IsSM ports")?;
            }
            one_query(session, query, None).await?;
            if !session.json {
                outln!("\nIsSMdisabled ports")?;
            }
            one_query(session, &query.sm_disabled_ports(), None).await
        }
        Kind::SwitchInfoRecord => {
            // Whether MulticastFDBTop is printed depends on the SA's
            // ClassPortInfo, which saquery asks first.
            let cpi = Query::plain(Kind::ClassPortInfo, Method::GET);
            let caps = fetch::<ClassPortInfo>(session, &cpi).await?[0].capability_mask2();
            one_query(session, query, Some(caps)).await
        }
        Kind::Nodes(listing) => {
            let nodes = fetch::<NodeRecord>(session, query).await?;
            // -O and -U asked the SA for their node; the others pick.
            let wanted = match listing {
                Listing::NameOfLid | Listing::NameOfGuid => None,
                _ => query.argument.as_deref(),
            };
            listing::print_nodes(session, listing, wanted, &nodes)
        }
        Kind::McMembers => {
            let members = fetch::<McMemberRecord>(session, query).await?;
            let all_nodes = Query::plain(Kind::NodeRecord, Method::GET_TABLE);
            let nodes = fetch::<NodeRecord>(session, &all_nodes).await?;
            listing::print_members(session, query.argument.as_deref(), &members, &nodes)
        }
        _ => one_query(session, query, None).await,
    }
}

/// The records of `query`'s answer (a Get's one, a GetTable's whole
/// ones), or why there are none.
async fn fetch<T: SaRecord>(session: &mut Session, query: &Query) -> Result<Vec<T>, Stop> {
    let answer = session.exchange(&query.to_mad(session.sm_key)).await?;
    let mad = session.ok(&answer)?;
    Ok(records::<T>(&mad, query, &answer)?
        .into_iter()
        .copied()
        .collect())
}

/// ClassPortInfo.CapabilityMask2 bit: the SA fills SwitchInfo's
/// MulticastFDBTop.
const IS_MULTICAST_FDB_TOP_SUPPORTED: u32 = 1 << 3;

async fn one_query(
    session: &mut Session,
    query: &Query,
    sa_capability_mask2: Option<u32>,
) -> Result<(), Stop> {
    let answer = session.exchange(&query.to_mad(session.sm_key)).await?;
    let mad = session.ok(&answer)?;
    let printed = printed(session, query, &mad, &answer, sa_capability_mask2)?;
    if answer.is_cut() {
        eprintln!(
            "lsaquery: warning: the answer claims RMPP but arrived as one cut MAD (a transport without RMPP, \
             such as ibsim); only the records wholly within its intact bytes are shown: {}",
            match printed.len() {
                0 => "none was".to_owned(),
                n => format!("{n}"),
            }
        );
    }
    for p in &printed {
        session.print(p)?;
    }
    Ok(())
}

/// The answer's records, formatted for printing.
fn printed(
    session: &Session,
    query: &Query,
    mad: &SaMad<'_>,
    answer: &Answer,
    sa_capability_mask2: Option<u32>,
) -> Result<Vec<Printed>, Stop> {
    let keys = session.show_keys;
    fn each<T: SaRecord>(
        mad: &SaMad<'_>,
        query: &Query,
        answer: &Answer,
        print: impl Fn(&T) -> Printed,
    ) -> Result<Vec<Printed>, Stop> {
        Ok(records::<T>(mad, query, answer)?
            .into_iter()
            .map(print)
            .collect())
    }
    let mcast_top =
        sa_capability_mask2.is_some_and(|caps| caps & IS_MULTICAST_FDB_TOP_SUPPORTED != 0);
    Ok(match query.kind {
        // Printed by `query` as saquery lists them.
        Kind::Nodes(_) | Kind::McMembers => Vec::new(),
        Kind::PortInfoRecord => each(mad, query, answer, |r| print::port_info_record(r, keys))?,
        Kind::SmPorts => each(mad, query, answer, print::port_info_summary)?,
        Kind::Sl2VlTableRecord => each(mad, query, answer, print::sl2vl_table_record)?,
        Kind::PkeyTableRecord => each(mad, query, answer, print::pkey_table_record)?,
        Kind::VlArbTableRecord => each(mad, query, answer, print::vl_arb_table_record)?,
        Kind::LinkRecord => each(mad, query, answer, print::link_record)?,
        Kind::LftRecord => each(mad, query, answer, print::lft_record)?,
        Kind::MftRecord => each(mad, query, answer, print::mft_record)?,
        Kind::GuidInfoRecord => each(mad, query, answer, print::guid_info_record)?,
        Kind::SmInfoRecord => each(mad, query, answer, print::sm_info_record)?,
        Kind::SwitchInfoRecord => each(mad, query, answer, |r| {
            print::switch_info_record(r, mcast_top)
        })?,
        Kind::ClassPortInfo => vec![print::class_port_info(record::<ClassPortInfo>(mad)?)],
        Kind::PathRecord => each(mad, query, answer, print::path_record)?,
        Kind::NodeRecord => each(mad, query, answer, |r| {
            print::node_record(r, &session.node_names)
        })?,
        Kind::McGroups => each(mad, query, answer, print::mc_group)?,
        Kind::McMemberRecord => each(mad, query, answer, print::mc_member)?,
        Kind::ServiceRecord => each(mad, query, answer, |r| print::service_record(r, keys))?,
        Kind::InformInfoRecord => each(mad, query, answer, |r| print::inform_info_record(r, keys))?,
    })
}

fn record<'a, T: SaRecord>(mad: &SaMad<'a>) -> Result<&'a T, Stop> {
    mad.record::<T>()
        .map_err(|e| Stop::new(4, format!("malformed answer: {e}")))
}

/// The answer's records: one for Get, every whole one for GetTable.
fn records<'a, T: SaRecord>(
    mad: &SaMad<'a>,
    query: &Query,
    answer: &'a Answer,
) -> Result<Vec<&'a T>, Stop> {
    if query.method == Method::GET {
        return Ok(vec![record::<T>(mad)?]);
    }
    // Checked here so that a malformed answer is reported as such.
    mad.records::<T>()
        .map_err(|e| Stop::new(4, format!("malformed answer: {e}")))?;
    Ok(answer.records::<T>().collect())
}

/// --resolve: the path set through the ibacm protocol.
fn resolve_path(cli: &Cli, dest: &str) -> Result<(), Stop> {
    let usage = |e: String| Stop::new(2, e);
    let dest = resolve::parse(dest, cli.resolve_as).map_err(usage)?;
    let source = cli
        .source
        .as_deref()
        .map(|s| resolve::parse(s, cli.resolve_as))
        .transpose()
        .map_err(usage)?;
    let socket = cli
        .acm_socket
        .clone()
        .unwrap_or_else(|| resolve::DEFAULT_SOCKET.into());
    // The server may ask the master, which retries: wait for all of it.
    let timeout = Duration::from_millis(cli.timeout_ms.max(1)) * (cli.retries + 2);
    resolve::resolve(
        &socket,
        &dest,
        source.as_ref(),
        cli.cached_only,
        cli.json,
        timeout,
    )
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    fn mode(args: &[&str]) -> Result<Mode, Stop> {
        let cli = Cli::try_parse_from(std::iter::once("lsaquery").chain(args.iter().copied()))
            .map_err(|e| Stop::new(2, e.to_string()))?;
        Mode::from_cli(&cli, Names::Pending)
    }

    #[test]
    fn one_mode_at_a_time_is_a_usage_error() {
        let Err(f) = mode(&["--subscribe", "65", "--join", "ff12::1"]) else {
            panic!("two modes accepted")
        };
        assert_eq!(f.code, 2);
        assert!(f.message.contains("one at a time"), "{}", f.message);
    }

    #[test]
    fn each_mode_is_what_its_option_says() {
        assert!(matches!(
            mode(&["--subscribe", "65"]),
            Ok(Mode::Subscribe(t)) if t == mad_codec::TrapNumber(65)
        ));
        assert!(matches!(
            mode(&["--join", "ff12::1"]),
            Ok(Mode::Join(g)) if g.to_string() == "ff12::1"
        ));
        assert!(matches!(mode(&["--load", "paths.txt"]), Ok(Mode::Load(_))));
        assert!(matches!(
            mode(&["-p", "--slid", "4"]),
            Ok(Mode::Query(q)) if q.kind == Kind::PathRecord
        ));
        // No query named: saquery's default, every NodeRecord.
        assert!(matches!(mode(&[]), Ok(Mode::Query(q)) if q.kind == Kind::NodeRecord));
    }

    #[test]
    fn a_trap_that_is_not_a_number_is_a_usage_error() {
        let Err(f) = mode(&["--subscribe", "sixty-five"]) else {
            panic!("accepted")
        };
        assert_eq!(f.code, 2);
    }
}
