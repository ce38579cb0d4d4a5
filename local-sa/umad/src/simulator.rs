//! What changes when this process runs under the simulator's preload
//! (umad2sim from ibsim) instead of on the kernel's umad device. This is
//! the one place that knows; everything above sees a [`Transport`]'s
//! answers.
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
//!
//! umad2sim has no RMPP either: OpenSM writes a multi-MAD answer as one
//! buffer for the kernel's RMPP to cut, and the simulator delivers its
//! first 256 bytes, still marked RMPP Active with type 0.
//!
//! Nor does it look at the methods an agent registered: every request of
//! a class goes to the process's last agent of that class, where the
//! kernel delivers a request only to the agent registered for its method
//! (and answers a Get or Set that none is, [`unmatched_response`]). The
//! device does what the kernel would ([`crate::UmadDevice::recv`]), so
//! that a port whose SA class local-sa leaves to a subnet manager
//! answers no SA request on the simulator either.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use mad_codec::header::{MadHeader, RmppType, SaMadHeader};
use mad_codec::{MAD_LEN, MadStatus, Method};

use zerocopy::FromBytes;

use crate::abi::HeaderLayout;

/// MAD bytes that survive umad2sim's receive path.
const UMAD2SIM_INTACT: usize = 224;

/// True when the umad2sim preload is in `LD_PRELOAD`.
pub fn under_umad2sim() -> bool {
    std::env::var_os("LD_PRELOAD").is_some_and(|p| p.to_string_lossy().contains("umad2sim"))
}

/// What carries this process's MADs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// The kernel's umad device.
    Kernel,
    /// ibsim's umad2sim preload.
    Umad2sim,
}

impl Transport {
    /// The transport of this process: umad2sim when its preload is in
    /// `LD_PRELOAD`, the kernel otherwise.
    pub fn of_this_process() -> Self {
        if under_umad2sim() {
            Self::Umad2sim
        } else {
            Self::Kernel
        }
    }

    /// How many leading bytes of a received MAD are real.
    pub fn intact_mad_len(self) -> usize {
        match self {
            Self::Kernel => MAD_LEN,
            Self::Umad2sim => UMAD2SIM_INTACT,
        }
    }

    /// SA data bytes per RMPP segment: the IBA's 200 on a kernel device,
    /// 168 under umad2sim (both ends of a transfer run under it there).
    pub fn segment_data_len(self) -> usize {
        self.intact_mad_len() - SaMadHeader::LEN
    }

    /// Descriptors the process can use whatever its open-files limit:
    /// under umad2sim, file operations on descriptor 1024 and beyond fail
    /// (EAGAIN) and the process soon crashes — the preload keeps a table
    /// of 1024 descriptors (seen: local-sa's 1024th local connection).
    pub fn max_open_files(self) -> Option<u64> {
        match self {
            Self::Kernel => None,
            Self::Umad2sim => Some(1024),
        }
    }

    /// How long a device must stay open after its last write when nothing
    /// was read since: under umad2sim a close is announced on the
    /// simulator's control socket, which ibsim reads before the MADs
    /// still waiting on the process's own socket, and those are then
    /// dropped (seen: lsaquery's final RMPP ACK, on a loaded machine, so
    /// the SA sent its table again to no one and aborted). The kernel
    /// takes a write whole before `write` returns.
    pub fn close_grace(self) -> Duration {
        match self {
            Self::Kernel => Duration::ZERO,
            Self::Umad2sim => Duration::from_millis(250),
        }
    }

    /// The user_mad header this process exchanges with the device.
    pub fn header_layout(self) -> HeaderLayout {
        match self {
            Self::Kernel => HeaderLayout::WithPkeyIndex,
            Self::Umad2sim => HeaderLayout::Legacy,
        }
    }

    /// How much of a received `mad` is real: `None` when all of it,
    /// `Some(n)` when only its first `n` bytes are — a MAD longer than what
    /// the transport delivers intact, or an answer its sender meant to
    /// send as several MADs that arrived as its first one (RMPP Active,
    /// type 0: how OpenSM's multi-MAD answers come through umad2sim).
    pub fn cut(self, mad: &[u8]) -> Option<usize> {
        let intact = self.intact_mad_len();
        let claims_rmpp = SaMadHeader::parse(mad)
            .is_ok_and(|(h, _)| h.rmpp.is_active() && h.rmpp.rmpp_type() == RmppType::NONE);
        let cut = (mad.len() == MAD_LEN && claims_rmpp) || mad.len() > intact;
        cut.then_some(intact.min(mad.len()))
    }
}

/// What the kernel's MAD layer answers to a request that no agent of the
/// port is registered for (`generate_unmatched_resp`): a Get or Set gets
/// a GetResp with MAD status 0x000C (method or attribute unsupported);
/// anything else, nothing.
pub fn unmatched_response(mad: &[u8]) -> Option<Bytes> {
    let (h, _) = MadHeader::parse(mad).ok()?;
    if h.method() != Method::GET && h.method() != Method::SET {
        return None;
    }
    let mut resp = BytesMut::from(mad);
    let (h, _) = MadHeader::mut_from_prefix(&mut resp[..]).ok()?;
    h.set_method(Method::GET_RESP);
    h.set_status(MadStatus::METHOD_ATTR_UNSUPPORTED);
    Some(resp.freeze())
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
        assert_eq!(
            Transport::Kernel.cut(&whole),
            None,
            "a full MAD on a kernel device"
        );
        assert_eq!(
            Transport::Umad2sim.cut(&whole),
            Some(224),
            "past what umad2sim delivers"
        );
        assert_eq!(Transport::Umad2sim.cut(&whole[..200]), None);
        b.header_mut().rmpp =
            RmppHeader::new(RmppType::NONE, RmppFlags::ACTIVE, RmppStatus::NORMAL, 0, 0);
        assert_eq!(
            Transport::Kernel.cut(&b.into_bytes()),
            Some(256),
            "claims RMPP but is one MAD"
        );
    }

    #[test]
    fn geometry() {
        assert_eq!(Transport::Kernel.segment_data_len(), 200);
        assert_eq!(Transport::Umad2sim.segment_data_len(), 168);
        assert_eq!(Transport::Umad2sim.header_layout().header_len(), 56);
    }

    #[test]
    fn a_get_no_agent_serves_is_answered_unsupported_as_the_kernel_does() {
        let get = SaMadBuilder::request(Method::GET, 9, AttributeId::CLASS_PORT_INFO).into_bytes();
        let resp = unmatched_response(&get).expect("an answer");
        let (h, _) = MadHeader::parse(&resp).unwrap();
        assert_eq!(h.method(), Method::GET_RESP);
        assert_eq!(h.status(), MadStatus::METHOD_ATTR_UNSUPPORTED);
        assert_eq!(h.transaction_id(), 9);
        let report = SaMadBuilder::request(Method::REPORT, 10, AttributeId::NOTICE).into_bytes();
        assert!(
            unmatched_response(&report).is_none(),
            "dropped, not answered"
        );
        let table =
            SaMadBuilder::request(Method::GET_TABLE, 11, AttributeId::PATH_RECORD).into_bytes();
        assert!(
            unmatched_response(&table).is_none(),
            "dropped, not answered"
        );
    }
}
