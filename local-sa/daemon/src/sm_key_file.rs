//! The SM_Key from a file only root can read: either the key alone
//! (`0x1234abcd`) or an OpenSM configuration file
//! (`/etc/opensm/opensm.conf`), so that local-sa and the master share one
//! secret without it ever appearing on a command line (`ps` shows those),
//! in a log line or in `--help`.
//!
//! Of an OpenSM configuration, the key is its `sa_key`: the one OpenSM's
//! SA trusts in requests, which the distributor's loads carry (its
//! P_KeyTableRecords need it too). Its `sm_key` guards SMPs between SMs,
//! not SA requests; where the two differ, a node that took `sm_key` would
//! refuse every load, so local-sa takes `sa_key` and says so; without an
//! `sa_key` line OpenSM trusts its default, 1.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use local_sa_cli::number;

/// A key read, and what reading it noticed (to say in the log).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KeyRead {
    /// The key.
    pub(crate) key: u64,
    /// What an OpenSM configuration's keys said beside it, if anything.
    pub(crate) note: Option<&'static str>,
}

/// OpenSM's `sa_key` when its configuration sets none.
const OPENSM_DEFAULT_SA_KEY: u64 = 1;

/// The key `path` holds, or why it cannot be used. The file must be a
/// regular file that neither its group nor others may read or write.
pub(crate) fn read(path: &Path) -> Result<KeyRead, String> {
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| format!("{shown}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("{shown} is not a regular file"));
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(format!(
            "{shown} may be read or written by others (mode {mode:03o}, owner uid {}): \
             `chmod 600` it; an SM_Key others can read is no secret",
            meta.uid()
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("{shown}: {e}"))?;
    parse(&text).map_err(|e| format!("{shown}: {e}"))
}

/// The key in a key file's or an OpenSM configuration file's text.
fn parse(text: &str) -> Result<KeyRead, String> {
    let lines: Vec<&str> = text
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .collect();
    if let [only] = lines[..]
        && let Ok(key) = number::<u64>(only)
    {
        return Ok(KeyRead { key, note: None });
    }
    let sa_key = option(&lines, "sa_key")?;
    let sm_key = option(&lines, "sm_key")?;
    match (sa_key, sm_key) {
        (Some(sa), Some(sm)) if sa != sm => Ok(KeyRead {
            key: sa,
            note: Some(
                "the OpenSM configuration's sm_key and sa_key differ: local-sa takes sa_key, the key \
                 OpenSM's SA trusts and the distributor's loads carry (sm_key guards SMPs between SMs)",
            ),
        }),
        (Some(key), _) => Ok(KeyRead { key, note: None }),
        (None, Some(_)) => Ok(KeyRead {
            key: OPENSM_DEFAULT_SA_KEY,
            note: Some(
                "the OpenSM configuration sets sm_key but no sa_key: OpenSM's SA trusts its default \
                 sa_key, 1, and so does local-sa (a distributor's loads must carry 1; set sa_key in \
                 opensm.conf to choose another)",
            ),
        }),
        (None, None) => {
            Err("holds neither a key (0x-hex or decimal, alone) nor an `sa_key` line".into())
        }
    }
}

/// The value of `name`'s line among `lines` (OpenSM's configuration),
/// if it has one.
fn option(lines: &[&str], name: &str) -> Result<Option<u64>, String> {
    let found: Vec<&str> = lines
        .iter()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            (words.next() == Some(name)).then(|| words.next()).flatten()
        })
        .collect();
    match found[..] {
        [value] => number::<u64>(value).map(Some).map_err(|_| {
            format!("its {name} line holds no number (a 64-bit key, 0x-hex or decimal)")
        }),
        [] => Ok(None),
        _ => Err(format!("has more than one `{name}` line")),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;

    fn key(text: &str) -> Result<u64, String> {
        parse(text).map(|k| k.key)
    }

    #[test]
    fn a_bare_key_or_an_opensm_conf_s_sa_key() {
        assert_eq!(key("0x5eed\n"), Ok(0x5eed));
        assert_eq!(key("# our key\n 24301 \n"), Ok(24301));
        let same = "# OpenSM\nguid 0x0\nsm_key 0x5eed\nsa_key 0x5eed\n";
        assert_eq!(
            parse(same),
            Ok(KeyRead {
                key: 0x5eed,
                note: None
            })
        );
        // The key OpenSM's SA trusts, which the loads carry, not sm_key.
        let differ = parse("sm_key 0x00000000deadbeef\nsa_key 0x5eed\n").unwrap();
        assert_eq!(differ.key, 0x5eed);
        assert!(differ.note.unwrap().contains("differ"));
        let no_sa = parse("sm_key 0xdeadbeef\n").unwrap();
        assert_eq!(no_sa.key, 1, "OpenSM's default sa_key");
        assert!(no_sa.note.unwrap().contains("no sa_key"));
        assert!(parse("").is_err());
        assert!(parse("guid 0x0\n").unwrap_err().contains("sa_key"));
        assert!(parse("sa_key 1\nsa_key 2\n").is_err());
        assert!(parse("sa_key banana\n").is_err());
    }

    #[test]
    fn a_file_others_can_read_is_refused_without_showing_the_key() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        writeln!(f, "0x5eed").unwrap();
        let path = f.path();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read(path).map(|k| k.key), Ok(0x5eed));
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = read(path).unwrap_err();
        assert!(e.contains("mode 644") && e.contains("chmod 600"), "{e}");
        assert!(!e.contains("5eed"), "{e}");
    }
}
