wire_code! {
    /// MAD Status (bytes 4–5): class-independent bits 0..7 and the SA's
    /// class-specific code in bits 8..15.
    pub struct MadStatus(u16) {
        /// Success.
        OK = 0x0000,
        /// Busy: the request may be retried later.
        BUSY = 0x0001,
        /// Redirect required (see ClassPortInfo).
        REDIRECT = 0x0002,
        /// Bad BaseVersion or ClassVersion.
        BAD_VERSION = 0x0004,
        /// Method not supported.
        METHOD_UNSUPPORTED = 0x0008,
        /// Method/attribute combination not supported.
        METHOD_ATTR_UNSUPPORTED = 0x000C,
        /// An attribute field or the modifier has an invalid value.
        INVALID_ATTR_VALUE = 0x001C,
        /// SA: not enough resources to complete the request.
        ERR_NO_RESOURCES = 0x0100,
        /// SA: the request is invalid.
        ERR_REQ_INVALID = 0x0200,
        /// SA: a Get matched no record.
        ERR_NO_RECORDS = 0x0300,
        /// SA: a Get matched more than one record.
        ERR_TOO_MANY_RECORDS = 0x0400,
        /// SA: a GID in the request is invalid.
        ERR_REQ_INVALID_GID = 0x0500,
        /// SA: the component mask lacks components the request needs.
        ERR_REQ_INSUFFICIENT_COMPONENTS = 0x0600,
        /// SA: the request was denied (here: a load without the SM_Key).
        ERR_REQ_DENIED = 0x0700,
        /// SA: the priority of the request is suggested elsewhere.
        ERR_PRIORITY_SUGGESTED = 0x0800,
    }
}

impl MadStatus {
    /// True when no bit is set.
    pub const fn is_ok(self) -> bool {
        self.0 == 0
    }

    /// The Busy bit.
    pub const fn is_busy(self) -> bool {
        self.0 & 0x0001 != 0
    }

    /// The Redirect-required bit.
    pub const fn is_redirect(self) -> bool {
        self.0 & 0x0002 != 0
    }

    /// The 3-bit "invalid field" code of bits 2..4 (1 = bad version,
    /// 2 = method, 3 = method/attribute, 7 = attribute value).
    pub const fn invalid_field(self) -> u8 {
        ((self.0 >> 2) & 0x7) as u8
    }

    /// The class-specific code of bits 8..15 (the SA's `ERR_*` codes >> 8).
    pub const fn class_code(self) -> u8 {
        (self.0 >> 8) as u8
    }

    /// The status by the specification's names, parts joined with `+`
    /// (`ERR_REQ_INVALID`, `BUSY+ERR_NO_RECORDS`, `OK`); a code without a
    /// name is shown by number (`ERR_0x0a`, `INVALID_FIELD_5`).
    pub fn names(self) -> String {
        if let Some(name) = self.name() {
            return name.into();
        }
        let mut parts: Vec<String> = Vec::new();
        if self.is_busy() {
            parts.push("BUSY".into());
        }
        if self.is_redirect() {
            parts.push("REDIRECT".into());
        }
        match self.invalid_field() {
            0 => {}
            code => parts.push(match Self(u16::from(code) << 2).name() {
                Some(name) => name.into(),
                None => format!("INVALID_FIELD_{code}"),
            }),
        }
        match self.class_code() {
            0 => {}
            code => parts.push(match Self(u16::from(code) << 8).name() {
                Some(name) => name.into(),
                None => format!("ERR_{code:#04x}"),
            }),
        }
        parts.join("+")
    }

    /// What the status means, in words, for messages.
    pub fn describe(self) -> String {
        let mut parts = Vec::new();
        if self.is_busy() {
            parts.push("busy, retry later");
        }
        if self.is_redirect() {
            parts.push("redirect required");
        }
        parts.push(match self.invalid_field() {
            0 => "",
            1 => "bad BaseVersion or ClassVersion",
            2 => "method not supported",
            3 => "method/attribute combination not supported",
            7 => "invalid attribute field or modifier",
            _ => "invalid field (reserved code)",
        });
        parts.push(match self.class_code() {
            0 => "",
            1 => "SA out of resources",
            2 => "invalid request",
            3 => "no record matches",
            4 => "more than one record matches a Get",
            5 => "invalid GID",
            6 => "component mask lacks required components",
            7 => "request denied",
            8 => "priority suggested",
            _ => "class-specific error",
        });
        parts.retain(|p| !p.is_empty());
        if parts.is_empty() {
            "success".into()
        } else {
            parts.join("; ")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::MadStatus;

    #[test]
    fn fields() {
        assert_eq!(MadStatus::METHOD_ATTR_UNSUPPORTED.invalid_field(), 3);
        assert_eq!(MadStatus::BAD_VERSION.invalid_field(), 1);
        assert_eq!(MadStatus::ERR_REQ_INVALID.class_code(), 2);
        assert!(MadStatus::OK.is_ok());
        let both = MadStatus(0x0301);
        assert!(both.is_busy());
        assert_eq!(both.class_code(), 3);
        assert_eq!(format!("{both:?}"), "MadStatus(0x301)");
        assert_eq!(both.describe(), "busy, retry later; no record matches");
        assert_eq!(
            MadStatus::METHOD_ATTR_UNSUPPORTED.describe(),
            "method/attribute combination not supported"
        );
        assert_eq!(MadStatus::OK.describe(), "success");
        assert_eq!(MadStatus::ERR_REQ_INVALID.names(), "ERR_REQ_INVALID");
        assert_eq!(both.names(), "BUSY+ERR_NO_RECORDS");
        assert_eq!(MadStatus(0x0a14).names(), "INVALID_FIELD_5+ERR_0x0a");
    }
}
