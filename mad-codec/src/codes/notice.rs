wire_code! {
    /// Trap number of a generic Notice (and TrapNumber of InformInfo).
    pub struct TrapNumber(u16) {
        /// GID in service (the SM's Notice when a port comes up).
        GID_IN_SERVICE = 64,
        /// GID out of service (a port went away).
        GID_OUT_OF_SERVICE = 65,
        /// Multicast group created.
        MC_GROUP_CREATED = 66,
        /// Multicast group deleted.
        MC_GROUP_DELETED = 67,
        /// Link state of a switch port changed.
        LINK_STATE_CHANGE = 128,
        /// Local link integrity threshold reached.
        LINK_INTEGRITY = 129,
        /// Excessive buffer overrun threshold reached.
        BUFFER_OVERRUN = 130,
        /// Flow control update watchdog timer expired.
        FLOW_CONTROL_WATCHDOG = 131,
        /// Local changes (capability mask, node description, ...).
        LOCAL_CHANGES = 144,
        /// SystemImageGUID changed.
        SYSTEM_IMAGE_GUID_CHANGED = 145,
        /// Bad M_Key.
        BAD_MKEY = 256,
        /// Bad P_Key.
        BAD_PKEY = 257,
        /// Bad Q_Key.
        BAD_QKEY = 258,
        /// Bad P_Key at a switch external port.
        BAD_PKEY_SWITCH = 259,
        /// "All traps" in an InformInfo subscription.
        ALL = 0xFFFF,
    }
}

wire_code! {
    /// Notice type (Notice byte 0, bits 6..0).
    pub struct NoticeType(u8) {
        /// Fatal.
        FATAL = 0,
        /// Urgent.
        URGENT = 1,
        /// Security.
        SECURITY = 2,
        /// Subnet management.
        SUBNET_MANAGEMENT = 3,
        /// Informational.
        INFORMATIONAL = 4,
        /// Empty notice.
        EMPTY = 0x7F,
    }
}

wire_code! {
    /// ProducerType of a generic Notice (24 bits on the wire).
    pub struct ProducerType(u32) {
        /// Channel adapter.
        CA = 1,
        /// Switch.
        SWITCH = 2,
        /// Router.
        ROUTER = 3,
        /// Class manager (the SM itself).
        CLASS_MANAGER = 4,
        /// "All producers" in an InformInfo subscription.
        ALL = 0xFF_FFFF,
    }
}

wire_code! {
    /// NodeType of NodeInfo.
    pub struct NodeType(u8) {
        /// Channel adapter.
        CA = 1,
        /// Switch.
        SWITCH = 2,
        /// Router.
        ROUTER = 3,
    }
}
