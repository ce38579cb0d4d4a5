//! Reading what saquery prints: the MAD hex dumps of `-d -d` and the
//! `name.....value` record dumps of its normal output.

/// The MADs saquery printed with `-d -d`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MadDump {
    /// The request it sent (256 bytes).
    pub request: Vec<u8>,
    /// The response it received, at the length it received it.
    pub response: Option<Vec<u8>>,
}

/// Extracts the first `SA Request:` / `SA Response:` hex dumps from
/// saquery's (or lsaquery's) `-d -d` output.
pub fn parse_mad_dump(output: &str) -> Option<MadDump> {
    let blocks = mad_blocks(output);
    let find = |label: &str| {
        blocks
            .iter()
            .find(|(l, _)| l == label)
            .map(|(_, b)| b.clone())
    };
    Some(MadDump {
        request: find("SA Request")?,
        response: find("SA Response"),
    })
}

/// The status and data (the records from the AttributeOffset on) of the
/// SA answer saquery or lsaquery printed with `-d`; `None` when no answer
/// was printed or it does not decode as an SA MAD.
pub fn printed_answer(output: &str) -> Option<(mad_codec::MadStatus, Vec<u8>)> {
    let mad = parse_mad_dump(output)?.response?;
    let m = mad_codec::SaMad::parse(&mad).ok()?;
    Some((m.mad().status(), m.data().to_vec()))
}

/// True for a line of hex groups, as MAD dumps are printed (groups of two
/// bytes, the last of an odd-length dump one byte).
pub fn is_hex_line(line: &str) -> bool {
    let groups: Vec<&str> = line.split_whitespace().collect();
    !groups.is_empty()
        && groups
            .iter()
            .all(|g| (g.len() == 4 || g.len() == 2) && g.chars().all(|c| c.is_ascii_hexdigit()))
}

/// Every hex dump in `output`, in order, with the label of the line before
/// it (`SA Request`, `SA Response`, `SA Report`, ...).
pub fn mad_blocks(output: &str) -> Vec<(String, Vec<u8>)> {
    let mut blocks = Vec::new();
    let mut lines = output.lines().peekable();
    while let Some(line) = lines.next() {
        let Some(label) = line.trim().strip_suffix(':') else {
            continue;
        };
        let mut hex = String::new();
        while let Some(next) = lines.next_if(|l| is_hex_line(l)) {
            hex.push_str(next);
            hex.push(' ');
        }
        if let Ok(bytes) = mad_codec::hex::parse(&hex)
            && !bytes.is_empty()
        {
            blocks.push((label.trim().to_owned(), bytes));
        }
    }
    blocks
}

/// One record as saquery prints it: a heading line (`PathRecord dump:`)
/// and its `name.....value` fields, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrintedRecord {
    /// The heading, without the trailing colon.
    pub heading: String,
    /// The fields: name and value, both trimmed.
    pub fields: Vec<(String, String)>,
}

impl PrintedRecord {
    /// The value of field `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The value of field `name`, as a number written in decimal or `0x` hex.
    pub fn number(&self, name: &str) -> Option<u64> {
        parse_number(self.get(name)?)
    }
}

/// Parses `123` or `0x7B`.
pub fn parse_number(text: &str) -> Option<u64> {
    let t = text.trim();
    match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => t.parse().ok(),
    }
}

/// A list of LIDs and ranges as tools take them: `4,7,20-40`.
pub fn parse_lids(text: &str) -> Result<Vec<u16>, String> {
    let mut lids = Vec::new();
    for part in text.split(',') {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let lid = |v: &str| {
            parse_number(v)
                .and_then(|n| u16::try_from(n).ok())
                .ok_or(format!("{text}: {v} is not a LID"))
        };
        lids.extend(lid(a)?..=lid(b)?);
    }
    Ok(lids)
}

/// Every record saquery printed in its normal (dotted) format.
pub fn parse_printed_records(output: &str) -> Vec<PrintedRecord> {
    let mut records: Vec<PrintedRecord> = Vec::new();
    for line in output.lines() {
        let starts_indented = line.starts_with([' ', '\t']);
        let trimmed = line.trim();
        if !starts_indented && trimmed.ends_with(':') && !trimmed.is_empty() {
            records.push(PrintedRecord {
                heading: trimmed.trim_end_matches(':').trim().to_owned(),
                fields: Vec::new(),
            });
        } else if starts_indented {
            let Some(record) = records.last_mut() else {
                continue;
            };
            let Some(dots) = trimmed.find("..") else {
                continue;
            };
            let name = trimmed[..dots].trim().to_owned();
            let value = trimmed[dots..].trim_start_matches('.').trim().to_owned();
            record.fields.push((name, value));
        }
    }
    records.retain(|r| !r.fields.is_empty());
    records
}

/// A PathRecord as saquery prints it (`PathRecord dump:` and 16 dotted
/// fields): the format `lsaquery --load` reads. Written from the IBA
/// layout, independently of lsaquery's printer.
pub fn path_record_dump(r: &mad_codec::PathRecord) -> String {
    use mad_codec::zerocopy::IntoBytes;
    let b = r.as_bytes();
    let be = |range: std::ops::Range<usize>| {
        b[range]
            .iter()
            .fold(0u64, |acc, x| acc << 8 | u64::from(*x))
    };
    let qos_sl = be(52..54);
    let fields: [(&str, String); 16] = [
        ("service_id", format!("0x{:016x}", be(0..8))),
        ("dgid", r.dgid().to_string()),
        ("sgid", r.sgid().to_string()),
        ("dlid", be(40..42).to_string()),
        ("slid", be(42..44).to_string()),
        ("hop_flow_raw", format!("0x{:x}", be(44..48))),
        ("tclass", format!("0x{:x}", b[48])),
        ("num_path_revers", format!("0x{:x}", b[49])),
        ("pkey", format!("0x{:04X}", be(50..52))),
        ("qos_class", format!("0x{:x}", qos_sl >> 4)),
        ("sl", format!("0x{:x}", qos_sl & 0xF)),
        ("mtu", format!("0x{:x}", b[54])),
        ("rate", format!("0x{:x}", b[55])),
        ("pkt_life", format!("0x{:x}", b[56])),
        ("preference", format!("0x{:x}", b[57])),
        ("resv2", format!("0x{:012X}", be(58..64))),
    ];
    let mut out = String::from("PathRecord dump:\n");
    for (name, value) in fields {
        out.push_str(&format!("\t\t{name:.<24}{value}\n"));
    }
    out
}

/// The PathRecord of a record printed as [`path_record_dump`] prints it
/// (and saquery, and lsaquery's dumps and snapshots); `None` if a field is
/// missing or unreadable.
pub fn path_record_from_printed(r: &PrintedRecord) -> Option<mad_codec::PathRecord> {
    use mad_codec::zerocopy::FromBytes as _;
    let mut b = [0u8; 64];
    let mut put = |range: std::ops::Range<usize>, value: u64| {
        let bytes = value.to_be_bytes();
        b[range.clone()].copy_from_slice(&bytes[8 - range.len()..]);
    };
    put(0..8, r.number("service_id")?);
    put(40..42, r.number("dlid")?);
    put(42..44, r.number("slid")?);
    put(44..48, r.number("hop_flow_raw")?);
    put(48..49, r.number("tclass")?);
    put(49..50, r.number("num_path_revers")?);
    put(50..52, r.number("pkey")?);
    put(52..54, r.number("qos_class")? << 4 | r.number("sl")?);
    put(54..55, r.number("mtu")?);
    put(55..56, r.number("rate")?);
    put(56..57, r.number("pkt_life")?);
    put(57..58, r.number("preference")?);
    put(58..64, r.number("resv2")?);
    let mut record = mad_codec::PathRecord::read_from_bytes(&b).ok()?;
    record.set_dgid(r.get("dgid")?.parse().ok()?);
    record.set_sgid(r.get("sgid")?.parse().ok()?);
    Some(record)
}

/// lsaquery options for a reference answer from OpenSM: four attempts of
/// four seconds each. The master may be busy sweeping, or the machine
/// loaded by other fabrics, and a reference that gives up after lsaquery's
/// default 1 s per attempt fails a test for nothing local-sa did.
pub const PATIENT: [&str; 4] = ["--timeout", "4000", "--retries", "3"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lid_lists_take_ranges() {
        assert_eq!(parse_lids("4,7,9-11"), Ok(vec![4, 7, 9, 10, 11]));
        assert_eq!(parse_lids("0x10"), Ok(vec![16]));
        assert!(parse_lids("4,x").is_err());
        assert!(parse_lids("70000").is_err());
    }

    #[test]
    fn a_printed_path_record_reads_back_to_its_bytes() {
        use mad_codec::zerocopy::{FromBytes as _, IntoBytes as _};
        let bytes: Vec<u8> = (0..64u8).map(|i| i.wrapping_mul(37)).collect();
        let r = mad_codec::PathRecord::read_from_bytes(&bytes).unwrap();
        let printed = parse_printed_records(&path_record_dump(&r));
        let back = path_record_from_printed(&printed[0]).unwrap();
        assert_eq!(back.as_bytes(), r.as_bytes());
    }

    const OUTPUT: &str = "SA Request:
0103 0201 0000 0000 0000 0000 568c 4277
0001 0000 0000 0000
SA Response:
0103 0281 0000 0000 0001 0000 568c 4277
0035 0000 
PathRecord dump:
\t\tservice_id..............0x0000000000000000
\t\tdgid....................fe80::20:0
\t\tdlid....................2
";

    #[test]
    fn dumps_and_records() {
        let d = parse_mad_dump(OUTPUT).unwrap();
        assert_eq!(d.request.len(), 24);
        assert_eq!(&d.request[..4], &[1, 3, 2, 1]);
        assert_eq!(d.response.unwrap().len(), 20);
        let r = parse_printed_records(OUTPUT);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].heading, "PathRecord dump");
        assert_eq!(r[0].get("dgid"), Some("fe80::20:0"));
        assert_eq!(r[0].number("dlid"), Some(2));
        assert_eq!(r[0].number("service_id"), Some(0));
    }
}
