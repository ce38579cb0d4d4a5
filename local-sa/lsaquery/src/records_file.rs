//! PathRecords from a text dump: what `saquery -p` and `lsaquery -p` print
//! ("PathRecord dump:" blocks of `name....value` lines). A dump of one SA
//! is how its paths are loaded into another.

use mad_codec::PathRecord;
use mad_codec::zerocopy::{FromZeros, IntoBytes};

/// Where each printed field lives in the 64-byte record.
const FIELDS: [(&str, std::ops::Range<usize>); 16] = [
    ("service_id", 0..8),
    ("dgid", 8..24),
    ("sgid", 24..40),
    ("dlid", 40..42),
    ("slid", 42..44),
    ("hop_flow_raw", 44..48),
    ("tclass", 48..49),
    ("num_path_revers", 49..50),
    ("pkey", 50..52),
    // qos_class (12 bits) and sl (4 bits) share bytes 52..54.
    ("qos_class", 52..54),
    ("sl", 52..54),
    ("mtu", 54..55),
    ("rate", 55..56),
    ("pkt_life", 56..57),
    ("preference", 57..58),
    ("resv2", 58..64),
];

/// Every PathRecord in `text`, in order. Errors name the line.
pub(crate) fn parse(text: &str) -> Result<Vec<PathRecord>, String> {
    let mut records = Vec::new();
    let mut current: Option<(PathRecord, usize, u32)> = None;
    let finish =
        |c: Option<(PathRecord, usize, u32)>, out: &mut Vec<PathRecord>| -> Result<(), String> {
            if let Some((r, line, seen)) = c {
                let missing: Vec<&str> = FIELDS
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| seen & (1 << i) == 0)
                    .map(|(_, (n, _))| *n)
                    .collect();
                if !missing.is_empty() {
                    return Err(format!(
                        "line {line}: PathRecord without {}",
                        missing.join(", ")
                    ));
                }
                out.push(r);
            }
            Ok(())
        };
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim();
        if line == "PathRecord dump:" {
            finish(current.take(), &mut records)?;
            current = Some((PathRecord::new_zeroed(), n, 0));
            continue;
        }
        if line.is_empty() {
            continue;
        }
        let Some((record, _, seen)) = current.as_mut() else {
            return Err(format!(
                "line {n}: expected \"PathRecord dump:\", found {line:?}"
            ));
        };
        let (name, value) = split_field(line)
            .ok_or_else(|| format!("line {n}: expected name....value, found {line:?}"))?;
        let index = FIELDS
            .iter()
            .position(|(f, _)| *f == name)
            .ok_or_else(|| format!("line {n}: unknown field {name:?}"))?;
        set(record, name, value).map_err(|e| format!("line {n}: {name}: {e}"))?;
        *seen |= 1 << index;
    }
    finish(current, &mut records)?;
    Ok(records)
}

/// `name....value` → (name, value).
fn split_field(line: &str) -> Option<(&str, &str)> {
    let dots = line.find("..")?;
    let name = &line[..dots];
    let value = line[dots..].trim_start_matches('.');
    Some((name, value))
}

fn set(r: &mut PathRecord, name: &str, value: &str) -> Result<(), String> {
    match name {
        "dgid" => r.set_dgid(value.parse().map_err(|e| format!("{e}"))?),
        "sgid" => r.set_sgid(value.parse().map_err(|e| format!("{e}"))?),
        "qos_class" => {
            r.set_qos_class(local_sa_core::text::number::<u16>(value).and_then(fits(0xFFF))?)
        }
        "sl" => r.set_sl(local_sa_core::text::number::<u8>(value).and_then(fits(0xF))?),
        _ => {
            let range = FIELDS
                .iter()
                .find(|(f, _)| *f == name)
                .map(|(_, r)| r.clone())
                .ok_or("unknown field")?;
            let width = range.len();
            let v = local_sa_core::text::number::<u64>(value)?;
            if width < 8 && v >> (width * 8) != 0 {
                return Err(format!("{value} does not fit in {width} bytes"));
            }
            let bytes = v.to_be_bytes();
            r.as_mut_bytes()[range].copy_from_slice(&bytes[8 - width..]);
        }
    }
    Ok(())
}

fn fits<T: Into<u64> + Copy>(max: u64) -> impl Fn(T) -> Result<T, String> {
    move |v| {
        if v.into() <= max {
            Ok(v)
        } else {
            Err(format!("{} exceeds {max:#x}", v.into()))
        }
    }
}

/// `records` as a text dump [`parse`] reads back.
#[cfg(test)]
fn dump(records: &[PathRecord]) -> String {
    records
        .iter()
        .map(|r| crate::print::path_record(r).to_text())
        .collect()
}

#[cfg(test)]
mod tests_support {
    use mad_codec::{Gid, Mtu, PathRecord, PathRecordRepr, Rate, Selector};

    pub(super) fn sample(slid: u16) -> PathRecord {
        PathRecordRepr {
            service_id: 0x1000_0000_0000_0042,
            sgid: Gid::new(Gid::DEFAULT_PREFIX, 0x10_0000 + u64::from(slid)),
            dgid: Gid::new(Gid::DEFAULT_PREFIX, 0x20_0001),
            slid,
            dlid: 0xBFFF,
            raw_traffic: false,
            flow_label: 0xABCDE,
            hop_limit: 0xFF,
            tclass: 0x12,
            reversible: true,
            numb_path: 3,
            pkey: 0x8001,
            qos_class: 0xABC,
            sl: 0xD,
            mtu_selector: Selector::Exactly,
            mtu: Mtu::MTU_4096,
            rate_selector: Selector::GreaterThan,
            rate: Rate::GBPS_100,
            packet_life_selector: Selector::LessThan,
            packet_life: 18,
            preference: 2,
        }
        .to_wire()
    }
}

#[cfg(test)]
mod tests {
    use super::tests_support::sample;
    use super::*;

    #[test]
    fn a_dump_reads_back_to_the_same_bytes() {
        let records: Vec<PathRecord> = (1..=5).map(sample).collect();
        let back = parse(&dump(&records)).unwrap();
        assert_eq!(back.len(), 5);
        for (a, b) in records.iter().zip(&back) {
            assert_eq!(a.as_bytes(), b.as_bytes());
        }
    }

    #[test]
    fn saquery_output_is_read() {
        let text = "PathRecord dump:
\t\tservice_id..............0x0000000000000000
\t\tdgid....................fe80::10:1
\t\tsgid....................fe80::10:4
\t\tdlid....................1
\t\tslid....................4
\t\thop_flow_raw............0x0
\t\ttclass..................0x0
\t\tnum_path_revers.........0x80
\t\tpkey....................0xFFFF
\t\tqos_class...............0x0
\t\tsl......................0x0
\t\tmtu.....................0x84
\t\trate....................0x83
\t\tpkt_life................0x92
\t\tpreference..............0x0
\t\tresv2...................0x000000000000
";
        let r = parse(text).unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].slid(), r[0].dlid(), r[0].pkey()), (4, 1, 0xFFFF));
        assert_eq!(r[0].as_bytes()[54..57], [0x84, 0x83, 0x92]);
    }

    #[test]
    fn bad_dumps_say_which_line() {
        let good = dump(&[sample(1)]);
        let e = parse(&good.replace(
            "dlid....................49151",
            "dlid....................65536",
        ))
        .unwrap_err();
        assert!(e.starts_with("line 5: dlid:"), "{e}");
        let e = parse(&good.replace("\t\tpkey....................0x8001\n", "")).unwrap_err();
        assert!(e.contains("PathRecord without pkey"), "{e}");
        assert!(
            parse("hello\n")
                .unwrap_err()
                .starts_with("line 1: expected \"PathRecord dump:\"")
        );
        let e = parse(&good.replace(
            "sl......................0xD",
            "sl......................0x1F",
        ))
        .unwrap_err();
        assert!(e.contains("sl: 31 exceeds 0xf"), "{e}");
        assert_eq!(parse("").unwrap().len(), 0);
    }
}

#[cfg(test)]
mod cross_check {
    use super::*;

    /// The conformance crate writes saquery's format on its own; what it
    /// writes must read back to the same bytes.
    #[test]
    fn another_writer_of_the_format_reads_back() {
        let records: Vec<PathRecord> = (1..=40u16)
            .map(|i| {
                let mut r = tests_support::sample(i);
                r.set_dlid(0x100 + i);
                r
            })
            .collect();
        let text: String = records
            .iter()
            .map(conformance::saquery::path_record_dump)
            .collect();
        let back = parse(&text).unwrap();
        assert_eq!(back.len(), records.len());
        for (a, b) in records.iter().zip(&back) {
            assert_eq!(
                a.as_bytes(),
                b.as_bytes(),
                "\n{}",
                conformance::saquery::path_record_dump(a)
            );
        }
    }
}
