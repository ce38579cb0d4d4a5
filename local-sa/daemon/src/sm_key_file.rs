//! The SM_Key from a file only root can read: either the key alone
//! (`0x1234abcd`) or an OpenSM configuration file, whose `sm_key` line
//! gives it (`/etc/opensm/opensm.conf`), so that local-sa and the master
//! share one secret without it ever appearing on a command line (`ps`
//! shows those), in a log line or in `--help`.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use local_sa_cli::number;

/// The key `path` holds, or why it cannot be used. The file must be a
/// regular file that neither its group nor others may read or write.
pub(crate) fn read(path: &Path) -> Result<u64, String> {
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
fn parse(text: &str) -> Result<u64, String> {
    let lines: Vec<&str> = text
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .collect();
    if let [only] = lines[..]
        && let Ok(key) = number::<u64>(only)
    {
        return Ok(key);
    }
    let found: Vec<&str> = lines
        .iter()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            (words.next() == Some("sm_key"))
                .then(|| words.next())
                .flatten()
        })
        .collect();
    match found[..] {
        [value] => number::<u64>(value).map_err(|_| {
            "its sm_key line holds no number (a 64-bit key, 0x-hex or decimal)".into()
        }),
        [] => Err("holds neither a key (0x-hex or decimal, alone) nor an `sm_key` line".into()),
        _ => Err("has more than one `sm_key` line".into()),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;

    #[test]
    fn a_bare_key_or_an_opensm_conf() {
        assert_eq!(parse("0x5eed\n"), Ok(0x5eed));
        assert_eq!(parse("# our key\n 24301 \n"), Ok(24301));
        let conf = "# OpenSM\nguid 0x0\nsm_key 0x00000000deadbeef\nsa_key 0x1\n";
        assert_eq!(parse(conf), Ok(0xdead_beef));
        assert!(parse("").is_err());
        assert!(parse("guid 0x0\n").unwrap_err().contains("sm_key"));
        assert!(parse("sm_key 1\nsm_key 2\n").is_err());
        assert!(parse("sm_key banana\n").is_err());
    }

    #[test]
    fn a_file_others_can_read_is_refused_without_showing_the_key() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        writeln!(f, "0x5eed").unwrap();
        let path = f.path();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read(path), Ok(0x5eed));
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = read(path).unwrap_err();
        assert!(e.contains("mode 644") && e.contains("chmod 600"), "{e}");
        assert!(!e.contains("5eed"), "{e}");
    }
}
