//! The daemon's log: to stderr, filtered by --log-level (else RUST_LOG,
//! else info), with a filter that SIGHUP can replace while running.

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

impl LogControl {
    /// Installs the log with `level`'s filter.
    pub(crate) fn install(level: Option<&str>) -> Result<Self, String> {
        let (filter, current) = filter(level)?;
        let (layer, handle) = reload::Layer::new(filter);
        let recent = RecentWarnings::default();
        tracing_subscriber::registry()
            .with(layer)
            .with(
                tracing_subscriber::fmt::layer()
                    .with_writer(std::io::stderr)
                    .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())),
            )
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
