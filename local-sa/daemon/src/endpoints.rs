//! The ibacm door's endpoints (each served port × each of its P_Keys) and
//! its names table, from sysfs and ibacm's two files; and what each port
//! publishes in the local-sa directory.

use std::path::{Path, PathBuf};

use tracing::{info, warn};

use crate::bridge::identity;
use crate::options::Options;
use local_sa_core::directory::{MAX_ADDRESSES, Publication};
use local_sa_core::doors::acm::Endpoint;
use local_sa_core::naming::Address;
use local_sa_core::naming::{self, LocalAddress, NameSource, Names, PkeyChoice};
use umad::port::{PortFacts, Sysfs};

/// Where ibacm keeps its files.
const ACM_CONF_DIR: &str = "/etc/rdma";

/// A file given on the command line, or ibacm's default one if it exists.
fn chosen(given: Option<&PathBuf>, default: &str) -> Option<PathBuf> {
    match given {
        Some(p) => Some(p.clone()),
        None => Some(Path::new(ACM_CONF_DIR).join(default)).filter(|p| p.exists()),
    }
}

/// Reads one of ibacm's files with `parse`.
fn read<T>(
    path: &Path,
    parse: impl Fn(&str) -> Result<Vec<T>, naming::LineError>,
) -> Result<Vec<T>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The names table: the hosts file's entries.
pub(crate) fn names(options: &Options) -> Result<Names, String> {
    let mut names = Names::new();
    if let Some(path) = chosen(options.acm_hosts.as_ref(), "ibacm_hosts.data") {
        let entries = read(&path, naming::parse_hosts)?;
        info!(file = %path.display(), entries = entries.len(), "read the ibacm hosts file");
        for (address, gid) in entries {
            names.insert(address, gid, NameSource::HostsFile);
        }
    }
    Ok(names)
}

/// One endpoint per P_Key of each served port (`ports[i]` is agent `i`),
/// named by the address file's lines for that adapter and port.
pub(crate) fn endpoints(
    options: &Options,
    sysfs: &Sysfs,
    ports: &[PortFacts],
) -> Result<Vec<Endpoint>, String> {
    let local: Vec<LocalAddress> = match chosen(options.acm_addr.as_ref(), "ibacm_addr.cfg") {
        Some(path) => read(&path, naming::parse_addr_file)?,
        None => Vec::new(),
    };
    let mut endpoints = Vec::new();
    for (agent, facts) in ports.iter().enumerate() {
        let adapter = sysfs.endpoint_facts(facts);
        for (i, &pkey) in adapter.pkeys.iter().enumerate() {
            endpoints.push(Endpoint {
                agent,
                port: identity(facts),
                dev_guid: adapter.node_guid.unwrap_or(facts.gid.guid()),
                port_num: facts.port,
                phys_port_cnt: adapter.port_count,
                pkey,
                addresses: local
                    .iter()
                    .filter(|a| a.device == facts.ca && a.port == facts.port)
                    .filter(|a| match a.pkey {
                        PkeyChoice::Default => i == 0,
                        PkeyChoice::Value(p) => p | 0x8000 == pkey | 0x8000,
                    })
                    .map(|a| a.address.clone())
                    .collect(),
            });
        }
    }
    for a in &local {
        if !ports.iter().any(|f| a.device == f.ca && a.port == f.port) {
            warn!(
                address = %a.address, device = %a.device, port = a.port,
                "the ibacm address file names a port this daemon does not serve"
            );
        }
    }
    Ok(endpoints)
}

/// What port `agent` publishes in the local-sa directory: the host name
/// (`--host-name`, else the kernel's) and its addresses: `--address` (on
/// every port) and the address file's IPs for this port's endpoints, which
/// must fit, then the port's IPoIB interfaces' (`ipoib`) while they fit.
/// `None` if the operator said `none` or no host name can be found.
pub(crate) fn publication(
    options: &Options,
    endpoints: &[Endpoint],
    agent: usize,
    ipoib: &[std::net::IpAddr],
) -> Result<Option<Publication>, String> {
    let name = match options.host_name.as_deref() {
        Some("none") => return Ok(None),
        Some(n) => n.to_owned(),
        None => match std::fs::read_to_string("/proc/sys/kernel/hostname") {
            Ok(n) => n.trim().to_owned(),
            Err(e) => {
                warn!(error = %e, "cannot read the host name; not publishing this host in the directory (--host-name NAME does)");
                return Ok(None);
            }
        },
    };
    let mut addresses = options.addresses.clone();
    for ep in endpoints.iter().filter(|e| e.agent == agent) {
        for a in &ep.addresses {
            if let Address::Ip(ip) = a
                && !addresses.contains(ip)
            {
                addresses.push(*ip);
            }
        }
    }
    let left_out: Vec<_> = ipoib
        .iter()
        .filter(|ip| !addresses.contains(ip))
        .copied()
        .collect();
    let room = MAX_ADDRESSES.saturating_sub(addresses.len());
    if left_out.len() > room {
        warn!(
            published = %address_list(&left_out[..room]),
            left_out = %address_list(&left_out[room..]),
            "more IPoIB addresses than a directory record carries; --address chooses"
        );
    }
    addresses.extend(left_out.into_iter().take(room));
    Publication::new(&name, addresses)
        .map(Some)
        .map_err(|e| format!("cannot publish this host in the local-sa directory: {e}"))
}

/// Addresses as text for a log line: `10.0.0.1 fe80::1`.
pub(crate) fn address_list(addresses: &[std::net::IpAddr]) -> String {
    let text: Vec<String> = addresses.iter().map(ToString::to_string).collect();
    text.join(" ")
}
