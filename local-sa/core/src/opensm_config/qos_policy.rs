//! OpenSM's QoS policy file, read as OpenSM's parser reads it
//! (`osm_qos_parser_l.l`, `osm_qos_parser_y.y`) and validated as
//! `osm_qos_policy_validate` validates it; and the matching of a
//! PathRecord query to its QoS level (`__qos_policy_get_match_rule_by_params`).
//!
//! Sections, each optional, keywords the first word of a line, `#` to the
//! end of a line a comment:
//!
//! * `port-groups`: groups of ports by `port-guid` (ranges), `port-name`
//!   (`NodeDescription/Pn`), `pkey` (ranges), `partition` (a name of the
//!   partitions file) and `node-type` (CA, SWITCH, ROUTER, ALL, SELF);
//! * `qos-setup`: SL to VL and VL arbitration tables, which OpenSM parses
//!   and ignores, and so does local-sa;
//! * `qos-levels`: `sl` (required), `mtu-limit`, `rate-limit`,
//!   `packet-life`, `pkey` (ranges); one named `default` (any case) is
//!   needed, unless `qos-ulps` gives a default SL;
//! * `qos-match-rules`: `qos-class`, `source`, `destination` (group
//!   names), `service-id`, `pkey` (ranges) and `qos-level-name`, scanned
//!   in order, the first that matches a query giving its level;
//! * `qos-ulps`: `default : SL`, and rules for SDP, RDS, iSER (by port
//!   number), SRP (by target GUID), IPoIB (by P_Key) and `any` (by
//!   ServiceID, P_Key, source, target or either's GUID), each with an SL;
//!   OpenSM puts their rules after those of `qos-match-rules`.
//!
//! Strings are read as OpenSM's lexer reads them: blanks outside double
//! quotes are dropped (`port-name: vs1 HCA-1/P1` is the node `vs1HCA-1`,
//! as OpenSM looks it up; `"vs1 HCA-1"/P1` keeps the blank), and a `#`
//! inside quotes is no comment. A level's `packet-life` is a byte, so a
//! value past 63 wraps into the record's selector bits as OpenSM's does.
//!
//! A file OpenSM would refuse is refused with its message and line.

use super::error::ConfigError;
use super::options::parse_number;

/// ServiceIDs of the ULPs `qos-ulps` names (`osm_qos_policy.h`).
const SDP_SERVICE_ID: u64 = 0x0000_0000_0001_0000;
const RDS_SERVICE_ID: u64 = 0x0000_0000_0106_0000;
const RDS_PORT: u64 = 0x48CA;
const ISER_SERVICE_ID: u64 = 0x0000_0000_0106_0000;
const ISER_PORT: u64 = 0x0CBC;

/// OpenSM's bounds of a level's limits (`osm_qos_policy.h`).
const MTU_LIMITS: (u64, u64) = (1, 5);
const RATE_LIMITS: (u64, u64) = (2, 22);

/// An inclusive range of numbers, as the policy writes `a-b` or `a`.
pub type Range = (u64, u64);

/// Node types a port group may name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeTypes {
    /// Channel adapters.
    pub ca: bool,
    /// Switches (their port 0).
    pub switch: bool,
    /// Routers.
    pub router: bool,
    /// Every node.
    pub all: bool,
    /// The master's own port.
    pub self_: bool,
}

/// A group of ports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PortGroup {
    /// Its name, as match rules name it.
    pub name: String,
    /// Ports by port GUID.
    pub guids: Vec<Range>,
    /// Ports by node description and port number.
    pub port_names: Vec<(String, u8)>,
    /// Ports in the partitions of these P_Keys (low 15 bits).
    pub pkeys: Vec<Range>,
    /// Ports in the partitions of these names (the partitions file's).
    pub partitions: Vec<String>,
    /// Ports by their node's type.
    pub node_types: NodeTypes,
    /// Where the group begins.
    pub line: usize,
}

/// A QoS level: what a matching query's paths get.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QosLevel {
    /// Its name, as rules name it (in any case).
    pub name: String,
    /// The SL its paths get.
    pub sl: Option<u8>,
    /// The greatest MTU (its code) its paths get.
    pub mtu_limit: Option<u8>,
    /// The greatest rate (its code) its paths get.
    pub rate_limit: Option<u8>,
    /// The PacketLifeTime its paths get: the byte OpenSM keeps (the
    /// value modulo 256), OR'ed with the Exactly selector in the record.
    pub packet_life: Option<u8>,
    /// P_Keys the level allows (low 15 bits; none: any).
    pub pkeys: Vec<Range>,
    /// Where it begins (0: made for `qos-ulps`).
    pub line: usize,
}

/// Who a rule's source or destination must be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ports {
    /// The port groups of these names.
    Groups(Vec<String>),
    /// These port GUIDs (a `qos-ulps` rule's).
    Guids(Vec<Range>),
}

/// A match rule: a query that meets all its criteria gets its level.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MatchRule {
    /// QoS classes a query must name one of (none: any query).
    pub qos_classes: Vec<Range>,
    /// Who the source must be.
    pub sources: Option<Ports>,
    /// Who the destination must be.
    pub destinations: Option<Ports>,
    /// ServiceIDs a query must name one of.
    pub service_ids: Vec<Range>,
    /// P_Keys (low 15 bits) a query must name one of.
    pub pkeys: Vec<Range>,
    /// Index of its level in [`QosPolicy::levels`].
    pub level: usize,
    /// An `ipoib` rule of `qos-ulps`: OpenSM refuses the whole policy
    /// unless each of its partitions exists with two full members at
    /// least (checked against the fabric, `QosLevels::resolve`).
    pub ipoib: bool,
    /// Where it begins.
    pub line: usize,
}

/// A parsed, validated QoS policy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QosPolicy {
    /// The port groups, in the file's order.
    pub port_groups: Vec<PortGroup>,
    /// The file's levels, then one per SL for the `qos-ulps` rules.
    pub levels: Vec<QosLevel>,
    /// The file's match rules, then those of `qos-ulps`.
    pub rules: Vec<MatchRule>,
    /// Index of the default level.
    pub default_level: usize,
}

/// What a query says of itself, for matching.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueryKeys {
    /// The ServiceID it names, if it names one.
    pub service_id: Option<u64>,
    /// The QoS class it names, if it names one.
    pub qos_class: Option<u16>,
    /// The P_Key it names, if it names one.
    pub pkey: Option<u16>,
}

/// Who is in which port group, for matching: the groups are resolved
/// against the fabric by the caller (GUIDs, node descriptions, P_Key
/// tables, the master's port).
pub trait PortMembership {
    /// Whether the port of GUID `port` is in group `group` (an index of
    /// [`QosPolicy::port_groups`]).
    fn in_group(&self, port: u64, group: usize) -> bool;
}

impl QosPolicy {
    /// The policy of `text`: refused, with OpenSM's message and line, if
    /// OpenSM would refuse it.
    pub fn parse(text: &str) -> Result<Self, ConfigError> {
        Parser::default().run(text)
    }

    /// The level of a query from port GUID `source` to `dest` with `keys`
    /// (`groups` says who is in which port group).
    pub fn level(
        &self,
        groups: &impl PortMembership,
        source: u64,
        dest: u64,
        keys: QueryKeys,
    ) -> &QosLevel {
        let index = self
            .rules
            .iter()
            .find(|r| r.matches(self, groups, source, dest, keys))
            .map_or(self.default_level, |r| r.level);
        &self.levels[index]
    }

    /// The index of the port group named `name` (names compare as
    /// OpenSM compares them: exactly).
    pub fn group(&self, name: &str) -> Option<usize> {
        self.port_groups.iter().position(|g| g.name == name)
    }
}

impl MatchRule {
    fn matches(
        &self,
        policy: &QosPolicy,
        groups: &impl PortMembership,
        source: u64,
        dest: u64,
        keys: QueryKeys,
    ) -> bool {
        let within = |ports: &Ports, port: u64| match ports {
            Ports::Groups(names) => names
                .iter()
                .filter_map(|n| policy.group(n))
                .any(|g| groups.in_group(port, g)),
            Ports::Guids(ranges) => in_ranges(ranges, port),
        };
        // Sources and destinations: with both, a query must match both.
        let ports_match = match (&self.sources, &self.destinations) {
            (Some(s), Some(d)) => within(s, source) && within(d, dest),
            (Some(s), None) => within(s, source),
            (None, Some(d)) => within(d, dest),
            (None, None) => true,
        };
        let keyed = |ranges: &[Range], value: Option<u64>| {
            ranges.is_empty() || value.is_some_and(|v| in_ranges(ranges, v))
        };
        ports_match
            && keyed(&self.qos_classes, keys.qos_class.map(u64::from))
            && keyed(&self.service_ids, keys.service_id)
            && keyed(&self.pkeys, keys.pkey.map(|p| u64::from(p & 0x7FFF)))
    }
}

impl QosLevel {
    /// Whether the level allows `pkey` (membership bit ignored).
    pub fn allows_pkey(&self, pkey: u16) -> bool {
        self.pkeys.is_empty() || in_ranges(&self.pkeys, u64::from(pkey & 0x7FFF))
    }
}

fn in_ranges(ranges: &[Range], v: u64) -> bool {
    ranges.iter().any(|(a, b)| (*a..=*b).contains(&v))
}

/// Where the parser is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    Top,
    PortGroups,
    PortGroup,
    QosSetup,
    Levels,
    Level,
    Rules,
    Rule,
    Ulps,
}

#[derive(Default)]
struct Parser {
    policy: QosPolicy,
    group: Option<PortGroup>,
    level: Option<QosLevel>,
    /// The rule being read, and the name of its level.
    rule: Option<(MatchRule, Option<String>)>,
    /// The name of each rule's level, found once all are read.
    rule_levels: Vec<String>,
    /// Rules of `qos-ulps`, with their SLs, put after the others.
    ulp_rules: Vec<(MatchRule, u8)>,
    ulp_default: Option<u8>,
}

impl Parser {
    fn run(mut self, text: &str) -> Result<QosPolicy, ConfigError> {
        let mut section = Section::Top;
        let mut nesting = 0usize;
        for (n, raw) in text.lines().enumerate() {
            let line = n + 1;
            let content = uncommented(raw).trim();
            if content.is_empty() {
                continue;
            }
            let err = |m: &str| ConfigError::policy(line, m);
            section = match (section, content) {
                (Section::Top, "port-groups") => Section::PortGroups,
                (Section::Top, "qos-setup") => Section::QosSetup,
                (Section::Top, "qos-levels") => Section::Levels,
                (Section::Top, "qos-match-rules") => Section::Rules,
                (Section::Top, "qos-ulps") => Section::Ulps,
                (Section::PortGroups, "end-port-groups")
                | (Section::Levels, "end-qos-levels")
                | (Section::Rules, "end-qos-match-rules")
                | (Section::Ulps, "end-qos-ulps") => Section::Top,
                (Section::QosSetup, "end-qos-setup") if nesting == 0 => Section::Top,
                (Section::QosSetup, c) => {
                    // Parsed and ignored by OpenSM: only its nesting
                    // matters here.
                    if c.starts_with("end-") {
                        nesting = nesting.saturating_sub(1);
                    } else if !c.contains(':') {
                        nesting += 1;
                    }
                    Section::QosSetup
                }
                (Section::PortGroups, "port-group") => {
                    self.group = Some(PortGroup {
                        line,
                        ..PortGroup::default()
                    });
                    Section::PortGroup
                }
                (Section::PortGroup, "end-port-group") => {
                    let g = self.group.take().unwrap_or_default();
                    if g.name.is_empty() {
                        return Err(err(
                            "port-group validation failed - no port group name specified",
                        ));
                    }
                    self.policy.port_groups.push(g);
                    Section::PortGroups
                }
                (Section::Levels, "qos-level") => {
                    self.level = Some(QosLevel {
                        line,
                        ..QosLevel::default()
                    });
                    Section::Level
                }
                (Section::Level, "end-qos-level") => {
                    let l = self.level.take().unwrap_or_default();
                    if l.name.is_empty() {
                        return Err(err("qos-level validation failed - no 'name' specified"));
                    }
                    if l.sl.is_none() {
                        return Err(err("qos-level validation failed - no 'sl' specified"));
                    }
                    self.policy.levels.push(l);
                    Section::Levels
                }
                (Section::Rules, "qos-match-rule") => {
                    self.rule = Some((
                        MatchRule {
                            line,
                            ..MatchRule::default()
                        },
                        None,
                    ));
                    Section::Rule
                }
                (Section::Rule, "end-qos-match-rule") => {
                    let (rule, level) = self.rule.take().unwrap_or_default();
                    let Some(level) = level else {
                        return Err(err(
                            "match-rule validation failed - no 'qos-level-name' specified",
                        ));
                    };
                    // The level is found when the policy is validated.
                    self.policy.rules.push(rule);
                    self.rule_levels.push(level);
                    Section::Rules
                }
                (Section::PortGroup, c) => {
                    self.group_field(c, line)?;
                    section
                }
                (Section::Level, c) => {
                    self.level_field(c, line)?;
                    section
                }
                (Section::Rule, c) => {
                    self.rule_field(c, line)?;
                    section
                }
                (Section::Ulps, c) => {
                    self.ulp(c, line)?;
                    section
                }
                (_, c) => return Err(err(&format!("syntax error near '{c}'"))),
            };
        }
        if section != Section::Top {
            return Err(ConfigError::policy(
                text.lines().count(),
                "syntax error: a section is not closed",
            ));
        }
        self.validate()
    }

    /// One `key: value` line of a port group.
    fn group_field(&mut self, content: &str, line: usize) -> Result<(), ConfigError> {
        let g = self.group.as_mut().expect("in a port group");
        let (key, value) = field(content, line)?;
        match key {
            "name" => {
                if !g.name.is_empty() {
                    return Err(ConfigError::policy(
                        line,
                        "port-group has multiple 'name' tags",
                    ));
                }
                g.name = single_string(value);
            }
            "use" => {}
            "port-guid" => g.guids.extend(ranges(value, line)?),
            "port-name" => {
                for name in strings(value) {
                    g.port_names.push(port_name(&name, line)?);
                }
            }
            "pkey" => g.pkeys.extend(pkey_ranges(value, line)?),
            "partition" => g.partitions.push(single_string(value)),
            "node-type" => {
                for t in strings(value) {
                    let types = &mut g.node_types;
                    match t.to_ascii_uppercase().as_str() {
                        "CA" => types.ca = true,
                        "SWITCH" => types.switch = true,
                        "ROUTER" => types.router = true,
                        "ALL" => types.all = true,
                        "SELF" => types.self_ = true,
                        _ => {
                            return Err(ConfigError::policy(
                                line,
                                format!(
                                    "syntax error near '{t}' (a node type: CA, SWITCH, ROUTER, ALL, SELF)"
                                ),
                            ));
                        }
                    }
                }
            }
            other => return Err(unknown(other, line)),
        }
        Ok(())
    }

    /// One `key: value` line of a QoS level.
    fn level_field(&mut self, content: &str, line: usize) -> Result<(), ConfigError> {
        let l = self.level.as_mut().expect("in a level");
        let (key, value) = field(content, line)?;
        let once = |slot: &Option<u8>, tag: &str| {
            if slot.is_some() {
                Err(ConfigError::policy(
                    line,
                    format!("'qos-level' has multiple '{tag}' tags"),
                ))
            } else {
                Ok(())
            }
        };
        match key {
            "name" => {
                if !l.name.is_empty() {
                    return Err(ConfigError::policy(
                        line,
                        "qos-level has multiple 'name' tags",
                    ));
                }
                l.name = single_string(value);
            }
            "use" | "path-bits" => {}
            "sl" => {
                once(&l.sl, "sl")?;
                let sl = number(value, line)?;
                if sl > 15 {
                    return Err(ConfigError::policy(line, "illegal SL value"));
                }
                l.sl = Some(sl as u8);
            }
            "mtu-limit" => {
                once(&l.mtu_limit, "mtu-limit")?;
                l.mtu_limit = Some(limit(value, line, MTU_LIMITS, "mtu")?);
            }
            "rate-limit" => {
                once(&l.rate_limit, "rate-limit")?;
                l.rate_limit = Some(limit(value, line, RATE_LIMITS, "rate")?);
            }
            "packet-life" => {
                once(&l.packet_life, "packet-life")?;
                // OpenSM keeps it in a byte (`(uint8_t)` of the number).
                l.packet_life = Some(number(value, line)? as u8);
            }
            "pkey" => l.pkeys.extend(pkey_ranges(value, line)?),
            other => return Err(unknown(other, line)),
        }
        Ok(())
    }

    /// One `key: value` line of a match rule.
    fn rule_field(&mut self, content: &str, line: usize) -> Result<(), ConfigError> {
        let (rule, level) = self.rule.as_mut().expect("in a rule");
        let (key, value) = field(content, line)?;
        let add_groups = |ports: &mut Option<Ports>, value: &str| {
            let names = strings(value);
            match ports {
                Some(Ports::Groups(g)) => g.extend(names),
                _ => *ports = Some(Ports::Groups(names)),
            }
        };
        match key {
            "use" => {}
            "qos-class" => rule.qos_classes.extend(ranges(value, line)?),
            "source" => add_groups(&mut rule.sources, value),
            "destination" => add_groups(&mut rule.destinations, value),
            "service-id" => rule.service_ids.extend(ranges(value, line)?),
            "pkey" => rule.pkeys.extend(pkey_ranges(value, line)?),
            "qos-level-name" => {
                if level.is_some() {
                    return Err(ConfigError::policy(
                        line,
                        "qos-match-rule has multiple 'qos-level-name' tags",
                    ));
                }
                *level = Some(single_string(value));
            }
            other => return Err(unknown(other, line)),
        }
        Ok(())
    }

    /// One line of `qos-ulps`: `ULP[, criterion values] : SL`.
    fn ulp(&mut self, content: &str, line: usize) -> Result<(), ConfigError> {
        let (what, sl) = content
            .rsplit_once(':')
            .ok_or_else(|| ConfigError::policy(line, format!("syntax error near '{content}'")))?;
        let sl = number(sl.trim(), line)?;
        if sl > 15 {
            return Err(ConfigError::policy(line, "illegal SL value"));
        }
        let sl = sl as u8;
        let (ulp, criterion) = match what.split_once(',') {
            Some((u, c)) => (u.trim().to_ascii_lowercase(), Some(c.trim())),
            None => (what.trim().to_ascii_lowercase(), None),
        };
        // `criterion values`, split at the first blank.
        let (kind, values) = match criterion {
            Some(c) => c
                .split_once([' ', '\t'])
                .map_or((c, ""), |(k, v)| (k, v.trim())),
            None => ("", ""),
        };
        let need = |list: Vec<Range>, what: &str| {
            if list.is_empty() {
                Err(ConfigError::policy(line, what.to_owned()))
            } else {
                Ok(list)
            }
        };
        let ports_at = |base: u64, list: Vec<Range>| -> Result<Vec<Range>, ConfigError> {
            if list.iter().any(|(a, b)| *a > 0xFFFF || *b > 0xFFFF) {
                return Err(ConfigError::policy(line, "SDP port number out of range"));
            }
            Ok(list.iter().map(|(a, b)| (base + a, base + b)).collect())
        };
        let mut rule = MatchRule {
            line,
            ..MatchRule::default()
        };
        match (ulp.as_str(), kind) {
            ("default", "") => {
                self.ulp_default = Some(sl);
                return Ok(());
            }
            ("any", "service-id") => {
                rule.service_ids =
                    need(ranges(values, line)?, "ULP rule doesn't have service ids")?;
            }
            ("any", "pkey") => {
                rule.pkeys = need(pkey_ranges(values, line)?, "ULP rule doesn't have pkeys")?;
            }
            ("any", "target-port-guid") => {
                let g = need(ranges(values, line)?, "ULP rule doesn't have port guids")?;
                rule.destinations = Some(Ports::Guids(g));
            }
            ("any", "source-port-guid") => {
                let g = need(ranges(values, line)?, "ULP rule doesn't have port guids")?;
                rule.sources = Some(Ports::Guids(g));
            }
            ("any", "source-target-port-guid") => {
                let g = need(ranges(values, line)?, "ULP rule doesn't have port guids")?;
                rule.sources = Some(Ports::Guids(g.clone()));
                rule.destinations = Some(Ports::Guids(g));
            }
            ("sdp", "") => rule.service_ids = vec![(SDP_SERVICE_ID, SDP_SERVICE_ID + 0xFFFF)],
            ("sdp", "port-num") => {
                let ports = need(
                    ranges(values, line)?,
                    "SDP ULP rule doesn't have port numbers",
                )?;
                rule.service_ids = ports_at(SDP_SERVICE_ID, ports)?;
            }
            ("rds", "") => {
                rule.service_ids = vec![(RDS_SERVICE_ID + RDS_PORT, RDS_SERVICE_ID + RDS_PORT)]
            }
            ("rds", "port-num") => {
                let ports = need(
                    ranges(values, line)?,
                    "RDS ULP rule doesn't have port numbers",
                )?;
                rule.service_ids = ports_at(RDS_SERVICE_ID, ports)?;
            }
            ("iser", "") => {
                rule.service_ids = vec![(ISER_SERVICE_ID + ISER_PORT, ISER_SERVICE_ID + ISER_PORT)];
            }
            ("iser", "port-num") => {
                let ports = need(
                    ranges(values, line)?,
                    "iSER ULP rule doesn't have port numbers",
                )?;
                rule.service_ids = ports_at(ISER_SERVICE_ID, ports)?;
            }
            ("srp", "target-port-guid") => {
                let g = need(
                    ranges(values, line)?,
                    "SRP ULP rule doesn't have port guids",
                )?;
                rule.destinations = Some(Ports::Guids(g));
            }
            ("ipoib", "") => {
                rule.pkeys = vec![(0x7FFF, 0x7FFF)];
                rule.ipoib = true;
            }
            ("ipoib", "pkey") => {
                rule.pkeys = need(
                    pkey_ranges(values, line)?,
                    "IPoIB ULP rule doesn't have pkeys",
                )?;
                rule.ipoib = true;
            }
            _ => {
                return Err(ConfigError::policy(
                    line,
                    format!("syntax error near '{content}'"),
                ));
            }
        }
        self.ulp_rules.push((rule, sl));
        Ok(())
    }

    /// `osm_qos_policy_validate`: the default level, and each rule's level
    /// and port groups found.
    fn validate(mut self) -> Result<QosPolicy, ConfigError> {
        // Level names compare as OpenSM compares them: in any case.
        let find = |levels: &[QosLevel], name: &str| {
            levels
                .iter()
                .position(|l| l.name.eq_ignore_ascii_case(name))
        };
        for (i, (rule, name)) in self
            .policy
            .rules
            .iter_mut()
            .zip(&self.rule_levels)
            .enumerate()
        {
            rule.level = find(&self.policy.levels, name).ok_or_else(|| {
                ConfigError::policy(
                    rule.line,
                    format!(
                        "ERR AC11: qos-match-rule num {}: qos-level '{name}' not found",
                        i + 1
                    ),
                )
            })?;
            for (list, kind, code) in [
                (&rule.sources, "source", "AC12"),
                (&rule.destinations, "destination", "AC13"),
            ] {
                if let Some(Ports::Groups(groups)) = list
                    && let Some(missing) = groups
                        .iter()
                        .find(|g| !self.policy.port_groups.iter().any(|p| &p.name == *g))
                {
                    return Err(ConfigError::policy(
                        rule.line,
                        format!(
                            "ERR {code}: qos-match-rule num {}: {kind} port-group '{missing}' not found",
                            i + 1
                        ),
                    ));
                }
            }
        }
        // One simple level per SL the `qos-ulps` rules use.
        for (mut rule, sl) in std::mem::take(&mut self.ulp_rules) {
            let name = format!("SimpleQoSLevel_SL{sl}");
            rule.level = find(&self.policy.levels, &name).unwrap_or_else(|| {
                self.policy.levels.push(QosLevel {
                    name,
                    sl: Some(sl),
                    ..QosLevel::default()
                });
                self.policy.levels.len() - 1
            });
            self.policy.rules.push(rule);
        }
        self.policy.default_level = match (find(&self.policy.levels, "default"), self.ulp_default) {
            (Some(i), _) => i,
            (None, Some(sl)) => {
                self.policy.levels.push(QosLevel {
                    name: "default".into(),
                    sl: Some(sl),
                    ..QosLevel::default()
                });
                self.policy.levels.len() - 1
            }
            (None, None) => {
                return Err(ConfigError::policy(
                    0,
                    "ERR AC10: Default qos-level (default) not defined.",
                ));
            }
        };
        Ok(self.policy)
    }
}

/// `key: value` (blanks around the colon allowed).
fn field(content: &str, line: usize) -> Result<(&str, &str), ConfigError> {
    let (key, value) = content
        .split_once(':')
        .ok_or_else(|| ConfigError::policy(line, format!("syntax error near '{content}'")))?;
    Ok((key.trim(), value.trim()))
}

fn unknown(key: &str, line: usize) -> ConfigError {
    ConfigError::policy(line, format!("syntax error near '{key}'"))
}

/// `line` without its comment: from a `#` outside double quotes on.
fn uncommented(line: &str) -> &str {
    let mut quoted = false;
    for (i, c) in line.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '#' if !quoted => return &line[..i],
            _ => {}
        }
    }
    line
}

/// A string value as OpenSM's lexer leaves it: blanks outside double
/// quotes dropped, the quotes gone, what they held kept whole.
fn single_string(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut quoted = false;
    for c in value.chars() {
        match c {
            '"' => quoted = !quoted,
            ' ' | '\t' if !quoted => {}
            c => out.push(c),
        }
    }
    out
}

/// A comma-separated list of strings (a comma inside quotes is text).
fn strings(value: &str) -> Vec<String> {
    let mut items = Vec::new();
    let (mut quoted, mut start) = (false, 0);
    for (i, c) in value.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => {
                items.push(&value[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&value[start..]);
    items
        .into_iter()
        .map(single_string)
        .filter(|s| !s.is_empty())
        .collect()
}

fn number(value: &str, line: usize) -> Result<u64, ConfigError> {
    parse_number(value)
        .ok_or_else(|| ConfigError::policy(line, format!("syntax error near '{value}' (a number)")))
}

/// A level's limit of `what` (mtu, rate), within OpenSM's `bounds`.
fn limit(value: &str, line: usize, bounds: (u64, u64), what: &str) -> Result<u8, ConfigError> {
    let v = number(value, line)?;
    if (bounds.0..=bounds.1).contains(&v) {
        Ok(v as u8)
    } else {
        Err(ConfigError::policy(
            line,
            format!("{what} limit is out of range, value: {v}"),
        ))
    }
}

/// A comma-separated list of numbers and `a-b` ranges, each range in
/// ascending order as OpenSM stores them.
fn ranges(value: &str, line: usize) -> Result<Vec<Range>, ConfigError> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|item| {
            let (a, b) = match item.split_once('-') {
                Some((a, b)) => (number(a, line)?, number(b, line)?),
                None => {
                    let v = number(item, line)?;
                    (v, v)
                }
            };
            Ok((a.min(b), a.max(b)))
        })
        .collect()
}

/// [`ranges`] of P_Keys: their low 15 bits (`__pkey_rangelist2rangearr`).
fn pkey_ranges(value: &str, line: usize) -> Result<Vec<Range>, ConfigError> {
    Ok(ranges(value, line)?
        .into_iter()
        .map(|(a, b)| {
            let (a, b) = (a & 0x7FFF, b & 0x7FFF);
            (a.min(b), a.max(b))
        })
        .collect())
}

/// `NodeDescription/Pn`: the description and port `n`, as OpenSM reads
/// it: the last `/` separates them, `P` (either case) and at least one
/// character follow, and the number is what `strtoul` reads of them
/// (`/P1x` is port 1; 0, or no number, is illegal).
fn port_name(name: &str, line: usize) -> Result<(String, u8), ConfigError> {
    let illegal = || ConfigError::policy(line, format!("'{name}' - illegal port name"));
    let (node, port) = name.rsplit_once('/').ok_or_else(illegal)?;
    let n = port
        .strip_prefix(['p', 'P'])
        .filter(|n| !n.is_empty())
        .ok_or_else(illegal)?;
    match strtoul(n) {
        // OpenSM's port number is an unsigned int; a port past 255 is
        // past any node's and refused when the policy meets the fabric.
        Some(p) if p > 0 => Ok((node.to_owned(), u8::try_from(p).unwrap_or(u8::MAX))),
        _ => Err(ConfigError::policy(
            line,
            format!("'{name}' - illegal port number in port name"),
        )),
    }
}

/// What `strtoul(s, NULL, 0)` reads at the start of `s`: `0x` hex, `0`
/// octal or decimal digits, as many as there are (none: `None`).
fn strtoul(s: &str) -> Option<u64> {
    let s = s.trim_start();
    let (digits, radix) = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        (h, 16)
    } else if s.len() > 1 && s.starts_with('0') {
        (&s[1..], 8)
    } else {
        (s, 10)
    };
    let end = digits
        .find(|c: char| !c.is_digit(radix))
        .unwrap_or(digits.len());
    if end == 0 {
        // "0" alone, or "0" before what is no octal digit: zero.
        return s.starts_with('0').then_some(0);
    }
    u64::from_str_radix(&digits[..end], radix).ok()
}

#[cfg(test)]
mod tests;
