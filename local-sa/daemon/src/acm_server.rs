//! How ibacm's clients reach the ibacm door besides its Unix sockets:
//! ibacm's TCP server modes (`loop`: 127.0.0.1, `open`: every address)
//! with the port files its clients read — `ibacm-tcp.port` (ib_acme,
//! libibacm) and, unless only ib_acme and the kernel are served,
//! `ibacm.port` (librdmacm, which then connects to 127.0.0.1 on that port
//! instead of `/run/ibacm.sock`) —; and what ibacm's options file said.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use tracing::{info, warn};

use crate::error::DaemonError;
use crate::listener::Listener;
use crate::options::Options;

/// ib_acme's port file (rdma-core's `IBACM_PORT_BASE`).
const ACME_PORT_FILE: &str = "ibacm-tcp.port";
/// librdmacm's port file (`IBACM_PORT_FILE`).
const RDMACM_PORT_FILE: &str = "ibacm.port";

/// The port files written, removed when dropped (at exit). Where a port
/// file is a link (the package's tmpfiles.d entry points `/run/ibacm.port`
/// into the runtime directory, the only part of /run the unit may write),
/// the file it leads to is what was written and what goes.
#[derive(Debug)]
pub(crate) struct PortFiles(Vec<PathBuf>);

impl Drop for PortFiles {
    fn drop(&mut self) {
        for f in &self.0 {
            let _ = std::fs::remove_file(f);
        }
    }
}

/// The TCP listener of the `loop` and `open` server modes and the port
/// files that tell clients its port; none in `unix` mode.
pub(crate) fn tcp(options: &Options) -> Result<Option<(Listener, PortFiles)>, DaemonError> {
    let ip = match options.acm_server_mode.as_str() {
        "loop" => Ipv4Addr::LOCALHOST,
        "open" => Ipv4Addr::UNSPECIFIED,
        _ => return Ok(None),
    };
    let addr = SocketAddr::new(ip.into(), options.acm_server_port);
    let listener = Listener::bind_tcp(addr).map_err(|e| {
        DaemonError::Acm(format!(
            "cannot listen for ibacm clients on TCP {addr} (--acm-server-mode {}): {e}",
            options.acm_server_mode
        ))
    })?;
    if options.acm_server_mode == "open" {
        warn!(%addr, "ibacm clients are served on every address of this host: anyone who can reach it may ask for paths");
    }
    // The port the kernel gave, for --acm-server-port 0.
    let bound = listener.tcp_addr().unwrap_or(addr);
    let port = format!("{}\n", bound.port());
    let mut names = vec![ACME_PORT_FILE];
    if options.serves_librdmacm() {
        names.push(RDMACM_PORT_FILE);
    }
    let mut written = PortFiles(Vec::new());
    for name in names {
        let path = options.acm_port_dir.join(name);
        std::fs::write(&path, &port).map_err(|e| {
            let hint = if e.kind() == std::io::ErrorKind::ReadOnlyFilesystem {
                "; under the package's unit only /run/local-sa is writable: \
                 `systemd-tmpfiles --create local-sa.conf` links the port files there"
            } else {
                ""
            };
            DaemonError::Acm(format!(
                "cannot write the ibacm port file {} (--acm-port-dir): {e}{hint}",
                path.display()
            ))
        })?;
        written.0.push(std::fs::canonicalize(&path).unwrap_or(path));
    }
    info!(addr = %bound, port_files = %written.0.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" "), "ibacm protocol listening on TCP");
    Ok(Some((listener, written)))
}

/// Logs what ibacm's options file set, what it set that local-sa does
/// not use (each once, with why), and the lines that made no sense.
pub(crate) fn log_ibacm_options(options: &Options) {
    let Some((path, read)) = &options.acm_options_read else {
        return;
    };
    let file = path.display().to_string();
    let taken: Vec<String> = read
        .translated
        .iter()
        .map(|t| format!("{} → {}", t.from, t.args().join(" ")))
        .collect();
    info!(%file, settings = %taken.join(", "), "read ibacm's options (local-sa's own config file and command line win)");
    for (option, why) in &read.unused {
        info!(%file, %option, "an ibacm option local-sa does not use: {why}");
    }
    for problem in &read.refused {
        warn!(%file, "ibacm option ignored: {problem}");
    }
}
