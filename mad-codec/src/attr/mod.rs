//! SA attributes: one module per attribute, each with its zerocopy wire
//! struct (view and compact owned value), its component-mask bits in a
//! `mask` module, and, where the wire packs sub-byte fields, a `*Repr` with
//! plain public fields.

pub mod class_port_info;
pub mod guid_info_record;
pub mod inform_info;
pub mod inform_info_record;
pub mod lft_record;
pub mod link_record;
pub mod mc_member_record;
pub mod mft_record;
pub mod node_record;
pub mod notice;
pub mod path_record;
pub mod pkey_table_record;
pub mod port_info_record;
pub mod service_record;
pub mod sl2vl_table_record;
pub mod sm_info_record;
pub mod switch_info_record;
mod text;
pub mod vl_arb_table_record;

pub use class_port_info::{ClassPortInfo, ClassPortInfoRepr};
pub use guid_info_record::GuidInfoRecord;
pub use inform_info::{InformInfo, InformInfoRepr};
pub use inform_info_record::InformInfoRecord;
pub use lft_record::LftRecord;
pub use link_record::LinkRecord;
pub use mc_member_record::{McMemberRecord, McMemberRecordRepr};
pub use mft_record::MftRecord;
pub use node_record::NodeRecord;
pub use notice::{Notice, NoticeRepr, TrapDetails};
pub use path_record::{PathRecord, PathRecordRepr};
pub use pkey_table_record::PkeyTableRecord;
pub use port_info_record::PortInfoRecord;
pub use service_record::ServiceRecord;
pub use sl2vl_table_record::Sl2VlTableRecord;
pub use sm_info_record::SmInfoRecord;
pub use switch_info_record::SwitchInfoRecord;
pub use vl_arb_table_record::VlArbTableRecord;
