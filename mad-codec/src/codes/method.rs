wire_code! {
    /// MAD method (byte 3), including the response bit (0x80).
    pub struct Method(u8) {
        /// Get: read one record.
        GET = 0x01,
        /// Set: write (SA: join, subscribe, register, load).
        SET = 0x02,
        /// Send.
        SEND = 0x03,
        /// Trap (SMA to SM).
        TRAP = 0x05,
        /// Report: the SA delivering a Notice to a subscriber.
        REPORT = 0x06,
        /// TrapRepress.
        TRAP_REPRESS = 0x07,
        /// GetTable: read every matching record.
        GET_TABLE = 0x12,
        /// GetTraceTable.
        GET_TRACE_TABLE = 0x13,
        /// GetMulti (dual-sided RMPP).
        GET_MULTI = 0x14,
        /// Delete: leave, unregister, unload.
        DELETE = 0x15,
        /// Response to Get and Set.
        GET_RESP = 0x81,
        /// Response to Report.
        REPORT_RESP = 0x86,
        /// Response to GetTable.
        GET_TABLE_RESP = 0x92,
        /// Response to GetTraceTable.
        GET_TRACE_TABLE_RESP = 0x93,
        /// Response to GetMulti.
        GET_MULTI_RESP = 0x94,
        /// Response to Delete.
        DELETE_RESP = 0x95,
    }
}

impl Method {
    /// The response bit of the method byte.
    pub const RESPONSE_BIT: u8 = 0x80;

    /// True for a response method (R bit set).
    pub const fn is_response(self) -> bool {
        self.0 & Self::RESPONSE_BIT != 0
    }

    /// The method with the response bit flipped, as RMPP ACKs, STOPs and
    /// ABORTs carry it.
    pub const fn toggle_response(self) -> Self {
        Self(self.0 ^ Self::RESPONSE_BIT)
    }

    /// The method that answers this request: the request with the R bit set,
    /// except that Set is answered with GetResp.
    pub const fn response(self) -> Self {
        if self.0 == Self::SET.0 {
            Self::GET_RESP
        } else {
            Self(self.0 | Self::RESPONSE_BIT)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Method;

    #[test]
    fn responses() {
        assert_eq!(Method::GET.response(), Method::GET_RESP);
        assert_eq!(Method::SET.response(), Method::GET_RESP);
        assert_eq!(Method::GET_TABLE.response(), Method::GET_TABLE_RESP);
        assert_eq!(Method::DELETE.response(), Method::DELETE_RESP);
        assert_eq!(Method::REPORT.response(), Method::REPORT_RESP);
        assert_eq!(Method::GET_TABLE_RESP.toggle_response(), Method::GET_TABLE);
        assert!(Method::GET_MULTI_RESP.is_response());
        assert!(!Method::GET_MULTI.is_response());
    }

    #[test]
    fn unknown_methods_round_trip_and_print_in_hex() {
        let m = Method::from(0x42);
        assert_eq!(u8::from(m), 0x42);
        assert_eq!(format!("{m:?}"), "Method(0x42)");
        assert_eq!(format!("{:?}", Method::GET_TABLE), "GET_TABLE");
    }
}
