//! The IP addresses of a port's IPoIB interfaces: what a host publishes so
//! that other nodes resolve its addresses to the port's GID.
//!
//! An IPoIB interface of port P of adapter CA is a network interface of
//! type 32 (`ARPHRD_INFINIBAND`) whose `device/infiniband/` directory
//! holds CA and whose `dev_port` is P - 1 (older kernels give the port in
//! `dev_id`); its partition is in `pkey` (`0xffff` for the parent,
//! `0x8001` for a child such as `ib0.8001`). Its addresses come from
//! `getifaddrs`; IPv6 link-local ones are left out (they need a scope to
//! be used, and every port has one).

use std::net::IpAddr;
use std::path::Path;

use crate::port::PortFacts;
use crate::sys::ifaddrs;

/// Where the kernel lists network interfaces.
const SYS_CLASS_NET: &str = "/sys/class/net";

/// One IPoIB interface of a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface {
    /// Its name (`ib0`, `ib0.8001`).
    pub name: String,
    /// Its partition's P_Key as the interface gives it, if it does.
    pub pkey: Option<u16>,
}

/// `port`'s IPoIB interfaces under `sys_class_net`, by name.
pub fn interfaces(sys_class_net: &Path, port: &PortFacts) -> Vec<Interface> {
    let Ok(dir) = std::fs::read_dir(sys_class_net) else {
        return Vec::new();
    };
    let read = |p: &Path| std::fs::read_to_string(p).map(|s| s.trim().to_owned());
    let hex = |text: &str| u32::from_str_radix(text.trim_start_matches("0x"), 16).ok();
    let mut found: Vec<Interface> = dir
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
                Err(_) => hex(&read(&path.join("dev_id")).ok()?)?,
            };
            let pkey = read(&path.join("pkey"))
                .ok()
                .and_then(|p| hex(&p))
                .and_then(|p| u16::try_from(p).ok());
            (index + 1 == u32::from(port.port)).then(|| Interface {
                name: e.file_name().to_string_lossy().into_owned(),
                pkey,
            })
        })
        .collect();
    found.sort_by(|a, b| a.name.cmp(&b.name));
    found
}

/// One address of a port's IPoIB interface, and the interface's P_Key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InterfaceAddress {
    /// The address.
    pub ip: IpAddr,
    /// The interface's P_Key, if it gives one.
    pub pkey: Option<u16>,
}

/// The addresses of `port`'s IPoIB interfaces, IPv4 first, each with its
/// interface's P_Key; none where it has none (as under the simulator).
pub fn interface_addresses(port: &PortFacts) -> Vec<InterfaceAddress> {
    let interfaces = interfaces(Path::new(SYS_CLASS_NET), port);
    if interfaces.is_empty() {
        return Vec::new();
    }
    let mut found: Vec<InterfaceAddress> = ifaddrs::interface_addresses()
        .unwrap_or_default()
        .into_iter()
        .filter(|(_, ip)| !is_link_local(ip))
        .filter_map(|(name, ip)| {
            let interface = interfaces.iter().find(|i| i.name == name)?;
            Some(InterfaceAddress {
                ip,
                pkey: interface.pkey,
            })
        })
        .collect();
    found.sort_by_key(|a| a.ip.is_ipv6());
    found.dedup();
    found
}

/// The addresses of `port`'s IPoIB interfaces, IPv4 first, whatever their
/// partition.
pub fn addresses(port: &PortFacts) -> Vec<IpAddr> {
    ips(&interface_addresses(port))
}

/// The addresses of `found` (as [`interface_addresses`] gives them),
/// each once.
pub fn ips(found: &[InterfaceAddress]) -> Vec<IpAddr> {
    let mut ips: Vec<IpAddr> = found.iter().map(|a| a.ip).collect();
    ips.dedup();
    ips
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
            if name.starts_with("ib") {
                let pkey = name.split_once('.').map_or("ffff", |(_, p)| p);
                fs::write(d.join("pkey"), format!("0x{pkey}\n")).unwrap();
            }
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
        let named = |found: Vec<Interface>| -> Vec<(String, Option<u16>)> {
            found.into_iter().map(|i| (i.name, i.pkey)).collect()
        };
        assert_eq!(
            named(interfaces(net, &port)),
            [
                ("ib0".into(), Some(0xFFFF)),
                ("ib0.8001".into(), Some(0x8001))
            ]
        );
        port.port = 2;
        assert_eq!(
            named(interfaces(net, &port)),
            [("ib1".into(), Some(0xFFFF))]
        );
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
