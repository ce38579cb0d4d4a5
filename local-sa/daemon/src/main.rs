//! The local-sa daemon: see `local-sa --help`.

mod acm_server;
mod activation;
mod address_watch;
mod atomic_file;
mod bridge;
mod client_store;
mod connection;
mod door_limits;
mod door_socket;
mod driver;
mod endpoints;
mod error;
mod generate;
mod kept_clients;
mod kept_tables_file;
mod kernel_door;
mod listener;
mod log_control;
mod metrics;
mod metrics_server;
mod options;
mod port_agent;
mod port_lock;
mod recent_warnings;
mod registrations_file;
mod reload;
mod run;
mod served;
mod service_manager;
mod settings;
mod sm_key_file;
mod sm_signs;
mod source_route;
mod stats;
mod stream;

use std::process::ExitCode;

use crate::options::{Options, OptionsError};

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let options = match Options::load(args.clone()) {
        Ok(o) => o,
        Err(OptionsError::Clap(e)) => e.exit(),
        Err(e) => {
            eprintln!("local-sa: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(what) = &options.generate {
        return print_and_exit(generate::generate(what));
    }
    if options.check_config {
        return print_and_exit(options::effective::effective_settings(args));
    }
    let log = match log_control::LogControl::install(options.log_level.as_deref()) {
        Ok(log) => log,
        Err(e) => {
            eprintln!("local-sa: {e}");
            return ExitCode::from(2);
        }
    };
    match run::run(&options, args, log) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("local-sa: {e}");
            ExitCode::from(3)
        }
    }
}

/// For the options that print and exit (--generate, --check-config): the
/// text to standard output and status 0, or the error and status 2. A
/// reader that closes the pipe early (`| head`) is no failure.
fn print_and_exit(result: Result<String, impl std::fmt::Display>) -> ExitCode {
    match result {
        Ok(text) => {
            let _ = std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("local-sa: {e}");
            ExitCode::from(2)
        }
    }
}
