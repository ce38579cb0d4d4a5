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

pub use class_port_info::{ClassPortInfo, ClassPortInfoRepr};
pub use inform_info::{InformInfo, InformInfoRepr};
pub use inform_info_record::InformInfoRecord;
pub use mc_member_record::{McMemberRecord, McMemberRecordRepr};
pub use node_record::NodeRecord;
pub use notice::{Notice, NoticeRepr, TrapDetails};
pub use path_record::{PathRecord, PathRecordRepr};
pub use service_record::ServiceRecord;

/// A NUL-padded text field up to its first NUL; invalid UTF-8 is replaced.
fn nul_padded_text(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

/// Writes `text` into a NUL-padded field, truncated to the field's size.
fn put_nul_padded(field: &mut [u8], text: &str) {
    let n = text.len().min(field.len());
    field[..n].copy_from_slice(&text.as_bytes()[..n]);
    field[n..].fill(0);
}
