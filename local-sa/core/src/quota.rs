//! What one user of this node (or one requester port of the fabric) may
//! make the master SA hold through local-sa: multicast groups, groups its
//! joins created, notice subscriptions. The master holds one registration
//! per distinct group or filter of the port however many consumers share
//! it, so an owner's usage is the number of *distinct* groups and filters
//! its consumers hold (a job whose hundred processes join one group costs
//! one), including those still being asked for.
//!
//! Without a limit one unprivileged user's loop of joins took every
//! multicast LID of the fabric (OpenSM: `get_new_mlid failed`), and
//! nobody else on any node could create a group. With one, the user's
//! join past it is refused with ERR_NO_RESOURCES, counted and logged.

use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, HashMap};
use std::hash::Hash;

use mad_codec::Gid;

/// Who a registration counts against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Owner {
    /// A user of this node, by user ID (the local API peer's).
    User(u32),
    /// A port of the fabric that sent the request as a MAD, by its GID.
    Port(Gid),
}

impl std::fmt::Display for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::User(uid) => write!(f, "uid {uid}"),
            Self::Port(gid) => write!(f, "port {gid}"),
        }
    }
}

/// A user of a local connection, as the door that accepted it knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalUser {
    /// The peer's user ID.
    pub uid: u32,
    /// Root, or the user local-sa runs as: [`PRIVILEGED_FACTOR`] times the
    /// limits.
    pub privileged: bool,
}

/// How many times the limits root and local-sa's own user get.
pub const PRIVILEGED_FACTOR: usize = 16;

/// What one owner may hold at the master through this agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegistrationLimits {
    /// Distinct multicast groups.
    pub groups: usize,
    /// Of those, groups its joins created (each takes one of the fabric's
    /// multicast LIDs, of which OpenSM has about a thousand).
    pub created_groups: usize,
    /// Distinct notice subscriptions (InformInfo filters).
    pub subscriptions: usize,
}

impl Default for RegistrationLimits {
    fn default() -> Self {
        Self {
            groups: 64,
            created_groups: 16,
            subscriptions: 256,
        }
    }
}

impl RegistrationLimits {
    /// The limits of a privileged user.
    pub fn privileged(&self) -> Self {
        Self {
            groups: self.groups.saturating_mul(PRIVILEGED_FACTOR),
            created_groups: self.created_groups.saturating_mul(PRIVILEGED_FACTOR),
            subscriptions: self.subscriptions.saturating_mul(PRIVILEGED_FACTOR),
        }
    }
}

/// Which keys (groups, filters) each owner's holders (members,
/// subscribers) claim: an owner's usage is its distinct keys. A holder
/// claims a key when its request is let in or the master grants it, and
/// gives it up when the caller, asked to [`Claims::settle`] it, finds it
/// holds the key no more.
#[derive(Debug)]
pub struct Claims<K, H> {
    /// Per owner, per key, how many of its holders claim it.
    by_owner: HashMap<Owner, HashMap<K, usize>>,
    /// Per holder, its owner and the keys it claims.
    by_holder: HashMap<H, (Owner, BTreeSet<K>)>,
}

impl<K, H> Default for Claims<K, H> {
    fn default() -> Self {
        Self {
            by_owner: HashMap::new(),
            by_holder: HashMap::new(),
        }
    }
}

impl<K: Copy + Ord + Hash, H: Copy + Eq + Hash> Claims<K, H> {
    /// Distinct keys `owner` claims.
    pub fn count(&self, owner: &Owner) -> usize {
        self.by_owner.get(owner).map_or(0, HashMap::len)
    }

    /// True when some holder of `owner` claims `key`.
    pub fn holds(&self, owner: &Owner, key: &K) -> bool {
        self.by_owner
            .get(owner)
            .is_some_and(|keys| keys.contains_key(key))
    }

    /// `holder`, of `owner`, claims `key` (again: no change).
    pub fn claim(&mut self, owner: Owner, holder: H, key: K) {
        let (_, keys) = self
            .by_holder
            .entry(holder)
            .or_insert_with(|| (owner, BTreeSet::new()));
        if keys.insert(key) {
            *self
                .by_owner
                .entry(owner)
                .or_default()
                .entry(key)
                .or_default() += 1;
        }
    }

    /// Gives up the keys of `holder` for which `still` is false: among
    /// `only`, or all of them (`None`).
    pub fn settle(&mut self, holder: &H, only: Option<&[K]>, mut still: impl FnMut(&K) -> bool) {
        let Some((owner, keys)) = self.by_holder.get_mut(holder) else {
            return;
        };
        let owner = *owner;
        let gone: Vec<K> = match only {
            Some(only) => only
                .iter()
                .filter(|k| keys.contains(k) && !still(k))
                .copied()
                .collect(),
            None => keys.iter().filter(|k| !still(k)).copied().collect(),
        };
        for key in &gone {
            keys.remove(key);
        }
        if keys.is_empty() {
            self.by_holder.remove(holder);
        }
        self.forget(owner, &gone);
    }

    /// Gives up every key of `holder`.
    pub fn release(&mut self, holder: &H) {
        if let Some((owner, keys)) = self.by_holder.remove(holder) {
            let keys: Vec<K> = keys.into_iter().collect();
            self.forget(owner, &keys);
        }
    }

    /// Every owner with its distinct keys, most first.
    pub fn usage(&self) -> Vec<(Owner, usize)> {
        let mut all: Vec<(Owner, usize)> = self
            .by_owner
            .iter()
            .map(|(owner, keys)| (*owner, keys.len()))
            .collect();
        all.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        all
    }

    fn forget(&mut self, owner: Owner, keys: &[K]) {
        let Entry::Occupied(mut per_owner) = self.by_owner.entry(owner) else {
            return;
        };
        for key in keys {
            if let Entry::Occupied(mut n) = per_owner.get_mut().entry(*key) {
                *n.get_mut() -= 1;
                if *n.get() == 0 {
                    n.remove();
                }
            }
        }
        if per_owner.get().is_empty() {
            per_owner.remove();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_owner_counts_each_key_once_however_many_holders_claim_it() {
        let mut c: Claims<u32, u64> = Claims::default();
        let alice = Owner::User(1000);
        // A job of a hundred processes joining one group.
        for conn in 0..100 {
            c.claim(alice, conn, 7);
        }
        c.claim(alice, 0, 7);
        assert_eq!(c.count(&alice), 1);
        c.claim(alice, 5, 8);
        assert_eq!(c.count(&alice), 2);
        assert!(c.holds(&alice, &8) && !c.holds(&Owner::User(0), &8));
        // Ninety-nine go; the key stays while one holder claims it.
        for conn in 1..100 {
            c.release(&conn);
        }
        assert_eq!(c.count(&alice), 1);
        c.settle(&0, None, |_| false);
        assert_eq!(c.count(&alice), 0);
        assert!(c.usage().is_empty(), "nothing left over");
    }

    #[test]
    fn settling_keeps_what_is_still_held() {
        let mut c: Claims<u32, u64> = Claims::default();
        let port = Owner::Port(Gid::new(Gid::DEFAULT_PREFIX, 9));
        for key in 0..10 {
            c.claim(port, 1, key);
        }
        c.settle(&1, Some(&[1, 2, 3, 42]), |k| k % 2 == 0);
        assert_eq!(c.count(&port), 8, "only the keys named: 1 and 3 gone");
        assert!(!c.holds(&port, &3) && c.holds(&port, &5));
        c.settle(&1, None, |k| k % 2 == 0);
        assert_eq!(c.count(&port), 5);
        assert_eq!(c.usage(), vec![(port, 5)]);
        c.settle(&2, None, |_| false);
        assert_eq!(c.count(&port), 5, "another holder: nothing to settle");
    }

    #[test]
    fn privileged_limits_are_the_users_times_the_factor() {
        let l = RegistrationLimits::default();
        assert_eq!(l.privileged().groups, l.groups * PRIVILEGED_FACTOR);
        let huge = RegistrationLimits {
            groups: usize::MAX,
            ..l
        };
        assert_eq!(huge.privileged().groups, usize::MAX);
    }
}
