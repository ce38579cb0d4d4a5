//! Files a namespace's root holds beside the host's: the package's, as
//! `dpkg -i` unpacks them, and an administrator's settings.
//!
//! They are written into the overlay's upper layer before it is mounted,
//! so that inside the namespace they are at their installed paths
//! (`/usr/sbin/local-sa`, `/lib/systemd/system/local-sa.service`, ...)
//! and nothing inside depends on where the source tree or its build is
//! on the host: a checkout in a home directory is hidden from the service
//! by its unit's `ProtectHome=yes`, as on any host.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A file of the namespace's root, written over the host's.
#[derive(Debug, Clone)]
pub enum Installed {
    /// Every file of a package's tree (as `scripts/package-deb.sh` lays
    /// it out for the archive), at its path; its `DEBIAN/` is not
    /// installed.
    Package(PathBuf),
    /// A file with this text at this absolute path (mode 0644).
    File(String, String),
}

/// What [`package`] makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PackageForm {
    /// The `.deb`, for `dpkg -i`.
    Archive,
    /// Its tree, every file where `dpkg -i` puts it (no archive: its
    /// compression is most of the time a build takes).
    Tree,
    /// The RPM's tree, every file where `rpm -i` puts it: what the spec's
    /// `%install` lays out (`scripts/install-tree.sh --layout rpm`), units
    /// in `/usr/lib/systemd/system`, their options in `/etc/sysconfig`.
    RpmTree,
}

/// The package of the built programs as `version`, made in `out` by
/// `scripts/package-deb.sh` (the archive's path or the tree's) or, for
/// the RPM's tree, `scripts/install-tree.sh`.
pub fn package(out: &Path, version: &str, form: PackageForm) -> Result<PathBuf, String> {
    let local_sa = crate::program("local-sa")?;
    crate::program("lsaquery")?;
    let bin_dir = local_sa
        .parent()
        .ok_or_else(|| format!("{} has no directory", local_sa.display()))?;
    if form == PackageForm::RpmTree {
        return rpm_tree(bin_dir, &out.join(format!("local-sa-{version}.rpm-tree")));
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/package-deb.sh");
    let mut cmd = Command::new(&script);
    cmd.env("LOCAL_SA_DEB_BIN_DIR", bin_dir)
        .env("LOCAL_SA_DEB_VERSION", version)
        .env("LOCAL_SA_DEB_OUT", out);
    if form == PackageForm::Tree {
        cmd.env("LOCAL_SA_DEB_TREE_ONLY", "1");
    }
    let printed = run_script(&script, &mut cmd)?;
    Ok(PathBuf::from(printed.trim()))
}

/// Runs `cmd`, the packaging script `script`: what it printed, or its
/// error output.
fn run_script(script: &Path, cmd: &mut Command) -> Result<String, String> {
    let made = cmd
        .output()
        .map_err(|e| format!("{}: {e}", script.display()))?;
    if !made.status.success() {
        return Err(format!(
            "{}: {}",
            script.display(),
            String::from_utf8_lossy(&made.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&made.stdout).into_owned())
}

/// The programs in `bin_dir` and the package's other files laid out in
/// `root` as the RPM's `%install` lays them out.
fn rpm_tree(bin_dir: &Path, root: &Path) -> Result<PathBuf, String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/install-tree.sh");
    let _ = fs::remove_dir_all(root);
    let mut cmd = Command::new(&script);
    cmd.args(["--layout", "rpm", "--bin"])
        .arg(bin_dir)
        .arg(root);
    run_script(&script, &mut cmd)?;
    Ok(root.to_owned())
}

/// Writes `files` into `upper`, the upper layer of an overlay whose lower
/// layer is the host's root.
pub(super) fn install(files: &[Installed], upper: &Path) -> Result<(), String> {
    for file in files {
        match file {
            Installed::Package(tree) => install_tree(tree, tree, upper)?,
            Installed::File(path, text) => {
                let to = in_upper(upper, Path::new(path))?;
                fs::write(&to, text).map_err(|e| format!("{}: {e}", to.display()))?;
            }
        }
    }
    Ok(())
}

/// Copies the files under `dir` (a part of package tree `tree`) to their
/// paths in `upper`, with their modes.
fn install_tree(tree: &Path, dir: &Path, upper: &Path) -> Result<(), String> {
    let entries = fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: {e}", dir.display()))?;
        let from = entry.path();
        let inside = Path::new("/").join(from.strip_prefix(tree).unwrap_or(&from));
        if inside == Path::new("/DEBIAN") {
            continue;
        }
        let kind = entry
            .file_type()
            .map_err(|e| format!("{}: {e}", from.display()))?;
        if kind.is_dir() {
            install_tree(tree, &from, upper)?;
        } else {
            let to = in_upper(upper, &inside)?;
            fs::copy(&from, &to)
                .map_err(|e| format!("{} → {}: {e}", from.display(), to.display()))?;
            let mode = entry
                .metadata()
                .map_err(|e| format!("{}: {e}", from.display()))?
                .permissions()
                .mode();
            fs::set_permissions(&to, fs::Permissions::from_mode(mode))
                .map_err(|e| format!("{}: {e}", to.display()))?;
        }
    }
    Ok(())
}

/// Where the file at absolute path `inside` goes in `upper`, its
/// directory made: through the host's symbolic links, as dpkg follows
/// them (on a merged-/usr system `/lib` is a link to `usr/lib`: a real
/// `lib` directory in the upper layer would hide the host's libraries).
fn in_upper(upper: &Path, inside: &Path) -> Result<PathBuf, String> {
    let parent = inside
        .parent()
        .ok_or_else(|| format!("{} is not a file's path", inside.display()))?;
    let name = inside
        .file_name()
        .ok_or_else(|| format!("{} is not a file's path", inside.display()))?;
    // The deepest directory on the way that the host has, as its links
    // resolve it; the rest as named.
    let existing = parent
        .ancestors()
        .find(|a| a.is_dir())
        .unwrap_or(Path::new("/"));
    let resolved = fs::canonicalize(existing)
        .map_err(|e| format!("{}: {e}", existing.display()))?
        .join(parent.strip_prefix(existing).unwrap_or(Path::new("")));
    let dir = upper.join(resolved.strip_prefix("/").unwrap_or(&resolved));
    fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(dir.join(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_under_a_linked_directory_goes_where_the_link_leads() {
        let host = std::env::temp_dir().join(format!("installed-test-{}", std::process::id()));
        let upper = host.join("upper");
        fs::create_dir_all(&upper).unwrap();
        // /bin is a link on merged-/usr systems, a directory elsewhere:
        // either way the file lands where the host's /bin resolves.
        let to = in_upper(&upper, Path::new("/bin/local-sa-test")).unwrap();
        let bin = fs::canonicalize("/bin").unwrap();
        assert_eq!(
            to,
            upper
                .join(bin.strip_prefix("/").unwrap())
                .join("local-sa-test")
        );
        // A directory the host does not have is made as named.
        let to = in_upper(&upper, Path::new("/etc/local-sa-test-dir/a.conf")).unwrap();
        assert_eq!(to, upper.join("etc/local-sa-test-dir/a.conf"));
        assert!(upper.join("etc/local-sa-test-dir").is_dir());
        fs::remove_dir_all(&host).unwrap();
    }
}
