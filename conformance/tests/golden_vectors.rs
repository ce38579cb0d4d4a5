//! Every golden vector decodes to the values OpenSM and saquery show for it,
//! and re-emits byte for byte from the decoded values.
//!
//! "Meaningful bytes" of a response are the headers plus its records: OpenSM
//! leaves uninitialised bytes after a single record (a Get answer, an error
//! answer copying the request) and the simulator cuts multi-MAD answers to
//! 256 bytes, of which only whole records are real.

use conformance::golden::{self, Vector};
use conformance::saquery::{PrintedRecord, parse_number, parse_printed_records};
use mad_codec::attr::{class_port_info::cap, path_record::mask as pr};
use mad_codec::header::{RmppFlags, SaMadHeader};
use mad_codec::records::SaRecord;
use mad_codec::zerocopy::{FromZeros, IntoBytes};
use mad_codec::{
    AttributeId, ClassPortInfo, ClassPortInfoRepr, ComponentMask, Gid, InformInfo,
    InformInfoRecord, InformInfoRepr, JoinState, MadHeader, MadStatus, McMemberRecord,
    McMemberRecordRepr, Method, MgmtClass, Mtu, NodeRecord, Notice, NoticeRepr, PathRecord,
    PathRecordRepr, Rate, SaMad, SaMadBuilder, Selector, ServiceRecord, TrapDetails,
};

fn vector(name: &str) -> Vector {
    golden::load(name).unwrap_or_else(|e| panic!("{e}"))
}

fn request(v: &Vector) -> SaMad<'_> {
    let bytes = v.mad("request").expect("a request");
    assert_eq!(
        bytes.len(),
        mad_codec::MAD_LEN,
        "{}: requests are whole MADs",
        v.name
    );
    SaMad::parse_checked(bytes).unwrap_or_else(|e| panic!("{}: request: {e}", v.name))
}

fn response(v: &Vector) -> SaMad<'_> {
    let bytes = v.mad("response").expect("a response");
    SaMad::parse_checked(bytes).unwrap_or_else(|e| panic!("{}: response: {e}", v.name))
}

fn printed(v: &Vector) -> Vec<PrintedRecord> {
    v.text("saquery")
        .map(parse_printed_records)
        .unwrap_or_default()
}

/// Data bytes of a truncated answer that are real (SIMULATOR.md).
const TRUNCATED_DATA: usize = 168;

/// The response's records that are whole.
fn whole_records<'a, T: SaRecord>(v: &Vector, resp: &SaMad<'a>) -> Vec<&'a T> {
    let records = resp
        .records::<T>()
        .unwrap_or_else(|e| panic!("{}: {e}", v.name));
    let n = if v.truncated() {
        TRUNCATED_DATA / records.stride()
    } else {
        records.len()
    };
    records.take(n).collect()
}

/// Rebuilds a MAD header field by field through the setters and checks it
/// is the same 56 bytes.
fn assert_header_reemits(v: &Vector, mad: &SaMad<'_>) {
    let h = mad.header();
    let mut m = MadHeader::new(
        h.mad.mgmt_class(),
        h.mad.class_version(),
        h.mad.method(),
        h.mad.transaction_id(),
        h.mad.attribute_id(),
        h.mad.attribute_modifier(),
    );
    m.set_status(h.mad.status());
    m.set_class_specific(h.mad.class_specific());
    let mut rebuilt = SaMadHeader::new_zeroed();
    rebuilt.mad = m;
    rebuilt.rmpp.set_version(h.rmpp.version());
    rebuilt.rmpp.set_rmpp_type(h.rmpp.rmpp_type());
    rebuilt.rmpp.set_resp_time(h.rmpp.resp_time());
    rebuilt.rmpp.set_flags(h.rmpp.flags());
    rebuilt.rmpp.set_status(h.rmpp.status());
    rebuilt.rmpp.set_segment_number(h.rmpp.segment_number());
    rebuilt.rmpp.set_payload_length(h.rmpp.payload_length());
    rebuilt.sa.set_sm_key(h.sa.sm_key());
    rebuilt.sa.set_attribute_offset(h.sa.attribute_offset());
    rebuilt.sa.set_component_mask(h.sa.component_mask());
    assert_eq!(
        rebuilt.as_bytes(),
        h.as_bytes(),
        "{}: header re-emit",
        v.name
    );
}

/// The response answers the request: same TID (its low 32 bits: the
/// kernel or the simulator owns the upper ones), attribute and modifier,
/// the response method, SM_Key 0.
fn assert_answers(v: &Vector, req: &SaMad<'_>, resp: &SaMad<'_>) {
    assert_eq!(
        resp.mad().transaction_id_low(),
        req.mad().transaction_id_low(),
        "{}",
        v.name
    );
    assert_eq!(
        resp.mad().attribute_id(),
        req.mad().attribute_id(),
        "{}",
        v.name
    );
    assert_eq!(
        resp.mad().method(),
        req.mad().method().response(),
        "{}",
        v.name
    );
    assert_eq!(
        resp.sa().sm_key(),
        0,
        "{}: responses carry SM_Key 0",
        v.name
    );
    assert_eq!(
        resp.sa().component_mask(),
        req.sa().component_mask(),
        "{}: mask echoed",
        v.name
    );
}

/// A successful GetTableResp re-emits from its header and decoded records.
fn assert_table_reemits<T: SaRecord>(v: &Vector, resp: &SaMad<'_>, records: &[T]) {
    let mut b = SaMadBuilder::new(*resp.header());
    for r in records {
        b.push_record(r);
    }
    if records.is_empty() {
        b.header_mut()
            .sa
            .set_attribute_offset(resp.sa().attribute_offset());
    }
    let rebuilt = b.into_bytes();
    let original = v.mad("response").unwrap();
    if v.truncated() {
        assert_eq!(
            &rebuilt[..],
            &original[..rebuilt.len()],
            "{}: whole records re-emit",
            v.name
        );
    } else {
        assert_eq!(
            &rebuilt[..],
            original,
            "{}: response re-emits byte for byte",
            v.name
        );
    }
}

// ---- saquery's printed fields ---------------------------------------------

fn num(p: &PrintedRecord, field: &str) -> u64 {
    p.number(field)
        .unwrap_or_else(|| panic!("saquery printed no number for {field:?}: {p:?}"))
}

fn gid(p: &PrintedRecord, field: &str) -> Gid {
    p.get(field)
        .and_then(|g| g.parse().ok())
        .unwrap_or_else(|| panic!("no GID {field:?}: {p:?}"))
}

fn assert_path_record_matches(r: &PathRecord, p: &PrintedRecord) {
    let b = r.as_bytes();
    assert_eq!(p.heading, "PathRecord dump");
    assert_eq!(num(p, "service_id"), r.service_id());
    assert_eq!(gid(p, "dgid"), r.dgid());
    assert_eq!(gid(p, "sgid"), r.sgid());
    assert_eq!(num(p, "dlid"), u64::from(r.dlid()));
    assert_eq!(num(p, "slid"), u64::from(r.slid()));
    let flow = u64::from(r.raw_traffic()) << 31
        | u64::from(r.flow_label()) << 8
        | u64::from(r.hop_limit());
    assert_eq!(num(p, "hop_flow_raw"), flow);
    assert_eq!(num(p, "tclass"), u64::from(r.tclass()));
    assert_eq!(
        num(p, "num_path_revers"),
        u64::from(r.reversible()) << 7 | u64::from(r.numb_path())
    );
    assert_eq!(num(p, "pkey"), u64::from(r.pkey()));
    assert_eq!(num(p, "qos_class"), u64::from(r.qos_class()));
    assert_eq!(num(p, "sl"), u64::from(r.sl()));
    assert_eq!(
        num(p, "mtu"),
        u64::from(r.mtu_selector().bits() << 6 | r.mtu().0)
    );
    assert_eq!(
        num(p, "rate"),
        u64::from(r.rate_selector().bits() << 6 | r.rate().0)
    );
    assert_eq!(
        num(p, "pkt_life"),
        u64::from(r.packet_life_selector().bits() << 6 | r.packet_life())
    );
    assert_eq!(num(p, "preference"), u64::from(r.preference()));
    assert_eq!(&b[58..64], &[0; 6]);
}

fn assert_node_record_matches(r: &NodeRecord, p: &PrintedRecord) {
    assert_eq!(p.heading, "NodeRecord dump");
    assert_eq!(num(p, "lid"), u64::from(r.lid()));
    assert_eq!(num(p, "base_version"), u64::from(r.base_version()));
    assert_eq!(num(p, "class_version"), u64::from(r.class_version()));
    let node_type = match r.node_type() {
        mad_codec::codes::NodeType::CA => "Channel Adapter",
        mad_codec::codes::NodeType::SWITCH => "Switch",
        mad_codec::codes::NodeType::ROUTER => "Router",
        other => panic!("unexpected node type {other:?}"),
    };
    assert_eq!(p.get("node_type"), Some(node_type));
    assert_eq!(num(p, "num_ports"), u64::from(r.num_ports()));
    assert_eq!(num(p, "sys_guid"), r.system_image_guid());
    assert_eq!(num(p, "node_guid"), r.node_guid());
    assert_eq!(num(p, "port_guid"), r.port_guid());
    assert_eq!(num(p, "partition_cap"), u64::from(r.partition_cap()));
    assert_eq!(num(p, "device_id"), u64::from(r.device_id()));
    assert_eq!(num(p, "revision"), u64::from(r.revision()));
    assert_eq!(num(p, "port_num"), u64::from(r.local_port_num()));
    assert_eq!(num(p, "vendor_id"), u64::from(r.vendor_id()));
    assert_eq!(p.get("NodeDescription"), Some(r.description().as_str()));
}

fn assert_class_port_info_matches(c: &ClassPortInfo, p: &PrintedRecord) {
    assert_eq!(p.heading, "SA ClassPortInfo");
    assert_eq!(num(p, "Base version"), u64::from(c.base_version()));
    assert_eq!(num(p, "Class version"), u64::from(c.class_version()));
    assert_eq!(num(p, "Capability mask"), u64::from(c.capability_mask()));
    assert_eq!(num(p, "Capability mask 2"), u64::from(c.capability_mask2()));
    assert_eq!(
        num(p, "Response time value"),
        u64::from(c.resp_time_value())
    );
    assert_eq!(gid(p, "Redirect GID"), c.redirect_gid());
    let tc_sl_fl =
        |tc: u8, sl: u8, fl: u32| u64::from(tc) << 24 | u64::from(sl) << 20 | u64::from(fl);
    assert_eq!(
        num(p, "Redirect TC/SL/FL"),
        tc_sl_fl(
            c.redirect_tclass(),
            c.redirect_sl(),
            c.redirect_flow_label()
        )
    );
    assert_eq!(num(p, "Redirect LID"), u64::from(c.redirect_lid()));
    assert_eq!(num(p, "Redirect PKey"), u64::from(c.redirect_pkey()));
    assert_eq!(num(p, "Redirect QP"), u64::from(c.redirect_qp()));
    assert_eq!(num(p, "Redirect QKey"), u64::from(c.redirect_qkey()));
    assert_eq!(gid(p, "Trap GID"), c.trap_gid());
    assert_eq!(
        num(p, "Trap TC/SL/FL"),
        tc_sl_fl(c.trap_tclass(), c.trap_sl(), c.trap_flow_label())
    );
    assert_eq!(num(p, "Trap LID"), u64::from(c.trap_lid()));
    assert_eq!(num(p, "Trap PKey"), u64::from(c.trap_pkey()));
    assert_eq!(
        num(p, "Trap HL/QP"),
        u64::from(c.trap_hop_limit()) << 24 | u64::from(c.trap_qp())
    );
    assert_eq!(num(p, "Trap QKey"), u64::from(c.trap_qkey()));
}

fn assert_mc_group_matches(r: &McMemberRecord, p: &PrintedRecord) {
    assert_eq!(p.heading, "MCMemberRecord group dump");
    assert_eq!(gid(p, "MGID"), r.mgid());
    assert_eq!(num(p, "Mlid"), u64::from(r.mlid()));
    assert_eq!(
        num(p, "Mtu"),
        u64::from(r.mtu_selector().bits() << 6 | r.mtu().0)
    );
    assert_eq!(num(p, "pkey"), u64::from(r.pkey()));
    assert_eq!(
        num(p, "Rate"),
        u64::from(r.rate_selector().bits() << 6 | r.rate().0)
    );
    assert_eq!(num(p, "SL"), u64::from(r.sl()));
}

// ---- the vectors ----------------------------------------------------------

#[test]
fn every_vector_is_a_valid_sa_exchange() {
    let all = golden::load_all().unwrap();
    assert!(all.len() >= 35, "vectors missing: {}", all.len());
    for v in &all {
        if let Some(mad) = v.mad("mad") {
            // An unsolicited MAD (a Report): no request to answer.
            let m = SaMad::parse_checked(mad).unwrap_or_else(|e| panic!("{}: {e}", v.name));
            assert_header_reemits(v, &m);
            continue;
        }
        let req = request(v);
        assert_eq!(req.mad().mgmt_class(), MgmtClass::SUBN_ADM);
        assert_eq!(req.mad().class_version(), 2);
        assert_header_reemits(v, &req);
        let resp = response(v);
        assert_header_reemits(v, &resp);
        assert_answers(v, &req, &resp);
        assert!(
            v.meta("command").is_some() && v.meta("fabric").is_some(),
            "{}: capture note",
            v.name
        );
    }
}

#[test]
fn class_port_info_get() {
    let v = vector("cpi-get");
    let req = request(&v);
    assert_eq!(req.mad().method(), Method::GET);
    assert_eq!(req.mad().attribute_id(), AttributeId::CLASS_PORT_INFO);
    let resp = response(&v);
    assert_eq!(resp.mad().status(), MadStatus::OK);
    assert_eq!(resp.data().len(), 200, "a full 256-byte GetResp");
    let c = resp.record::<ClassPortInfo>().unwrap();
    assert_class_port_info_matches(c, &printed(&v)[0]);
    // OpenSM 3.3.23's values (anchors/opensm-sa.md §6).
    assert_eq!(c.capability_mask(), 0x2602);
    assert_ne!(c.capability_mask() & cap::IS_UD_MULTICAST_SUPPORTED, 0);
    assert_eq!(c.capability_mask() & cap::IS_TRAP_SUPPORTED, 0);
    assert_eq!(c.capability_mask2(), 0xB5E8);
    assert_eq!(c.resp_time_value(), 16);
    assert_eq!(
        (c.redirect_lid(), c.redirect_qp(), c.redirect_qkey()),
        (0, 1, 0x8001_0000)
    );
    assert_eq!(c.trap_qkey(), 0x8001_0000);
    // Re-emit through the owned representation: headers + 72 bytes.
    let rebuilt = SaMadBuilder::new(*resp.header())
        .data(ClassPortInfoRepr::parse(c).to_wire().as_bytes())
        .into_bytes();
    assert_eq!(
        &rebuilt[..],
        &v.mad("response").unwrap()[..SaMadHeader::LEN + 72]
    );
}

fn path_records_against_saquery(name: &str) -> (Vector, Vec<PathRecord>) {
    let v = vector(name);
    let resp = response(&v);
    assert_eq!(resp.mad().status(), MadStatus::OK, "{name}");
    assert!(
        resp.rmpp().flags().contains(RmppFlags::ACTIVE),
        "{name}: a GetTableResp is RMPP"
    );
    assert_eq!(resp.sa().attribute_offset(), 8);
    let records: Vec<PathRecord> = whole_records::<PathRecord>(&v, &resp)
        .into_iter()
        .copied()
        .collect();
    let printed = printed(&v);
    assert!(
        printed.len() >= records.len(),
        "{name}: saquery printed fewer records"
    );
    for (r, p) in records.iter().zip(&printed) {
        assert_path_record_matches(r, p);
        // Through the owned representation and back, byte for byte.
        assert_eq!(PathRecordRepr::parse(r).to_wire().as_bytes(), r.as_bytes());
    }
    assert_table_reemits(&v, &resp, &records);
    (v, records)
}

#[test]
fn path_record_world_query_truncated_by_the_simulator() {
    let (v, records) = path_records_against_saquery("pr-gettable-all");
    assert!(v.truncated());
    assert_eq!(request(&v).sa().component_mask(), ComponentMask::NONE);
    assert_eq!(records.len(), 2);
    // Returned records carry selector "exactly", Reversible set, NumbPath 0.
    for r in &records {
        assert_eq!(r.mtu_selector(), Selector::Exactly);
        assert_eq!(r.rate_selector(), Selector::Exactly);
        assert_eq!(r.packet_life_selector(), Selector::Exactly);
        assert!(r.reversible());
        assert_eq!(r.numb_path(), 0);
        assert_eq!(r.pkey(), 0xFFFF);
    }
    // A port's path to itself has PacketLifeTime 0; others the subnet's 18.
    let own = records
        .iter()
        .find(|r| r.slid() == r.dlid())
        .expect("a self path");
    assert_eq!(own.packet_life(), 0);
    assert!(
        records
            .iter()
            .any(|r| r.slid() != r.dlid() && r.packet_life() == 18)
    );
}

#[test]
fn path_record_by_lids() {
    let (v, records) = path_records_against_saquery("pr-gettable-lids");
    let req = request(&v);
    assert_eq!(req.mad().method(), Method::GET_TABLE);
    assert_eq!(
        req.sa().component_mask(),
        pr::SLID | pr::DLID | pr::NUMB_PATH
    );
    let q = req.record::<PathRecord>().unwrap();
    assert_eq!(q.numb_path(), 127);
    assert_eq!(records.len(), 1);
    let r = &records[0];
    assert_eq!((r.slid(), r.dlid()), (q.slid(), q.dlid()));
    assert_eq!(r.rate(), Rate::GBPS_10);
    assert_eq!(r.sgid().prefix(), Gid::DEFAULT_PREFIX);
}

#[test]
fn path_record_by_gids() {
    let (v, records) = path_records_against_saquery("pr-gettable-gids");
    let req = request(&v);
    assert_eq!(
        req.sa().component_mask(),
        pr::SGID | pr::DGID | pr::NUMB_PATH
    );
    let q = req.record::<PathRecord>().unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!((records[0].sgid(), records[0].dgid()), (q.sgid(), q.dgid()));
}

#[test]
fn path_record_pkey_is_echoed_and_service_id_is_not() {
    let (v, records) = path_records_against_saquery("pr-gettable-pkey-service-id");
    let req = request(&v);
    assert_eq!(
        req.sa().component_mask(),
        pr::SERVICE_ID | pr::SLID | pr::DLID | pr::NUMB_PATH | pr::PKEY
    );
    let q = req.record::<PathRecord>().unwrap();
    assert_eq!(q.service_id(), 0x1000_0000_0000_0abc);
    assert_eq!(q.pkey(), 0x7FFF);
    let r = &records[0];
    assert_eq!(
        r.pkey(),
        0x7FFF,
        "OpenSM echoes the requested P_Key, membership bit included"
    );
    assert_eq!(r.service_id(), 0, "OpenSM answers ServiceID 0");
    assert_eq!(r.mtu(), Mtu::MTU_2048);
}

#[test]
fn path_record_to_an_unknown_lid_is_an_empty_table() {
    let v = vector("pr-gettable-unknown-dlid");
    let req = request(&v);
    assert_eq!(req.sa().component_mask(), pr::DLID);
    assert_eq!(req.record::<PathRecord>().unwrap().dlid(), 999);
    let resp = response(&v);
    assert_eq!(
        resp.mad().status(),
        MadStatus::OK,
        "GetTable with no match is not an error"
    );
    assert_eq!(
        v.mad("response").unwrap().len(),
        SaMadHeader::LEN,
        "exactly the headers"
    );
    assert_eq!(resp.sa().attribute_offset(), 0);
    assert!(resp.rmpp().is_active());
    assert_eq!(resp.records::<PathRecord>().unwrap().len(), 0);
    assert_table_reemits::<PathRecord>(&v, &resp, &[]);
}

#[test]
fn path_record_with_an_invalid_mtu_is_req_invalid() {
    let v = vector("pr-gettable-bad-mtu");
    let req = request(&v);
    assert_eq!(req.sa().component_mask(), pr::MTU_SELECTOR | pr::MTU);
    let q = req.record::<PathRecord>().unwrap();
    assert_eq!((q.mtu_selector(), q.mtu()), (Selector::GreaterThan, Mtu(9)));
    assert!(!q.mtu().is_valid());
    let resp = response(&v);
    assert_eq!(resp.mad().status(), MadStatus::ERR_REQ_INVALID);
    assert_eq!(resp.mad().method(), Method::GET_TABLE_RESP);
    assert_eq!(
        resp.sa().attribute_offset(),
        0,
        "error GetTableResps zero AttributeOffset"
    );
    assert!(
        !resp.rmpp().is_active(),
        "an error GetTableResp is not an RMPP transfer"
    );
    // The error answer is the request with status, method and offset set.
    let mut expected = *req.header();
    expected.mad.set_method(Method::GET_TABLE_RESP);
    expected.mad.set_status(MadStatus::ERR_REQ_INVALID);
    let rebuilt = SaMadBuilder::new(expected)
        .data(&req.data()[..PathRecord::LEN])
        .into_bytes();
    assert_eq!(&rebuilt[..], &v.mad("response").unwrap()[..rebuilt.len()]);
}

fn node_records(name: &str) -> (Vector, Vec<NodeRecord>) {
    let v = vector(name);
    let resp = response(&v);
    assert_eq!(resp.mad().status(), MadStatus::OK);
    assert_eq!(
        resp.sa().attribute_offset(),
        14,
        "108-byte records at a 112-byte stride"
    );
    let records: Vec<NodeRecord> = whole_records::<NodeRecord>(&v, &resp)
        .into_iter()
        .copied()
        .collect();
    for (r, p) in records.iter().zip(printed(&v).iter()) {
        assert_node_record_matches(r, p);
        // Rebuild through the setters.
        let mut w = NodeRecord::new_zeroed();
        w.set_lid(r.lid());
        w.set_base_version(r.base_version());
        w.set_class_version(r.class_version());
        w.set_node_type(r.node_type());
        w.set_num_ports(r.num_ports());
        w.set_system_image_guid(r.system_image_guid());
        w.set_node_guid(r.node_guid());
        w.set_port_guid(r.port_guid());
        w.set_partition_cap(r.partition_cap());
        w.set_device_id(r.device_id());
        w.set_revision(r.revision());
        w.set_local_port_num(r.local_port_num());
        w.set_vendor_id(r.vendor_id());
        w.set_description(&r.description());
        assert_eq!(w.as_bytes(), r.as_bytes());
    }
    assert_table_reemits(&v, &resp, &records);
    (v, records)
}

#[test]
fn node_record_by_lid() {
    let (v, records) = node_records("nr-gettable-lid");
    let req = request(&v);
    assert_eq!(
        req.sa().component_mask(),
        mad_codec::attr::node_record::mask::LID
    );
    assert_eq!(records.len(), 1);
    let r = &records[0];
    assert_eq!(r.lid(), req.record::<NodeRecord>().unwrap().lid());
    assert_eq!(r.node_type(), mad_codec::codes::NodeType::CA);
    assert_eq!(r.description(), "Hca1");
    assert_eq!(
        r.port_guid(),
        r.node_guid() + 1,
        "ibsim: port GUID = node GUID + port"
    );
}

#[test]
fn node_record_table_truncated_to_one_record() {
    let (v, records) = node_records("nr-gettable-all");
    assert!(v.truncated());
    assert_eq!(records.len(), 1, "one 112-byte record fits in 168 bytes");
}

#[test]
fn multicast_groups_untrusted() {
    let v = vector("mcmr-gettable-groups");
    let resp = response(&v);
    assert_eq!(
        resp.sa().attribute_offset(),
        7,
        "52-byte records at a 56-byte stride"
    );
    let records = whole_records::<McMemberRecord>(&v, &resp);
    assert_eq!(records.len(), 1);
    let g = records[0];
    assert_mc_group_matches(g, &printed(&v)[0]);
    // The IPoIB broadcast group OpenSM creates for the default partition.
    assert_eq!(g.mgid().to_string(), "ff12:401b:ffff::ffff:ffff");
    assert_eq!(g.mlid(), 0xC000);
    assert_eq!(g.qkey(), 0x0B1B);
    assert_eq!(g.scope(), 2);
    // Untrusted: PortGID, JoinState and ProxyJoin are zeroed.
    assert!(g.port_gid().is_zero());
    assert!(g.join_state().is_empty());
    assert_eq!(
        McMemberRecordRepr::parse(g).to_wire().as_bytes(),
        g.as_bytes()
    );
    let owned: Vec<McMemberRecord> = records.into_iter().copied().collect();
    assert_table_reemits(&v, &resp, &owned);
}

#[test]
fn trusted_multicast_query_hides_groups_without_members() {
    let v = vector("mcmr-gettable-trusted-no-members");
    let req = request(&v);
    assert_eq!(req.sa().sm_key(), 1);
    let resp = response(&v);
    assert_eq!(resp.sa().sm_key(), 0);
    assert_eq!(resp.records::<McMemberRecord>().unwrap().len(), 0);
    assert_table_reemits::<McMemberRecord>(&v, &resp, &[]);
}

#[test]
fn empty_inform_info_and_service_tables() {
    for (name, attr) in [
        ("iir-gettable-empty", AttributeId::INFORM_INFO_RECORD),
        ("sr-gettable-empty", AttributeId::SERVICE_RECORD),
    ] {
        let v = vector(name);
        let resp = response(&v);
        assert_eq!(resp.mad().attribute_id(), attr);
        assert_eq!(resp.data().len(), 0, "{name}");
        assert_eq!(resp.sa().attribute_offset(), 0);
        if attr == AttributeId::SERVICE_RECORD {
            assert_table_reemits::<ServiceRecord>(&v, &resp, &[]);
        } else {
            assert_table_reemits::<InformInfoRecord>(&v, &resp, &[]);
        }
    }
}

#[test]
fn printed_numbers_parse_as_saquery_writes_them() {
    assert_eq!(parse_number("0xC000"), Some(0xC000));
    assert_eq!(parse_number("12"), Some(12));
}

// ---- Vectors captured with lsaquery: Get, registrations, Reports -------

#[test]
fn path_record_get() {
    let v = vector("pr-get-lids");
    let req = request(&v);
    assert_eq!(req.mad().method(), Method::GET);
    assert_eq!(
        req.sa().component_mask(),
        pr::SLID | pr::DLID | pr::NUMB_PATH
    );
    let resp = response(&v);
    assert_eq!(
        (resp.mad().method(), resp.mad().status()),
        (Method::GET_RESP, MadStatus::OK)
    );
    assert_eq!(resp.sa().attribute_offset(), 8);
    assert!(!resp.rmpp().is_active(), "a Get answer is a plain MAD");
    let r = resp.record::<PathRecord>().unwrap();
    let q = req.record::<PathRecord>().unwrap();
    assert_eq!((r.slid(), r.dlid()), (q.slid(), q.dlid()));
    assert!(r.reversible());
    let rebuilt = SaMadBuilder::new(*resp.header())
        .record(&PathRecordRepr::parse(r).to_wire())
        .into_bytes();
    assert_eq!(
        &rebuilt[..],
        v.mad("response").unwrap(),
        "a Get answer is exactly 56 + 64 bytes"
    );
}

/// An error answer to a Get: GetResp with the status, the request's
/// headers and record echoed (AttributeOffset included).
fn assert_get_error(name: &str, status: MadStatus) {
    let v = vector(name);
    let req = request(&v);
    let resp = response(&v);
    assert_eq!(resp.mad().method(), Method::GET_RESP);
    assert_eq!(resp.mad().status(), status, "{name}");
    let mut expected = *req.header();
    expected.mad.set_method(Method::GET_RESP);
    expected.mad.set_status(status);
    expected.mad.set_transaction_id(resp.mad().transaction_id());
    let rebuilt = SaMadBuilder::new(expected)
        .data(&req.data()[..PathRecord::LEN])
        .into_bytes();
    assert_eq!(
        &rebuilt[..],
        &v.mad("response").unwrap()[..rebuilt.len()],
        "{name}"
    );
}

#[test]
fn path_record_get_errors() {
    assert_get_error("pr-get-no-records", MadStatus::ERR_NO_RECORDS);
    assert_eq!(
        request(&vector("pr-get-no-records"))
            .record::<PathRecord>()
            .unwrap()
            .dlid(),
        999
    );
    assert_get_error(
        "pr-get-one-service-id-bit",
        MadStatus::ERR_REQ_INSUFFICIENT_COMPONENTS,
    );
    assert_eq!(
        request(&vector("pr-get-one-service-id-bit"))
            .sa()
            .component_mask(),
        pr::SERVICE_ID_MSB
    );
}

fn affected_gid(v: &Vector) -> Gid {
    v.meta("affected-gid")
        .and_then(|g| g.parse().ok())
        .expect("affected-gid in the capture note")
}

#[test]
fn inform_info_subscribe_and_unsubscribe() {
    for trap in [64u16, 65, 66, 67] {
        for (kind, subscribe) in [("subscribe", 1), ("unsubscribe", 0)] {
            let v = vector(&format!("informinfo-set-{kind}-{trap}"));
            let req = request(&v);
            assert_eq!(
                (req.mad().method(), req.mad().attribute_id()),
                (Method::SET, AttributeId::INFORM_INFO)
            );
            let ii = InformInfoRepr::parse(req.record::<InformInfo>().unwrap());
            assert_eq!(
                (ii.trap_number, ii.subscribe, ii.is_generic),
                (trap, subscribe, 1)
            );
            assert_eq!(
                (ii.lid_range_begin, ii.notice_type, ii.producer_type),
                (0xFFFF, 0xFFFF, 0xFF_FFFF)
            );
            assert_eq!(
                (ii.qpn, ii.resp_time_value),
                (1, 19),
                "an unsubscribe repeats these exactly"
            );
            let resp = response(&v);
            assert_eq!(
                (resp.mad().method(), resp.mad().status()),
                (Method::GET_RESP, MadStatus::OK),
                "{}",
                v.name
            );
            assert_eq!(resp.sa().attribute_offset(), 4, "OpenSM rounds 36 / 8 down");
            let answered = resp.record::<InformInfo>().unwrap();
            assert_eq!(
                answered,
                req.record::<InformInfo>().unwrap(),
                "the request's InformInfo comes back"
            );
            let rebuilt = SaMadBuilder::new(*resp.header())
                .data(ii.to_wire().as_bytes())
                .into_bytes();
            assert_eq!(&rebuilt[..], v.mad("response").unwrap(), "{}", v.name);
        }
    }
}

#[test]
fn reports_of_traps_64_to_67() {
    let sm_gid = Gid::new(Gid::DEFAULT_PREFIX, 0x0010_0001);
    for trap in [64u16, 65, 66, 67] {
        let v = vector(&format!("report-trap-{trap}"));
        let m = SaMad::parse_checked(v.mad("mad").unwrap()).unwrap();
        assert_eq!(
            (m.mad().method(), m.mad().attribute_id()),
            (Method::REPORT, AttributeId::NOTICE)
        );
        assert_eq!(
            m.mad().transaction_id_low() & 0xFFFF_F000,
            0x02DA_B000,
            "OpenSM's Report TID counter"
        );
        let n = m.record::<Notice>().unwrap();
        let repr = NoticeRepr::parse(n);
        assert!(repr.is_generic);
        assert_eq!(
            repr.notice_type,
            mad_codec::codes::NoticeType::SUBNET_MANAGEMENT
        );
        assert_eq!(
            repr.producer_type,
            mad_codec::codes::ProducerType::CLASS_MANAGER.0
        );
        assert_eq!(repr.trap_number, trap);
        assert_eq!(repr.issuer_lid, 1, "the SM issues traps 64-67");
        assert_eq!(repr.issuer_gid, sm_gid);
        let gid = affected_gid(&v);
        let expected = match trap {
            64 => TrapDetails::GidInService { gid },
            65 => TrapDetails::GidOutOfService { gid },
            66 => TrapDetails::McGroupCreated { mgid: gid },
            _ => TrapDetails::McGroupDeleted { mgid: gid },
        };
        assert_eq!(repr.details(), expected, "{}", v.name);
        // Byte for byte, uninitialised reserved bytes included.
        assert_eq!(repr.to_wire().as_bytes(), n.as_bytes(), "{}", v.name);
    }
}

fn assert_inform_info_record_matches(r: &InformInfoRecord, p: &PrintedRecord) {
    let ii = r.inform_info();
    assert_eq!(p.heading, "InformInfoRecord dump");
    assert_eq!(gid(p, "SubscriberGID"), r.subscriber_gid());
    assert_eq!(num(p, "SubscriberEnum"), u64::from(r.enumeration()));
    assert_eq!(gid(p, "gid"), ii.gid());
    assert_eq!(num(p, "lid_range_begin"), u64::from(ii.lid_range_begin()));
    assert_eq!(num(p, "lid_range_end"), u64::from(ii.lid_range_end()));
    assert_eq!(num(p, "is_generic"), u64::from(ii.is_generic()));
    assert_eq!(num(p, "subscribe"), u64::from(ii.subscribe()));
    assert_eq!(num(p, "trap_type"), u64::from(ii.notice_type()));
    assert_eq!(num(p, "trap_num"), u64::from(ii.device_id()));
    assert_eq!(num(p, "resp_time_val"), u64::from(ii.resp_time_value()));
    assert_eq!(num(p, "node_type"), u64::from(ii.vendor_id()));
}

#[test]
fn inform_info_records_of_live_subscriptions() {
    for (name, qpn) in [
        ("iir-gettable-subscribed", 0),
        ("iir-gettable-subscribed-trusted", 1),
    ] {
        let v = vector(name);
        let resp = response(&v);
        assert_eq!(
            resp.sa().attribute_offset(),
            8,
            "60-byte records at a 64-byte stride"
        );
        let records: Vec<InformInfoRecord> = whole_records::<InformInfoRecord>(&v, &resp)
            .into_iter()
            .copied()
            .collect();
        assert_eq!(records.len(), 2, "{name}");
        let printed = printed(&v);
        for (r, p) in records.iter().zip(&printed) {
            assert_inform_info_record_matches(r, p);
            assert_eq!(
                r.inform_info().qpn(),
                qpn,
                "{name}: QPN shown only to a trusted query"
            );
        }
        let traps: Vec<u16> = records
            .iter()
            .map(|r| r.inform_info().device_id())
            .collect();
        assert_eq!(traps, [64, 65]);
        assert_table_reemits(&v, &resp, &records);
    }
}

#[test]
fn multicast_group_life() {
    // Create with an SA-assigned MGID.
    let v = vector("mcmr-set-create");
    let req = request(&v);
    assert_eq!(
        req.sa().component_mask(),
        mad_codec::attr::mc_member_record::mask::CREATE
    );
    let q = req.record::<McMemberRecord>().unwrap();
    assert!(q.mgid().is_zero());
    assert_eq!(q.join_state(), JoinState::FULL_MEMBER);
    let resp = response(&v);
    assert_eq!(
        (resp.mad().method(), resp.mad().status()),
        (Method::GET_RESP, MadStatus::OK)
    );
    let g = resp.record::<McMemberRecord>().unwrap();
    assert_eq!(
        g.mgid().to_string(),
        "ff12:a01b:fe80::",
        "OpenSM's first allocated MGID"
    );
    assert_eq!(g.mlid(), 0xC001, "the first MLID after the IPoIB group's");
    assert_eq!(g.port_gid(), q.port_gid());
    assert_eq!(g.join_state(), JoinState::FULL_MEMBER);
    assert_eq!(
        (g.mtu_selector(), g.rate_selector()),
        (Selector::Exactly, Selector::Exactly)
    );
    assert_eq!(
        McMemberRecordRepr::parse(g).to_wire().as_bytes(),
        g.as_bytes()
    );
    assert_eq!(
        vector("report-trap-66").meta("affected-gid"),
        Some("ff12:a01b:fe80::")
    );

    // The same port adds NonMember: OpenSM ORs the states.
    let resp_bytes = vector("mcmr-set-add-non-member");
    let added = response(&resp_bytes)
        .record::<McMemberRecord>()
        .copied()
        .unwrap();
    assert_eq!(
        request(&resp_bytes)
            .record::<McMemberRecord>()
            .unwrap()
            .join_state(),
        JoinState::NON_MEMBER
    );
    assert_eq!(
        added.join_state(),
        JoinState::FULL_MEMBER | JoinState::NON_MEMBER
    );

    // A trusted query shows the member and its state.
    let v = vector("mcmr-gettable-trusted-members");
    let resp = response(&v);
    let members = whole_records::<McMemberRecord>(&v, &resp);
    assert_eq!(members.len(), 1);
    let p = &printed(&v)[0];
    assert_eq!(p.heading, "MCMemberRecord member dump");
    assert_eq!(gid(p, "MGID"), members[0].mgid());
    assert_eq!(num(p, "Mlid"), u64::from(members[0].mlid()));
    assert_eq!(gid(p, "PortGid"), members[0].port_gid());
    assert_eq!(
        num(p, "ScopeState"),
        u64::from(members[0].scope()) << 4 | u64::from(members[0].join_state().0)
    );
    assert_eq!(members[0].join_state(), JoinState(3));

    // Leaving NonMember leaves FullMember; the answer is the request with
    // the remaining state and selectors 2, not the group's parameters.
    for (name, left, remaining) in [("mcmr-delete-partial", 2, 1), ("mcmr-delete-last", 1, 0)] {
        let v = vector(name);
        let req = request(&v);
        assert_eq!(req.mad().method(), Method::DELETE);
        assert_eq!(
            req.record::<McMemberRecord>().unwrap().join_state(),
            JoinState(left)
        );
        let resp = response(&v);
        assert_eq!(
            (resp.mad().method(), resp.mad().status()),
            (Method::DELETE_RESP, MadStatus::OK),
            "{name}"
        );
        let r = resp.record::<McMemberRecord>().unwrap();
        assert_eq!(r.join_state(), JoinState(remaining), "{name}");
        assert_eq!(r.mlid(), 0, "{name}: group parameters are not filled in");
        assert_eq!(r.as_bytes()[38], 0x80, "{name}: MTU selector forced to 2");
    }
    assert_eq!(
        vector("report-trap-67").meta("affected-gid"),
        Some("ff12:a01b:fe80::")
    );
}
