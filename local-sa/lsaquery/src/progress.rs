//! A one-line progress bar on standard error for long operations (a big
//! load, a distribution): shown only when standard error is a terminal,
//! redrawn at most ten times a second, erased when done.

use std::io::IsTerminal as _;
use std::time::{Duration, Instant};

/// Bar width in characters.
const WIDTH: u64 = 40;

/// Redraws no more often than this.
const REDRAW: Duration = Duration::from_millis(100);

pub(crate) struct ProgressBar {
    shown: Option<Instant>,
    enabled: bool,
}

impl ProgressBar {
    /// A bar, drawn only if `worth_it` (the operation is large enough to
    /// take a while) and standard error is a terminal.
    pub(crate) fn on_terminal(worth_it: bool) -> Self {
        Self {
            shown: None,
            enabled: worth_it && std::io::stderr().is_terminal(),
        }
    }

    /// Draws `done` of `all`, followed by `what` (e.g. "segments
    /// acknowledged").
    pub(crate) fn show(&mut self, done: u64, all: u64, what: &str) {
        if !self.enabled || all == 0 {
            return;
        }
        if self.shown.is_some_and(|t| t.elapsed() < REDRAW) {
            return;
        }
        self.shown = Some(Instant::now());
        let filled = (done.min(all) * WIDTH / all) as usize;
        eprint!(
            "\r[{}{}] {done}/{all} {what} ",
            "#".repeat(filled),
            " ".repeat(WIDTH as usize - filled)
        );
    }

    /// Erases the bar, if it was drawn.
    pub(crate) fn finish(&mut self) {
        if self.shown.take().is_some() {
            eprint!("\r\x1b[K");
        }
    }
}
