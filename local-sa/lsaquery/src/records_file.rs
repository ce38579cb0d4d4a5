//! PathRecords from a text dump: what `saquery -p` and `lsaquery -p` print
//! ("PathRecord dump:" blocks of `name....value` lines). A dump of one SA
//! is how its paths are loaded into another.
//!
//! Lines that begin with `#` are comments, but for two that open a
//! section: [`DEFAULT_TABLES`] and [`PARTITION_TABLES`]. A distributor's
//! snapshot uses them to keep apart the default tables' records and the
//! partition tables' (the same pair may be in both, with the same bytes);
//! records before either belong to whichever table the reader loads.

use mad_codec::PathRecord;
use mad_codec::zerocopy::{FromZeros, IntoBytes};

use crate::json::JSON_SCHEMA;

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

/// The line that opens a section of default tables' records.
pub(crate) const DEFAULT_TABLES: &str = "# local-sa: default tables";
/// The line that opens a section of partition tables' records (each in
/// its P_Key's partition's table).
pub(crate) const PARTITION_TABLES: &str = "# local-sa: partition tables";

/// A dump's records by section, each in order.
#[derive(Debug, Default)]
pub(crate) struct Dump {
    /// Before any section line: of whichever table the reader loads.
    pub(crate) unmarked: Vec<PathRecord>,
    pub(crate) default: Vec<PathRecord>,
    pub(crate) partitions: Vec<PathRecord>,
}

impl Dump {
    /// The records of the default tables (`partitions`: of the partition
    /// tables), the unmarked ones first.
    pub(crate) fn table(self, partitions: bool) -> Vec<PathRecord> {
        let mut records = self.unmarked;
        records.extend(if partitions {
            self.partitions
        } else {
            self.default
        });
        records
    }
}

/// Every PathRecord in `text`, in order: a text dump, or the JSON lines
/// `lsaquery -p --json` and `lsaquery --dump --json` print. Errors name
/// the line.
#[cfg(test)]
pub(crate) fn parse(text: &str) -> Result<Vec<PathRecord>, String> {
    let d = parse_sections(text)?;
    Ok([d.unmarked, d.default, d.partitions].concat())
}

/// The PathRecords of `text` by section (JSON lines have none).
pub(crate) fn parse_sections(text: &str) -> Result<Dump, String> {
    if text.trim_start().starts_with('{') {
        Ok(Dump {
            unmarked: parse_json(text)?,
            ..Dump::default()
        })
    } else {
        parse_text(text)
    }
}

/// One record being read: its fields so far, and where it began.
struct Partial {
    record: PathRecord,
    line: usize,
    /// Bit i: `FIELDS[i]` seen.
    seen: u32,
}

impl Partial {
    fn new(line: usize) -> Self {
        Self {
            record: PathRecord::new_zeroed(),
            line,
            seen: 0,
        }
    }

    /// Sets field `name` from its printed `value`; `at` names the line.
    fn set(&mut self, at: usize, name: &str, value: &str) -> Result<(), String> {
        let index = FIELDS
            .iter()
            .position(|(f, _)| *f == name)
            .ok_or_else(|| format!("line {at}: unknown field {name:?}"))?;
        set(&mut self.record, name, value).map_err(|e| format!("line {at}: {name}: {e}"))?;
        self.seen |= 1 << index;
        Ok(())
    }

    /// The record, if every field was given.
    fn finish(self) -> Result<PathRecord, String> {
        let missing: Vec<&str> = FIELDS
            .iter()
            .enumerate()
            .filter(|(i, _)| self.seen & (1 << i) == 0)
            .map(|(_, (n, _))| *n)
            .collect();
        if missing.is_empty() {
            Ok(self.record)
        } else {
            Err(format!(
                "line {}: PathRecord without {}",
                self.line,
                missing.join(", ")
            ))
        }
    }
}

/// "PathRecord dump:" blocks of `name....value` lines, in sections.
fn parse_text(text: &str) -> Result<Dump, String> {
    // Unmarked, default tables', partition tables'.
    let mut sections: [Vec<PathRecord>; 3] = Default::default();
    let mut at = 0;
    let mut current: Option<Partial> = None;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim();
        if line == "PathRecord dump:" {
            if let Some(done) = current.replace(Partial::new(n)) {
                sections[at].push(done.finish()?);
            }
            continue;
        }
        if line.is_empty() {
            continue;
        }
        if line.starts_with('#') {
            let section = match line {
                DEFAULT_TABLES => 1,
                PARTITION_TABLES => 2,
                _ if line.starts_with("# local-sa:") => {
                    return Err(format!(
                        "line {n}: unknown section {line:?} (a newer lsaquery's?)"
                    ));
                }
                _ => continue,
            };
            if let Some(done) = current.take() {
                sections[at].push(done.finish()?);
            }
            at = section;
            continue;
        }
        let Some(partial) = current.as_mut() else {
            return Err(format!(
                "line {n}: expected \"PathRecord dump:\", found {line:?}"
            ));
        };
        let (name, value) = split_field(line)
            .ok_or_else(|| format!("line {n}: expected name....value, found {line:?}"))?;
        partial.set(n, name, value)?;
    }
    if let Some(done) = current {
        sections[at].push(done.finish()?);
    }
    let [unmarked, default, partitions] = sections;
    Ok(Dump {
        unmarked,
        default,
        partitions,
    })
}

/// One JSON object per line (docs/json.md): PathRecords of schema
/// [`JSON_SCHEMA`], with the fields of the text dump under the same names;
/// `mtu_bytes` and `rate_gbps`, which only explain `mtu` and `rate`, are
/// not read.
fn parse_json(text: &str) -> Result<Vec<PathRecord>, String> {
    let mut records = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let object: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(line).map_err(|e| format!("line {n}: not a JSON object: {e}"))?;
        match object.get("schema").and_then(serde_json::Value::as_u64) {
            Some(v) if v == u64::from(JSON_SCHEMA) => {}
            other => {
                return Err(format!(
                    "line {n}: schema {other:?}: this lsaquery reads schema {JSON_SCHEMA}"
                ));
            }
        }
        let kind = object.get("record").and_then(serde_json::Value::as_str);
        if kind != Some("PathRecord") {
            return Err(format!("line {n}: a {kind:?} record, not a PathRecord"));
        }
        let mut partial = Partial::new(n);
        for (name, value) in &object {
            if matches!(
                name.as_str(),
                "schema" | "record" | "mtu_bytes" | "rate_gbps"
            ) {
                continue;
            }
            let value = match value {
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Number(v) => v.to_string(),
                other => return Err(format!("line {n}: {name}: not a number or string: {other}")),
            };
            partial.set(n, name, &value)?;
        }
        records.push(partial.finish()?);
    }
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
        "qos_class" => r.set_qos_class(local_sa_cli::number::<u16>(value).and_then(fits(0xFFF))?),
        "sl" => r.set_sl(local_sa_cli::number::<u8>(value).and_then(fits(0xF))?),
        _ => {
            let range = FIELDS
                .iter()
                .find(|(f, _)| *f == name)
                .map(|(_, r)| r.clone())
                .ok_or("unknown field")?;
            let width = range.len();
            let v = local_sa_cli::number::<u64>(value)?;
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
    fn json_lines_read_back_to_the_same_bytes() {
        let mut records: Vec<PathRecord> = (1..=5).map(sample).collect();
        records[2].set_service_id(0xFEDC_BA98_7654_3210);
        let json: String = records
            .iter()
            .map(|r| crate::print::path_record(r).to_json() + "\n")
            .collect();
        let back = parse(&json).unwrap();
        assert_eq!(back.len(), 5);
        for (a, b) in records.iter().zip(&back) {
            assert_eq!(a.as_bytes(), b.as_bytes());
        }
        let line = json.lines().next().unwrap();
        for (bad, why) in [
            (
                line.replace("\"schema\":1", "\"schema\":2"),
                "line 1: schema Some(2)",
            ),
            (
                line.replace("PathRecord", "NodeRecord"),
                "line 1: a Some(\"NodeRecord\") record",
            ),
            (
                line.replace("\"dlid\":", "\"dlidd\":"),
                "line 1: unknown field \"dlidd\"",
            ),
            (
                line.replace(",\"pkey\":32769", ""),
                "line 1: PathRecord without pkey",
            ),
            (
                line.replace("\"slid\":", "\"slid\":true,\"x\":"),
                "line 1: slid: not a number",
            ),
            (format!("{line}\n{{"), "line 2: not a JSON object"),
        ] {
            let e = parse(&bad).unwrap_err();
            assert!(e.starts_with(why), "{e}\n{bad}");
        }
    }

    #[test]
    fn saquery_output_is_read() {
        let text = crate::print::SAQUERY_PATH_RECORD_TEXT;
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

    #[test]
    fn sections_keep_the_default_and_partition_tables_apart() {
        let (a, b, c) = (sample(1), sample(2), sample(3));
        let text = format!(
            "# a comment\n{}{DEFAULT_TABLES}\n{}# another\n{}\n{PARTITION_TABLES}\n{}",
            dump(&[a]),
            dump(&[b]),
            dump(&[c]),
            dump(&[a])
        );
        let d = parse_sections(&text).unwrap();
        assert_eq!(
            (d.unmarked.len(), d.default.len(), d.partitions.len()),
            (1, 2, 1)
        );
        assert_eq!(d.default[1].slid(), 3, "comments are passed over");
        let default = parse_sections(&text).unwrap().table(false);
        let partitions = parse_sections(&text).unwrap().table(true);
        assert_eq!(
            default.iter().map(PathRecord::slid).collect::<Vec<_>>(),
            [1, 2, 3]
        );
        assert_eq!(
            partitions.iter().map(PathRecord::slid).collect::<Vec<_>>(),
            [1, 1]
        );
        let e = parse_sections("# local-sa: qos tables\n").unwrap_err();
        assert!(e.starts_with("line 1: unknown section"), "{e}");
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
