//! What local connections may make the daemon hold, on both doors (the
//! local API and the ibacm protocol): how many connections, per user and in
//! all, with descriptors kept back for the daemon's own work; the bytes of
//! frames being received, all connections together; the bytes queued for
//! one connection that does not read; how long a started frame may take
//! and how long a new connection may stay silent. Each refusal is counted
//! and logged at most once a minute per kind and user.
//!
//! A connection that has spoken may then stay idle as long as it likes:
//! librdmacm opens its ibacm connection once per process and never
//! reconnects, and a subscriber waits for notices. The per-user limit is
//! what bounds them.
//!
//! Shares are fair whatever the open-files limit makes of the total: one
//! user holds at most a quarter of the total (and never more than the
//! per-user limit), and an eighth of the total is kept for root and
//! local-sa's own user, so that users who take every slot they may still
//! leave the administrator's `lsaquery` a way in.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use local_sa_core::log_limit::LogLimit;
use tracing::warn;

/// Descriptors kept back from connections for the daemon's own files,
/// umad devices and sockets.
pub(crate) const FD_RESERVE: usize = 128;

/// The share of the total one user may hold: a quarter.
const USER_SHARE_DIVISOR: usize = 4;
/// The share of the total only root and local-sa's own user may use: an
/// eighth.
const ADMIN_RESERVE_DIVISOR: usize = 8;

/// The limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DoorLimits {
    /// Connections open at once, both doors together (lowered to what the
    /// descriptor limit allows after [`FD_RESERVE`]).
    pub(crate) total: usize,
    /// Connections open at once by one user (lowered to a quarter of the
    /// total; see [`DoorLimits::user_cap`]).
    pub(crate) per_user: usize,
    /// Bytes queued for one connection; a connection that lets more pile
    /// up is not reading and is closed.
    pub(crate) queued_out: usize,
    /// Bytes of frames being received, every connection together; a frame
    /// that would pass it closes its connection.
    pub(crate) partial_in: usize,
    /// Longest a frame may take to arrive once its first byte has.
    pub(crate) frame_time: Duration,
    /// Longest a new connection may wait before its first frame.
    pub(crate) first_frame_time: Duration,
}

impl Default for DoorLimits {
    fn default() -> Self {
        Self {
            total: 4096,
            // An MPI job puts a process per core on a node, each with its
            // own ibacm connection.
            per_user: 1024,
            queued_out: 16 << 20,
            partial_in: 64 << 20,
            frame_time: Duration::from_secs(10),
            first_frame_time: Duration::from_secs(30),
        }
    }
}

impl DoorLimits {
    /// Connections user `uid` may hold at once: the per-user limit, and
    /// for anyone but root and the daemon's own user also a quarter of the
    /// total.
    fn user_cap(&self, admin: bool) -> usize {
        if admin {
            self.per_user
        } else {
            self.per_user.min((self.total / USER_SHARE_DIVISOR).max(1))
        }
    }

    /// Connections everyone but root and the daemon's own user may hold
    /// together: the total less an eighth kept for them.
    fn shared_cap(&self) -> usize {
        self.total - self.total / ADMIN_RESERVE_DIVISOR
    }
}

/// What the doors refused or cut, since start, and how many connections
/// are open now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct DoorLimitCounters {
    /// Connections open now.
    pub(crate) connections: u64,
    /// Of them, the local API's.
    pub(crate) api_connections: u64,
    /// Of them, the ibacm protocol's.
    pub(crate) acm_connections: u64,
    /// Connections refused: as many as allowed were open.
    pub(crate) refused_total: u64,
    /// Connections refused: the user had as many as allowed open.
    pub(crate) refused_per_user: u64,
    /// Connections closed for not reading what was queued for them.
    pub(crate) slow_readers: u64,
    /// Connections closed for a frame that took too long, or a first
    /// frame that never came.
    pub(crate) slow_senders: u64,
    /// Connections closed because their frame would pass the bytes all
    /// frames being received may hold.
    pub(crate) refused_memory: u64,
    /// Bytes of frames being received now, every connection together.
    pub(crate) partial_bytes: u64,
}

impl DoorLimitCounters {
    /// `name value` pairs, as the stats file lists them.
    pub(crate) fn fields(&self) -> [(&'static str, u64); 9] {
        [
            ("door_connections", self.connections),
            ("door_api_connections", self.api_connections),
            ("door_acm_connections", self.acm_connections),
            ("door_refused_total", self.refused_total),
            ("door_refused_per_user", self.refused_per_user),
            ("door_slow_readers", self.slow_readers),
            ("door_slow_senders", self.slow_senders),
            ("door_refused_memory", self.refused_memory),
            ("door_partial_bytes", self.partial_bytes),
        ]
    }
}

/// The doors' shared account.
#[derive(Debug)]
pub(crate) struct Doors {
    limits: DoorLimits,
    /// The open-files limit the total is kept within.
    open_files: usize,
    per_user: HashMap<u32, usize>,
    /// Connections held by users other than root and the daemon's own.
    unprivileged: usize,
    partial_in: usize,
    counters: DoorLimitCounters,
    log: LogLimit<Cut>,
}

/// `total` connections, lowered so that [`FD_RESERVE`] of `open_files`
/// descriptors stay free.
fn total_within(total: usize, open_files: usize) -> usize {
    total.min(open_files.saturating_sub(FD_RESERVE).max(1))
}

/// The account, shared by the listeners, the connections' tasks and the
/// driver (all on one thread).
pub(crate) type SharedDoors = Rc<RefCell<Doors>>;

impl Doors {
    /// An account with `limits`, the total lowered so that connections
    /// leave [`FD_RESERVE`] of `open_files` descriptors free.
    pub(crate) fn shared(mut limits: DoorLimits, open_files: usize) -> SharedDoors {
        limits.total = total_within(limits.total, open_files);
        Rc::new(RefCell::new(Self {
            limits,
            open_files,
            per_user: HashMap::new(),
            unprivileged: 0,
            partial_in: 0,
            counters: DoorLimitCounters::default(),
            log: LogLimit::new(Duration::from_secs(60)),
        }))
    }

    pub(crate) fn limits(&self) -> DoorLimits {
        self.limits
    }

    /// New connection limits (a reloaded configuration), the total kept
    /// within the open-files limit as at start. Connections open beyond
    /// them stay; new ones are refused until the count is below.
    pub(crate) fn set_connection_limits(&mut self, total: usize, per_user: usize) {
        self.limits.total = total_within(total, self.open_files);
        self.limits.per_user = per_user;
    }

    pub(crate) fn counters(&self) -> DoorLimitCounters {
        DoorLimitCounters {
            partial_bytes: self.partial_in as u64,
            ..self.counters
        }
    }

    /// Bytes of frames being received, every connection together.
    #[cfg(test)]
    pub(crate) fn partial_in_held(&self) -> usize {
        self.partial_in
    }

    /// Counts a refusal or cut of `kind` by `user` and logs it, at most
    /// once a minute per kind and user.
    pub(crate) fn note(&mut self, what: Cut, user: u32, door: &str) {
        let c = &mut self.counters;
        let (counter, kind) = match what {
            Cut::Total => (&mut c.refused_total, "connection refused: too many open"),
            Cut::PerUser => (
                &mut c.refused_per_user,
                "connection refused: this user has too many open",
            ),
            Cut::SlowReader => (
                &mut c.slow_readers,
                "connection closed: it does not read its replies",
            ),
            Cut::SlowSender => (
                &mut c.slow_senders,
                "connection closed: its frame did not arrive in time",
            ),
            Cut::Memory => (
                &mut c.refused_memory,
                "connection closed: frames being received hold all the memory allowed",
            ),
        };
        *counter += 1;
        if let Some(left_out) = self.log.allow(Instant::now(), what, user) {
            warn!(door, uid = user, earlier_not_logged = left_out, "{kind}");
        }
    }
}

/// Why a connection was refused or cut (and the log's limit, per user).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Cut {
    Total,
    PerUser,
    SlowReader,
    SlowSender,
    Memory,
}

/// A connection's place in the account, given back when it drops (with
/// the socket: keep it next to the stream).
#[derive(Debug)]
pub(crate) struct Admission {
    doors: SharedDoors,
    /// Who connected.
    pub(crate) user: u32,
    /// Whether that is root or the daemon's own user.
    admin: bool,
    /// Through which door.
    door: &'static str,
}

impl DoorLimitCounters {
    /// The open-connections gauge of `door` ("local API" or "ibacm"), if
    /// it has one.
    fn door_gauge(&mut self, door: &str) -> Option<&mut u64> {
        match door {
            API_DOOR => Some(&mut self.api_connections),
            ACM_DOOR => Some(&mut self.acm_connections),
            _ => None,
        }
    }
}

/// The local API door's name, in logs and counters.
pub(crate) const API_DOOR: &str = "local API";
/// The ibacm protocol door's name.
pub(crate) const ACM_DOOR: &str = "ibacm";

impl Admission {
    /// Admits the connection `socket` if the limits allow; otherwise
    /// counts and logs the refusal and returns `None` (the caller drops the
    /// socket, closing it).
    pub(crate) fn new(
        doors: &SharedDoors,
        peer_uid: Option<u32>,
        door: &'static str,
    ) -> Option<Self> {
        // A peer whose user is not known (a TCP client, credentials that
        // cannot be read) counts as user u32::MAX: all such peers together
        // are limited like any one unprivileged user.
        let user = peer_uid.unwrap_or(u32::MAX);
        Self::admit(doors, user, umad::process::is_admin(user), door)
    }

    /// Admits a connection of `user` (`admin`: root or the daemon's own
    /// user) if the limits allow.
    fn admit(doors: &SharedDoors, user: u32, admin: bool, door: &'static str) -> Option<Self> {
        let mut d = doors.borrow_mut();
        let held = d.per_user.get(&user).copied().unwrap_or(0);
        let cut = if d.counters.connections as usize >= d.limits.total
            || (!admin && d.unprivileged >= d.limits.shared_cap())
        {
            Some(Cut::Total)
        } else if held >= d.limits.user_cap(admin) {
            Some(Cut::PerUser)
        } else {
            None
        };
        if let Some(cut) = cut {
            d.note(cut, user, door);
            return None;
        }
        d.per_user.insert(user, held + 1);
        if !admin {
            d.unprivileged += 1;
        }
        d.counters.connections += 1;
        if let Some(n) = d.counters.door_gauge(door) {
            *n += 1;
        }
        Some(Self {
            doors: Rc::clone(doors),
            user,
            admin,
            door,
        })
    }

    pub(crate) fn doors(&self) -> &SharedDoors {
        &self.doors
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        let mut d = self.doors.borrow_mut();
        d.counters.connections = d.counters.connections.saturating_sub(1);
        if !self.admin {
            d.unprivileged = d.unprivileged.saturating_sub(1);
        }
        if let Some(n) = d.counters.door_gauge(self.door) {
            *n = n.saturating_sub(1);
        }
        if let Some(n) = d.per_user.get_mut(&self.user) {
            *n -= 1;
            if *n == 0 {
                d.per_user.remove(&self.user);
            }
        }
    }
}

/// Bytes of one frame being received, counted in the shared account until
/// dropped.
#[derive(Debug)]
pub(crate) struct Receiving {
    doors: SharedDoors,
    held: usize,
}

impl Receiving {
    pub(crate) fn new(doors: &SharedDoors) -> Self {
        Self {
            doors: Rc::clone(doors),
            held: 0,
        }
    }

    /// Counts `n` more bytes; false (nothing counted) if that would pass
    /// the limit.
    pub(crate) fn grow(&mut self, n: usize) -> bool {
        let mut d = self.doors.borrow_mut();
        if d.partial_in + n > d.limits.partial_in {
            return false;
        }
        d.partial_in += n;
        self.held += n;
        true
    }
}

impl Receiving {
    /// Gives back `n` of the bytes counted (they left the buffer).
    pub(crate) fn shrink(&mut self, n: usize) {
        let n = n.min(self.held);
        self.doors.borrow_mut().partial_in -= n;
        self.held -= n;
    }
}

impl Drop for Receiving {
    fn drop(&mut self) {
        self.doors.borrow_mut().partial_in -= self.held;
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::net::UnixStream;

    use super::*;

    /// This process's user, as a Unix socket's peer credentials tell it.
    fn me() -> Option<u32> {
        umad::process::peer_uid(&UnixStream::pair().unwrap().0).ok()
    }

    #[test]
    fn connections_are_limited_per_user_and_in_all_and_given_back() {
        let limits = DoorLimits {
            total: 3,
            per_user: 2,
            ..DoorLimits::default()
        };
        let doors = Doors::shared(limits, 1 << 20);
        let a = Admission::new(&doors, me(), API_DOOR).unwrap();
        let _b = Admission::new(&doors, me(), ACM_DOOR).unwrap();
        let c = doors.borrow().counters();
        assert_eq!((c.api_connections, c.acm_connections), (1, 1));
        // Every connection here is this user's: the third is over its share.
        assert!(Admission::new(&doors, me(), "test").is_none());
        assert_eq!(doors.borrow().counters().refused_per_user, 1);
        drop(a);
        let c = doors.borrow().counters();
        assert_eq!(
            (c.connections, c.api_connections, c.acm_connections),
            (1, 0, 1)
        );
        assert!(Admission::new(&doors, me(), "test").is_some());
    }

    #[test]
    fn peers_of_unknown_user_share_one_unprivileged_users_share() {
        let limits = DoorLimits {
            total: 100,
            per_user: 10,
            ..DoorLimits::default()
        };
        let doors = Doors::shared(limits, 1 << 20);
        let tcp: Vec<_> = (0..40)
            .filter_map(|_| Admission::new(&doors, None, ACM_DOOR))
            .collect();
        assert_eq!(tcp.len(), 10, "TCP clients together are one user");
        assert!(Admission::new(&doors, Some(1000), ACM_DOOR).is_some());
    }

    #[test]
    fn no_user_takes_more_than_a_quarter_and_admins_keep_a_reserve() {
        // The simulator's open-files limit: 1,024 descriptors, so 896
        // connections in all, 224 per user, 112 kept for the admins.
        let doors = Doors::shared(DoorLimits::default(), 1024);
        let admit = |user, admin| Admission::admit(&doors, user, admin, API_DOOR);
        let mut held = Vec::new();
        let flooder: Vec<_> = (0..1300).filter_map(|_| admit(65534, false)).collect();
        assert_eq!(flooder.len(), 224, "a quarter of 896");
        assert_eq!(doors.borrow().counters().refused_per_user, 1300 - 224);
        // Three more users take their quarters, as far as the unprivileged
        // share (784) allows.
        for user in 1000..1003 {
            held.extend((0..300).filter_map(|_| admit(user, false)));
        }
        assert_eq!(held.len() + flooder.len(), 896 - 896 / 8);
        assert!(admit(1003, false).is_none(), "the shared part is full");
        // Root and the daemon's user are still let in.
        let admins: Vec<_> = (0..112).filter_map(|_| admit(0, true)).collect();
        assert_eq!(admins.len(), 112);
        assert!(admit(0, true).is_none(), "the total holds");
        drop(flooder);
        assert!(admit(1003, false).is_some());
    }

    #[test]
    fn the_per_user_limit_below_the_share_holds() {
        let limits = DoorLimits {
            per_user: 10,
            ..DoorLimits::default()
        };
        let doors = Doors::shared(limits, 1 << 20);
        let user: Vec<_> = (0..20)
            .filter_map(|_| Admission::admit(&doors, 7, false, API_DOOR))
            .collect();
        assert_eq!(user.len(), 10);
        let root: Vec<_> = (0..20)
            .filter_map(|_| Admission::admit(&doors, 0, true, API_DOOR))
            .collect();
        assert_eq!(root.len(), 10, "the option holds for root too");
    }

    #[test]
    fn descriptors_are_kept_back_for_the_daemon() {
        let doors = Doors::shared(DoorLimits::default(), 1024);
        assert_eq!(doors.borrow().limits().total, 1024 - FD_RESERVE);
    }

    #[test]
    fn frames_being_received_share_one_budget() {
        let limits = DoorLimits {
            partial_in: 1000,
            ..DoorLimits::default()
        };
        let doors = Doors::shared(limits, 1 << 20);
        let mut one = Receiving::new(&doors);
        let mut two = Receiving::new(&doors);
        assert!(one.grow(600));
        assert!(!two.grow(600));
        assert!(two.grow(400));
        drop(one);
        assert!(two.grow(600));
    }
}
