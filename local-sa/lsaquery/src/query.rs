//! Turning the command line into an SA request.

use bytes::Bytes;
use mad_codec::attr::{
    inform_info_record::mask as iir, mc_member_record::mask as mcmr, node_record::mask as nr,
    path_record::mask as pr,
};
use mad_codec::records::SaRecord;
use mad_codec::types::Selector;
use mad_codec::zerocopy::{FromZeros, IntoBytes};
use mad_codec::{
    AttributeId, ComponentMask, Gid, InformInfoRecord, JoinState, McMemberRecord, Method, Mtu,
    NodeRecord, PathRecord, Rate, SaMadBuilder,
};

use crate::cli::{Cli, MethodArg};

/// What is being asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    ClassPortInfo,
    NodeRecord,
    PathRecord,
    McMemberRecord,
    McGroups,
    ServiceRecord,
    InformInfoRecord,
}

impl Kind {
    fn from_name(name: &str) -> Option<Self> {
        let n = name.to_ascii_lowercase();
        Some(match n.as_str() {
            "classportinfo" | "cpi" => Self::ClassPortInfo,
            "noderecord" | "nr" => Self::NodeRecord,
            "pathrecord" | "pr" => Self::PathRecord,
            "mcmemberrecord" | "mcmr" => Self::McMemberRecord,
            "servicerecord" | "sr" => Self::ServiceRecord,
            "informinforecord" | "iir" => Self::InformInfoRecord,
            _ => return None,
        })
    }

    /// Whether local-sa answers this query itself; the others go to the
    /// master SA even when local-sa is the default SA (as saquery sends
    /// every query there).
    pub(crate) fn served_by_local_sa(self) -> bool {
        !matches!(self, Self::NodeRecord | Self::ServiceRecord)
    }

    pub(crate) fn attribute(self) -> AttributeId {
        match self {
            Self::ClassPortInfo => AttributeId::CLASS_PORT_INFO,
            Self::NodeRecord => NodeRecord::ATTRIBUTE_ID,
            Self::PathRecord => PathRecord::ATTRIBUTE_ID,
            Self::McMemberRecord | Self::McGroups => McMemberRecord::ATTRIBUTE_ID,
            Self::ServiceRecord => AttributeId::SERVICE_RECORD,
            Self::InformInfoRecord => InformInfoRecord::ATTRIBUTE_ID,
        }
    }
}

/// A request ready to send.
#[derive(Debug, Clone)]
pub(crate) struct Query {
    pub(crate) kind: Kind,
    pub(crate) method: Method,
    pub(crate) mask: ComponentMask,
    /// The template record (empty for ClassPortInfo and unfiltered tables).
    pub(crate) record: Vec<u8>,
}

impl Query {
    /// The request MAD; the client sets the TransactionID.
    pub(crate) fn to_mad(&self, sm_key: u64) -> Bytes {
        let mut b = SaMadBuilder::request(self.method, 0, self.kind.attribute());
        b.header_mut().sa.set_sm_key(sm_key);
        b.header_mut().sa.set_component_mask(self.mask);
        b.data(&self.record).into_bytes()
    }
}

fn kind(cli: &Cli) -> Result<(Kind, Option<&str>), String> {
    let positional = cli.query.as_deref();
    let by_flag = [
        (cli.class_port_info, Kind::ClassPortInfo),
        (
            cli.path_records || cli.src_to_dst.is_some() || cli.sgid_to_dgid.is_some(),
            Kind::PathRecord,
        ),
        (cli.node_records, Kind::NodeRecord),
        (cli.groups, Kind::McGroups),
        (cli.members, Kind::McMemberRecord),
        (cli.service_records, Kind::ServiceRecord),
        (cli.inform_info_records, Kind::InformInfoRecord),
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
        // A positional word after a flag is the query's argument.
        return Ok((*k, cli.arg.as_deref().or(positional)));
    }
    match positional {
        Some(name) => match Kind::from_name(name) {
            Some(k) => Ok((k, cli.arg.as_deref())),
            // saquery: an unknown word is a node name/LID for NodeRecord.
            None if name.chars().next().is_some_and(|c| c.is_ascii_digit()) => {
                Ok((Kind::NodeRecord, Some(name)))
            }
            None => Err(format!(
                "unknown query {name:?} (see --help for the query names)"
            )),
        },
        None => Ok((Kind::NodeRecord, None)),
    }
}

/// Builds the request the command line describes.
pub(crate) fn from_cli(cli: &Cli) -> Result<Query, String> {
    let (kind, arg) = kind(cli)?;
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
    let (mask, record) = match kind {
        Kind::ClassPortInfo | Kind::ServiceRecord | Kind::McGroups => {
            (ComponentMask::NONE, Vec::new())
        }
        Kind::NodeRecord => node_record(arg)?,
        Kind::PathRecord => path_record(cli)?,
        Kind::McMemberRecord => mc_member_record(cli),
        Kind::InformInfoRecord => inform_info_record(arg)?,
    };
    let mask = cli.comp_mask.map_or(mask, ComponentMask);
    Ok(Query {
        kind,
        method,
        mask,
        record,
    })
}

/// A PathRecord Get with the template and mask the PathRecord options
/// describe, whatever query the rest of the command line names.
pub(crate) fn path_template(cli: &Cli) -> Result<Query, String> {
    let (mask, record) = path_record(cli)?;
    Ok(Query {
        kind: Kind::PathRecord,
        method: Method::GET,
        mask: cli.comp_mask.map_or(mask, ComponentMask),
        record,
    })
}

fn lid(text: &str) -> Result<u16, String> {
    if text.chars().next().is_some_and(|c| c.is_ascii_alphabetic()) {
        return Err(format!("{text:?}: node names are not resolved; give a LID"));
    }
    match local_sa_core::text::number::<u16>(text)? {
        0 => Err("LID 0 is not a valid LID".into()),
        l => Ok(l),
    }
}

fn node_record(arg: Option<&str>) -> Result<(ComponentMask, Vec<u8>), String> {
    let mut r = NodeRecord::new_zeroed();
    let mut mask = ComponentMask::NONE;
    if let Some(a) = arg {
        // saquery accepts "lid/port/..." and uses the LID.
        r.set_lid(lid(a.split('/').next().unwrap_or(a))?);
        mask |= nr::LID;
    }
    Ok((mask, r.as_bytes().to_vec()))
}

fn selector_byte(byte: u8) -> (Selector, u8) {
    (Selector::from_bits(byte >> 6), byte & 0x3F)
}

fn path_record(cli: &Cli) -> Result<(ComponentMask, Vec<u8>), String> {
    let mut r = PathRecord::new_zeroed();
    let mut m = ComponentMask::NONE;
    let (mut slid, mut dlid) = (cli.slid, cli.dlid);
    let (mut sgid, mut dgid) = (cli.sgid, cli.dgid);
    let mut numb_path = cli.numb_path;
    if let Some(pair) = &cli.src_to_dst {
        let (s, d) = pair
            .split_once(':')
            .ok_or_else(|| format!("--src-to-dst wants SRC:DST, got {pair:?}"))?;
        slid = Some(lid(s)?);
        dlid = Some(lid(d)?);
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

    use super::*;

    fn query(args: &[&str]) -> Result<Query, String> {
        let cli =
            Cli::try_parse_from(std::iter::once("lsaquery").chain(args.iter().copied())).unwrap();
        from_cli(&cli)
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
        assert!(
            query(&["--src-to-dst", "h1:h2"])
                .unwrap_err()
                .contains("give a LID")
        );
        assert!(
            query(&["--src-to-dst", "4"])
                .unwrap_err()
                .contains("SRC:DST")
        );
        assert!(query(&["-c", "-p"]).unwrap_err().contains("choose one"));
        assert!(query(&["Bogus"]).unwrap_err().contains("unknown query"));
    }
}
