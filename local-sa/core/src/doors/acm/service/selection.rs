//! Source and destination selection, as acmp chooses them: which
//! endpoint a RESOLVE is asked from (its SOURCE, else the kernel's route,
//! the subnet, the first active endpoint) and what the destination names
//! (a path template, a LID, a GID, or a name or address through the
//! names tables), and the Get that goes to that endpoint's agent.

use super::*;

impl AcmService {
    pub(super) fn resolve(&mut self, conn: ConnId, message: Message) -> Output {
        self.combined[counter::RESOLVE] += 1;
        let header = message.header;
        if self.per_conn.get(&conn).copied().unwrap_or(0) >= self.config.max_pending {
            self.door.refused_pending += 1;
            return self.refuse(conn, None, &header, Status::ENOMEM);
        }
        let first = message.entries.first().copied();
        match first.and_then(|e| e.path_record().map(|p| (e, p))) {
            Some((entry, path)) if entry.flags & flags::QUERY_SA != 0 => {
                self.query_sa(conn, message, path)
            }
            Some((entry, path)) => self.resolve_path(conn, header, entry.flags, &path),
            None => self.resolve_destination(conn, &message),
        }
    }

    /// QUERY_SA: the template to the master as it is.
    pub(super) fn query_sa(&mut self, conn: ConnId, message: Message, path: PathRecord) -> Output {
        let header = message.header;
        let Some(ep) = self.endpoints.iter().position(|e| e.sources(&path)) else {
            return self.refuse(conn, None, &header, Status::ESRCADDR);
        };
        self.resolving(ep);
        self.count(ep, counter::ROUTE_QUERY);
        let query = get_selected_by_fields(path);
        self.ask(
            conn,
            ep,
            header,
            ReplyShape::QuerySa(message),
            query,
            Lookup::Master,
        )
    }

    /// A PATH entry without QUERY_SA.
    pub(super) fn resolve_path(
        &mut self,
        conn: ConnId,
        header: Header,
        entry_flags: u32,
        path: &PathRecord,
    ) -> Output {
        if path.dlid() == 0 && path.dgid().is_zero() {
            return self.refuse(conn, None, &header, Status::EDESTADDR);
        }
        let Some(ep) = self.endpoints.iter().position(|e| e.sources(path)) else {
            return self.refuse(conn, None, &header, Status::ESRCADDR);
        };
        self.resolving(ep);
        let e = &self.endpoints[ep];
        let mut t = PathRecord::new_zeroed();
        t.set_dgid(path.dgid());
        t.set_dlid(path.dlid());
        t.set_sgid(if path.sgid().is_zero() {
            e.port.gid
        } else {
            path.sgid()
        });
        t.set_slid(if path.slid() == 0 {
            e.port.lid
        } else {
            path.slid()
        });
        let query = acmp_get(t, e.pkey);
        let lookup = lookup_for(entry_flags);
        self.ask(
            conn,
            ep,
            header,
            ReplyShape::Resolve {
                source: None,
                alternate: None,
                one_way: None,
            },
            query,
            lookup,
        )
    }

    /// SOURCE/DEST entries.
    pub(super) fn resolve_destination(&mut self, conn: ConnId, message: &Message) -> Output {
        let header = message.header;
        let (source, dest) = match source_and_destination(&message.entries) {
            Ok(found) => found,
            Err(status) => return self.refuse(conn, None, &header, status),
        };
        let Ok(dest_address) = dest.address() else {
            return self.refuse(conn, None, &header, Status::EDESTTYPE);
        };
        let (ep, echo) = match source {
            Some(s) => match s.address() {
                Ok(a) => match self.source_endpoint(&a) {
                    Some(ep) => (ep, None),
                    None => return self.refuse(conn, None, &header, Status::ESRCADDR),
                },
                Err(_) => return self.refuse(conn, None, &header, Status::ESRCTYPE),
            },
            None => {
                let Some((ep, chosen)) = self.default_source(&dest_address) else {
                    return self.refuse(conn, None, &header, Status::ESRCADDR);
                };
                let echo = chosen
                    .as_ref()
                    .or_else(|| {
                        self.endpoints[ep]
                            .addresses
                            .iter()
                            .find(|a| same_kind(a, &dest_address))
                    })
                    .map(|a| Entry::for_address(flags::SOURCE, a));
                (ep, echo)
            }
        };
        self.resolving(ep);
        let mut t = PathRecord::new_zeroed();
        match &dest_address {
            HostAddress::Lid(lid) => t.set_dlid(*lid),
            other => match self.gid_of(other) {
                Some(gid) => {
                    if !matches!(other, HostAddress::Gid(_)) {
                        self.count(ep, counter::ADDR_CACHE);
                    }
                    t.set_dgid(gid);
                }
                None => return self.refuse(conn, Some(ep), &header, Status::EDESTADDR),
            },
        }
        let e = &self.endpoints[ep];
        t.set_sgid(e.port.gid);
        t.set_slid(e.port.lid);
        let query = acmp_get(t, e.pkey);
        let lookup = lookup_for(dest.flags);
        let one_way = Some((query.template, lookup));
        self.ask(
            conn,
            ep,
            header,
            ReplyShape::Resolve {
                one_way,
                source: echo,
                // A LID names one path of one port.
                alternate: if matches!(dest_address, HostAddress::Lid(_)) {
                    None
                } else {
                    self.alternate_from(ep)
                },
            },
            query,
            lookup,
        )
    }

    /// The endpoint a client's SOURCE names: the first that owns the
    /// address (its own names and IPs, its GID or LIDs); else, for a name
    /// or IP that the names tables map to one of this node's port GIDs
    /// (its NodeDescription's first word, an entry of the hosts file), the
    /// first endpoint of that port.
    pub(super) fn source_endpoint(&self, address: &HostAddress) -> Option<usize> {
        if let Some(ep) = self.endpoints.iter().position(|e| e.is(address)) {
            return Some(ep);
        }
        if !matches!(address, HostAddress::Name(_) | HostAddress::Ip(_)) {
            return None;
        }
        let gid = self.gid_of(address)?;
        self.endpoints.iter().position(|e| e.port.gid == gid)
    }

    /// The GID `address` names (a GID itself; a LID none): the operator's
    /// files first, then what the agents learned from the master, then
    /// this node's own endpoints (ibacm's loopback destinations: a node's
    /// own name or address resolves before the directory is read, as
    /// when the first client starts local-sa).
    pub(super) fn gid_of(&self, address: &HostAddress) -> Option<Gid> {
        self.names
            .resolve(address)
            .or_else(|| self.learned.resolve(address))
            .or_else(|| {
                self.endpoints
                    .iter()
                    .find(|e| e.is(address))
                    .map(|e| e.port.gid)
            })
    }

    /// The endpoint a destination is reached from when the client names
    /// no source, as ibacm chooses it, and the source address chosen:
    ///
    /// 1. for an IP, the kernel's route to it ([`SourceRoute`]) names the
    ///    source address, so the interface, so the port and P_Key
    ///    (ibacm's `acm_svr_select_src`) — when this node owns it;
    /// 2. for a GID (or a name the tables map to one), the first active
    ///    endpoint on its subnet (the same GID prefix): on a node with a
    ///    port on each of two subnets, the right rail;
    /// 3. else the first active endpoint with an address of the
    ///    destination's kind, else the first active one, else the first.
    pub(super) fn default_source(
        &self,
        dest: &HostAddress,
    ) -> Option<(usize, Option<HostAddress>)> {
        if let (HostAddress::Ip(ip), Some(route)) = (dest, &self.route)
            && let Some(source) = route.source_for(*ip).map(HostAddress::Ip)
            && let Some(ep) = self
                .endpoints
                .iter()
                .position(|e| e.addresses.contains(&source))
        {
            return Some((ep, Some(source)));
        }
        let active = |e: &&Endpoint| e.port.lid != 0;
        let gid = self.gid_of(dest);
        let on_subnet = gid.and_then(|gid| {
            self.endpoints
                .iter()
                .position(|e| active(&e) && e.port.gid.prefix() == gid.prefix())
        });
        let ep = on_subnet
            .or_else(|| {
                self.endpoints
                    .iter()
                    .position(|e| active(&e) && e.addresses.iter().any(|a| same_kind(a, dest)))
            })
            .or_else(|| self.endpoints.iter().position(|e| active(&e)))
            .or((!self.endpoints.is_empty()).then_some(0))?;
        Some((ep, None))
    }
}

/// Whether two addresses are of one kind (a source echoed for a
/// destination must be).
pub(super) fn same_kind(a: &HostAddress, b: &HostAddress) -> bool {
    match (a, b) {
        (HostAddress::Ip(x), HostAddress::Ip(y)) => x.is_ipv4() == y.is_ipv4(),
        _ => std::mem::discriminant(a) == std::mem::discriminant(b),
    }
}

/// The source (if any) and destination entries of a RESOLVE, checked as
/// ibacm's `acm_svr_verify_resolve` does.
pub(super) fn source_and_destination(entries: &[Entry]) -> Result<(Option<Entry>, Entry), Status> {
    let mut source = None;
    let mut dest = None;
    for e in entries {
        if e.flags & flags::SOURCE != 0 {
            take_once(&mut source, e, Status::ESRCADDR, Status::ESRCTYPE)?;
        }
        if e.flags & flags::DEST != 0 {
            take_once(&mut dest, e, Status::EDESTADDR, Status::EDESTTYPE)?;
        }
    }
    dest.map(|d| (source, d)).ok_or(Status::EDESTTYPE)
}

/// Puts `e` in `slot`: `twice` if the slot is taken already, `bad_type`
/// if `e` is no address type a RESOLVE names (NAME … LID).
pub(super) fn take_once(
    slot: &mut Option<Entry>,
    e: &Entry,
    twice: Status,
    bad_type: Status,
) -> Result<(), Status> {
    if slot.is_some() {
        return Err(twice);
    }
    if !(1..=5).contains(&e.kind.0) {
        return Err(bad_type);
    }
    *slot = Some(*e);
    Ok(())
}
