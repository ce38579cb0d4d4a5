//! What a subscription selects: the fields of an InformInfo that decide
//! which notices it receives, and OpenSM's rules for matching a notice
//! against them (anchors: opensm-sa.md §5).
//!
//! Two subscriptions with equal filters are the same subscription as far
//! as the master is concerned: one upstream InformInfo serves every local
//! holder of a filter. QPN, RespTimeValue and Subscribe are not part of a
//! filter; upstream they are the agent's own.

use mad_codec::{Gid, InformInfo, InformInfoRepr, Notice};

/// The selecting fields of an InformInfo.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Filter {
    /// The notice issuer's GID to match, or zero for any.
    pub gid: Gid,
    /// First issuer LID to match (0xFFFF: every LID; only with GID zero).
    pub lid_range_begin: u16,
    /// Last issuer LID to match.
    pub lid_range_end: u16,
    /// Generic (trap) notices, or vendor ones.
    pub is_generic: bool,
    /// Notice type, or 0xFFFF for all.
    pub notice_type: u16,
    /// TrapNumber (generic) or DeviceID (vendor); 0xFFFF for all.
    pub trap_or_device: u16,
    /// ProducerType (generic) or VendorID (vendor); 0xFFFFFF for all.
    pub producer_or_vendor: u32,
}

/// "Every value" of the 16-bit fields.
const ALL16: u16 = 0xFFFF;
/// "Every value" of ProducerType/VendorID.
const ALL24: u32 = 0xFF_FFFF;

/// Why an InformInfo Set is refused before it reaches the master (OpenSM
/// answers each of these with ERR_REQ_INVALID).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Invalid {
    /// Subscribe is neither 0 nor 1.
    Subscribe(u8),
    /// IsGeneric is neither 0 nor 1.
    IsGeneric(u8),
    /// Security traps (256–259) need the SM_Key.
    SecurityTrapUntrusted(u16),
}

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Subscribe(v) => write!(f, "Subscribe is {v}, not 0 or 1"),
            Self::IsGeneric(v) => write!(f, "IsGeneric is {v}, not 0 or 1"),
            Self::SecurityTrapUntrusted(t) => write!(
                f,
                "trap {t} is a security trap: subscribing needs the SM_Key"
            ),
        }
    }
}

impl std::error::Error for Invalid {}

/// How logs show a filter: what it selects, "all" for a wildcard.
impl std::fmt::Display for Filter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let all16 = |v: u16| {
            if v == ALL16 {
                "all".to_owned()
            } else {
                v.to_string()
            }
        };
        let (kind, source) = if self.is_generic {
            ("generic trap", "producer")
        } else {
            ("vendor device", "vendor")
        };
        write!(
            f,
            "{kind} {}, type {}",
            all16(self.trap_or_device),
            all16(self.notice_type)
        )?;
        if self.producer_or_vendor == ALL24 {
            write!(f, ", {source} all")?;
        } else {
            write!(f, ", {source} {:#x}", self.producer_or_vendor)?;
        }
        if self.gid.is_zero() {
            if self.lid_range_begin == ALL16 {
                write!(f, ", from anyone")
            } else {
                write!(
                    f,
                    ", from LIDs {}-{}",
                    self.lid_range_begin, self.lid_range_end
                )
            }
        } else {
            write!(f, ", from {}", self.gid)
        }
    }
}

impl Filter {
    /// The filter of `ii`, after the checks OpenSM makes without looking at
    /// the fabric; `trusted` when the request carried the SM_Key.
    pub fn of(ii: &InformInfoRepr, trusted: bool) -> Result<Self, Invalid> {
        if ii.subscribe > 1 {
            return Err(Invalid::Subscribe(ii.subscribe));
        }
        if ii.is_generic > 1 {
            return Err(Invalid::IsGeneric(ii.is_generic));
        }
        let is_generic = ii.is_generic == 1;
        if is_generic && (256..=259).contains(&ii.trap_number) && !trusted && ii.subscribe == 1 {
            return Err(Invalid::SecurityTrapUntrusted(ii.trap_number));
        }
        Ok(Self {
            gid: ii.gid,
            lid_range_begin: ii.lid_range_begin,
            lid_range_end: ii.lid_range_end,
            is_generic,
            notice_type: ii.notice_type,
            trap_or_device: ii.trap_number,
            producer_or_vendor: ii.producer_type & ALL24,
        })
    }

    /// The InformInfo that subscribes (or unsubscribes) this filter from
    /// the QP `qpn`, with `resp_time_value`.
    pub fn inform_info(&self, subscribe: bool, qpn: u32, resp_time_value: u8) -> InformInfoRepr {
        InformInfoRepr {
            gid: self.gid,
            lid_range_begin: self.lid_range_begin,
            lid_range_end: self.lid_range_end,
            is_generic: u8::from(self.is_generic),
            subscribe: u8::from(subscribe),
            notice_type: self.notice_type,
            trap_number: self.trap_or_device,
            qpn,
            resp_time_value,
            producer_type: self.producer_or_vendor,
        }
    }

    /// True when the master would send `notice` to a subscription with
    /// this filter: OpenSM's matching rules, access checks aside.
    pub fn matches(&self, notice: &Notice) -> bool {
        if self.gid != Gid::ZERO {
            if self.gid != notice.issuer_gid() {
                return false;
            }
        } else if self.lid_range_begin != ALL16 {
            // OpenSM does not normalise End here: End 0 matches nothing.
            let lid = notice.issuer_lid();
            if lid < self.lid_range_begin || lid > self.lid_range_end {
                return false;
            }
        }
        if self.is_generic != notice.is_generic() {
            return false;
        }
        let notice_type = u16::from(notice.notice_type().0);
        if self.notice_type != ALL16 && self.notice_type != notice_type {
            return false;
        }
        if self.trap_or_device != ALL16 && self.trap_or_device != notice.device_id() {
            return false;
        }
        let producer = if notice.is_generic() {
            notice.producer_type().0
        } else {
            notice.vendor_id()
        };
        self.producer_or_vendor == ALL24 || self.producer_or_vendor == producer
    }
}

/// The filter of a wire InformInfo (see [`Filter::of`]).
pub fn filter_of(ii: &InformInfo, trusted: bool) -> Result<Filter, Invalid> {
    Filter::of(&InformInfoRepr::parse(ii), trusted)
}

#[cfg(test)]
mod tests {
    use mad_codec::codes::{NoticeType, ProducerType};
    use mad_codec::{NoticeRepr, TrapDetails, TrapNumber};

    use super::*;

    fn all_of(trap: u16) -> Filter {
        Filter::of(
            &InformInfoRepr::generic_subscription(TrapNumber(trap), true, 1, 19),
            false,
        )
        .unwrap()
    }

    fn trap65(issuer_lid: u16, issuer: Gid) -> Notice {
        NoticeRepr::generic(
            NoticeType::SUBNET_MANAGEMENT,
            ProducerType::CLASS_MANAGER,
            TrapDetails::GidOutOfService {
                gid: Gid::new(Gid::DEFAULT_PREFIX, 0x77),
            },
            issuer_lid,
            issuer,
        )
        .to_wire()
    }

    #[test]
    fn trap_number_type_and_producer_select() {
        let n = trap65(1, Gid::new(Gid::DEFAULT_PREFIX, 1));
        assert!(all_of(65).matches(&n));
        assert!(all_of(0xFFFF).matches(&n));
        assert!(!all_of(64).matches(&n));
        let mut f = all_of(65);
        f.notice_type = 3; // subnet management
        assert!(f.matches(&n));
        f.notice_type = 1;
        assert!(!f.matches(&n));
        let mut f = all_of(65);
        f.producer_or_vendor = 4; // class manager
        assert!(f.matches(&n));
        f.producer_or_vendor = 1;
        assert!(!f.matches(&n));
        let mut f = all_of(65);
        f.is_generic = false;
        assert!(
            !f.matches(&n),
            "a vendor subscription never sees generic notices"
        );
    }

    #[test]
    fn gid_and_lid_range_filter_the_issuer_as_opensm_does() {
        let sm = Gid::new(Gid::DEFAULT_PREFIX, 1);
        let n = trap65(7, sm);
        let mut f = all_of(65);
        f.gid = sm;
        assert!(f.matches(&n));
        f.gid = Gid::new(Gid::DEFAULT_PREFIX, 0x77);
        assert!(
            !f.matches(&n),
            "the issuer's GID, not the port in the details"
        );
        let mut f = all_of(65);
        (f.lid_range_begin, f.lid_range_end) = (5, 9);
        assert!(f.matches(&n));
        (f.lid_range_begin, f.lid_range_end) = (8, 9);
        assert!(!f.matches(&n));
        (f.lid_range_begin, f.lid_range_end) = (7, 0);
        assert!(!f.matches(&n), "End 0 matches nothing, as in OpenSM");
    }

    #[test]
    fn malformed_subscriptions_are_refused() {
        let mut ii = InformInfoRepr::generic_subscription(TrapNumber(65), true, 1, 19);
        ii.subscribe = 2;
        assert_eq!(Filter::of(&ii, false), Err(Invalid::Subscribe(2)));
        let mut ii = InformInfoRepr::generic_subscription(TrapNumber(65), true, 1, 19);
        ii.is_generic = 7;
        assert_eq!(Filter::of(&ii, false), Err(Invalid::IsGeneric(7)));
        let ii = InformInfoRepr::generic_subscription(TrapNumber(257), true, 1, 19);
        assert_eq!(
            Filter::of(&ii, false),
            Err(Invalid::SecurityTrapUntrusted(257))
        );
        assert!(Filter::of(&ii, true).is_ok(), "with the SM_Key");
    }

    #[test]
    fn a_filter_gives_back_its_inform_info() {
        let ii = InformInfoRepr::generic_subscription(TrapNumber(66), true, 1, 19);
        let f = Filter::of(&ii, false).unwrap();
        assert_eq!(f.inform_info(true, 1, 19), ii);
        let off = f.inform_info(false, 1, 19);
        assert_eq!((off.subscribe, Filter::of(&off, false).unwrap()), (0, f));
    }

    #[test]
    fn logs_show_what_a_filter_selects() {
        let f = Filter {
            gid: Gid::ZERO,
            lid_range_begin: 0xFFFF,
            lid_range_end: 0,
            is_generic: true,
            notice_type: 0xFFFF,
            trap_or_device: 64,
            producer_or_vendor: 0xFF_FFFF,
        };
        assert_eq!(
            f.to_string(),
            "generic trap 64, type all, producer all, from anyone"
        );
        let g = Gid::new(Gid::DEFAULT_PREFIX, 9);
        let vendor = Filter {
            gid: g,
            is_generic: false,
            producer_or_vendor: 0x2c9,
            ..f
        };
        assert_eq!(
            vendor.to_string(),
            format!("vendor device 64, type all, vendor 0x2c9, from {g}")
        );
    }
}
