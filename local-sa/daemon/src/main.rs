//! The local-sa daemon: see `local-sa --help`.

mod acm_socket;
mod activation;
mod api;
mod bridge;
mod connection;
mod doors;
mod driver;
mod endpoints;
mod error;
mod listener;
mod options;
mod port_agent;
mod port_lock;
mod run;
mod sm_key_file;
mod stats;

use std::process::ExitCode;

use crate::options::{Options, OptionsError};

fn main() -> ExitCode {
    let options = match Options::load(std::env::args_os()) {
        Ok(o) => o,
        Err(OptionsError::Clap(e)) => e.exit(),
        Err(e) => {
            eprintln!("local-sa: {e}");
            return ExitCode::from(2);
        }
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::builder()
                .with_default_directive(tracing_subscriber::filter::LevelFilter::INFO.into())
                .from_env_lossy(),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    match run::run(&options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("local-sa: {e}");
            ExitCode::from(3)
        }
    }
}
