//! lsaquery through local-sa's local API (docs/local-api.md): the default
//! for subscriptions, joins and listing this node's registrations. No umad
//! device is needed, so any user the socket lets in may run it.
//!
//! What a connection registers lasts while it is open: `--subscribe`
//! prints notices and `--join` holds its membership until `--count`,
//! `--duration` or Ctrl-C, then both end explicitly before lsaquery exits.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use local_sa_core::doors::api::{self, Frame, kind};
use local_sa_core::request::Request;
use mad_codec::records::SaRecord;
use mad_codec::{InformInfoRecord, McMemberRecord, Records, TrapNumber};
use smol::Async;
use smol::future::FutureExt as _;
use smol::io::{AsyncReadExt, AsyncWriteExt};
use smol::stream::StreamExt as _;
use std::os::unix::net::UnixStream;

use crate::cli::Cli;
use crate::print::Printed;
use crate::stop::Stop;

/// The default socket of the local-sa serving `ca` port `port`.
pub(crate) fn default_socket(ca: &str, port: u8) -> PathBuf {
    PathBuf::from(format!("/run/local-sa/{ca}-{port}.sock"))
}

/// A connection to local-sa's local API.
pub(crate) struct Connection {
    stream: Async<UnixStream>,
    next_id: u32,
    json: bool,
    /// Answers that arrive as several frames, being put back together.
    reassembly: api::Reassembly,
}

enum Wake {
    Frame(Frame),
    Stop,
}

impl Connection {
    pub(crate) fn open(path: &Path, json: bool) -> Result<Self, Stop> {
        let stream = UnixStream::connect(path).map_err(|e| {
            Stop::new(
                4,
                format!(
                    "cannot reach local-sa's local API at {}: {e} (is local-sa running for this port? \
                     --api-socket names another socket; --sa-lid LID sends MADs instead)",
                    path.display()
                ),
            )
        })?;
        let stream = Async::new(stream).map_err(|e| Stop::new(3, e.to_string()))?;
        Ok(Self {
            stream,
            next_id: 1,
            json,
            reassembly: api::Reassembly::default(),
        })
    }

    /// The next frame; an answer split over several frames, whole.
    async fn read_frame(&mut self) -> Result<Frame, Stop> {
        loop {
            let part = self.read_one_frame().await?;
            if let Some(frame) = self.reassembly.push(part) {
                return Ok(frame);
            }
        }
    }

    async fn read_one_frame(&mut self) -> Result<Frame, Stop> {
        let lost = |e: std::io::Error| Stop::new(4, format!("local-sa closed the connection: {e}"));
        let mut len = [0u8; 4];
        self.stream.read_exact(&mut len).await.map_err(lost)?;
        let n = Frame::announced(len)
            .map_err(|e| Stop::new(4, format!("a bad frame from local-sa: {e}")))?;
        let mut rest = vec![0u8; n];
        self.stream.read_exact(&mut rest).await.map_err(lost)?;
        Frame::decode(&rest).map_err(|e| Stop::new(4, format!("a bad frame from local-sa: {e}")))
    }

    /// Sends `request` and returns its answer; notices that arrive before
    /// it are printed.
    pub(crate) async fn call(&mut self, request: &Request) -> Result<Frame, Stop> {
        let id = self.send(request).await?;
        loop {
            let f = self.next_answer().await?;
            if f.request != id {
                continue;
            }
            if f.kind == kind::ERROR {
                return Err(Stop::new(
                    2,
                    format!(
                        "local-sa refused the request: {}",
                        api::describe_error(f.status)
                    ),
                ));
            }
            let status = api::status(&f);
            if !status.is_ok() {
                return Err(Stop::new(
                    1,
                    format!(
                        "local-sa answered {} ({}; status {:#06x})",
                        status.names(),
                        status.describe(),
                        status.0,
                    ),
                ));
            }
            return Ok(f);
        }
    }

    /// Sends `request` without waiting for its answer; returns the number
    /// its answer will carry. Several may be out at once.
    pub(crate) async fn send(&mut self, request: &Request) -> Result<u32, Stop> {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1).max(1);
        let frame = api::request_frame(request, id).encode();
        self.stream
            .write_all(&frame)
            .await
            .map_err(|e| Stop::new(4, format!("local-sa: {e}")))?;
        Ok(id)
    }

    /// The next answer, to whichever request; notices that arrive before
    /// it are printed.
    pub(crate) async fn next_answer(&mut self) -> Result<Frame, Stop> {
        loop {
            let f = self.read_frame().await?;
            if f.kind == kind::NOTICE {
                self.print_notice(&f)?;
                continue;
            }
            return Ok(f);
        }
    }

    /// The next notice local-sa reports on this connection (other frames
    /// are passed over).
    pub(crate) async fn next_notice(&mut self) -> Result<mad_codec::Notice, Stop> {
        loop {
            let f = self.read_frame().await?;
            if f.kind == kind::NOTICE
                && let Some(n) = api::notice(&f)
            {
                return Ok(n);
            }
        }
    }

    /// Whether --json was given.
    pub(crate) fn json(&self) -> bool {
        self.json
    }

    fn print(&self, p: &Printed) -> Result<(), Stop> {
        p.print(self.json)
    }

    fn print_notice(&self, f: &Frame) -> Result<bool, Stop> {
        match api::notice(f) {
            Some(n) => {
                self.print(&crate::print::notice(&n))?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Prints notices until `--count`, `--duration`, a signal or an
    /// output that cannot be written (its failure is returned beside the
    /// count, for after the clean-up); returns how many came.
    async fn wait(&mut self, cli: &Cli) -> Result<(u64, Option<Stop>), Stop> {
        let mut signals =
            async_signal::Signals::new([async_signal::Signal::Int, async_signal::Signal::Term])
                .map_err(|e| Stop::new(3, format!("cannot watch signals: {e}")))?;
        let deadline = cli
            .duration
            .map(|s| Instant::now() + Duration::from_secs(s));
        let mut seen = 0u64;
        while cli.count.is_none_or(|c| seen < c) {
            let frame = async {
                match self.read_frame().await {
                    Ok(f) => Ok(Wake::Frame(f)),
                    Err(e) => Err(e),
                }
            };
            let signal = async {
                signals.next().await;
                Ok(Wake::Stop)
            };
            let timer = async {
                match deadline {
                    Some(d) => smol::Timer::at(d).await,
                    None => smol::Timer::never().await,
                };
                Ok(Wake::Stop)
            };
            match frame.or(signal).or(timer).await? {
                Wake::Frame(f) => match self.print_notice(&f) {
                    Ok(notice) => seen += u64::from(notice),
                    Err(output) => return Ok((seen, Some(output))),
                },
                Wake::Stop => break,
            }
        }
        Ok((seen, None))
    }
}

/// `--subscribe TRAP` through the local API.
pub(crate) async fn subscribe(
    conn: &mut Connection,
    cli: &Cli,
    trap: TrapNumber,
) -> Result<(), Stop> {
    conn.call(&Request::Inform(crate::registration::inform_info(
        trap, true,
    )))
    .await?;
    eprintln!("lsaquery: subscribed to trap {trap} through local-sa");
    let (seen, output) = conn.wait(cli).await?;
    conn.call(&Request::Inform(crate::registration::inform_info(
        trap, false,
    )))
    .await?;
    eprintln!("lsaquery: unsubscribed after {seen} notice(s)");
    output.map_or(Ok(()), Err)
}

/// `--join MGID` through the local API: the membership is held while
/// lsaquery runs.
pub(crate) async fn join(
    conn: &mut Connection,
    cli: &Cli,
    (mask, record): (mad_codec::ComponentMask, McMemberRecord),
) -> Result<(), Stop> {
    let mask = cli.comp_mask.map_or(mask, mad_codec::ComponentMask);
    let answer = conn.call(&Request::Join { mask, record }).await?;
    let joined = first::<McMemberRecord>(&answer)?;
    let printed = conn.print(&crate::print::mc_member(&joined));
    let output = match printed {
        Ok(()) => {
            eprintln!(
                "lsaquery: joined {}; holding the membership (Ctrl-C, --duration or --count ends it)",
                joined.mgid()
            );
            conn.wait(cli).await?.1
        }
        Err(output) => Some(output),
    };
    let mut leave = joined;
    leave.set_join_state(record.join_state());
    conn.call(&Request::Leave {
        mask: mad_codec::attr::mc_member_record::mask::JOIN,
        record: leave,
    })
    .await?;
    eprintln!("lsaquery: left {}", joined.mgid());
    output.map_or(Ok(()), Err)
}

/// `-I`, `-g`, `-m` through the local API: this port's registrations.
pub(crate) async fn list(
    conn: &mut Connection,
    groups: bool,
    members: bool,
    show_keys: bool,
) -> Result<(), Stop> {
    if groups || members {
        let answer = conn.call(&Request::ListGroups).await?;
        for r in Records::<McMemberRecord>::with_standard_stride(&answer.body) {
            let p = if members {
                crate::print::mc_member(r)
            } else {
                crate::print::mc_group(r)
            };
            conn.print(&p)?;
        }
    } else {
        let answer = conn.call(&Request::ListSubscriptions).await?;
        for r in Records::<InformInfoRecord>::with_standard_stride(&answer.body) {
            conn.print(&crate::print::inform_info_record(r, show_keys))?;
        }
    }
    Ok(())
}

fn first<T: SaRecord>(f: &Frame) -> Result<T, Stop> {
    Records::<T>::with_standard_stride(&f.body)
        .next()
        .copied()
        .ok_or_else(|| Stop::new(4, "local-sa's answer carries no record"))
}
