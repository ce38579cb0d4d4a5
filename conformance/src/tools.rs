//! Finding the simulator's programs and its preload library.

use std::path::{Path, PathBuf};

/// Debian packages that provide the simulated fabric.
pub(crate) const PACKAGES: &str = "ibsim-utils opensm infiniband-diags";

/// The first `name` on `PATH`.
pub(crate) fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// The umad2sim preload library: `$UMAD2SIM_LIB`, else Debian's multiarch
/// location.
pub fn preload_library() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("UMAD2SIM_LIB") {
        return Some(PathBuf::from(p));
    }
    let lib = Path::new("/usr/lib");
    std::fs::read_dir(lib)
        .ok()?
        .flatten()
        .map(|e| e.path().join("umad2sim/libumad2sim.so"))
        .find(|p| p.is_file())
}

/// A binary built into the same target directory as the running one: how
/// the demo and the capture tool find lsaquery, and how tests (which run
/// from `target/<profile>/deps/`) find local-sa and lsaquery.
pub fn sibling_binary(name: &str) -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
    if dir.file_name().is_some_and(|d| d == "deps") {
        dir.pop();
    }
    let path = dir.join(name);
    if path.exists() {
        Ok(path)
    } else {
        Err(format!(
            "{} not found: build it first (cargo build -p local-sa --bins)",
            path.display()
        ))
    }
}
