//! The three headers of an SA MAD: the MAD common header (bytes 0–23), the
//! RMPP header (24–35) and the SA header (36–55).
//!
//! Headers are small and byte-aligned, so each zerocopy struct is both the
//! view over received bytes and the owned value (built with `new`).

mod mad;
mod rmpp;
mod sa;
mod view;

pub use mad::{MAD_LEN, MadBuf, MadHeader};
pub use rmpp::{RmppFlags, RmppHeader, RmppStatus, RmppType};
pub use sa::{SaHeader, SaMadHeader};
