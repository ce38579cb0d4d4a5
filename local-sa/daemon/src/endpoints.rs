//! The ibacm door's endpoints (each served port × each of its P_Keys) and
//! its names table, from sysfs and ibacm's two files; and what each port
//! publishes in the local-sa directory.

use std::path::{Path, PathBuf};

use tracing::{info, warn};

use crate::bridge::identity;
use crate::options::Options;
use local_sa_core::doors::acm::Endpoint;
use local_sa_core::names::directory::{MAX_ADDRESSES, Publication};
use local_sa_core::names::hosts::HostAddress;
use local_sa_core::names::hosts::{self, LocalAddress, NameSource, Names, PkeyChoice};
use std::net::IpAddr;
use umad::ipoib::InterfaceAddress;
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
    parse: impl Fn(&str) -> Result<Vec<T>, hosts::LineError>,
) -> Result<Vec<T>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The names table: the hosts file's entries. ibacm reads its hosts file
/// only when its options say `addr_preload acm_hosts` (which gives
/// `--acm-hosts`), so there is no default one.
pub(crate) fn names(options: &Options) -> Result<Names, String> {
    let mut names = Names::new();
    let hosts = options
        .acm_hosts
        .as_ref()
        .filter(|p| p.as_os_str() != "none");
    if let Some(path) = hosts {
        let entries = read(path, hosts::parse_hosts)?;
        info!(file = %path.display(), entries = entries.len(), "read the ibacm hosts file");
        for (address, gid) in entries {
            names.insert(address, gid, NameSource::HostsFile);
        }
    }
    Ok(names)
}

/// What this node's endpoints own besides their IPoIB interfaces'
/// addresses, fixed at start: the address file's entries, the host name
/// and the `--address` IPs.
#[derive(Debug, Clone, Default)]
pub(crate) struct OwnedPlan {
    /// The address file's lines.
    file: Vec<LocalAddress>,
    /// `--host-name`, else the kernel's (none with `--host-name none`).
    host: Option<String>,
    /// `--address`.
    given: Vec<IpAddr>,
}

/// Reads what the endpoints own at start (the address file).
pub(crate) fn owned_plan(options: &Options) -> Result<OwnedPlan, String> {
    let file = match chosen(options.acm_addr.as_ref(), "ibacm_addr.cfg") {
        Some(path) => read(&path, hosts::parse_addr_file)?,
        None => Vec::new(),
    };
    Ok(OwnedPlan {
        file,
        host: host_name(options),
        given: options.addresses.clone(),
    })
}

/// One endpoint per P_Key of each served port (`ports[i]` is agent `i`),
/// owning what [`owned_addresses`] gives it.
pub(crate) fn endpoints(plan: &OwnedPlan, sysfs: &Sysfs, ports: &[PortFacts]) -> Vec<Endpoint> {
    let mut endpoints = Vec::new();
    for (agent, facts) in ports.iter().enumerate() {
        let adapter = sysfs.endpoint_facts(facts);
        for &pkey in &adapter.pkeys {
            endpoints.push(Endpoint {
                agent,
                port: identity(facts),
                dev_guid: adapter.node_guid.unwrap_or(facts.gid.guid()),
                port_num: facts.port,
                phys_port_cnt: adapter.port_count,
                pkey,
                addresses: Vec::new(),
            });
        }
    }
    for a in &plan.file {
        if !ports.iter().any(|f| a.device == f.ca && a.port == f.port) {
            warn!(
                address = %a.address, device = %a.device, port = a.port,
                "the ibacm address file names a port this daemon does not serve"
            );
        }
    }
    let ipoib: Vec<Vec<InterfaceAddress>> =
        ports.iter().map(umad::ipoib::interface_addresses).collect();
    let owned = owned_addresses(plan, ports, &endpoints, &ipoib);
    for (ep, addresses) in endpoints.iter_mut().zip(owned) {
        ep.addresses = addresses;
    }
    endpoints
}

/// What each endpoint owns, in the endpoints' order — all accepted as a
/// SOURCE and listed by EP_QUERY, in this order: the address file's
/// entries for its device, port and P_Key ("default": the port's first);
/// on each port's first endpoint, the host name (short, as ib_acme -A
/// writes it, and in full) on the first port and `HOST-N` on port N, as
/// ib_acme -A names them, and the `--address` IPs; and the addresses of
/// the port's IPoIB interfaces of that P_Key (`ipoib[agent]`; an interface
/// that gives no P_Key is the port's first endpoint's).
pub(crate) fn owned_addresses(
    plan: &OwnedPlan,
    ports: &[PortFacts],
    endpoints: &[Endpoint],
    ipoib: &[Vec<InterfaceAddress>],
) -> Vec<Vec<HostAddress>> {
    let same_partition = |a: u16, b: u16| a | 0x8000 == b | 0x8000;
    let mut owned = Vec::with_capacity(endpoints.len());
    for (i, ep) in endpoints.iter().enumerate() {
        let Some(facts) = ports.get(ep.agent) else {
            owned.push(Vec::new());
            continue;
        };
        let first_of_port = endpoints.iter().position(|e| e.agent == ep.agent) == Some(i);
        let mut addresses: Vec<HostAddress> = plan
            .file
            .iter()
            .filter(|a| a.device == facts.ca && a.port == facts.port)
            .filter(|a| match a.pkey {
                PkeyChoice::Default => first_of_port,
                PkeyChoice::Value(p) => same_partition(p, ep.pkey),
            })
            .map(|a| a.address.clone())
            .collect();
        let mut add = |a: HostAddress| {
            if !addresses.contains(&a) {
                addresses.push(a);
            }
        };
        if first_of_port {
            if let Some(host) = &plan.host {
                let short = host.split('.').next().unwrap_or(host);
                if ep.agent == 0 {
                    add(HostAddress::Name(short.to_owned()));
                    add(HostAddress::Name(host.clone()));
                }
                add(HostAddress::Name(format!("{short}-{}", ep.agent + 1)));
            }
            for ip in &plan.given {
                add(HostAddress::Ip(*ip));
            }
        }
        for a in ipoib.get(ep.agent).into_iter().flatten() {
            let mine = match a.pkey {
                Some(p) => same_partition(p, ep.pkey),
                None => first_of_port,
            };
            if mine {
                add(HostAddress::Ip(a.ip));
            }
        }
        addresses.retain(|a| !matches!(a, HostAddress::Name(n) if n.len() > hosts::MAX_NAME_LEN));
        owned.push(addresses);
    }
    owned
}

/// The host name: `--host-name`, else the kernel's; none with
/// `--host-name none` or when the kernel's cannot be read.
fn host_name(options: &Options) -> Option<String> {
    match options.host_name.as_deref() {
        Some("none") => None,
        Some(n) => Some(n.to_owned()),
        None => match std::fs::read_to_string("/proc/sys/kernel/hostname") {
            Ok(n) => Some(n.trim().to_owned()).filter(|n| !n.is_empty()),
            Err(e) => {
                warn!(error = %e, "cannot read the host name; this host is known by its addresses only (--host-name NAME names it)");
                None
            }
        },
    }
}

/// What `port` publishes in the local-sa directory: the host name
/// (`--host-name`, else the kernel's) and its addresses: `--address` (on
/// every port) and the address file's IPs for this port, which must fit,
/// then the port's IPoIB interfaces' (`ipoib`) while they fit. `None` if
/// the operator said `none` or no host name can be found.
pub(crate) fn publication(
    options: &Options,
    plan: &OwnedPlan,
    port: &PortFacts,
    ipoib: &[IpAddr],
) -> Result<Option<Publication>, String> {
    let Some(name) = host_name(options) else {
        return Ok(None);
    };
    let mut addresses = options.addresses.clone();
    for a in plan
        .file
        .iter()
        .filter(|a| a.device == port.ca && a.port == port.port)
    {
        if let HostAddress::Ip(ip) = a.address
            && !addresses.contains(&ip)
        {
            addresses.push(ip);
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
pub(crate) fn address_list(addresses: &[IpAddr]) -> String {
    let text: Vec<String> = addresses.iter().map(ToString::to_string).collect();
    text.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use mad_codec::Gid;
    use umad::port::PortState;

    fn facts(ca: &str, port: u8) -> PortFacts {
        PortFacts {
            ca: ca.into(),
            port,
            lid: u16::from(port) + 3,
            lmc: 0,
            sm_lid: 1,
            sm_sl: 0,
            gid: Gid::new(Gid::DEFAULT_PREFIX, u64::from(port)),
            state: PortState::Active,
            cap_mask: 0,
            link_layer: "InfiniBand".into(),
            umad_index: Some(0),
        }
    }

    fn endpoint(agent: usize, pkey: u16) -> Endpoint {
        Endpoint {
            agent,
            port: identity(&facts("mlx5_0", agent as u8 + 1)),
            dev_guid: 1,
            port_num: agent as u8 + 1,
            phys_port_cnt: 2,
            pkey,
            addresses: Vec::new(),
        }
    }

    fn name(n: &str) -> HostAddress {
        HostAddress::Name(n.into())
    }

    fn ip(text: &str) -> HostAddress {
        HostAddress::Ip(text.parse().unwrap())
    }

    #[test]
    fn each_endpoint_owns_its_files_names_host_names_given_and_interface_addresses() {
        let file = hosts::parse_addr_file(
            "node7-ib mlx5_0 1 default\n10.9.0.7 mlx5_0 1 8001\nother mlx5_1 1 default\n",
        )
        .unwrap();
        let plan = OwnedPlan {
            file,
            host: Some("node7.cluster.example".into()),
            given: vec!["192.0.2.22".parse().unwrap()],
        };
        let ports = [facts("mlx5_0", 1), facts("mlx5_0", 2)];
        let eps = [
            endpoint(0, 0xFFFF),
            endpoint(0, 0x8001),
            endpoint(1, 0xFFFF),
        ];
        let ipoib = [
            vec![
                InterfaceAddress {
                    ip: "10.0.0.7".parse().unwrap(),
                    pkey: Some(0xFFFF),
                },
                InterfaceAddress {
                    ip: "10.1.0.7".parse().unwrap(),
                    pkey: Some(0x0001),
                },
            ],
            vec![InterfaceAddress {
                ip: "10.2.0.7".parse().unwrap(),
                pkey: None,
            }],
        ];
        let owned = owned_addresses(&plan, &ports, &eps, &ipoib);
        assert_eq!(
            owned[0],
            [
                name("node7-ib"),
                name("node7"),
                name("node7.cluster.example"),
                name("node7-1"),
                ip("192.0.2.22"),
                ip("10.0.0.7"),
            ]
        );
        // The partition's own: the file's line and the interface of the
        // limited member P_Key 0x0001 (the same partition as 0x8001).
        assert_eq!(owned[1], [ip("10.9.0.7"), ip("10.1.0.7")]);
        // Port 2: its ib_acme -A name, --address, its interface's address.
        assert_eq!(
            owned[2],
            [name("node7-2"), ip("192.0.2.22"), ip("10.2.0.7")]
        );
        // The address goes: the endpoint no longer owns it.
        let owned = owned_addresses(&plan, &ports, &eps, &[vec![], vec![]]);
        assert!(!owned[0].contains(&ip("10.0.0.7")));
        assert!(owned[0].contains(&ip("192.0.2.22")));
    }

    #[test]
    fn without_a_host_name_only_addresses_are_owned() {
        let plan = OwnedPlan {
            host: None,
            ..OwnedPlan::default()
        };
        let owned = owned_addresses(&plan, &[facts("mlx5_0", 1)], &[endpoint(0, 0xFFFF)], &[]);
        assert_eq!(owned, [Vec::<HostAddress>::new()]);
    }
}
