//! Replies over several asks: the agent's answer becomes the client's
//! reply, or the door's next question for it — an alternate path (APM)
//! from what the agents hold, or, for a pair without a reversible path,
//! the way out and then the way back.

use super::*;

impl AcmService {
    /// The agent answered request `reply.request` of `reply.conn`: the
    /// reply for the client (or the door's next question for it), if the
    /// request was this door's.
    pub(super) fn handle_answer(&mut self, reply: &LocalReply) -> Option<Output> {
        let conn = reply.conn;
        let pending = self.pending.remove(&(reply.conn, reply.request))?;
        if let Some(n) = self.per_conn.get_mut(&reply.conn) {
            *n = n.saturating_sub(1);
        }
        let records: Vec<PathRecord> = reply.body.path_records().collect();
        let record = records.first().copied();
        let status = match (reply.status, record) {
            (MadStatus::OK, Some(_)) => Status::SUCCESS,
            (MadStatus::OK | MadStatus::ERR_NO_RECORDS, _) => Status::ENODATA,
            (MadStatus::BUSY, _) => Status::ETIMEDOUT,
            (MadStatus::ERR_NO_RESOURCES, _) => Status::ENOMEM,
            _ => Status::EINVAL,
        };
        let route = if reply.from_master {
            counter::ROUTE_QUERY
        } else {
            counter::ROUTE_CACHE
        };
        let bytes = match pending.shape {
            ReplyShape::Resolve {
                source,
                alternate,
                one_way,
            } => {
                if status == Status::SUCCESS {
                    self.count(pending.endpoint, route);
                }
                if let (Some(from), Some(primary)) = (alternate, record) {
                    return Some(self.ask_alternate(reply.conn, pending, source, primary, from));
                }
                if let (Status::ENODATA, Some((template, lookup))) = (status, one_way)
                    && lookup != Lookup::CacheOnly
                {
                    return Some(self.ask_one_way(reply.conn, pending, source, template, lookup));
                }
                resolve_entries(&pending.header, status, record.as_ref(), None, source)
            }
            ReplyShape::Alternate {
                source,
                primary,
                from,
                counted,
            } => {
                // The primary stands whatever the lookup found.
                let alternate = match from {
                    // Another port is another route whatever its DLID.
                    AlternateFrom::OtherPort(_) => records.first().copied(),
                    AlternateFrom::OtherLid => pick_alternate(&primary, &records),
                };
                let header = pending.header;
                self.count_outcome(counted, Status::SUCCESS);
                return Some(Output::Send {
                    conn,
                    bytes: resolve_entries(
                        &header,
                        Status::SUCCESS,
                        Some(&primary),
                        alternate.as_ref(),
                        source,
                    ),
                });
            }
            ReplyShape::Outbound {
                source,
                lookup,
                counted,
            } => match record {
                Some(outbound) => {
                    return Some(
                        self.ask_inbound(reply.conn, pending, source, outbound, lookup, counted),
                    );
                }
                None => {
                    self.count_outcome(counted, status);
                    return Some(Output::Send {
                        conn,
                        bytes: resolve_entries(&pending.header, status, None, None, source),
                    });
                }
            },
            ReplyShape::Inbound {
                source,
                outbound,
                counted,
            } => {
                self.count_outcome(counted, Status::SUCCESS);
                let mut entries = vec![Entry::path(
                    path_flags::PRIMARY | path_flags::OUTBOUND,
                    &outbound,
                )];
                if let Some(inbound) = record {
                    entries.push(Entry::path(
                        path_flags::PRIMARY | path_flags::INBOUND,
                        &inbound,
                    ));
                }
                entries.extend(source);
                return Some(Output::Send {
                    conn,
                    bytes: wire::resolve_reply(&pending.header, Status::SUCCESS, &entries),
                });
            }
            ReplyShape::QuerySa(message) => wire::query_reply(&message, status, record.as_ref()),
        };
        self.count_outcome(pending.endpoint, status);
        Some(Output::Send { conn, bytes })
    }

    /// Asks for the known paths to the primary's destination port from
    /// where `from` says, for an alternate: from what that port's agent
    /// holds only, never from the master.
    pub(super) fn ask_alternate(
        &mut self,
        conn: ConnId,
        pending: Pending,
        source: Option<Entry>,
        primary: PathRecord,
        from: AlternateFrom,
    ) -> Output {
        let endpoint = match from {
            AlternateFrom::OtherPort(other) => other,
            AlternateFrom::OtherLid => pending.endpoint,
        };
        let ep = &self.endpoints[endpoint];
        let mut t = PathRecord::new_zeroed();
        t.set_sgid(ep.port.gid);
        t.set_dgid(primary.dgid());
        t.set_pkey(primary.pkey());
        t.set_reversible(true);
        let query = PathQuery {
            method: Method::GET_TABLE,
            mask: pr::SGID | pr::DGID | pr::PKEY | pr::REVERSIBLE,
            template: t,
        };
        self.ask(
            conn,
            endpoint,
            pending.header,
            ReplyShape::Alternate {
                source,
                primary,
                from,
                counted: pending.endpoint,
            },
            query,
            Lookup::KnownOnly,
        )
    }

    /// The pair has no reversible path: asks for the path from the source
    /// one way (Reversible not required), then the way back.
    pub(super) fn ask_one_way(
        &mut self,
        conn: ConnId,
        pending: Pending,
        source: Option<Entry>,
        mut template: PathRecord,
        lookup: Lookup,
    ) -> Output {
        template.set_reversible(false);
        let query = get_selected_by_fields(template);
        self.ask(
            conn,
            pending.endpoint,
            pending.header,
            ReplyShape::Outbound {
                source,
                lookup,
                counted: pending.endpoint,
            },
            query,
            lookup,
        )
    }

    /// The way out (`outbound`) is in: asks for the way back, from its
    /// destination to its source.
    pub(super) fn ask_inbound(
        &mut self,
        conn: ConnId,
        pending: Pending,
        source: Option<Entry>,
        outbound: PathRecord,
        lookup: Lookup,
        counted: usize,
    ) -> Output {
        let mut t = PathRecord::new_zeroed();
        t.set_sgid(outbound.dgid());
        t.set_dgid(outbound.sgid());
        t.set_slid(outbound.dlid());
        t.set_dlid(outbound.slid());
        t.set_pkey(outbound.pkey());
        t.set_numb_path(1);
        let query = get_selected_by_fields(t);
        self.ask(
            conn,
            pending.endpoint,
            pending.header,
            ReplyShape::Inbound {
                source,
                outbound,
                counted,
            },
            query,
            lookup,
        )
    }

    /// Where an alternate to a path from endpoint `ep` to a port (named by
    /// GID, name or address: a LID names one path) can come from: another
    /// active port of this node in the same partition, else another of
    /// the destination's LIDs when the subnet's LMC gives ports several.
    pub(super) fn alternate_from(&self, ep: usize) -> Option<AlternateFrom> {
        let e = &self.endpoints[ep];
        let other_port = self.endpoints.iter().position(|o| {
            o.agent != e.agent && o.port.lid != 0 && o.pkey | 0x8000 == e.pkey | 0x8000
        });
        match other_port {
            Some(other) => Some(AlternateFrom::OtherPort(other)),
            None => (e.port.lmc > 0).then_some(AlternateFrom::OtherLid),
        }
    }
}
