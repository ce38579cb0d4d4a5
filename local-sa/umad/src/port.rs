//! Port facts from sysfs: which channel adapters and ports exist, their LID,
//! LMC, SM LID and SL, GID, state and capability mask, and which umad
//! device serves each. Read through libc so that the simulator's preload
//! can redirect the paths (it serves a snapshot taken when the process
//! first touches the device).

use std::fmt;
use std::path::{Path, PathBuf};

use mad_codec::Gid;

use crate::sys::{list_dir, read_text};

/// Where the kernel publishes channel adapters.
pub const SYS_CLASS_INFINIBAND: &str = "/sys/class/infiniband";
/// Where the kernel publishes umad devices.
pub const SYS_CLASS_INFINIBAND_MAD: &str = "/sys/class/infiniband_mad";

/// Logical port state (sysfs `state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortState {
    /// 1: Down.
    Down,
    /// 2: Initializing (no SM has configured it yet).
    Init,
    /// 3: Armed.
    Armed,
    /// 4: Active.
    Active,
    /// 5: ActiveDefer.
    ActiveDefer,
    /// Anything else.
    Other(u8),
}

impl fmt::Display for PortState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Down => f.write_str("Down"),
            Self::Init => f.write_str("Initializing"),
            Self::Armed => f.write_str("Armed"),
            Self::Active => f.write_str("Active"),
            Self::ActiveDefer => f.write_str("ActiveDefer"),
            Self::Other(n) => write!(f, "state {n}"),
        }
    }
}

impl PortState {
    fn from_code(code: u8) -> Self {
        match code {
            1 => Self::Down,
            2 => Self::Init,
            3 => Self::Armed,
            4 => Self::Active,
            5 => Self::ActiveDefer,
            n => Self::Other(n),
        }
    }
}

/// What one port looks like right now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortFacts {
    /// Channel adapter name (`mlx5_0`, or `ibsim0` under the simulator).
    pub ca: String,
    /// Port number on the adapter.
    pub port: u8,
    /// Base LID.
    pub lid: u16,
    /// LID mask count: the port answers to `lid .. lid + 2^lmc`.
    pub lmc: u8,
    /// LID of the master SM (where the SA is).
    pub sm_lid: u16,
    /// SL to reach the SM.
    pub sm_sl: u8,
    /// GID index 0: subnet prefix and port GUID.
    pub gid: Gid,
    /// Logical state.
    pub state: PortState,
    /// PortInfo CapabilityMask.
    pub cap_mask: u32,
    /// `InfiniBand` or `Ethernet` (RoCE ports have no SA).
    pub link_layer: String,
    /// Index N of `/dev/infiniband/umadN` for this port, if there is one.
    pub umad_index: Option<u32>,
}

impl PortFacts {
    /// True for an active InfiniBand port with a LID.
    pub fn is_usable(&self) -> bool {
        self.state == PortState::Active && self.link_layer == "InfiniBand" && self.lid != 0
    }

    /// The umad device path, if the port has one.
    pub fn umad_path(&self) -> Option<PathBuf> {
        self.umad_index
            .map(|n| PathBuf::from(format!("/dev/infiniband/umad{n}")))
    }
}

impl fmt::Display for PortFacts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} port {} (LID {}, SM LID {}, GID {}, {})",
            self.ca, self.port, self.lid, self.sm_lid, self.gid, self.state
        )
    }
}

/// Why no port could be used.
#[derive(Debug)]
pub enum PortError {
    /// sysfs could not be read.
    Io {
        /// The path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A sysfs file held something unexpected.
    BadValue {
        /// The path.
        path: PathBuf,
        /// What it held.
        value: String,
    },
    /// No channel adapter port exists at all.
    NoPorts,
    /// The named adapter or port does not exist.
    NotFound {
        /// What was asked for.
        wanted: String,
        /// What exists.
        available: Vec<String>,
    },
    /// Ports exist but none is an active InfiniBand port.
    NoActivePort {
        /// Every port seen, with its state.
        seen: Vec<String>,
    },
    /// The port has no umad device (is `ib_umad` loaded?).
    NoUmadDevice {
        /// The port.
        port: String,
    },
}

impl fmt::Display for PortError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io { path, source } => write!(f, "cannot read {}: {source}", path.display()),
            Self::BadValue { path, value } => {
                write!(f, "unexpected value {value:?} in {}", path.display())
            }
            Self::NoPorts => write!(
                f,
                "no InfiniBand ports in {SYS_CLASS_INFINIBAND} (is an HCA present and its driver loaded? \
                 under the simulator, is LD_PRELOAD set?)"
            ),
            Self::NotFound { wanted, available } => {
                write!(f, "no port {wanted}; available: {}", available.join(", "))
            }
            Self::NoActivePort { seen } => write!(
                f,
                "no active InfiniBand port (is a subnet manager running?); ports: {}",
                seen.join("; ")
            ),
            Self::NoUmadDevice { port } => write!(
                f,
                "{port} has no umad device in {SYS_CLASS_INFINIBAND_MAD} (load the ib_umad module)"
            ),
        }
    }
}

impl std::error::Error for PortError {}

/// A port's adapter and P_Key table, as ibacm's endpoints describe them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointFacts {
    /// The adapter's node GUID.
    pub node_guid: Option<u64>,
    /// How many ports the adapter has.
    pub port_count: u8,
    /// The port's valid P_Keys, in table order, never empty.
    pub pkeys: Vec<u16>,
}

/// A sysfs tree: the real one, or a copy for tests.
#[derive(Debug, Clone)]
pub struct Sysfs {
    infiniband: PathBuf,
    infiniband_mad: PathBuf,
}

impl Default for Sysfs {
    fn default() -> Self {
        Self::new(SYS_CLASS_INFINIBAND, SYS_CLASS_INFINIBAND_MAD)
    }
}

impl Sysfs {
    /// A tree rooted at the given `infiniband` and `infiniband_mad` class
    /// directories.
    pub fn new(infiniband: impl Into<PathBuf>, infiniband_mad: impl Into<PathBuf>) -> Self {
        Self {
            infiniband: infiniband.into(),
            infiniband_mad: infiniband_mad.into(),
        }
    }

    fn read(&self, path: &Path) -> Result<String, PortError> {
        read_text(path)
            .map(|s| s.trim().to_owned())
            .map_err(|source| PortError::Io {
                path: path.to_owned(),
                source,
            })
    }

    fn number(&self, path: &Path) -> Result<u64, PortError> {
        let text = self.read(path)?;
        // "0x4", "4", or "4: ACTIVE".
        let head = text.split(':').next().unwrap_or("").trim();
        let parsed = match head.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16).ok(),
            None => head.parse().ok(),
        };
        parsed.ok_or(PortError::BadValue {
            path: path.to_owned(),
            value: text,
        })
    }

    /// Every port of every channel adapter, in name order.
    pub fn ports(&self) -> Result<Vec<PortFacts>, PortError> {
        let io = |path: &Path| {
            let path = path.to_owned();
            move |source| PortError::Io { path, source }
        };
        let umads = self.umad_devices();
        let cas = match list_dir(&self.infiniband) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(PortError::NoPorts),
            other => other.map_err(io(&self.infiniband))?,
        };
        let mut all = Vec::new();
        for ca in cas {
            let ports_dir = self.infiniband.join(&ca).join("ports");
            for port in list_dir(&ports_dir).map_err(io(&ports_dir))? {
                let Ok(port) = port.parse::<u8>() else {
                    continue;
                };
                all.push(self.port(&ca, port, &umads)?);
            }
        }
        Ok(all)
    }

    /// What ibacm's endpoints need of `port`'s adapter and P_Key table:
    /// the node GUID (`None` if unreadable), its number of ports, and the
    /// valid P_Keys in table order (the default, 0xFFFF, if the table
    /// cannot be read, as under the simulator).
    pub fn endpoint_facts(&self, port: &PortFacts) -> EndpointFacts {
        let ca = self.infiniband.join(&port.ca);
        let node_guid = self
            .read(&ca.join("node_guid"))
            .ok()
            .and_then(|t| u64::from_str_radix(&t.replace(':', ""), 16).ok());
        let port_count = list_dir(&ca.join("ports"))
            .map(|ports| ports.iter().filter(|p| p.parse::<u8>().is_ok()).count())
            .unwrap_or(1);
        let pkey_dir = ca.join("ports").join(port.port.to_string()).join("pkeys");
        let mut indexed: Vec<(u32, u16)> = list_dir(&pkey_dir)
            .unwrap_or_default()
            .iter()
            .filter_map(|i| {
                let index = i.parse::<u32>().ok()?;
                let pkey = u16::try_from(self.number(&pkey_dir.join(i)).ok()?).ok()?;
                // 0x0000 and 0x8000 are empty table entries.
                (pkey & 0x7FFF != 0).then_some((index, pkey))
            })
            .collect();
        indexed.sort_unstable();
        let mut pkeys: Vec<u16> = indexed.into_iter().map(|(_, p)| p).collect();
        pkeys.dedup();
        if pkeys.is_empty() {
            pkeys.push(0xFFFF);
        }
        EndpointFacts {
            node_guid,
            port_count: u8::try_from(port_count).unwrap_or(u8::MAX),
            pkeys,
        }
    }

    /// `(umad index, ca, port)` for every umad device.
    fn umad_devices(&self) -> Vec<(u32, String, u8)> {
        let Ok(names) = list_dir(&self.infiniband_mad) else {
            return Vec::new();
        };
        names
            .iter()
            .filter_map(|name| {
                let index = name.strip_prefix("umad")?.parse().ok()?;
                let dir = self.infiniband_mad.join(name);
                let ca = self.read(&dir.join("ibdev")).ok()?;
                let port = self.number(&dir.join("port")).ok()?;
                Some((index, ca, u8::try_from(port).ok()?))
            })
            .collect()
    }

    fn port(
        &self,
        ca: &str,
        port: u8,
        umads: &[(u32, String, u8)],
    ) -> Result<PortFacts, PortError> {
        let dir = self
            .infiniband
            .join(ca)
            .join("ports")
            .join(port.to_string());
        let gid_path = dir.join("gids/0");
        let gid_text = self.read(&gid_path)?;
        let gid = gid_text
            .parse::<std::net::Ipv6Addr>()
            .map(Gid::from)
            .map_err(|_| PortError::BadValue {
                path: gid_path,
                value: gid_text,
            })?;
        let narrow = |v: u64, path: PathBuf| {
            u16::try_from(v).map_err(|_| PortError::BadValue {
                path,
                value: v.to_string(),
            })
        };
        Ok(PortFacts {
            ca: ca.to_owned(),
            port,
            lid: narrow(self.number(&dir.join("lid"))?, dir.join("lid"))?,
            lmc: self.number(&dir.join("lid_mask_count"))? as u8 & 0x7,
            sm_lid: narrow(self.number(&dir.join("sm_lid"))?, dir.join("sm_lid"))?,
            sm_sl: self.number(&dir.join("sm_sl"))? as u8 & 0xF,
            gid,
            state: PortState::from_code(self.number(&dir.join("state"))? as u8),
            cap_mask: self.number(&dir.join("cap_mask"))? as u32,
            // Older kernels and the simulator have no link_layer file.
            link_layer: self
                .read(&dir.join("link_layer"))
                .unwrap_or_else(|_| "InfiniBand".into()),
            umad_index: umads
                .iter()
                .find(|(_, c, p)| c == ca && *p == port)
                .map(|(i, _, _)| *i),
        })
    }

    /// The ports to serve: the one named (`ca` and `port`); every usable
    /// port of `ca` with a umad device; or, when neither is named, every
    /// usable port of every adapter with one.
    pub fn select_all(
        &self,
        ca: Option<&str>,
        port: Option<u8>,
    ) -> Result<Vec<PortFacts>, PortError> {
        if port.is_some() {
            return self.select(ca, port).map(|p| vec![p]);
        }
        let all = self.ports()?;
        let describe =
            |p: &PortFacts| format!("{} port {} ({}, {})", p.ca, p.port, p.state, p.link_layer);
        let chosen: Vec<PortFacts> = all
            .iter()
            .filter(|p| ca.is_none_or(|c| c == p.ca))
            .filter(|p| p.is_usable() && p.umad_index.is_some())
            .cloned()
            .collect();
        if chosen.is_empty() {
            if let Some(c) = ca
                && !all.iter().any(|p| p.ca == c)
            {
                return Err(PortError::NotFound {
                    wanted: format!("{c} port (any)"),
                    available: all.iter().map(describe).collect(),
                });
            }
            return Err(PortError::NoActivePort {
                seen: all.iter().map(describe).collect(),
            });
        }
        Ok(chosen)
    }

    /// The port to use: the one named (`ca`, and `port` on it), else the
    /// first active InfiniBand port; it must have a umad device.
    pub fn select(&self, ca: Option<&str>, port: Option<u8>) -> Result<PortFacts, PortError> {
        let all = self.ports()?;
        if all.is_empty() {
            return Err(PortError::NoPorts);
        }
        let describe =
            |p: &PortFacts| format!("{} port {} ({}, {})", p.ca, p.port, p.state, p.link_layer);
        let chosen = if ca.is_some() || port.is_some() {
            all.iter()
                .find(|p| ca.is_none_or(|c| c == p.ca) && port.is_none_or(|n| n == p.port))
                .ok_or_else(|| PortError::NotFound {
                    wanted: format!(
                        "{} port {}",
                        ca.unwrap_or("(any)"),
                        port.map_or("(any)".into(), |p| p.to_string())
                    ),
                    available: all.iter().map(describe).collect(),
                })?
        } else {
            all.iter()
                .find(|p| p.is_usable())
                .ok_or_else(|| PortError::NoActivePort {
                    seen: all.iter().map(describe).collect(),
                })?
        };
        if chosen.umad_index.is_none() {
            return Err(PortError::NoUmadDevice {
                port: describe(chosen),
            });
        }
        Ok(chosen.clone())
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    /// A sysfs tree as umad2sim writes it for one simulated port.
    fn fake_tree(state: &str) -> (tempfile::TempDir, Sysfs) {
        let t = tempfile::tempdir().unwrap();
        let port = t.path().join("infiniband/ibsim0/ports/1");
        fs::create_dir_all(port.join("gids")).unwrap();
        for (file, value) in [
            ("lid", "0x4"),
            ("lid_mask_count", "0"),
            ("sm_lid", "0x1"),
            ("sm_sl", "0"),
            ("state", state),
            ("cap_mask", "0x0050c048"),
            ("gids/0", "fe80:0000:0000:0000:0000:0000:0010:0004\n"),
        ] {
            fs::write(port.join(file), value).unwrap();
        }
        let umad = t.path().join("infiniband_mad/umad0");
        fs::create_dir_all(&umad).unwrap();
        fs::write(umad.join("ibdev"), "ibsim0\n").unwrap();
        fs::write(umad.join("port"), "1\n").unwrap();
        let sysfs = Sysfs::new(t.path().join("infiniband"), t.path().join("infiniband_mad"));
        (t, sysfs)
    }

    #[test]
    fn reads_a_simulated_port() {
        let (_t, sysfs) = fake_tree("4: ACTIVE\n");
        let p = sysfs.select(None, None).unwrap();
        assert_eq!(
            (p.ca.as_str(), p.port, p.lid, p.sm_lid, p.lmc),
            ("ibsim0", 1, 4, 1, 0)
        );
        assert_eq!(p.gid, Gid::new(Gid::DEFAULT_PREFIX, 0x0010_0004));
        assert_eq!(p.state, PortState::Active);
        assert_eq!(p.cap_mask, 0x0050_c048);
        assert_eq!(p.umad_path().unwrap(), Path::new("/dev/infiniband/umad0"));
    }

    #[test]
    fn endpoints_come_from_the_pkey_table_in_order() {
        let (t, sysfs) = fake_tree("4: ACTIVE\n");
        let p = sysfs.select(None, None).unwrap();
        // The simulator writes no P_Key table: the default P_Key serves.
        let bare = sysfs.endpoint_facts(&p);
        assert_eq!(
            (bare.node_guid, bare.port_count, bare.pkeys),
            (None, 1, vec![0xFFFF])
        );
        let ca = t.path().join("infiniband/ibsim0");
        fs::write(ca.join("node_guid"), "0002:c903:0000:0004\n").unwrap();
        let pkeys = ca.join("ports/1/pkeys");
        fs::create_dir_all(&pkeys).unwrap();
        for (i, v) in [
            ("0", "0xffff"),
            ("1", "0x0000"),
            ("2", "0x8001"),
            ("10", "0x0002"),
        ] {
            fs::write(pkeys.join(i), v).unwrap();
        }
        let f = sysfs.endpoint_facts(&p);
        assert_eq!(f.node_guid, Some(0x0002_c903_0000_0004));
        assert_eq!(f.pkeys, vec![0xFFFF, 0x8001, 0x0002]);
    }

    #[test]
    fn explains_why_no_port_is_usable() {
        let (_t, sysfs) = fake_tree("2: INIT\n");
        let err = sysfs.select(None, None).unwrap_err().to_string();
        assert!(err.contains("no active InfiniBand port"), "{err}");
        assert!(err.contains("ibsim0 port 1 (Initializing"), "{err}");
        let err = sysfs.select(Some("mlx5_0"), None).unwrap_err().to_string();
        assert!(
            err.contains("no port mlx5_0") && err.contains("ibsim0"),
            "{err}"
        );
        // Asking for the port by name works whatever its state.
        assert_eq!(
            sysfs.select(Some("ibsim0"), Some(1)).unwrap().state,
            PortState::Init
        );
    }

    #[test]
    fn every_active_port_with_a_umad_device_is_served() {
        let (t, sysfs) = fake_tree("4: ACTIVE\n");
        // A second adapter: port 1 active with a umad device, port 2 down.
        let ca = t.path().join("infiniband/mlx5_1/ports");
        for (n, state, lid) in [("1", "4: ACTIVE\n", "0x9"), ("2", "1: DOWN\n", "0x0")] {
            let port = ca.join(n);
            fs::create_dir_all(port.join("gids")).unwrap();
            for (file, value) in [
                ("lid", lid),
                ("lid_mask_count", "0"),
                ("sm_lid", "0x1"),
                ("sm_sl", "0"),
                ("state", state),
                ("cap_mask", "0x0"),
                ("gids/0", "fe80:0000:0000:0000:0000:0000:0010:0009\n"),
            ] {
                fs::write(port.join(file), value).unwrap();
            }
        }
        let umad = t.path().join("infiniband_mad/umad1");
        fs::create_dir_all(&umad).unwrap();
        fs::write(umad.join("ibdev"), "mlx5_1\n").unwrap();
        fs::write(umad.join("port"), "1\n").unwrap();
        let served = |ca, port| -> Vec<(String, u8)> {
            sysfs
                .select_all(ca, port)
                .unwrap()
                .into_iter()
                .map(|p| (p.ca, p.port))
                .collect()
        };
        assert_eq!(
            served(None, None),
            [("ibsim0".to_owned(), 1), ("mlx5_1".to_owned(), 1)]
        );
        assert_eq!(served(Some("mlx5_1"), None), [("mlx5_1".to_owned(), 1)]);
        assert_eq!(served(None, Some(1)), [("ibsim0".to_owned(), 1)]);
        let err = sysfs.select_all(Some("mlx5_9"), None).unwrap_err();
        assert!(err.to_string().contains("mlx5_9"), "{err}");
        // An adapter whose ports are all down: said so, naming them.
        fs::write(
            t.path().join("infiniband/mlx5_1/ports/1/state"),
            "1: DOWN\n",
        )
        .unwrap();
        let err = sysfs.select_all(Some("mlx5_1"), None).unwrap_err();
        assert!(err.to_string().contains("mlx5_1 port 2 (Down"), "{err}");
    }

    #[test]
    fn a_missing_tree_means_no_ports() {
        let sysfs = Sysfs::new("/nonexistent/infiniband", "/nonexistent/infiniband_mad");
        let e = sysfs.ports().unwrap_err();
        assert!(matches!(e, PortError::NoPorts));
        assert!(e.to_string().contains("is an HCA present"), "{e}");
    }

    #[test]
    fn an_unreadable_tree_is_an_io_error() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("infiniband");
        fs::write(&file, "not a directory").unwrap();
        let sysfs = Sysfs::new(&file, dir.path().join("infiniband_mad"));
        assert!(matches!(sysfs.ports(), Err(PortError::Io { .. })));
    }
}
