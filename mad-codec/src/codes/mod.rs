//! Wire codes as newtypes with named constants (see `wire_code!`): unknown
//! values are carried, printed in hex and emitted unchanged.

mod attribute;
mod class;
mod method;
mod notice;
mod status;

pub use attribute::AttributeId;
pub use class::MgmtClass;
pub use method::Method;
pub use notice::{NodeType, NoticeType, ProducerType, TrapNumber};
pub use status::MadStatus;
