wire_code! {
    /// Management class (MAD byte 1).
    pub struct MgmtClass(u8) {
        /// Subnet Management, LID routed.
        SUBN_LID_ROUTED = 0x01,
        /// Subnet Administration: the class this crate is about.
        SUBN_ADM = 0x03,
        /// Performance Management.
        PERF_MGMT = 0x04,
        /// Baseboard Management.
        BM = 0x05,
        /// Device Management.
        DEV_MGMT = 0x06,
        /// Communication Management.
        COMM_MGMT = 0x07,
        /// SNMP tunnelling.
        SNMP = 0x08,
        /// Subnet Management, directed route.
        SUBN_DIRECTED_ROUTE = 0x81,
    }
}

impl MgmtClass {
    /// The ClassVersion this crate speaks for Subnet Administration.
    pub const SA_CLASS_VERSION: u8 = 2;
}
