//! Value types that appear inside SA attributes.

mod component_mask;
mod gid;
mod join_state;
mod mtu;
mod rate;
mod selector;

pub use component_mask::ComponentMask;
pub use gid::{Gid, ParseGidError};
pub use join_state::JoinState;
pub use mtu::Mtu;
pub use rate::Rate;
pub use selector::Selector;
