//! RMPP (Reliable Multi-Packet Protocol), sans-IO: a [`Sender`] that cuts an
//! SA payload into segments and a [`Receiver`] that reassembles one, each a
//! state machine driven by received MADs and an explicit `now`.
//!
//! The engine follows the IBA and the Linux kernel's `mad_rmpp.c`, which is
//! what OpenSM and saquery talk to on real fabrics:
//!
//! * Every segment is a whole 256-byte MAD: the 56 header bytes (repeated in
//!   each segment) and 200 bytes of SA data. PayloadLength counts the 20-byte
//!   SA header once per segment: the first segment carries
//!   `data_len + 20 × segments`, the last `20 + data in the last segment`,
//!   the ones between 0. A single segment carries the last-segment value.
//! * The sender starts with a window of one segment and sends up to each
//!   ACK's NewWindowLast; it resends from the last acknowledged segment when
//!   no ACK arrives in time, and aborts with TMR after too many tries.
//! * The receiver ACKs the first segment at once and then every time its
//!   window edge is reached, keeps segments that arrive early within the
//!   window, re-ACKs duplicates, and lingers after completion so a lost final
//!   ACK can be repeated.
//!
//! Both sides bound what they keep: the receiver never holds more than
//! [`RmppConfig::max_data_len`] bytes of data plus one window of early
//! segments, and answers a larger transfer with STOP (ResX).

mod receiver;
mod sender;
mod transfer;

#[cfg(test)]
mod tests;

pub use receiver::Receiver;
pub use sender::{Sender, TransferTooLong};
pub use transfer::{
    RmppConfig, SEGMENT_DATA_LEN, SEGMENT_PAYLOAD_LEN, TransferState, payload_length,
    segment_count, single_segment,
};
