//! Turning the command line into an SA request.

mod fabric;
mod kind;
pub(crate) mod names;

use bytes::Bytes;
use mad_codec::attr::{
    inform_info_record::mask as iir, mc_member_record::mask as mcmr, node_record::mask as nr,
    path_record::mask as pr,
};
use mad_codec::types::Selector;
use mad_codec::zerocopy::{FromZeros, IntoBytes};
use mad_codec::{
    ComponentMask, Gid, InformInfoRecord, JoinState, McMemberRecord, Method, Mtu, NodeRecord,
    PathRecord, Rate, SaMadBuilder,
};

use crate::cli::{Cli, MethodArg};
use crate::listing::Listing;
pub(crate) use fabric::{CAPABILITY_MASK_MATCH, IS_SM, IS_SM_DISABLED};
pub(crate) use kind::Kind;
use names::Names;

/// A request ready to send.
#[derive(Debug, Clone)]
pub(crate) struct Query {
    pub(crate) kind: Kind,
    pub(crate) method: Method,
    pub(crate) mask: ComponentMask,
    /// The template record (empty for ClassPortInfo and unfiltered tables).
    pub(crate) record: Vec<u8>,
    /// The AttributeModifier (PortInfoRecord's capability-mask match).
    pub(crate) modifier: u32,
    /// The query's first argument as given (a node listing's name, -m's
    /// MLID).
    pub(crate) argument: Option<String>,
}

impl Query {
    /// `kind` without a template: ClassPortInfo with Get, every record with
    /// GetTable.
    pub(crate) fn plain(kind: Kind, method: Method) -> Self {
        Self {
            kind,
            method,
            mask: ComponentMask::NONE,
            record: Vec::new(),
            modifier: 0,
            argument: None,
        }
    }

    /// `kind` asked with `method`, selected by `mask` over `record`.
    pub(crate) fn selecting(
        kind: Kind,
        method: Method,
        mask: ComponentMask,
        record: &[u8],
    ) -> Self {
        Self {
            mask,
            record: record.to_vec(),
            ..Self::plain(kind, method)
        }
    }

    /// `-s`'s second query: the ports with IsSMdisabled.
    pub(crate) fn sm_disabled_ports(&self) -> Self {
        let (mask, record) = fabric::capability_template(IS_SM_DISABLED);
        Self {
            mask,
            record,
            ..self.clone()
        }
    }

    /// The request MAD; the client sets the TransactionID.
    pub(crate) fn to_mad(&self, sm_key: u64) -> Bytes {
        let mut b = SaMadBuilder::request(self.method, 0, self.kind.attribute());
        b.header_mut().mad.set_attribute_modifier(self.modifier);
        b.header_mut().sa.set_sm_key(sm_key);
        b.header_mut().sa.set_component_mask(self.mask);
        b.data(&self.record).into_bytes()
    }
}

/// The query the command line names, and its arguments (saquery's
/// positional words after the query name).
fn kind(cli: &Cli) -> Result<(Kind, Vec<&str>), String> {
    let positional: Vec<&str> = [&cli.query, &cli.arg, &cli.arg2]
        .into_iter()
        .flatten()
        .map(String::as_str)
        .collect();
    let by_flag = [
        (cli.class_port_info, Kind::ClassPortInfo),
        (
            cli.path_records || cli.src_to_dst.is_some() || cli.sgid_to_dgid.is_some(),
            Kind::PathRecord,
        ),
        (cli.node_records, Kind::Nodes(Listing::Records)),
        (cli.list, Kind::Nodes(Listing::Descriptions)),
        (cli.lids, Kind::Nodes(Listing::Lids)),
        (cli.unique_lid, Kind::Nodes(Listing::UniqueLid)),
        (cli.guids, Kind::Nodes(Listing::Guids)),
        (cli.name_of_lid, Kind::Nodes(Listing::NameOfLid)),
        (cli.name_of_guid, Kind::Nodes(Listing::NameOfGuid)),
        (cli.groups, Kind::McGroups),
        (cli.members, Kind::McMembers),
        (cli.service_records, Kind::ServiceRecord),
        (cli.inform_info_records, Kind::InformInfoRecord),
        (cli.link_records, Kind::LinkRecord),
        (cli.sm_ports, Kind::SmPorts),
    ];
    let flagged: Vec<Kind> = by_flag
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, k)| *k)
        .collect();
    if flagged.len() > 1 {
        return Err(format!("choose one query; got {flagged:?}"));
    }
    if let Some(k) = flagged.first() {
        // Positional words after a flag are the query's arguments.
        return Ok((*k, positional));
    }
    match positional.split_first() {
        Some((name, rest)) => match Kind::from_name(name) {
            Some(k) => Ok((k, rest.to_vec())),
            // saquery: any other word is a node's LID or name (NodeRecord).
            None => Ok((Kind::NodeRecord, positional)),
        },
        None => Ok((Kind::NodeRecord, Vec::new())),
    }
}

/// The node names the command line gives where saquery takes a LID: they
/// are looked up (NodeRecord by NodeDescription) before the query is
/// built with [`from_cli`].
pub(crate) fn node_names(cli: &Cli) -> Vec<String> {
    let mut words: Vec<&str> = Vec::new();
    if let Some(pair) = &cli.src_to_dst {
        words.extend(pair.split(':'));
    }
    if let Ok((kind, args)) = kind(cli)
        && !matches!(
            kind,
            Kind::InformInfoRecord | Kind::PathRecord | Kind::Nodes(_) | Kind::McMembers
        )
    {
        // The LID is the part before the first '/'.
        words.extend(args.iter().filter_map(|a| a.split('/').next()));
    }
    let mut found: Vec<String> = words
        .into_iter()
        .filter(|w| names::is_name(w))
        .map(str::to_owned)
        .collect();
    found.sort();
    found.dedup();
    found
}

/// Builds the request the command line describes, with its node names
/// standing for the LIDs `names` gives.
pub(crate) fn from_cli(cli: &Cli, names: Names<'_>) -> Result<Query, String> {
    let (kind, args) = kind(cli)?;
    let arg = args.first().copied();
    let default_method = if kind == Kind::ClassPortInfo {
        Method::GET
    } else {
        Method::GET_TABLE
    };
    let method = match cli.method {
        None => default_method,
        Some(MethodArg::Get) => Method::GET,
        Some(MethodArg::GetTable) => Method::GET_TABLE,
    };
    let mut modifier = 0;
    let (mask, record) = match kind {
        Kind::ClassPortInfo | Kind::ServiceRecord | Kind::McGroups | Kind::McMembers => {
            (ComponentMask::NONE, Vec::new())
        }
        Kind::NodeRecord => node_record(arg, names)?,
        Kind::Nodes(listing) => nodes(listing, arg)?,
        Kind::PathRecord => path_record(cli, names)?,
        Kind::McMemberRecord => mc_member_record(cli),
        Kind::InformInfoRecord => inform_info_record(arg)?,
        Kind::SmPorts => {
            // The IsSM query; the IsSMdisabled one follows it.
            modifier = CAPABILITY_MASK_MATCH;
            fabric::capability_template(IS_SM)
        }
        _ => fabric::template(kind, &args, names)?,
    };
    let mask = cli.comp_mask.map_or(mask, ComponentMask);
    Ok(Query {
        kind,
        method,
        mask,
        record,
        modifier,
        argument: arg.map(str::to_owned),
    })
}

/// A PathRecord Get with the template and mask the PathRecord options
/// describe, whatever query the rest of the command line names.
pub(crate) fn path_template(cli: &Cli, names: Names<'_>) -> Result<Query, String> {
    let (mask, record) = path_record(cli, names)?;
    let mask = cli.comp_mask.map_or(mask, ComponentMask);
    Ok(Query::selecting(
        Kind::PathRecord,
        Method::GET,
        mask,
        &record,
    ))
}

/// A node listing's NodeRecord query: every record, to pick from as
/// saquery does, except for -O and -U, whose LID or port GUID the SA
/// finds.
fn nodes(listing: Listing, arg: Option<&str>) -> Result<(ComponentMask, Vec<u8>), String> {
    let arg = match arg {
        Some(a) => a,
        None if listing.needs_argument() => {
            let what = match listing {
                Listing::NameOfLid => "a LID",
                Listing::NameOfGuid => "a port GUID",
                _ => "a node name",
            };
            return Err(format!("{listing:?} needs {what}"));
        }
        None => return Ok((ComponentMask::NONE, Vec::new())),
    };
    let mut r = NodeRecord::new_zeroed();
    let mask = match listing {
        Listing::NameOfLid => {
            r.set_lid(names::lid(arg, Names::Pending)?);
            nr::LID
        }
        Listing::NameOfGuid => {
            r.set_port_guid(local_sa_cli::number::<u64>(arg)?);
            nr::PORT_GUID
        }
        _ => return Ok((ComponentMask::NONE, Vec::new())),
    };
    Ok((mask, r.as_bytes().to_vec()))
}

/// The NodeRecord Get that finds a node by name, as saquery matches it:
/// the whole NodeDescription.
pub(crate) fn node_by_name(name: &str) -> Query {
    let mut r = NodeRecord::new_zeroed();
    r.set_description(name);
    Query::selecting(
        Kind::NodeRecord,
        Method::GET_TABLE,
        nr::NODE_DESCRIPTION,
        r.as_bytes(),
    )
}

fn node_record(arg: Option<&str>, names: Names<'_>) -> Result<(ComponentMask, Vec<u8>), String> {
    let mut r = NodeRecord::new_zeroed();
    let mut mask = ComponentMask::NONE;
    // saquery accepts "lid/port/..." and uses the LID (0: every node).
    if let Some(lid) = arg
        .map(|a| names::optional_lid(a.split('/').next().unwrap_or(a), names))
        .transpose()?
        .flatten()
    {
        r.set_lid(lid);
        mask |= nr::LID;
    }
    Ok((mask, r.as_bytes().to_vec()))
}

fn selector_byte(byte: u8) -> (Selector, u8) {
    (Selector::from_bits(byte >> 6), byte & 0x3F)
}

fn path_record(cli: &Cli, names: Names<'_>) -> Result<(ComponentMask, Vec<u8>), String> {
    let mut r = PathRecord::new_zeroed();
    let mut m = ComponentMask::NONE;
    let (mut slid, mut dlid) = (cli.slid, cli.dlid);
    let (mut sgid, mut dgid) = (cli.sgid, cli.dgid);
    let mut numb_path = cli.numb_path;
    if let Some(pair) = &cli.src_to_dst {
        let (s, d) = pair
            .split_once(':')
            .ok_or_else(|| format!("--src-to-dst wants SRC:DST, got {pair:?}"))?;
        slid = Some(names::lid(s, names)?);
        dlid = Some(names::lid(d, names)?);
        numb_path = numb_path.or(Some(0x7F));
    }
    if let Some(pair) = &cli.sgid_to_dgid {
        // The GIDs contain ':' and the separator is '-'.
        let (s, d) = pair
            .split_once('-')
            .ok_or_else(|| format!("--sgid-to-dgid wants SGID-DGID, got {pair:?}"))?;
        sgid = Some(s.parse::<Gid>().map_err(|e| e.to_string())?);
        dgid = Some(d.parse::<Gid>().map_err(|e| e.to_string())?);
        numb_path = numb_path.or(Some(0x7F));
    }
    if let Some(v) = cli.service_id {
        r.set_service_id(v);
        m |= pr::SERVICE_ID;
    }
    if let Some(g) = sgid {
        r.set_sgid(g);
        m |= pr::SGID;
    }
    if let Some(g) = dgid {
        r.set_dgid(g);
        m |= pr::DGID;
    }
    if let Some(l) = slid {
        r.set_slid(l);
        m |= pr::SLID;
    }
    if let Some(l) = dlid {
        r.set_dlid(l);
        m |= pr::DLID;
    }
    if let Some(v) = cli.hop_limit {
        r.set_hop_limit(v);
        m |= pr::HOP_LIMIT;
    }
    if let Some(v) = cli.flow_label {
        r.set_flow_label(v);
        m |= pr::FLOW_LABEL;
    }
    if let Some(v) = cli.tclass {
        r.set_tclass(v);
        m |= pr::TCLASS;
    }
    if let Some(v) = cli.reversible {
        r.set_reversible(v != 0);
        m |= pr::REVERSIBLE;
    }
    if let Some(v) = numb_path {
        r.set_numb_path(v);
        m |= pr::NUMB_PATH;
    }
    if let Some(v) = cli.pkey {
        r.set_pkey(v);
        m |= pr::PKEY;
    }
    if let Some(v) = cli.qos_class {
        r.set_qos_class(v);
        m |= pr::QOS_CLASS;
    }
    if let Some(v) = cli.sl {
        r.set_sl(v);
        m |= pr::SL;
    }
    if let Some(b) = cli.mtu {
        let (sel, v) = selector_byte(b);
        r.set_mtu_selector(sel);
        r.set_mtu(Mtu(v));
        m |= pr::MTU_SELECTOR | pr::MTU;
    }
    if let Some(b) = cli.rate {
        let (sel, v) = selector_byte(b);
        r.set_rate_selector(sel);
        r.set_rate(Rate(v));
        m |= pr::RATE_SELECTOR | pr::RATE;
    }
    if let Some(b) = cli.pkt_lifetime {
        let (sel, v) = selector_byte(b);
        r.set_packet_life_selector(sel);
        r.set_packet_life(v);
        m |= pr::PACKET_LIFE_TIME_SELECTOR | pr::PACKET_LIFE_TIME;
    }
    Ok((m, r.as_bytes().to_vec()))
}

fn mc_member_record(cli: &Cli) -> (ComponentMask, Vec<u8>) {
    let mut r = McMemberRecord::new_zeroed();
    let mut m = ComponentMask::NONE;
    if let Some(g) = cli.mgid {
        r.set_mgid(g);
        m |= mcmr::MGID;
    }
    if let Some(g) = cli.gid {
        r.set_port_gid(g);
        m |= mcmr::PORT_GID;
    }
    if let Some(v) = cli.mlid {
        r.set_mlid(v);
        m |= mcmr::MLID;
    }
    if let Some(v) = cli.qkey {
        r.set_qkey(v);
        m |= mcmr::QKEY;
    }
    if let Some(b) = cli.mtu {
        let (sel, v) = selector_byte(b);
        r.set_mtu_selector(sel);
        r.set_mtu(Mtu(v));
        m |= mcmr::MTU_SELECTOR | mcmr::MTU;
    }
    if let Some(b) = cli.rate {
        let (sel, v) = selector_byte(b);
        r.set_rate_selector(sel);
        r.set_rate(Rate(v));
        m |= mcmr::RATE_SELECTOR | mcmr::RATE;
    }
    if let Some(b) = cli.pkt_lifetime {
        let (sel, v) = selector_byte(b);
        r.set_packet_life_selector(sel);
        r.set_packet_life(v);
        m |= mcmr::PACKET_LIFE_TIME_SELECTOR | mcmr::PACKET_LIFE_TIME;
    }
    if let Some(v) = cli.tclass {
        r.set_tclass(v);
        m |= mcmr::TCLASS;
    }
    if let Some(v) = cli.pkey {
        r.set_pkey(v);
        m |= mcmr::PKEY;
    }
    if let Some(v) = cli.sl {
        r.set_sl(v);
        m |= mcmr::SL;
    }
    if let Some(v) = cli.flow_label {
        r.set_flow_label(v);
        m |= mcmr::FLOW_LABEL;
    }
    if let Some(v) = cli.hop_limit {
        r.set_hop_limit(v);
        m |= mcmr::HOP_LIMIT;
    }
    if let Some(v) = cli.scope {
        r.set_scope(v);
        m |= mcmr::SCOPE;
    }
    if let Some(v) = cli.join_state {
        r.set_join_state(JoinState(v));
        m |= mcmr::JOIN_STATE;
    }
    if let Some(v) = cli.proxy_join {
        // As saquery and OpenSM read it: their `proxy_join:1` bit field,
        // the lowest bit of byte 49 on x86 (the specification's ProxyJoin
        // is its highest).
        let mut bytes = r.as_bytes().to_vec();
        bytes[49] = (bytes[49] & !1) | (v & 1);
        return (m | mcmr::PROXY_JOIN, bytes);
    }
    (m, r.as_bytes().to_vec())
}

fn inform_info_record(arg: Option<&str>) -> Result<(ComponentMask, Vec<u8>), String> {
    let mut r = InformInfoRecord::new_zeroed();
    let mut m = ComponentMask::NONE;
    if let Some(a) = arg {
        r.set_subscriber_gid(a.parse::<Gid>().map_err(|e| e.to_string())?);
        m |= iir::SUBSCRIBER_GID;
    }
    Ok((m, r.as_bytes().to_vec()))
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use mad_codec::SaMad;
    use mad_codec::records::SaRecord;

    use super::*;

    fn query(args: &[&str]) -> Result<Query, String> {
        let cli =
            Cli::try_parse_from(std::iter::once("lsaquery").chain(args.iter().copied())).unwrap();
        from_cli(&cli, Names::Pending)
    }

    #[test]
    fn src_to_dst_is_saquery_s_request() {
        // saquery --src-to-dst 4:1 (conformance/vectors/pr-gettable-lids.mad)
        let q = query(&["--src-to-dst", "4:1"]).unwrap();
        assert_eq!(q.kind, Kind::PathRecord);
        assert_eq!(q.method, Method::GET_TABLE);
        assert_eq!(q.mask, pr::SLID | pr::DLID | pr::NUMB_PATH);
        let mad = q.to_mad(0);
        let m = SaMad::parse_checked(&mad).unwrap();
        let r = m.record::<PathRecord>().unwrap();
        assert_eq!((r.slid(), r.dlid(), r.numb_path()), (4, 1, 127));
    }

    #[test]
    fn selector_bytes_and_defaults() {
        let q = query(&["-p", "-M", "0x84", "--dlid", "2"]).unwrap();
        assert_eq!(q.mask, pr::MTU_SELECTOR | pr::MTU | pr::DLID);
        let r = <PathRecord as SaRecord>::parse(&q.record).unwrap();
        assert_eq!(
            (r.mtu_selector(), r.mtu()),
            (Selector::Exactly, Mtu::MTU_2048)
        );
        assert_eq!(query(&["-c"]).unwrap().method, Method::GET);
        assert_eq!(
            query(&["NR", "3", "--method", "get"]).unwrap().method,
            Method::GET
        );
        assert_eq!(query(&["--x", "4/1"]).unwrap().kind, Kind::LinkRecord);
        assert_eq!(query(&["--s"]).unwrap().kind, Kind::SmPorts);
        let nr = query(&["5"]).unwrap();
        assert_eq!((nr.kind, nr.mask), (Kind::NodeRecord, nr::LID));
    }

    #[test]
    fn comp_mask_overrides_the_implied_mask() {
        let q = query(&["-p", "--service_id", "0x10", "--comp-mask", "0x1"]).unwrap();
        assert_eq!(q.mask, pr::SERVICE_ID_MSB);
        assert_eq!(
            <PathRecord as SaRecord>::parse(&q.record)
                .unwrap()
                .service_id(),
            0x10
        );
    }

    #[test]
    fn bad_requests_are_explained() {
        let cli = Cli::try_parse_from(["lsaquery", "--src-to-dst", "h1:4"]).unwrap();
        assert_eq!(node_names(&cli), ["h1"]);
        assert!(
            from_cli(&cli, Names::Resolved(&Default::default()))
                .unwrap_err()
                .contains("no node is named \"h1\"")
        );
        assert!(
            query(&["--src-to-dst", "4"])
                .unwrap_err()
                .contains("SRC:DST")
        );
        assert!(query(&["-c", "-p"]).unwrap_err().contains("choose one"));
        let cli = Cli::try_parse_from(["lsaquery", "Bogus"]).unwrap();
        assert!(
            from_cli(&cli, Names::Resolved(&Default::default()))
                .unwrap_err()
                .contains("no node is named \"Bogus\"")
        );
    }
}
