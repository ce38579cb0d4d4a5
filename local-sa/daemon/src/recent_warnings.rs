//! The last few warnings and errors the log showed, for `lsaquery
//! --status`: a tracing layer that keeps them, newest last.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

/// Warnings kept.
pub(crate) const KEPT: usize = 5;

/// The kept warnings, shared between the layer and the driver.
#[derive(Debug, Clone, Default)]
pub(crate) struct RecentWarnings(Arc<Mutex<VecDeque<(Instant, Level, String)>>>);

impl RecentWarnings {
    /// `<seconds ago> <LEVEL> <message and fields>`, oldest first.
    pub(crate) fn lines(&self, now: Instant) -> Vec<String> {
        let kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        kept.iter()
            .map(|(at, level, text)| {
                format!(
                    "{} {level} {text}",
                    now.saturating_duration_since(*at).as_secs()
                )
            })
            .collect()
    }

    fn keep(&self, level: Level, text: String) {
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() == KEPT {
            kept.pop_front();
        }
        kept.push_back((Instant::now(), level, text));
    }
}

impl<S: Subscriber> Layer<S> for RecentWarnings {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let level = *event.metadata().level();
        if level > Level::WARN {
            return;
        }
        let mut text = Text::default();
        event.record(&mut text);
        self.keep(level, text.0);
    }
}

/// An event's message, then its other fields as `name=value`.
#[derive(Default)]
struct Text(String);

impl Visit for Text {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let rest = std::mem::take(&mut self.0);
            let _ = write!(self.0, "{value:?}{rest}");
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0.insert_str(0, value);
        } else {
            let _ = write!(self.0, " {}={value}", field.name());
        }
    }
}

#[cfg(test)]
mod tests {
    use tracing_subscriber::layer::SubscriberExt as _;

    use super::*;

    #[test]
    fn keeps_the_last_warnings_and_errors_with_their_fields() {
        let recent = RecentWarnings::default();
        let subscriber = tracing_subscriber::registry().with(recent.clone());
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!("not kept");
            for i in 0..6 {
                tracing::warn!(attempt = i, port = "ibsim0/1", "the master did not answer");
            }
            tracing::error!("cannot write the counters");
        });
        let lines = recent.lines(Instant::now());
        assert_eq!(lines.len(), KEPT);
        assert_eq!(
            lines[0],
            "0 WARN the master did not answer attempt=2 port=ibsim0/1"
        );
        assert_eq!(lines[4], "0 ERROR cannot write the counters");
    }
}
