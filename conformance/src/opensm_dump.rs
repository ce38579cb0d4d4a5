//! OpenSM's SA database dump (`opensm-sa.dump`, written after a sweep when
//! `sa_db_dump TRUE` is configured): the master's own, uncut view of its
//! subscriptions, multicast groups and services. Tests compare it with
//! what local-sa should have registered, where SA queries through the
//! simulator would only show the first records of a table.

use std::path::Path;
use std::time::{Duration, Instant};

use mad_codec::Gid;

/// One InformInfo record (a subscription).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscription {
    /// The subscribing port.
    pub subscriber: Gid,
    /// TrapNumber (0xFFFF: every trap).
    pub trap: u16,
    /// The issuer GID filter.
    pub gid: Gid,
    /// The LID range filter.
    pub lid_range: (u16, u16),
    /// Generic (true) or vendor.
    pub is_generic: bool,
}

/// One multicast group and its member ports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// Its MGID.
    pub mgid: Gid,
    /// Its MLID.
    pub mlid: u16,
    /// Created by OpenSM itself (the IPoIB broadcast group).
    pub well_known: bool,
    /// Member ports and their JoinState.
    pub members: Vec<(Gid, u8)>,
}

/// One service record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Service {
    /// ServiceID.
    pub id: u64,
    /// ServiceGID.
    pub gid: Gid,
    /// ServiceName.
    pub name: String,
}

/// What the dump holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SaDump {
    /// Every subscription.
    pub subscriptions: Vec<Subscription>,
    /// Every group.
    pub groups: Vec<Group>,
    /// Every service.
    pub services: Vec<Service>,
}

impl SaDump {
    /// Reads a dump file.
    pub fn read(path: &Path) -> std::io::Result<Self> {
        Ok(Self::parse(&std::fs::read_to_string(path)?))
    }

    /// Parses the dump's text.
    pub fn parse(text: &str) -> Self {
        let mut dump = Self::default();
        for line in text.lines() {
            let line = line.trim();
            if let Some(rest) = line.strip_prefix("InformInfo Record:") {
                let f = fields(rest);
                dump.subscriptions.push(Subscription {
                    subscriber: gid(f.get("subscriber_gid")),
                    trap: number(f.get("trap_num")) as u16,
                    gid: gid(f.get("gid")),
                    lid_range: (
                        number(f.get("lid_range_begin")) as u16,
                        number(f.get("lid_range_end")) as u16,
                    ),
                    is_generic: number(f.get("is_generic")) == 1,
                });
            } else if let Some(rest) = line.strip_prefix("MC Group") {
                let f = fields(rest);
                dump.groups.push(Group {
                    mgid: gid(f.get("mgid")),
                    mlid: number(f.get("mlid")) as u16,
                    well_known: rest.contains("(well known)"),
                    members: Vec::new(),
                });
            } else if let Some(rest) = line.strip_prefix("mcm_port:") {
                let f = fields(rest);
                if let Some(g) = dump.groups.last_mut() {
                    g.members.push((
                        gid(f.get("port_gid")),
                        (number(f.get("scope_state")) & 0xF) as u8,
                    ));
                }
            } else if let Some(rest) = line.strip_prefix("Service Record:") {
                let f = fields(rest);
                let name = rest
                    .split("name='")
                    .nth(1)
                    .and_then(|s| s.split('\'').next())
                    .unwrap_or("");
                dump.services.push(Service {
                    id: number(f.get("id")),
                    gid: gid(f.get("gid")),
                    name: name.to_owned(),
                });
            }
        }
        dump
    }

    /// The subscriptions of `port`, as trap numbers, sorted.
    pub fn traps_of(&self, port: Gid) -> Vec<u16> {
        let mut t: Vec<u16> = self
            .subscriptions
            .iter()
            .filter(|s| s.subscriber == port)
            .map(|s| s.trap)
            .collect();
        t.sort_unstable();
        t
    }

    /// The JoinState `port` holds in `mgid`, if the group exists and the
    /// port is a member.
    pub fn member_state(&self, mgid: Gid, port: Gid) -> Option<u8> {
        let g = self.groups.iter().find(|g| g.mgid == mgid)?;
        g.members.iter().find(|(p, _)| *p == port).map(|(_, s)| *s)
    }

    /// Reads `path` until `done` holds for what it says, or `timeout`
    /// passes; returns the last reading and whether it held.
    pub fn wait_for(path: &Path, timeout: Duration, done: impl Fn(&Self) -> bool) -> (Self, bool) {
        let start = Instant::now();
        loop {
            let dump = Self::read(path).unwrap_or_default();
            if done(&dump) {
                return (dump, true);
            }
            if start.elapsed() > timeout {
                return (dump, false);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// `name=value` pairs of a dump line.
fn fields(text: &str) -> std::collections::HashMap<&str, &str> {
    text.split_whitespace()
        .filter_map(|w| w.split_once('='))
        .collect()
}

fn number(v: Option<&&str>) -> u64 {
    v.and_then(|v| crate::saquery::parse_number(v)).unwrap_or(0)
}

/// "0xPPPPPPPPPPPPPPPP:0xGGGGGGGGGGGGGGGG".
fn gid(v: Option<&&str>) -> Gid {
    let Some((p, g)) = v.and_then(|v| v.split_once(':')) else {
        return Gid::ZERO;
    };
    Gid::new(
        crate::saquery::parse_number(p).unwrap_or(0),
        crate::saquery::parse_number(g).unwrap_or(0),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
MC Group 0xc001 : mgid=0xff12123400000000:0x0000000000000001 port_gid=0xfe80000000000000:0x0000000000100005 qkey=0x00000000 mlid=0xc001 mtu=0x84 tclass=0x00 pkey=0xffff rate=0x83 pkt_life=0x80 sl_flow_hop=0x00000000 scope_state=0x01 proxy_join=0x0
mcm_port: port_gid=0xfe80000000000000:0x0000000000100005 scope_state=0x07 proxy_join=0x0
MC Group 0xc000  (well known): mgid=0xff12401bffff0000:0x00000000ffffffff port_gid=0x0000000000000000:0x0000000000000000 qkey=0x00000b1b mlid=0xc000 mtu=0x84 tclass=0x00 pkey=0xffff rate=0x83 pkt_life=0x92 sl_flow_hop=0x00000000 scope_state=0x21 proxy_join=0x0

InformInfo Record: subscriber_gid=0xfe80000000000000:0x0000000000100005 subscriber_enum=0x0 InformInfo: gid=0x0000000000000000:0x0000000000000000 lid_range_begin=0xffff lid_range_end=0x0 is_generic=0x1 subscribe=0x1 trap_type=0xffff trap_num=0x41 qpn_resp_time_val=0x113 node_type=0xffffff rep_addr: lid=0x0006 path_bits=0x00 static_rate=0x00 remote_qp=0x00000001 remote_qkey=0x00000000 pkey_ix=0x0000 sl=0x00

Service Record: id=0x4c4f43414c534101 gid=0xfe80000000000000:0x0000000000100005 pkey=0xffff lease=0xffffffff key=0x0 name='local-sa' data8=0x0
";

    #[test]
    fn a_dump_reads_as_opensm_wrote_it() {
        let d = SaDump::parse(SAMPLE);
        let port = Gid::new(0xfe80_0000_0000_0000, 0x10_0005);
        let mgid = Gid::new(0xff12_1234_0000_0000, 1);
        assert_eq!(d.traps_of(port), [0x41]);
        assert_eq!(d.subscriptions[0].lid_range, (0xffff, 0));
        assert_eq!(d.member_state(mgid, port), Some(7));
        assert_eq!(d.groups.len(), 2);
        assert!(d.groups[1].well_known && d.groups[1].members.is_empty());
        assert_eq!(d.groups[0].mlid, 0xc001);
        assert_eq!(
            d.services,
            [Service {
                id: 0x4c4f_4341_4c53_4101,
                gid: port,
                name: "local-sa".into()
            }]
        );
    }
}
