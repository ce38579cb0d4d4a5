//! `--bench N`: the query sent N times with W outstanding, then the rate
//! and latency percentiles.

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::fan_out::FanOut;
use crate::json::{self, Fixed};
use crate::query::Query;
use crate::session::{Session, answer_ok};
use crate::stop::Stop;

#[derive(Debug, Default)]
struct BenchCounts {
    /// Latency of every answered query.
    latencies: Vec<Duration>,
    /// Answers with a non-zero status.
    error_status: u64,
    /// Queries that got no answer.
    unanswered: u64,
    first_failure: Option<String>,
}

/// Runs the benchmark and prints its result.
pub(crate) async fn run(
    session: &mut Session,
    query: &Query,
    total: u64,
    window: usize,
) -> Result<(), Stop> {
    let mad = query.to_mad(session.sm_key);
    let mut t = BenchCounts {
        latencies: Vec::with_capacity(usize::try_from(total).unwrap_or(0)),
        ..BenchCounts::default()
    };
    let start = Instant::now();
    let fan_out = FanOut {
        progress: Some(("queries ended", 10_000)),
        ..FanOut::window(window)
    };
    let (dest, show_errors) = (session.dest, session.show_errors);
    let count = usize::try_from(total).unwrap_or(usize::MAX);
    fan_out
        .run(
            &mut session.client,
            count,
            |_| (dest, mad.clone()),
            |_, end, took| match end {
                Ok(answer) => {
                    t.latencies.push(took);
                    if answer_ok(dest.lid, show_errors, &answer).is_err() {
                        t.error_status += 1;
                    }
                }
                Err(e) => {
                    t.unanswered += 1;
                    t.first_failure.get_or_insert_with(|| e.to_string());
                }
            },
        )
        .await?;
    let elapsed = start.elapsed();
    t.latencies.sort_unstable();
    let report = BenchReport::new(&t, total, window, elapsed);
    if session.json {
        outln!("{}", report.json(session.dest.lid))?;
    } else {
        out!("{}", report.text(session.dest.lid, query))?;
    }
    match (t.latencies.is_empty(), t.first_failure) {
        (true, Some(f)) => Err(Stop::new(4, format!("no query was answered: {f}"))),
        _ => Ok(()),
    }
}

/// What a run measured.
struct BenchReport {
    sent: u64,
    answered: u64,
    error_status: u64,
    unanswered: u64,
    window: usize,
    seconds: f64,
    /// min, p50, p90, p99, max in microseconds.
    micros: [u128; 5],
}

impl BenchReport {
    fn new(t: &BenchCounts, sent: u64, window: usize, elapsed: Duration) -> Self {
        let pct = |p: usize| -> u128 {
            if t.latencies.is_empty() {
                return 0;
            }
            let i = (t.latencies.len() * p / 100).min(t.latencies.len() - 1);
            t.latencies[i].as_micros()
        };
        Self {
            sent,
            answered: t.latencies.len() as u64,
            error_status: t.error_status,
            unanswered: t.unanswered,
            window,
            seconds: elapsed.as_secs_f64(),
            micros: [
                pct(0),
                pct(50),
                pct(90),
                pct(99),
                t.latencies.last().map_or(0, Duration::as_micros),
            ],
        }
    }

    fn rate(&self) -> f64 {
        if self.seconds > 0.0 {
            self.answered as f64 / self.seconds
        } else {
            0.0
        }
    }

    fn text(&self, lid: u16, query: &Query) -> String {
        let [min, p50, p90, p99, max] = self.micros;
        format!(
            "{} {:?} {:?} queries to the SA at LID {lid}, {} outstanding\n\
             answered {} ({} with an error status), unanswered {}, in {:.3} s: {:.0} answers/s\n\
             latency µs: min {min} p50 {p50} p90 {p90} p99 {p99} max {max}\n",
            self.sent,
            query.kind,
            query.method,
            self.window,
            self.answered,
            self.error_status,
            self.unanswered,
            self.seconds,
            self.rate(),
        )
    }

    fn json(&self, lid: u16) -> String {
        let [min, p50, p90, p99, max] = self.micros;
        json::line(&BenchJson {
            sa_lid: lid,
            sent: self.sent,
            window: self.window,
            answered: self.answered,
            error_status: self.error_status,
            unanswered: self.unanswered,
            seconds: Fixed(self.seconds),
            answers_per_second: Fixed(self.rate()),
            latency_us: Latency {
                min,
                p50,
                p90,
                p99,
                max,
            },
        })
    }
}

/// `--bench --json`.
#[derive(Serialize)]
struct BenchJson {
    sa_lid: u16,
    sent: u64,
    window: usize,
    answered: u64,
    error_status: u64,
    unanswered: u64,
    seconds: Fixed<6>,
    answers_per_second: Fixed<1>,
    latency_us: Latency,
}

/// Answer times in microseconds.
#[derive(Serialize)]
struct Latency {
    min: u128,
    p50: u128,
    p90: u128,
    p99: u128,
    max: u128,
}
