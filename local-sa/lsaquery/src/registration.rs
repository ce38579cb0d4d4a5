//! Registrations sent as MADs: InformInfo subscriptions (and the Reports
//! they bring), multicast joins and leaves.

use std::time::{Duration, Instant};

use bytes::Bytes;
use mad_codec::attr::mc_member_record::mask as mcmr;
use mad_codec::zerocopy::FromZeros;
use mad_codec::{
    AttributeId, ComponentMask, Gid, InformInfo, InformInfoRepr, JoinState, McMemberRecord, Method,
    Mtu, Notice, Rate, SaMad, SaMadBuilder, Selector, TrapNumber,
};
use smol::future::FutureExt as _;
use smol::stream::StreamExt as _;
use umad::IncomingMad;

use crate::cli::Cli;
use crate::session::Session;
use crate::stop::Stop;

/// RespTimeValue sent in subscriptions; unsubscribing must repeat it.
const RESP_TIME_VALUE: u8 = 19;

/// A generic subscription to `trap` (0xFFFF = every trap) from any LID and
/// producer; `subscribe` false gives the matching unsubscribe. OpenSM
/// removes a subscription only if every field, QPN 1 included, repeats it.
pub(crate) fn inform_info(trap: TrapNumber, subscribe: bool) -> InformInfo {
    InformInfoRepr::generic_subscription(trap, subscribe, 1, RESP_TIME_VALUE).to_wire()
}

/// Parses `--subscribe`'s argument: a trap number or "all".
pub(crate) fn trap_number(text: &str) -> Result<TrapNumber, String> {
    if text.eq_ignore_ascii_case("all") {
        return Ok(TrapNumber::ALL);
    }
    local_sa_cli::number::<u16>(text).map(TrapNumber)
}

fn inform_info_set(sm_key: u64, trap: TrapNumber, subscribe: bool) -> Bytes {
    let mut b = SaMadBuilder::request(Method::SET, 0, AttributeId::INFORM_INFO)
        .record(&inform_info(trap, subscribe));
    b.header_mut().sa.set_sm_key(sm_key);
    b.into_bytes()
}

/// Subscribes this port to `trap` at the SA the session asks (or,
/// `subscribe` false, ends that subscription); an error if the SA does
/// not answer or refuses.
pub(crate) async fn set_subscription(
    session: &mut Session,
    trap: TrapNumber,
    subscribe: bool,
) -> Result<(), Stop> {
    let answer = session
        .exchange(&inform_info_set(session.sm_key, trap, subscribe))
        .await?;
    session.ok(&answer)?;
    Ok(())
}

/// Why the notice loop ended or woke.
enum Event {
    Mad(IncomingMad),
    Stop,
    Lost(Stop),
}

/// Subscribes, prints every notice the SA reports (answering each with a
/// ReportResp) until `--count`, `--duration` or SIGINT/SIGTERM, then
/// unsubscribes.
pub(crate) async fn subscribe(
    session: &mut Session,
    cli: &Cli,
    trap: TrapNumber,
) -> Result<(), Stop> {
    let mut signals =
        async_signal::Signals::new([async_signal::Signal::Int, async_signal::Signal::Term])
            .map_err(|e| Stop::new(3, format!("cannot watch signals: {e}")))?;
    set_subscription(session, trap, true).await?;
    eprintln!(
        "lsaquery: subscribed to trap {trap} at the SA at LID {}",
        session.dest.lid
    );

    let deadline = cli
        .duration
        .map(|s| Instant::now() + Duration::from_secs(s));
    let mut seen = 0u64;
    // What ended the loop early, returned after the unsubscribing: a
    // Report that could not be answered or printed.
    let mut ended = None;
    while cli.count.is_none_or(|c| seen < c) {
        let next = async {
            session
                .unsolicited()
                .await
                .map_or_else(Event::Lost, Event::Mad)
        };
        let signal = async {
            signals.next().await;
            Event::Stop
        };
        let timer = async {
            match deadline {
                Some(d) => smol::Timer::at(d).await,
                None => smol::Timer::never().await,
            };
            Event::Stop
        };
        match next.or(signal).or(timer).await {
            Event::Mad(m) => match report(session, cli, &m).await {
                Ok(notice) => seen += u64::from(notice),
                Err(f) => {
                    ended = Some(f);
                    break;
                }
            },
            Event::Stop => break,
            Event::Lost(f) => return Err(f),
        }
    }

    set_subscription(session, trap, false).await?;
    eprintln!("lsaquery: unsubscribed after {seen} notice(s)");
    ended.map_or(Ok(()), Err)
}

/// Prints one Report (the client answered it as it came); other MADs are
/// ignored. Returns whether it was a notice.
async fn report(session: &mut Session, cli: &Cli, m: &IncomingMad) -> Result<bool, Stop> {
    let Some(notice) = notice_of(m) else {
        return Ok(false);
    };
    if cli.debug > 0 {
        outln!("SA Report:\n{}", mad_codec::hex::dump(&m.mad))?;
    }
    session.print(&crate::print::notice(&notice))?;
    Ok(true)
}

/// The notice an SA's Report carries, if `m` is one.
pub(crate) fn notice_of(m: &IncomingMad) -> Option<Notice> {
    let mad = SaMad::parse(&m.mad).ok()?;
    if mad.mad().method() != Method::REPORT || mad.mad().attribute_id() != AttributeId::NOTICE {
        return None;
    }
    mad.record::<Notice>().ok().copied()
}

/// The MCMemberRecord and mask of a join: MGID, this port's GID and the
/// JoinState, plus the group parameters the options give; when creating
/// (`--create`, or an SA-assigned MGID) also the ones a new group needs.
pub(crate) fn join_record(cli: &Cli, port_gid: Gid, mgid: Gid) -> (ComponentMask, McMemberRecord) {
    let create = cli.create || mgid.is_zero();
    let mut r = McMemberRecord::new_zeroed();
    let mut m = mcmr::JOIN;
    r.set_mgid(mgid);
    r.set_port_gid(port_gid);
    r.set_join_state(JoinState(cli.join_state.unwrap_or(1)));
    if let Some(v) = cli.qkey.or(create.then_some(0)) {
        r.set_qkey(v);
        m |= mcmr::QKEY;
    }
    if let Some(v) = cli.pkey.or(create.then_some(0xFFFF)) {
        r.set_pkey(v);
        m |= mcmr::PKEY;
    }
    if let Some(v) = cli.tclass.or(create.then_some(0)) {
        r.set_tclass(v);
        m |= mcmr::TCLASS;
    }
    if let Some(v) = cli.flow_label.or(create.then_some(0)) {
        r.set_flow_label(v);
        m |= mcmr::FLOW_LABEL;
    }
    if let Some(v) = cli.sl.or(create.then_some(0)) {
        r.set_sl(v);
        m |= mcmr::SL;
    }
    if let Some(v) = cli.scope {
        r.set_scope(v);
        m |= mcmr::SCOPE;
    }
    if let Some(b) = cli.mtu {
        r.set_mtu_selector(Selector::from_bits(b >> 6));
        r.set_mtu(Mtu(b & 0x3F));
        m |= mcmr::MTU_SELECTOR | mcmr::MTU;
    }
    if let Some(b) = cli.rate {
        r.set_rate_selector(Selector::from_bits(b >> 6));
        r.set_rate(Rate(b & 0x3F));
        m |= mcmr::RATE_SELECTOR | mcmr::RATE;
    }
    (m, r)
}

/// The MCMemberRecord and mask of a leave: MGID, this port's GID and the
/// JoinState bits to drop.
pub(crate) fn leave_record(cli: &Cli, port_gid: Gid, mgid: Gid) -> (ComponentMask, McMemberRecord) {
    let mut r = McMemberRecord::new_zeroed();
    r.set_mgid(mgid);
    r.set_port_gid(port_gid);
    r.set_join_state(JoinState(cli.join_state.unwrap_or(1)));
    (mcmr::JOIN, r)
}

/// Sends a join (Set) or leave (Delete) and prints the record the SA
/// answers.
pub(crate) async fn membership(
    session: &mut Session,
    cli: &Cli,
    method: Method,
    (mask, record): (ComponentMask, McMemberRecord),
) -> Result<(), Stop> {
    let mut b = SaMadBuilder::request(method, 0, AttributeId::MC_MEMBER_RECORD).record(&record);
    b.header_mut()
        .sa
        .set_component_mask(cli.comp_mask.map_or(mask, ComponentMask));
    b.header_mut().sa.set_sm_key(session.sm_key);
    let answer = session.exchange(&b.into_bytes()).await?;
    let mad = session.ok(&answer)?;
    let answered = mad
        .record::<McMemberRecord>()
        .map_err(|e| Stop::new(4, format!("malformed answer: {e}")))?;
    session.print(&crate::print::mc_member(answered))
}
