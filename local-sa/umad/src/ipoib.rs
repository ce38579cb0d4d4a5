//! The IP addresses of a port's IPoIB interfaces: what a host publishes so
//! that other nodes resolve its addresses to the port's GID.
//!
//! An IPoIB interface of port P of adapter CA is a network interface of
//! type 32 (`ARPHRD_INFINIBAND`) whose `device/infiniband/` directory
//! holds CA and whose `dev_port` is P - 1 (older kernels give the port in
//! `dev_id`). Its addresses come from `getifaddrs`; IPv6 link-local ones
//! are left out (they need a scope to be used, and every port has one).

use std::net::IpAddr;
use std::path::Path;

use crate::port::PortFacts;
use crate::sys::ifaddrs;

/// Where the kernel lists network interfaces.
const SYS_CLASS_NET: &str = "/sys/class/net";

/// The names of `port`'s IPoIB interfaces under `sys_class_net`.
pub fn interfaces(sys_class_net: &Path, port: &PortFacts) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(sys_class_net) else {
        return Vec::new();
    };
    let read = |p: &Path| std::fs::read_to_string(p).map(|s| s.trim().to_owned());
    let mut names: Vec<String> = dir
        .flatten()
        .filter_map(|e| {
            let path = e.path();
            if read(&path.join("type")).ok()? != "32" {
                return None;
            }
            if !path.join("device/infiniband").join(&port.ca).exists() {
                return None;
            }
            let index = match read(&path.join("dev_port")) {
                Ok(n) => n.parse::<u32>().ok()?,
                Err(_) => {
                    let id = read(&path.join("dev_id")).ok()?;
                    u32::from_str_radix(id.trim_start_matches("0x"), 16).ok()?
                }
            };
            (index + 1 == u32::from(port.port))
                .then(|| e.file_name().to_string_lossy().into_owned())
        })
        .collect();
    names.sort();
    names
}

/// The addresses of `port`'s IPoIB interfaces, IPv4 first; none where it
/// has none (as under the simulator).
pub fn addresses(port: &PortFacts) -> Vec<IpAddr> {
    let names = interfaces(Path::new(SYS_CLASS_NET), port);
    if names.is_empty() {
        return Vec::new();
    }
    let mut found: Vec<IpAddr> = ifaddrs::interface_addresses()
        .unwrap_or_default()
        .into_iter()
        .filter(|(name, ip)| names.contains(name) && !is_link_local(ip))
        .map(|(_, ip)| ip)
        .collect();
    found.sort_by_key(IpAddr::is_ipv6);
    found.dedup();
    found
}

fn is_link_local(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_link_local(),
        IpAddr::V6(v6) => v6.segments()[0] & 0xFFC0 == 0xFE80,
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;
    use crate::port::PortState;

    #[test]
    fn the_ports_ipoib_interfaces_are_found_by_type_device_and_port() {
        let t = tempfile::tempdir().unwrap();
        let net = t.path();
        let iface = |name: &str, kind: &str, ca: Option<&str>, port_file: (&str, &str)| {
            let d = net.join(name);
            fs::create_dir_all(&d).unwrap();
            fs::write(d.join("type"), format!("{kind}\n")).unwrap();
            if let Some(ca) = ca {
                fs::create_dir_all(d.join("device/infiniband").join(ca)).unwrap();
            }
            fs::write(d.join(port_file.0), port_file.1).unwrap();
        };
        iface("ib0", "32", Some("mlx5_0"), ("dev_port", "0\n"));
        iface("ib1", "32", Some("mlx5_0"), ("dev_port", "1\n"));
        iface("ib2", "32", Some("mlx5_1"), ("dev_port", "0\n"));
        iface("ib0.8001", "32", Some("mlx5_0"), ("dev_id", "0x0\n"));
        iface("eth0", "1", None, ("dev_port", "0\n"));
        let mut port = PortFacts {
            ca: "mlx5_0".into(),
            port: 1,
            lid: 4,
            lmc: 0,
            sm_lid: 1,
            sm_sl: 0,
            gid: mad_codec::Gid::ZERO,
            state: PortState::Active,
            cap_mask: 0,
            link_layer: "InfiniBand".into(),
            umad_index: Some(0),
        };
        assert_eq!(interfaces(net, &port), ["ib0", "ib0.8001"]);
        port.port = 2;
        assert_eq!(interfaces(net, &port), ["ib1"]);
        assert!(interfaces(Path::new("/nonexistent"), &port).is_empty());
    }

    #[test]
    fn getifaddrs_lists_the_loopback_address() {
        let all = ifaddrs::interface_addresses().unwrap();
        assert!(
            all.iter()
                .any(|(n, ip)| n == "lo" && *ip == IpAddr::from([127, 0, 0, 1])),
            "{all:?}"
        );
    }

    #[test]
    fn link_local_addresses_are_not_published() {
        assert!(is_link_local(&"fe80::1".parse().unwrap()));
        assert!(!is_link_local(&"fd00::1".parse().unwrap()));
        assert!(!is_link_local(&"10.0.0.1".parse().unwrap()));
    }
}
