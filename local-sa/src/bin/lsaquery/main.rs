//! lsaquery: a saquery-style client for local-sa and any other SA.

mod cli;
mod print;
mod query;

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use local_sa::port::Sysfs;
use local_sa::umad::{
    AgentSpec, MadAddress, MadClient, RequestOptions, Response, UmadDevice, UmadTransport,
};
use mad_codec::records::SaRecord;
use mad_codec::{
    ClassPortInfo, InformInfoRecord, McMemberRecord, Method, NodeRecord, PathRecord, SaMad,
    ServiceRecord,
};

use crate::cli::Cli;
use crate::print::Printed;
use crate::query::{Kind, Query};

/// Data bytes of a simulator-truncated answer that hold whole records.
const TRUNCATED_DATA: usize = 168;

/// An exit status and what to say about it.
struct Failure {
    code: u8,
    message: String,
}

impl Failure {
    fn new(code: u8, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::builder()
                .with_default_directive(tracing_subscriber::filter::LevelFilter::WARN.into())
                .from_env_lossy(),
        )
        .with_writer(std::io::stderr)
        .try_init();
    match run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("lsaquery: {}", f.message);
            ExitCode::from(f.code)
        }
    }
}

fn run(cli: &Cli) -> Result<(), Failure> {
    let query = query::from_cli(cli).map_err(|e| Failure::new(2, e))?;
    let port = Sysfs::default()
        .select(cli.ca.as_deref(), cli.port)
        .map_err(|e| Failure::new(3, e.to_string()))?;
    let sa_lid = cli.sa_lid.unwrap_or(port.sm_lid);
    if sa_lid == 0 {
        return Err(Failure::new(
            3,
            format!("{port} knows no SM LID; give the SA's with --sa-lid"),
        ));
    }
    let umad_path = port
        .umad_path()
        .ok_or_else(|| Failure::new(3, format!("{port} has no umad device")))?;
    let device = UmadDevice::open(&umad_path).map_err(|e| Failure::new(3, e.to_string()))?;
    let agent = device
        .register_agent(&AgentSpec::sa(&[]))
        .map_err(|e| Failure::new(3, e.to_string()))?;
    let transport =
        UmadTransport::start(device, 256).map_err(|e| Failure::new(3, e.to_string()))?;
    let (client, dispatcher, _unsolicited) =
        MadClient::new(agent, transport.outgoing(), transport.incoming());

    let dest = MadAddress::gsi(sa_lid, port.sm_sl);
    let opts = RequestOptions {
        timeout: Duration::from_millis(cli.timeout_ms.max(1)),
        retries: cli.retries,
        ..RequestOptions::default()
    };
    let request = query.to_mad(cli.smkey);
    let executor = smol::LocalExecutor::new();
    let result = smol::block_on(executor.run(async {
        executor.spawn(dispatcher).detach();
        client.request(dest, &request, &opts).await
    }));
    transport.shutdown();
    let response = result.map_err(|e| Failure::new(4, format!("SA at LID {sa_lid}: {e}")))?;
    if cli.debug > 0 {
        println!("SA Request:\n{}", mad_codec::hex::dump(&request));
        println!("SA Response:\n{}", mad_codec::hex::dump(&response.mad));
    }
    print_answer(cli, &query, &response)
}

fn print_answer(cli: &Cli, query: &Query, response: &Response) -> Result<(), Failure> {
    let mad = SaMad::parse_checked(&response.mad).map_err(|e| {
        Failure::new(
            4,
            format!("malformed answer from LID {}: {e}", response.source.lid),
        )
    })?;
    let status = mad.mad().status();
    if !status.is_ok() {
        return Err(Failure::new(
            1,
            format!(
                "SA at LID {} answered status {:#06x} ({})",
                response.source.lid,
                status.0,
                status.describe()
            ),
        ));
    }
    let truncated = response.looks_truncated();
    if truncated {
        eprintln!(
            "lsaquery: warning: the answer claims RMPP but arrived as one cut MAD (a transport without RMPP, \
             such as ibsim); only the whole records at its start are shown"
        );
    }
    let show_keys = cli.show_keys;
    let printed: Vec<Printed> = match query.kind {
        Kind::ClassPortInfo => vec![print::class_port_info(record::<ClassPortInfo>(&mad)?)],
        Kind::PathRecord => records::<PathRecord>(&mad, query, truncated)?
            .into_iter()
            .map(print::path_record)
            .collect(),
        Kind::NodeRecord => records::<NodeRecord>(&mad, query, truncated)?
            .into_iter()
            .map(print::node_record)
            .collect(),
        Kind::McGroups => records::<McMemberRecord>(&mad, query, truncated)?
            .into_iter()
            .map(print::mc_group)
            .collect(),
        Kind::McMemberRecord => records::<McMemberRecord>(&mad, query, truncated)?
            .into_iter()
            .map(print::mc_member)
            .collect(),
        Kind::ServiceRecord => records::<ServiceRecord>(&mad, query, truncated)?
            .into_iter()
            .map(|r| print::service_record(r, show_keys))
            .collect(),
        Kind::InformInfoRecord => records::<InformInfoRecord>(&mad, query, truncated)?
            .into_iter()
            .map(|r| print::inform_info_record(r, show_keys))
            .collect(),
    };
    for p in printed {
        if cli.json {
            println!("{}", p.to_json());
        } else {
            print!("{}", p.to_text());
        }
    }
    Ok(())
}

fn record<'a, T: SaRecord>(mad: &SaMad<'a>) -> Result<&'a T, Failure> {
    mad.record::<T>()
        .map_err(|e| Failure::new(4, format!("malformed answer: {e}")))
}

/// The answer's records: one for Get, every whole one for GetTable.
fn records<'a, T: SaRecord>(
    mad: &SaMad<'a>,
    query: &Query,
    truncated: bool,
) -> Result<Vec<&'a T>, Failure> {
    if query.method == Method::GET {
        return Ok(vec![record::<T>(mad)?]);
    }
    let all = mad
        .records::<T>()
        .map_err(|e| Failure::new(4, format!("malformed answer: {e}")))?;
    let whole = if truncated {
        TRUNCATED_DATA / all.stride().max(1)
    } else {
        all.len()
    };
    Ok(all.take(whole).collect())
}
