//! SA attributes: one module per attribute, each with its zerocopy wire
//! struct (view and compact owned value), its component-mask bits in a
//! `mask` module, and, where the wire packs sub-byte fields, a `*Repr` with
//! plain public fields.

pub mod class_port_info;
pub mod inform_info;
pub mod inform_info_record;
pub mod mc_member_record;
pub mod node_record;
pub mod notice;
pub mod path_record;
pub mod service_record;
mod text;

pub use class_port_info::{ClassPortInfo, ClassPortInfoRepr};
pub use inform_info::{InformInfo, InformInfoRepr};
pub use inform_info_record::InformInfoRecord;
pub use mc_member_record::{McMemberRecord, McMemberRecordRepr};
pub use node_record::NodeRecord;
pub use notice::{Notice, NoticeRepr, TrapDetails};
pub use path_record::{PathRecord, PathRecordRepr};
pub use service_record::ServiceRecord;
