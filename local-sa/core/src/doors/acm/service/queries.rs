//! The Gets the door asks its agents, as acmp builds them.

use mad_codec::attr::path_record::mask as pr;
use mad_codec::{ComponentMask, Method, PathRecord};

use crate::doors::acm::wire::flags;
use crate::request::{Lookup, PathQuery};

/// The lookup an entry's flags ask for.
pub(super) fn lookup_for(entry_flags: u32) -> Lookup {
    if entry_flags & flags::NODELAY != 0 {
        Lookup::CacheOnly
    } else {
        Lookup::Anywhere
    }
}

/// A Get of `template`, selected by its non-zero fields (ibacm's
/// `acm_path_comp_mask`).
pub(super) fn get_selected_by_fields(template: PathRecord) -> PathQuery {
    PathQuery {
        method: Method::GET,
        mask: path_mask(&template),
        template,
    }
}

/// The Get acmp asks for a template `t` from an endpoint in partition
/// `pkey`: one reversible path, selected by the template's non-zero fields.
pub(super) fn acmp_get(mut t: PathRecord, pkey: u16) -> PathQuery {
    t.set_pkey(pkey);
    t.set_reversible(true);
    t.set_numb_path(1);
    get_selected_by_fields(t)
}

/// The component mask of a path template: its non-zero fields, as
/// ibacm's `acm_path_comp_mask` computes it.
pub fn path_mask(p: &PathRecord) -> ComponentMask {
    let mut m = ComponentMask(0);
    let mut set = |on: bool, bit: ComponentMask| {
        if on {
            m |= bit;
        }
    };
    set(p.service_id() != 0, pr::SERVICE_ID);
    set(!p.dgid().is_zero(), pr::DGID);
    set(!p.sgid().is_zero(), pr::SGID);
    set(p.dlid() != 0, pr::DLID);
    set(p.slid() != 0, pr::SLID);
    set(p.flow_label() != 0, pr::FLOW_LABEL);
    set(p.hop_limit() != 0, pr::HOP_LIMIT);
    set(p.tclass() != 0, pr::TCLASS);
    set(p.reversible(), pr::REVERSIBLE);
    set(p.pkey() != 0, pr::PKEY);
    set(p.qos_class() != 0, pr::QOS_CLASS);
    set(p.sl() != 0, pr::SL);
    set(p.mtu_selector().bits() != 0, pr::MTU_SELECTOR);
    set(u8::from(p.mtu()) != 0, pr::MTU);
    set(p.rate_selector().bits() != 0, pr::RATE_SELECTOR);
    set(u8::from(p.rate()) != 0, pr::RATE);
    set(
        p.packet_life_selector().bits() != 0,
        pr::PACKET_LIFE_TIME_SELECTOR,
    );
    set(p.packet_life() != 0, pr::PACKET_LIFE_TIME);
    m
}
