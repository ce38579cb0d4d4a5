//! The daemon's log: to stderr, filtered by --log-level (else RUST_LOG,
//! else info), with a filter that SIGHUP can replace while running. When
//! systemd connected stderr to the journal (`JOURNAL_STREAM` names it),
//! the log goes to the journal directly instead, each event's fields as
//! journal fields, prefixed `F_` (`journalctl -u local-sa -o verbose`); if
//! the journal does not answer, stderr as elsewhere.

use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Registry, reload};

use crate::recent_warnings::RecentWarnings;

/// Replaces the running log filter; keeps the last warnings.
pub(crate) struct LogControl {
    handle: reload::Handle<EnvFilter, Registry>,
    /// The directives in force, for messages.
    current: String,
    /// The last warnings and errors logged.
    recent: RecentWarnings,
}

/// The filter `level` names (RUST_LOG's syntax), or RUST_LOG's, or info.
fn filter(level: Option<&str>) -> Result<(EnvFilter, String), String> {
    let directives = match level {
        Some(l) => l.to_owned(),
        None => std::env::var("RUST_LOG").unwrap_or_else(|_| "info".to_owned()),
    };
    EnvFilter::builder()
        .parse(&directives)
        .map(|f| (f, directives.clone()))
        .map_err(|e| format!("log level {directives:?}: {e}"))
}

/// Whether stderr is the stream `journal_stream` (`JOURNAL_STREAM`'s
/// `<device>:<inode>`) names: systemd's sign that it goes to the journal.
fn stderr_is_the_journal(journal_stream: Option<&str>) -> bool {
    use std::os::fd::AsFd as _;
    use std::os::unix::fs::MetadataExt as _;
    let Some((dev, ino)) = journal_stream.and_then(|s| s.split_once(':')) else {
        return false;
    };
    let stderr = std::io::stderr();
    let Ok(fd) = stderr.as_fd().try_clone_to_owned() else {
        return false;
    };
    let Ok(meta) = std::fs::File::from(fd).metadata() else {
        return false;
    };
    dev.parse() == Ok(meta.dev()) && ino.parse() == Ok(meta.ino())
}

impl LogControl {
    /// Installs the log with `level`'s filter.
    pub(crate) fn install(level: Option<&str>) -> Result<Self, String> {
        let (filter, current) = filter(level)?;
        let (layer, handle) = reload::Layer::new(filter);
        let recent = RecentWarnings::default();
        let journal = stderr_is_the_journal(std::env::var("JOURNAL_STREAM").ok().as_deref())
            .then(tracing_journald::layer)
            .and_then(Result::ok);
        let stderr = journal.is_none().then(|| {
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        });
        tracing_subscriber::registry()
            .with(layer)
            .with(stderr)
            .with(journal)
            .with(recent.clone())
            .init();
        Ok(Self {
            handle,
            current,
            recent,
        })
    }

    /// Takes `level`'s filter; true if that changed it.
    pub(crate) fn set(&mut self, level: Option<&str>) -> Result<bool, String> {
        let (filter, directives) = filter(level)?;
        if directives == self.current {
            return Ok(false);
        }
        self.handle
            .reload(filter)
            .map_err(|e| format!("cannot change the log filter: {e}"))?;
        self.current = directives;
        Ok(true)
    }

    /// The directives in force.
    pub(crate) fn current(&self) -> &str {
        &self.current
    }

    /// The last warnings and errors logged.
    pub(crate) fn recent(&self) -> &RecentWarnings {
        &self.recent
    }
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsFd as _;
    use std::os::unix::fs::MetadataExt as _;

    use super::*;

    #[test]
    fn the_journal_is_recognised_by_stderrs_device_and_inode() {
        let fd = std::io::stderr().as_fd().try_clone_to_owned().unwrap();
        let meta = std::fs::File::from(fd).metadata().unwrap();
        let this = format!("{}:{}", meta.dev(), meta.ino());
        assert!(stderr_is_the_journal(Some(&this)));
        let other = format!("{}:{}", meta.dev(), meta.ino() + 1);
        assert!(!stderr_is_the_journal(Some(&other)));
        assert!(!stderr_is_the_journal(Some("nonsense")));
        assert!(!stderr_is_the_journal(None));
    }
}
