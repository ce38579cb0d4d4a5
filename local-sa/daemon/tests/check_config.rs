//! `local-sa --check-config`, as an admin runs it: a good file prints the
//! settings in effect and exits 0 without starting anything; a mistake
//! exits 2 naming the file, line, column and key.

use std::path::Path;
use std::process::{Command, Output};

fn local_sa(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_local-sa"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .unwrap()
}

fn config(dir: &Path, text: &str) -> String {
    let path = dir.join("local-sa.toml");
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

#[test]
fn a_good_file_prints_the_settings_in_effect() {
    let dir = tempfile::tempdir().unwrap();
    // A run directory it could not create: --check-config starts nothing.
    let path = config(
        dir.path(),
        "refresh-interval = 300\nrun-dir = \"/nonexistent/run\"\n",
    );
    let out = local_sa(&["--config", &path, "--check-config", "--port", "2"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("refresh-interval = 300 ") && l.ends_with("# config file")),
        "{stdout}"
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("port = 2 ") && l.ends_with("# command line")),
        "{stdout}"
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_mistake_names_its_place_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let path = config(dir.path(), "port = 1\nrefresh_interval = 300\n");
    let out = local_sa(&["--config", &path, "--check-config"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "local-sa: {path}:2:1: refresh_interval: unknown setting; did you mean `refresh-interval`?\n"
        )
    );
    assert!(out.stdout.is_empty());
    // The daemon itself refuses to start on it, the same way.
    let out = local_sa(&["--config", &path]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains(":2:1: refresh_interval"));
}
