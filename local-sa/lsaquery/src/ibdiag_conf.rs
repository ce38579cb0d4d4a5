//! infiniband-diags' shared defaults, `/etc/infiniband-diags/ibdiag.conf`:
//! `name=value` lines giving the CA, port, time-out and SA key every
//! diagnostic tool uses unless its command line says otherwise.

use std::path::Path;

use local_sa_cli::number;

/// Where infiniband-diags keeps its defaults.
pub(crate) const DEFAULT_PATH: &str = "/etc/infiniband-diags/ibdiag.conf";

/// The defaults lsaquery takes from the file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Defaults {
    pub(crate) ca: Option<String>,
    pub(crate) port: Option<u8>,
    pub(crate) timeout_ms: Option<u64>,
    pub(crate) sa_key: Option<u64>,
    /// lsaquery's own key: OpenSM's configuration for `--compute`, used
    /// when that file exists (the distributor's settings name
    /// `/etc/opensm/opensm.conf`, which a node without OpenSM lacks).
    pub(crate) opensm_config: Option<std::path::PathBuf>,
}

impl Defaults {
    /// Reads `path`, or the default file if there is one (a missing
    /// default file means no defaults, as for saquery).
    pub(crate) fn open(path: Option<&Path>) -> Result<Self, String> {
        let Some((path, bytes)) = crate::diag_file::read(path, DEFAULT_PATH)? else {
            return Ok(Self::default());
        };
        let text = String::from_utf8(bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        Self::parse(&text).map_err(|e| format!("{}:{e}", path.display()))
    }

    /// `name=value` lines; `#` starts a comment line. Keys other tools
    /// use (m_key, MLX_EPI, nd_format, ...) are passed over.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let mut d = Self::default();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((name, value)) = line.split_once('=') else {
                continue;
            };
            let (name, value) = (name.trim(), value.trim());
            let bad = |e: String| format!("{}: {name}: {e}", n + 1);
            match name {
                "CA" => d.ca = Some(value.to_owned()),
                "Port" => d.port = Some(number::<u8>(value).map_err(bad)?),
                "timeout" => d.timeout_ms = Some(number::<u64>(value).map_err(bad)?),
                "sa_key" => d.sa_key = Some(number::<u64>(value).map_err(bad)?),
                "opensm_config" => d.opensm_config = Some(value.into()),
                _ => {}
            }
        }
        Ok(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shared_defaults_are_read_and_bad_values_named() {
        let d = Defaults::parse(
            "# defaults\nCA=mlx5_1\n#Port=9\nPort=2\ntimeout = 50\nsa_key=0x1\nMLX_EPI=false\n",
        )
        .unwrap();
        assert_eq!(
            d,
            Defaults {
                ca: Some("mlx5_1".into()),
                port: Some(2),
                timeout_ms: Some(50),
                sa_key: Some(1),
                opensm_config: None,
            }
        );
        assert!(
            Defaults::parse("timeout=soon")
                .unwrap_err()
                .starts_with("1: timeout:")
        );
        assert!(Defaults::open(Some(Path::new("/nonexistent/ibdiag.conf"))).is_err());
    }
}
