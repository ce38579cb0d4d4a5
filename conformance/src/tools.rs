//! Finding the simulator's programs and its preload library.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Debian packages that provide the simulated fabric.
pub(crate) const PACKAGES: &str = "ibsim-utils opensm infiniband-diags";

/// Where Debian installs administrators' programs (OpenSM, saquery and
/// the rest of infiniband-diags): not on an ordinary user's `PATH`.
const SYSTEM_PROGRAMS: [&str; 3] = ["/usr/local/sbin", "/usr/sbin", "/sbin"];

/// The first `name` on `PATH`, else in [`SYSTEM_PROGRAMS`].
pub(crate) fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(SYSTEM_PROGRAMS.iter().map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// `program` as it is to be started: a bare name as [`which`] finds it
/// (so that a user's run finds OpenSM in /usr/sbin too), a path or a name
/// found nowhere as given.
pub(crate) fn resolve(program: &OsStr) -> OsString {
    let bare = !program.as_encoded_bytes().contains(&b'/');
    program
        .to_str()
        .filter(|_| bare)
        .and_then(which)
        .map_or_else(|| program.to_owned(), PathBuf::into_os_string)
}

/// How the test tools (`mad-probe`, `qp1-watch`, `api-flood`, ...) end:
/// their one summary line on standard output and success, or their error
/// after the tool's `name` on standard error and failure.
pub fn report(name: &str, outcome: Result<String, String>) -> std::process::ExitCode {
    match outcome {
        Ok(line) => {
            println!("{line}");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{name}: {e}");
            std::process::ExitCode::FAILURE
        }
    }
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

/// The programs of this workspace that the tests and tools run.
const PROGRAMS: [&str; 2] = ["local-sa", "lsaquery"];

/// The path of `name` (`local-sa` or `lsaquery`): `$LOCAL_SA_BIN` or
/// `$LSAQUERY_BIN` when set (to test an installed build), else the
/// workspace's own build of it, with the profile and in the target
/// directory of the running executable. The first call in a process runs
/// `cargo build` for both programs (quick when they are up to date), so a
/// test needs nothing built before it, wherever `CARGO_TARGET_DIR` points.
pub fn program(name: &str) -> Result<PathBuf, String> {
    let var = format!("{}_BIN", name.to_ascii_uppercase().replace('-', "_"));
    if let Some(path) = std::env::var_os(&var) {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!(
                "${var} names {}, which is not a file",
                path.display()
            ))
        };
    }
    if !PROGRAMS.contains(&name) {
        return Err(format!("{name} is not a program of this workspace"));
    }
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let dir = BUILT.get_or_init(build_programs).clone()?;
    Ok(dir.join(name))
}

/// Builds [`PROGRAMS`] where the running executable's build puts them;
/// returns that directory.
fn build_programs() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot locate this executable: {e}"))?;
    let mut out_dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
    if out_dir.file_name().is_some_and(|d| d == "deps") {
        out_dir.pop();
    }
    let layout = BuildLayout::of(&out_dir).ok_or_else(|| {
        format!(
            "{} is not in a cargo target directory; set LOCAL_SA_BIN and LSAQUERY_BIN",
            exe.display()
        )
    })?;
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--quiet", "--bins", "--profile", &layout.profile])
        .arg("--manifest-path")
        .arg(&manifest)
        .env("CARGO_TARGET_DIR", &layout.target_dir);
    for p in PROGRAMS {
        cmd.args(["-p", p]);
    }
    if let Some(triple) = &layout.triple {
        cmd.args(["--target", triple]);
    }
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run cargo to build {PROGRAMS:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "building {PROGRAMS:?} failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(out_dir)
}

/// Where cargo put an executable: `<target>/[<triple>/]<profile dir>/`.
#[derive(Debug, PartialEq, Eq)]
struct BuildLayout {
    target_dir: PathBuf,
    triple: Option<String>,
    /// The cargo profile (`dev` builds into `debug/`).
    profile: String,
}

impl BuildLayout {
    /// The layout of `out_dir`, an output directory of a target directory
    /// (which cargo marks with a CACHEDIR.TAG file).
    fn of(out_dir: &Path) -> Option<Self> {
        let profile = match out_dir.file_name()?.to_str()? {
            "debug" => "dev".to_owned(),
            other => other.to_owned(),
        };
        let parent = out_dir.parent()?;
        if parent.join("CACHEDIR.TAG").is_file() {
            return Some(Self {
                target_dir: parent.to_owned(),
                triple: None,
                profile,
            });
        }
        let root = parent.parent()?;
        let triple = parent.file_name()?.to_str()?.to_owned();
        root.join("CACHEDIR.TAG").is_file().then(|| Self {
            target_dir: root.to_owned(),
            triple: Some(triple),
            profile,
        })
    }
}

/// Another program of this package (a tool's helper, `path-sweep`),
/// built beside the running one.
pub fn sibling(name: &str) -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let path = exe.with_file_name(name);
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "{} not found: cargo build --release -p conformance --bin {name}",
            path.display()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_layouts_are_read_from_the_path() {
        let t = std::env::temp_dir().join(format!("conformance-layout-{}", std::process::id()));
        std::fs::create_dir_all(t.join("x86_64-unknown-linux-gnu/release")).unwrap();
        std::fs::create_dir_all(t.join("debug")).unwrap();
        std::fs::write(t.join("CACHEDIR.TAG"), "").unwrap();
        assert_eq!(
            BuildLayout::of(&t.join("debug")),
            Some(BuildLayout {
                target_dir: t.clone(),
                triple: None,
                profile: "dev".into()
            })
        );
        assert_eq!(
            BuildLayout::of(&t.join("x86_64-unknown-linux-gnu/release")),
            Some(BuildLayout {
                target_dir: t.clone(),
                triple: Some("x86_64-unknown-linux-gnu".into()),
                profile: "release".into()
            })
        );
        assert_eq!(BuildLayout::of(Path::new("/usr/bin")), None);
        std::fs::remove_dir_all(&t).unwrap();
    }

    #[test]
    fn only_workspace_programs_are_built() {
        let e = program("no-such-program").unwrap_err();
        assert!(e.contains("not a program of this workspace"), "{e}");
    }
}
