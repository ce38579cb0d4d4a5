//! What changes when this process runs under the simulator's preload
//! (umad2sim from ibsim) instead of on the kernel's umad device.
//!
//! umad2sim receives every MAD into a buffer of `sizeof(struct
//! sim_request)` (288 bytes) that must also hold the user_mad header, and
//! then hands the process the header and a whole 256-byte MAD from it: the
//! last bytes of every received MAD are read from past that buffer and are
//! garbage. With the 64-byte header OpenSM and saquery use, bytes 224..256
//! are lost; with the 56-byte one, 232..256. Everything from 224 on is
//! treated as lost, so RMPP segments between two processes that both run
//! under the preload carry 168 data bytes instead of 200, and a single MAD
//! longer than 224 bytes is only trusted up to there.

use mad_codec::MAD_LEN;
use mad_codec::header::SaMadHeader;
use mad_codec::rmpp::RmppConfig;

/// MAD bytes that survive umad2sim's receive path.
const UMAD2SIM_INTACT: usize = 224;

/// True when the umad2sim preload is in `LD_PRELOAD`.
pub fn under_umad2sim() -> bool {
    std::env::var_os("LD_PRELOAD").is_some_and(|p| p.to_string_lossy().contains("umad2sim"))
}

/// How many leading bytes of a received MAD are real: 256 on a kernel
/// device, 224 under umad2sim.
pub fn intact_mad_len() -> usize {
    if under_umad2sim() {
        UMAD2SIM_INTACT
    } else {
        MAD_LEN
    }
}

/// RMPP settings for this process's transport: the IBA's 200-byte segments
/// on a kernel device, 168-byte ones under umad2sim (both ends of a
/// transfer run under it there).
pub fn rmpp_config() -> RmppConfig {
    RmppConfig {
        segment_data_len: intact_mad_len() - SaMadHeader::LEN,
        ..RmppConfig::default()
    }
}

/// True when a one-MAD answer is not whole: an answer the master meant to
/// send as several MADs that arrived as its first one (RMPP Active, type
/// 0: how OpenSM's multi-MAD answers come through umad2sim), or one longer
/// than the `intact_len` bytes the transport delivers intact. Only the
/// records within the first `intact_len - 56` data bytes of such an answer
/// are real.
pub fn answer_is_cut(mad: &[u8], intact_len: usize) -> bool {
    let claims_rmpp = SaMadHeader::parse(mad).is_ok_and(|(h, _)| {
        h.rmpp.is_active() && h.rmpp.rmpp_type() == mad_codec::header::RmppType::NONE
    });
    (mad.len() == MAD_LEN && claims_rmpp) || mad.len() > intact_len
}

#[cfg(test)]
mod tests {
    use mad_codec::header::{RmppFlags, RmppHeader, RmppStatus, RmppType};
    use mad_codec::{AttributeId, Method, SaMadBuilder};

    use super::*;

    #[test]
    fn cut_answers_are_recognised() {
        let mut b = SaMadBuilder::request(Method::GET_TABLE_RESP, 1, AttributeId::PATH_RECORD)
            .data(&[7; 200]);
        let whole = b.clone().into_bytes();
        assert!(
            !answer_is_cut(&whole, MAD_LEN),
            "a full MAD on a kernel device"
        );
        assert!(
            answer_is_cut(&whole, UMAD2SIM_INTACT),
            "past what umad2sim delivers"
        );
        assert!(!answer_is_cut(&whole[..200], UMAD2SIM_INTACT));
        b.header_mut().rmpp =
            RmppHeader::new(RmppType::NONE, RmppFlags::ACTIVE, RmppStatus::NORMAL, 0, 0);
        assert!(
            answer_is_cut(&b.into_bytes(), MAD_LEN),
            "claims RMPP but is one MAD"
        );
    }
}
