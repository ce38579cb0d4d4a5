//! OpenSM's partitions file (`partitions.conf`), read as
//! `osm_prtn_config_parse_file` reads it: `#` to the end of a line a
//! comment; each definition `[Name][=PKey][,flag[=value]]... : members ;`,
//! which may run over several lines; a P_Key given twice is one partition
//! (the first name kept, the last definition's SL).
//!
//! Who is in a partition the master publishes (its P_KeyTableRecords); what
//! it does not publish is kept here: each partition's name (the QoS
//! policy's port groups name partitions) and its SL (`sl=`, which OpenSM
//! applies only with `qos TRUE`). OpenSM stops reading the file at a
//! definition it cannot parse and keeps what came before; local-sa refuses
//! the whole file then, with OpenSM's reason, since what follows is not
//! what OpenSM runs with.

use super::error::ConfigError;
use super::options::parse_number;

/// The default partition's P_Key (low 15 bits), which OpenSM makes
/// whatever the file says.
pub const DEFAULT_PKEY: u16 = 0x7FFF;

/// One partition of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partition {
    /// Its name (none if the definition gave only a P_Key).
    pub name: Option<String>,
    /// Its P_Key's low 15 bits; `None` when the file gives none and
    /// OpenSM makes one up (from a counter local-sa does not see).
    pub pkey: Option<u16>,
    /// Its SL (0 unless `sl=` and `qos TRUE`).
    pub sl: u8,
    /// The line of its first definition.
    pub line: usize,
}

/// The partitions of a `partitions.conf`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartitionConfig {
    /// The partitions, in the file's order, the default one among them.
    pub partitions: Vec<Partition>,
}

impl PartitionConfig {
    /// The partitions of `text`, as OpenSM with `qos` (its option) makes
    /// them; the default partition is among them whatever the file says.
    pub fn parse(text: &str, qos: bool) -> Result<Self, ConfigError> {
        let mut config = Self::default();
        let mut open: Option<Definition> = None;
        for (n, line) in text.lines().enumerate() {
            let lineno = n + 1;
            let line = line.split('#').next().unwrap_or_default();
            let mut statements = line.split(';').peekable();
            while let Some(part) = statements.next() {
                let ended = statements.peek().is_some();
                let members = match open.as_mut() {
                    Some(_) => part,
                    None if part.trim().is_empty() => continue,
                    None => {
                        let (header, members) = part.split_once(':').ok_or_else(|| {
                            ConfigError::partitions(lineno, "no partition definition found")
                        })?;
                        open = Some(Definition::header(header, lineno)?);
                        members
                    }
                };
                check_members(members, lineno)?;
                if ended && let Some(d) = open.take() {
                    config.add(d, qos);
                }
            }
        }
        if let Some(d) = open.take() {
            // The last definition needs no `;`: OpenSM keeps it.
            config.add(d, qos);
        }
        if config.by_pkey(DEFAULT_PKEY).is_none() {
            config.partitions.push(Partition {
                name: Some("Default".into()),
                pkey: Some(DEFAULT_PKEY),
                sl: 0,
                line: 0,
            });
        }
        Ok(config)
    }

    /// The partition named `name`.
    pub fn by_name(&self, name: &str) -> Option<&Partition> {
        self.partitions
            .iter()
            .find(|p| p.name.as_deref() == Some(name))
    }

    /// The partition of `pkey` (membership bit ignored).
    pub fn by_pkey(&self, pkey: u16) -> Option<&Partition> {
        self.partitions
            .iter()
            .find(|p| p.pkey == Some(pkey & 0x7FFF))
    }

    fn add(&mut self, d: Definition, qos: bool) {
        let sl = if qos { d.sl } else { 0 };
        if let Some(pkey) = d.pkey
            && let Some(p) = self.partitions.iter_mut().find(|p| p.pkey == Some(pkey))
        {
            // osm_prtn_make_new finds the partition; partition_create sets
            // its SL from this definition.
            p.sl = sl;
            return;
        }
        self.partitions.push(Partition {
            name: d.name,
            pkey: d.pkey,
            sl,
            line: d.line,
        });
    }
}

/// A definition being read.
struct Definition {
    name: Option<String>,
    pkey: Option<u16>,
    sl: u8,
    line: usize,
}

impl Definition {
    /// `[Name][=PKey][,flag[=value]]...`, as `parse_part_conf` reads it.
    fn header(header: &str, line: usize) -> Result<Self, ConfigError> {
        let mut tokens = header.split(',');
        let (name, id) = name_token(tokens.next().unwrap_or_default());
        let (name, id) = match (name, id) {
            (n, None) if n.starts_with(|c: char| c.is_ascii_digit()) => (None, Some(n)),
            (n, id) => ((!n.is_empty()).then_some(n), id),
        };
        let pkey = match id {
            None => None,
            Some(id) => Some(
                parse_number(id)
                    .filter(|v| *v <= u64::from(u16::MAX))
                    .ok_or_else(|| ConfigError::partitions(line, "bad partition definition"))?
                    as u16
                    & 0x7FFF,
            ),
        };
        let mut sl = 0;
        for token in tokens {
            let (flag, value) = name_token(token);
            if flag.is_empty() {
                return Err(ConfigError::partitions(line, "bad partition flags"));
            }
            // parse_group_flag: a flag is named by any prefix of its name;
            // a bad value is skipped, the SL left as it was.
            if "sl".starts_with(flag)
                && let Some(v) = value.and_then(parse_number).filter(|v| *v <= 15)
            {
                sl = v as u8;
            }
        }
        Ok(Self {
            name: name.map(str::to_owned),
            pkey,
            sl,
            line,
        })
    }
}

/// `name[=value]`, both trimmed (`parse_name_token`).
fn name_token(token: &str) -> (&str, Option<&str>) {
    match token.split_once('=') {
        Some((n, v)) => (n.trim(), Some(v.trim())),
        None => (token.trim(), None),
    }
}

/// The members of a definition, as `partition_add_port` takes them: a
/// port GUID (or `ALL`, `ALL_CAS`, `ALL_SWITCHES`, `ALL_ROUTERS`, `SELF`,
/// `NONE`, or a prefix of one of them) with an optional membership; an
/// `mgid=` takes the rest of the line.
fn check_members(members: &str, line: usize) -> Result<(), ConfigError> {
    for token in members.split(',') {
        let (name, _) = name_token(token);
        if name == "mgid" {
            return Ok(());
        }
        let keyword = [
            "NONE",
            "ALL",
            "ALL_CAS",
            "ALL_SWITCHES",
            "ALL_ROUTERS",
            "SELF",
        ]
        .iter()
        .any(|k| k.starts_with(name));
        if name.is_empty() || keyword {
            continue;
        }
        if parse_number(name).is_none_or(|g| g == 0) {
            return Err(ConfigError::partitions(line, "bad PortGUID"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "\
# partitions
Default=0x7fff, ipoib : ALL=full ;
P1=0x8001, sl=3 : 0x100001=full, 0x100003,
    0x100005=limited ;
storage = 0x2, ipoib, sl=2, mtu=4 : ALL_CAS=full, SELF=full;
P1=0x8001 : 0x100007 ;   # the SL goes back to 0: the last definition's
0x0042 : NONE ;
";

    #[test]
    fn names_p_keys_and_sls_are_read_as_opensm_makes_them() {
        let c = PartitionConfig::parse(FILE, true).expect("a good file");
        let names: Vec<(Option<&str>, Option<u16>, u8)> = c
            .partitions
            .iter()
            .map(|p| (p.name.as_deref(), p.pkey, p.sl))
            .collect();
        assert_eq!(
            names,
            [
                (Some("Default"), Some(0x7FFF), 0),
                (Some("P1"), Some(0x0001), 0),
                (Some("storage"), Some(0x0002), 2),
                (None, Some(0x0042), 0),
            ]
        );
        assert_eq!(c.by_name("storage").and_then(|p| p.pkey), Some(2));
        assert_eq!(c.by_pkey(0x8002).map(|p| p.sl), Some(2));
    }

    #[test]
    fn without_qos_every_sl_is_0_and_the_default_partition_is_always_there() {
        let c = PartitionConfig::parse("P2=0x3, sl=5 : ALL ;", false).unwrap();
        assert_eq!(c.by_pkey(3).map(|p| p.sl), Some(0));
        assert_eq!(c.by_pkey(DEFAULT_PKEY).map(|p| p.sl), Some(0));
    }

    #[test]
    fn a_file_opensm_stops_reading_is_refused_with_its_reason_and_line() {
        for (text, line, reason) in [
            (
                "Default=0x7fff : ALL ;\nP1=0x1 ALL ;\n",
                2,
                "no partition definition found",
            ),
            ("P1=0x1,,sl=2 : ALL ;", 1, "bad partition flags"),
            ("P1=0x1x : ALL ;", 1, "bad partition definition"),
            ("P1=0x1 : 0x10, zz ;", 1, "bad PortGUID"),
        ] {
            let e = PartitionConfig::parse(text, true).expect_err(text);
            assert_eq!((e.line, e.reason.as_str()), (line, reason), "{text}");
        }
    }

    #[test]
    fn a_partition_without_a_p_key_is_kept_without_one() {
        let c = PartitionConfig::parse("Mine : ALL ;", true).unwrap();
        assert_eq!(c.by_name("Mine").map(|p| p.pkey), Some(None));
    }
}
