wire_code! {
    /// Attribute ID (MAD bytes 16–17) of the Subnet Administration class.
    pub struct AttributeId(u16) {
        /// ClassPortInfo.
        CLASS_PORT_INFO = 0x0001,
        /// Notice (the payload of Reports).
        NOTICE = 0x0002,
        /// InformInfo (subscriptions).
        INFORM_INFO = 0x0003,
        /// NodeRecord.
        NODE_RECORD = 0x0011,
        /// PortInfoRecord.
        PORT_INFO_RECORD = 0x0012,
        /// SLtoVLMappingTableRecord.
        SL_TO_VL_MAPPING_TABLE_RECORD = 0x0013,
        /// SwitchInfoRecord.
        SWITCH_INFO_RECORD = 0x0014,
        /// LinearForwardingTableRecord.
        LINEAR_FORWARDING_TABLE_RECORD = 0x0015,
        /// RandomForwardingTableRecord.
        RANDOM_FORWARDING_TABLE_RECORD = 0x0016,
        /// MulticastForwardingTableRecord.
        MULTICAST_FORWARDING_TABLE_RECORD = 0x0017,
        /// SMInfoRecord.
        SM_INFO_RECORD = 0x0018,
        /// LinkRecord.
        LINK_RECORD = 0x0020,
        /// GUIDInfoRecord.
        GUID_INFO_RECORD = 0x0030,
        /// ServiceRecord.
        SERVICE_RECORD = 0x0031,
        /// P_KeyTableRecord.
        PKEY_TABLE_RECORD = 0x0033,
        /// PathRecord.
        PATH_RECORD = 0x0035,
        /// VLArbitrationTableRecord.
        VL_ARBITRATION_TABLE_RECORD = 0x0036,
        /// MCMemberRecord.
        MC_MEMBER_RECORD = 0x0038,
        /// TraceRecord.
        TRACE_RECORD = 0x0039,
        /// MultiPathRecord.
        MULTI_PATH_RECORD = 0x003A,
        /// ServiceAssociationRecord.
        SERVICE_ASSOCIATION_RECORD = 0x003B,
        /// InformInfoRecord.
        INFORM_INFO_RECORD = 0x00F3,
    }
}
