//! Keys kept off the command line, as saquery keeps them: a key given as
//! something that does not start with a hex digit (`--smkey x`) is asked
//! for on the terminal, without echo, so that it shows in neither `ps`
//! nor the shell's history.

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Command, Stdio};

use local_sa_cli::number;

/// `text` as a number, or, when it does not start with a hex digit, the
/// number `ask` gets for `what`.
fn key_or_ask<T: TryFrom<u64>>(
    text: &str,
    what: &str,
    ask: impl FnOnce(&str) -> Result<String, String>,
) -> Result<T, String> {
    if text.chars().next().is_some_and(|c| c.is_ascii_hexdigit()) {
        return number(text);
    }
    let answer = ask(what)?;
    number(answer.trim()).map_err(|e| format!("{what}: {e}"))
}

/// Asks for `what` on the controlling terminal with echo off (`stty`).
fn ask_terminal(what: &str) -> Result<String, String> {
    let tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
        .map_err(|e| {
            format!("cannot get {what}: no terminal to ask on ({e}); give it as a number")
        })?;
    let stty = |setting: &str| {
        let status = tty.try_clone().ok().and_then(|t| {
            Command::new("stty")
                .arg(setting)
                .stdin(t)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .ok()
        });
        status.is_some_and(|s| s.success())
    };
    let hidden = stty("-echo");
    let mut out = &tty;
    let _ = write!(out, "{what}: ");
    let _ = out.flush();
    let mut line = String::new();
    let read = BufReader::new(&tty).read_line(&mut line);
    if hidden {
        stty("echo");
        let _ = writeln!(out);
    }
    read.map_err(|e| format!("cannot get {what}: {e}"))?;
    Ok(line)
}

/// `--smkey`.
pub(crate) fn sm_key(text: &str) -> Result<u64, String> {
    key_or_ask(text, "SM_Key", ask_terminal)
}

/// `--pkey`.
pub(crate) fn pkey(text: &str) -> Result<u16, String> {
    key_or_ask(text, "P_Key", ask_terminal)
}

/// `--qkey`.
pub(crate) fn qkey(text: &str) -> Result<u32, String> {
    key_or_ask(text, "Q_Key", ask_terminal)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_taken_and_anything_else_is_asked_for() {
        let never = |_: &str| -> Result<String, String> { panic!("asked") };
        assert_eq!(key_or_ask::<u64>("0x1", "SM_Key", never), Ok(1));
        assert_eq!(key_or_ask::<u64>("12", "SM_Key", never), Ok(12));
        let typed = |what: &str| {
            assert_eq!(what, "SM_Key");
            Ok("0xbeef\n".to_owned())
        };
        assert_eq!(key_or_ask::<u64>("x", "SM_Key", typed), Ok(0xbeef));
        assert!(
            key_or_ask::<u16>("x", "P_Key", |_| Ok("soon\n".into()))
                .unwrap_err()
                .starts_with("P_Key: ")
        );
        assert!(
            key_or_ask::<u16>("-", "P_Key", |_| Err("cannot get P_Key".into()))
                .unwrap_err()
                .contains("cannot get")
        );
    }
}
