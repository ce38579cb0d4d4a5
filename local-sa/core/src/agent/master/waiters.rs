//! One coalescing waiter map: who waits for something asked of the master
//! (a forwarded query, a QoS pair, a source's table, a subscription), by
//! what was asked. The first asker of a key makes it go upstream; the
//! others join it and share its answer; a client's resend of a request
//! already waiting joins without being kept twice; past the key's limit
//! an asker is given back, to be refused.
//!
//! A key may be open with nobody waiting (a prefetch, whose answer is only
//! kept), and carries what its owner noted when it was opened (the cache's
//! generation, so that an answer asked before a clear is not kept).

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::hash::Hash;

use crate::agent::counterparts::Asker;
use crate::request::PathQuery;

/// An asker kept while its request is out.
pub(crate) trait Waiter {
    /// True if this is `other`'s request sent again (a client's retry).
    fn repeats(&self, other: &Self) -> bool;
}

impl Waiter for Asker {
    fn repeats(&self, other: &Self) -> bool {
        self.same_request(other)
    }
}

/// An asker with the query it asked (answered from what came for the key).
impl Waiter for (Asker, PathQuery) {
    fn repeats(&self, other: &Self) -> bool {
        self.0.same_request(&other.0)
    }
}

/// An asker of one destination of a source's table, with its query.
impl Waiter for (u64, Asker, PathQuery) {
    fn repeats(&self, other: &Self) -> bool {
        self.1.same_request(&other.1)
    }
}

/// What became of an asker that must wait.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Join<A> {
    /// The first: what the key names must be asked.
    First,
    /// It joins what is asked already (or is a resend of a request that
    /// waits).
    Joined,
    /// The key's limit is reached: the asker, not kept.
    Full(A),
}

/// Keys asked of the master, each with what was noted when it was opened
/// (`M`) and who waits for it (`A`), at most `limit` a key.
#[derive(Debug)]
pub(crate) struct Waiters<K, A, M = ()> {
    keys: HashMap<K, (M, Vec<A>)>,
    limit: usize,
}

impl<K: Hash + Eq, A: Waiter, M> Waiters<K, A, M> {
    /// An empty map keeping at most `limit` askers a key.
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            keys: HashMap::new(),
            limit,
        }
    }

    /// `asker` waits for `key`: the first (the key opened with `note()`),
    /// one more, or one too many.
    pub(crate) fn join(&mut self, key: K, asker: A, note: impl FnOnce() -> M) -> Join<A> {
        match self.keys.entry(key) {
            Entry::Vacant(v) => {
                v.insert((note(), vec![asker]));
                Join::First
            }
            Entry::Occupied(mut o) => {
                let askers = &mut o.get_mut().1;
                if askers.iter().any(|w| asker.repeats(w)) {
                    return Join::Joined;
                }
                if askers.len() >= self.limit {
                    return Join::Full(asker);
                }
                askers.push(asker);
                Join::Joined
            }
        }
    }

    /// Opens `key` with nobody waiting, noting `note`: true if it was not
    /// open (it must be asked).
    pub(crate) fn open(&mut self, key: K, note: M) -> bool {
        match self.keys.entry(key) {
            Entry::Vacant(v) => {
                v.insert((note, Vec::new()));
                true
            }
            Entry::Occupied(_) => false,
        }
    }

    /// True if `key` is asked and not yet answered.
    pub(crate) fn is_open(&self, key: &K) -> bool {
        self.keys.contains_key(key)
    }

    /// The answer for `key` came (or none will): what was noted and
    /// everyone who waited, in the order they came.
    pub(crate) fn release(&mut self, key: &K) -> Option<(M, Vec<A>)> {
        self.keys.remove(key)
    }

    /// Drops the askers `gone` picks (their connection closed); a key
    /// nobody waits for any more stays open, its answer only kept.
    pub(crate) fn forget_where(&mut self, gone: impl Fn(&A) -> bool) {
        for (_, askers) in self.keys.values_mut() {
            askers.retain(|a| !gone(a));
        }
    }

    /// Closes the keys `gone` picks, with whoever waits for them.
    pub(crate) fn close_where(&mut self, gone: impl Fn(&K) -> bool) {
        self.keys.retain(|k, _| !gone(k));
    }

    /// Keys asked and not yet answered.
    pub(crate) fn len(&self) -> usize {
        self.keys.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A test asker: (connection, request number).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    struct Ask(u32, u32);

    impl Waiter for Ask {
        fn repeats(&self, other: &Self) -> bool {
            self == other
        }
    }

    #[test]
    fn the_first_asks_the_others_join_and_all_are_released_in_order() {
        let mut w: Waiters<&str, Ask, u8> = Waiters::new(3);
        assert_eq!(w.join("q", Ask(1, 1), || 7), Join::First);
        assert_eq!(w.join("q", Ask(2, 1), || unreachable!()), Join::Joined);
        // A resend of a waiting request is not kept twice.
        assert_eq!(w.join("q", Ask(1, 1), || unreachable!()), Join::Joined);
        assert_eq!(w.join("q", Ask(3, 1), || unreachable!()), Join::Joined);
        assert_eq!(
            w.join("q", Ask(4, 1), || unreachable!()),
            Join::Full(Ask(4, 1))
        );
        assert_eq!((w.len(), w.is_open(&"q")), (1, true));
        assert_eq!(
            w.release(&"q"),
            Some((7, vec![Ask(1, 1), Ask(2, 1), Ask(3, 1)]))
        );
        assert_eq!((w.len(), w.is_open(&"q")), (0, false));
        assert_eq!(w.release(&"q"), None);
    }

    #[test]
    fn a_key_opened_with_nobody_waiting_is_asked_once_and_may_be_joined() {
        let mut w: Waiters<&str, Ask> = Waiters::new(4);
        assert!(w.open("p", ()));
        assert!(!w.open("p", ()));
        assert_eq!(w.join("p", Ask(1, 1), || ()), Join::Joined);
        assert_eq!(w.release(&"p"), Some(((), vec![Ask(1, 1)])));
    }

    #[test]
    fn askers_gone_are_dropped_and_keys_closed_with_their_askers() {
        let mut w: Waiters<&str, Ask> = Waiters::new(4);
        w.join("a", Ask(1, 1), || ());
        w.join("a", Ask(2, 1), || ());
        w.join("b", Ask(1, 2), || ());
        w.forget_where(|a| a.0 == 1);
        assert_eq!(w.len(), 2, "a key nobody waits for stays open");
        assert_eq!(w.release(&"b"), Some(((), vec![])));
        w.close_where(|k| *k == "a");
        assert_eq!((w.len(), w.release(&"a")), (0, None));
    }
}
