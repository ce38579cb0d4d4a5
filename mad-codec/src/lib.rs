//! InfiniBand management datagrams (MADs) for Subnet Administration: the MAD,
//! RMPP and SA headers, the SA attributes local-sa speaks, a multi-record
//! view, a sans-IO RMPP engine, and the [`address`] a MAD goes to or comes
//! from.
//!
//! This crate does no I/O and keeps no clock: time enters the RMPP engine as
//! an argument. Every byte local-sa sends or receives goes through it.
//!
//! # Layout
//!
//! Each wire structure is a `#[repr(C)]` [zerocopy] struct of network-order
//! fields, used as a *view* over received bytes (`T::ref_from_prefix`) and as
//! a compact owned value (they are all `Copy`; the PathRecord cache stores
//! them as they are). Fields are private; accessors return typed values and
//! setters keep neighbouring bits intact. Where a structure packs sub-byte
//! fields (PathRecord, MCMemberRecord, InformInfo, Notice, ClassPortInfo),
//! an owned `*Repr` struct with plain public fields converts to and from it
//! losslessly (reserved bits aside). Byte-aligned structures (the headers,
//! NodeRecord, ServiceRecord, InformInfoRecord) need no second form: their
//! typed accessors and setters are the owned representation.
//!
//! Wire codes (management class, method, attribute ID, MAD status, trap
//! number, RMPP type and status, MTU, rate, ...) are newtypes with named
//! constants. Unknown values are kept as they are, never rejected, so they
//! round-trip.
//!
//! # No-panic contract
//!
//! * Every function that takes received bytes returns
//!   `Result<_, ParseError>` and never panics, whatever the input.
//! * Once a view exists, none of its accessors or setters panics: the view's
//!   size is fixed and was checked when it was made.
//! * Emitting never panics; functions that write into a caller's buffer take
//!   a buffer of the exact type (`&mut T`, `&mut [u8; N]`) or grow a
//!   [`bytes::BufMut`].
//! * Nothing loops longer than its input is long, and nothing allocates more
//!   than the caller's configured bound (see [`rmpp::RmppConfig`]).
//!
//! The fuzz targets in `fuzz/` check this contract; their harnesses live in
//! `fuzzing` so that stable `cargo test` replays the corpus too.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[macro_use]
mod macros;

pub mod address;
pub mod attr;
mod bits;
pub mod codes;
mod error;
#[cfg(any(fuzzing, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
pub mod header;
pub mod hex;
pub mod records;
pub mod rmpp;
mod sa_mad;
pub mod types;

pub use attr::{
    ClassPortInfo, ClassPortInfoRepr, GuidInfoRecord, InformInfo, InformInfoRecord, InformInfoRepr,
    LftRecord, LinkRecord, McMemberRecord, McMemberRecordRepr, MftRecord, NodeRecord, Notice,
    NoticeRepr, PathRecord, PathRecordRepr, PkeyTableRecord, PortInfoRecord, ServiceRecord,
    Sl2VlTableRecord, SmInfoRecord, SwitchInfoRecord, TrapDetails, VlArbTableRecord,
};
pub use codes::{AttributeId, MadStatus, Method, MgmtClass, TrapNumber};
pub use error::ParseError;
pub use header::{MAD_LEN, MadBuf, MadHeader, RmppHeader, SaHeader, SaMadHeader};
pub use records::{Records, SaRecord};
pub use sa_mad::{SaMad, SaMadBuilder};
pub use types::{ComponentMask, Gid, JoinState, Mtu, Rate, Selector};

/// The zerocopy crate this one is built on: its `IntoBytes::as_bytes` and
/// `FromZeros::new_zeroed` are how callers get at and create wire structs.
pub use zerocopy;
