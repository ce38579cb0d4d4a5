//! A distributor's requests on the virtual fabric: the core's requester,
//! as lsaquery's client runs it over umad (retries, RMPP both ways), and
//! the sends of the shipped machines (the fill, the watch's driver, a
//! batch of queries) made through it.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use bytes::Bytes;
use local_sa_core::load_flags::LeaseTerms;
use local_sa_core::requester::{Attempts, Completion, Handled, Requester, RequesterConfig};
use local_sa_core::{Address, Transmit};
use local_sa_distributor::fill::Setup;
use local_sa_distributor::sends::{Send, Sends};

/// The SM_Key the distributors, the watch and the cores share.
pub(crate) const SM_KEY: u64 = 0x5eed;

/// lsaquery's defaults: `--retries` after the first attempt, each
/// query's `--timeout`, each whole table's `--table-timeout`, queries at
/// the master at once (`--master-window`).
const RETRIES: u32 = 3;
const TIMEOUT: Duration = Duration::from_millis(1000);
const TABLE_TIMEOUT: Duration = Duration::from_secs(12);
pub(crate) const MASTER_WINDOW: usize = 16;

/// A fill's setup with lsaquery's defaults: from next to `master`, of
/// nodes `1..=hosts`, `window` at a time, under `lease` if given.
pub(crate) fn fill_setup(
    master: Address,
    hosts: u16,
    window: usize,
    lease: Option<LeaseTerms>,
) -> Setup {
    Setup {
        master,
        sm_sl: 0,
        sm_key: SM_KEY,
        window,
        master_window: MASTER_WINDOW,
        attempts: RETRIES + 1,
        table_attempts: Attempts {
            timeout: TABLE_TIMEOUT,
            retries: RETRIES,
        },
        dlids: (1..=hosts).collect(),
        lease,
        keep_holdings: false,
    }
}

/// Requests in flight and MADs to send; `T` says what each is for.
pub(crate) struct Requests<T> {
    requester: Requester<Address, T>,
    out: VecDeque<Transmit<Address>>,
}

impl<T: Copy> Requests<T> {
    pub(crate) fn new() -> Self {
        let config = RequesterConfig {
            timeout: TIMEOUT,
            retries: RETRIES,
            ..RequesterConfig::default()
        };
        Self {
            requester: Requester::new(config, 1),
            out: VecDeque::new(),
        }
    }

    /// Makes every send `machine` has, each under `token(id)`.
    pub(crate) fn sends(
        &mut self,
        now: Instant,
        machine: &mut impl Sends,
        token: impl Fn(u64) -> T,
    ) {
        while let Some((id, send)) = machine.poll_send() {
            match send {
                Send::Query {
                    dest,
                    request,
                    attempts,
                } => {
                    let attempts: Attempts = attempts.unwrap_or(self.requester.config().attempts());
                    self.requester.send_with(
                        now,
                        dest,
                        token(id),
                        &request,
                        attempts,
                        &mut self.out,
                    );
                }
                Send::Transfer { dest, header, data } => {
                    let sent =
                        self.requester
                            .send_rmpp(now, dest, token(id), header, data, &mut self.out);
                    if let Err(e) = sent {
                        machine.handle_unsendable(now, id, &e.to_string());
                    }
                }
            }
        }
    }

    /// A MAD from `from`; the request it ended, if it ended one.
    pub(crate) fn receive(
        &mut self,
        now: Instant,
        from: Address,
        mad: &[u8],
    ) -> Option<Completion<T>> {
        match self
            .requester
            .handle(now, &from.reply(), 0, mad, None, &mut self.out)
        {
            Handled::Done(c) => Some(c),
            Handled::NotOurs | Handled::Taken => None,
        }
    }

    /// Retries what is due at `now`; the requests that ran out of
    /// attempts.
    pub(crate) fn timeouts(&mut self, now: Instant) -> Vec<Completion<T>> {
        self.requester.handle_timeout(now, &mut self.out)
    }

    /// When [`Self::timeouts`] must run.
    pub(crate) fn next_event(&self) -> Option<Instant> {
        self.requester.poll_timeout()
    }

    /// The MADs to put on the wire.
    pub(crate) fn drain(&mut self) -> Vec<(Address, Bytes)> {
        self.out.drain(..).map(|t| (t.dest, t.mad)).collect()
    }
}
