//! OpenSM's options file (`opensm.conf`), read as `osm_subn_parse_conf_file`
//! reads it: one `name value` per line, `#` to the end of a line a
//! comment, the value trimmed and stripped of one pair of quotes; an
//! unknown name is ignored, a number that does not parse leaves the
//! option as it was (OpenSM logs it and goes on). Only the options that
//! change PathRecord answers, or name the files that do, are kept.

/// `max_rate_enum`'s default (OpenSM's `SA_RATE_MAX_ENUM`): no limit.
pub const NO_RATE_LIMIT: u8 = 63;

/// The options of OpenSM's that change what its SA answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenSmOptions {
    /// `qos`: the QoS policy and partitions' SLs apply.
    pub qos: bool,
    /// `qos_policy_file`, if set.
    pub qos_policy_file: Option<String>,
    /// `partition_config_file`, if set.
    pub partition_config_file: Option<String>,
    /// `enable_quirks`: Tavor's MTU limited to 1024.
    pub enable_quirks: bool,
    /// `allow_both_pkeys`: a port may hold a partition as both a full
    /// and a limited member.
    pub allow_both_pkeys: bool,
    /// `use_original_extended_sa_rates_only`: rates up to 300 Gb/s only.
    pub use_original_extended_sa_rates_only: bool,
    /// `max_rate_enum` (OpenSM 3.3.24 and later): the fastest rate its SA
    /// answers, [`NO_RATE_LIMIT`] by default.
    pub max_rate_enum: u8,
    /// `subnet_timeout`: a path's PacketLifeTime.
    pub subnet_timeout: u8,
    /// `lmc`: the LMC of the adapters' ports (0 to 7).
    pub lmc: u8,
    /// `lmc_esp0`: the LMC applies to switches' enhanced port 0 too.
    pub lmc_esp0: bool,
    /// `sa_key`: the key trusted SA queries carry, if set.
    pub sa_key: Option<u64>,
    /// `routing_engine`: the engines in the order OpenSM tries them.
    pub routing_engine: Option<String>,
    /// `node_name_map_name`: the node name map OpenSM knows nodes by.
    pub node_name_map_name: Option<String>,
    /// Values OpenSM would not take, by line: what it logs, then ignores.
    pub ignored: Vec<(usize, String)>,
}

impl Default for OpenSmOptions {
    /// OpenSM's defaults.
    fn default() -> Self {
        Self {
            qos: false,
            qos_policy_file: None,
            partition_config_file: None,
            enable_quirks: false,
            allow_both_pkeys: false,
            use_original_extended_sa_rates_only: false,
            max_rate_enum: NO_RATE_LIMIT,
            subnet_timeout: 18,
            lmc: 0,
            lmc_esp0: false,
            sa_key: None,
            routing_engine: None,
            node_name_map_name: None,
            ignored: Vec::new(),
        }
    }
}

impl OpenSmOptions {
    /// The options of `text`, an `opensm.conf`.
    pub fn parse(text: &str) -> Self {
        let mut o = Self::default();
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or_default();
            let mut words = line.splitn(2, [' ', '\t']);
            let Some(name) = words.next().filter(|w| !w.is_empty()) else {
                continue;
            };
            let value = clean(words.next().unwrap_or_default());
            let lineno = n + 1;
            let mut number = |max: u64| -> Option<u64> {
                match parse_number(value) {
                    Some(v) if v <= max => Some(v),
                    _ => {
                        o.ignored.push((
                            lineno,
                            format!("{name}: {value:?} is not a number up to {max}"),
                        ));
                        None
                    }
                }
            };
            match name {
                "qos" => o.qos = value == "TRUE",
                "enable_quirks" => o.enable_quirks = value == "TRUE",
                "allow_both_pkeys" => o.allow_both_pkeys = value == "TRUE",
                "use_original_extended_sa_rates_only" => {
                    o.use_original_extended_sa_rates_only = value == "TRUE";
                }
                "lmc_esp0" => o.lmc_esp0 = value == "TRUE",
                "subnet_timeout" => {
                    if let Some(v) = number(u64::from(u8::MAX)) {
                        o.subnet_timeout = v as u8;
                    }
                }
                "max_rate_enum" => {
                    if let Some(v) = number(u64::from(u8::MAX)) {
                        o.max_rate_enum = v as u8;
                    }
                }
                "lmc" => {
                    if let Some(v) = number(u64::from(u8::MAX)) {
                        o.lmc = v as u8;
                    }
                }
                "sa_key" => {
                    if let Some(v) = number(u64::MAX) {
                        o.sa_key = Some(v);
                    }
                }
                "qos_policy_file" => o.qos_policy_file = file_name(value),
                "partition_config_file" => o.partition_config_file = file_name(value),
                "routing_engine" => o.routing_engine = file_name(value),
                "node_name_map_name" => o.node_name_map_name = file_name(value),
                _ => {}
            }
        }
        // osm_subn_verify_config: an LMC past 7 is OpenSM's default.
        if o.lmc > 7 {
            o.ignored
                .push((0, format!("lmc {} is past 7: OpenSM uses 0", o.lmc)));
            o.lmc = 0;
        }
        o
    }
}

/// Routing engines that give each path an SL of their own, which the SA
/// does not publish: OpenSM's `lash`, `dfsssp`, `torus-2QoS` and `nue`.
const SL_ENGINES: [&str; 4] = ["lash", "dfsssp", "torus-2qos", "nue"];

impl OpenSmOptions {
    /// The first engine `routing_engine` names that gives paths SLs of
    /// its own, if one does (OpenSM falls back along the list, so any of
    /// them may be the one routing).
    pub fn sl_engine(&self) -> Option<&str> {
        self.routing_engine.as_deref().and_then(|list| {
            list.split(',')
                .map(str::trim)
                .find(|e| SL_ENGINES.contains(&e.to_ascii_lowercase().as_str()))
        })
    }

    /// The options OpenSM holds after it rescans its file
    /// (`osm_subn_rescan_conf_files`, at a SIGHUP or a sweep a trap
    /// forced), these being the ones it held and `before` the file's
    /// values it read last: an option it can change while it runs takes
    /// the file's new value (`after`) where that differs from `before`
    /// (so that one given on its command line stands until the file's
    /// value changes); the others — the files' names, `allow_both_pkeys`,
    /// `lmc`, `lmc_esp0`, `routing_engine` — stay as OpenSM started with
    /// them.
    pub fn rescanned(&self, before: &Self, after: &Self) -> Self {
        let mut o = self.clone();
        macro_rules! updatable {
            ($($field:ident),*) => {
                $(
                    if before.$field != after.$field {
                        o.$field = after.$field.clone();
                    }
                )*
            };
        }
        updatable!(
            qos,
            enable_quirks,
            use_original_extended_sa_rates_only,
            max_rate_enum,
            subnet_timeout,
            sa_key
        );
        o.ignored = after.ignored.clone();
        o
    }
}

/// A value as `clean_val` leaves it: trimmed, and without one pair of
/// surrounding quotes.
fn clean(value: &str) -> &str {
    let v = value.trim();
    for q in ['"', '\''] {
        if v.len() >= 2 && v.starts_with(q) && v.ends_with(q) {
            return &v[1..v.len() - 1];
        }
    }
    v
}

/// A file name option: `(null)` and the empty string, as OpenSM writes
/// an unset one in the file it dumps, are none.
fn file_name(value: &str) -> Option<String> {
    (!value.is_empty() && value != "(null)").then(|| value.to_owned())
}

/// A number as `strtoul(.., 0)` reads it, wholly: decimal, `0x` hex or
/// `0` octal.
pub(super) fn parse_number(s: &str) -> Option<u64> {
    let s = s.trim();
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16).ok()
    } else if s.len() > 1 && s.starts_with('0') {
        u64::from_str_radix(&s[1..], 8).ok()
    } else {
        s.parse().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_options_that_change_answers_are_read_as_opensm_reads_them() {
        let o = OpenSmOptions::parse(
            "# QoS\nqos TRUE\nqos_policy_file /etc/opensm/qos-policy.conf # the policy\n\
             partition_config_file \"/etc/opensm/partitions.conf\"\n\
             enable_quirks TRUE\nallow_both_pkeys true\nsubnet_timeout 0x10\nlmc 2\n\
             sa_key 0x5eed\nrouting_engine ftree,updn\nunknown_option 1\n\
             use_original_extended_sa_rates_only TRUE\nmax_rate_enum 18\n",
        );
        assert!(o.qos && o.enable_quirks && o.use_original_extended_sa_rates_only);
        assert_eq!(o.max_rate_enum, 18);
        assert_eq!(OpenSmOptions::parse("").max_rate_enum, NO_RATE_LIMIT);
        assert!(!o.allow_both_pkeys, "OpenSM's TRUE is upper case only");
        assert_eq!(
            o.qos_policy_file.as_deref(),
            Some("/etc/opensm/qos-policy.conf")
        );
        assert_eq!(
            o.partition_config_file.as_deref(),
            Some("/etc/opensm/partitions.conf")
        );
        assert_eq!((o.subnet_timeout, o.lmc, o.sa_key), (16, 2, Some(0x5eed)));
        assert_eq!(o.routing_engine.as_deref(), Some("ftree,updn"));
        assert_eq!(o.sl_engine(), None);
        let sl = OpenSmOptions::parse("routing_engine minhop, DFSSSP\nnode_name_map_name /m\n");
        assert_eq!(
            sl.sl_engine(),
            Some("DFSSSP"),
            "anywhere in the list, any case"
        );
        assert_eq!(sl.node_name_map_name.as_deref(), Some("/m"));
        assert!(o.ignored.is_empty(), "{:?}", o.ignored);
    }

    #[test]
    fn a_rescan_takes_what_opensm_changes_while_it_runs_and_only_where_the_file_changed() {
        let first = OpenSmOptions::parse(
            "qos FALSE\nsubnet_timeout 18\nallow_both_pkeys FALSE\nqos_policy_file a.conf\n",
        );
        // qos given on the command line (-Q): held TRUE, the file FALSE.
        let held = OpenSmOptions {
            qos: true,
            ..first.clone()
        };
        let edited = OpenSmOptions::parse(
            "qos FALSE\nsubnet_timeout 16\nallow_both_pkeys TRUE\nqos_policy_file b.conf\n",
        );
        let now = held.rescanned(&first, &edited);
        assert_eq!(now.subnet_timeout, 16, "changed in the file: taken");
        assert!(
            now.qos,
            "the file's value did not change: the command line's stands"
        );
        assert!(!now.allow_both_pkeys, "read only when OpenSM starts");
        assert_eq!(now.qos_policy_file.as_deref(), Some("a.conf"));
        let off = OpenSmOptions::parse("qos TRUE\n");
        assert!(
            !held.rescanned(&off, &first).qos,
            "the file's value changed"
        );
    }

    #[test]
    fn a_value_opensm_would_not_take_leaves_the_option_and_is_said() {
        let o = OpenSmOptions::parse("subnet_timeout 18x\nlmc 9\nqos_policy_file (null)\n");
        assert_eq!(o.subnet_timeout, 18);
        assert_eq!(o.lmc, 0);
        assert_eq!(o.qos_policy_file, None);
        assert_eq!(o.ignored.len(), 2);
        assert!(o.ignored[0].1.contains("subnet_timeout"), "{:?}", o.ignored);
    }
}
