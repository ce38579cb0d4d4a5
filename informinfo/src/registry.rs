//! Who holds which subscription, and what the master must hold.
//!
//! Each distinct [`Filter`] of a port has one entry: its local holders, and
//! whether the master holds it. Whenever the holders change, the registry
//! reconciles: a filter with holders that the master does not hold is
//! subscribed upstream, a filter the master holds that nobody holds any
//! longer is unsubscribed (with the exact InformInfo that subscribed it).
//! One request per filter is in flight at a time; its result, reported
//! through [`Registry::upstream_result`], may start the next.
//!
//! A new holder of a filter the master already holds is confirmed at once
//! (no SA traffic). A holder whose filter is still being subscribed waits;
//! if the master refuses the subscription, every holder still waiting is
//! refused and removed. Holders that were confirmed stay through failures
//! (a master that does not answer, a new master after an SM change) and the
//! registry keeps trying ([`Registry::retry`], [`Registry::reregister_all`]).
//!
//! The registry is sans-IO: it returns [`Effect`]s for its caller to carry
//! out, and is generic over how subscribers are identified.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::hash::Hash;

use mad_codec::Notice;

use crate::filter::Filter;

/// What the caller must do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect<S> {
    /// Send Set(InformInfo) for `filter` to the master: subscribe or
    /// unsubscribe. Report the answer with [`Registry::upstream_result`].
    Send {
        /// The filter.
        filter: Filter,
        /// Subscribe (true) or unsubscribe.
        subscribe: bool,
    },
    /// Tell `subscriber` its subscription to `filter` is in place.
    Confirm {
        /// Who asked.
        subscriber: S,
        /// What it asked for.
        filter: Filter,
    },
    /// Tell `subscriber` its subscription to `filter` failed; it holds
    /// nothing for it.
    Refuse {
        /// Who asked.
        subscriber: S,
        /// What it asked for.
        filter: Filter,
        /// Why.
        reason: Refusal,
    },
}

/// Why a subscription was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The master answered with this MAD status.
    Master(u16),
    /// The master did not answer.
    NoAnswer,
}

/// How an upstream request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpstreamResult {
    /// The master accepted it.
    Accepted,
    /// The master answered with this (non-zero) MAD status.
    Refused(u16),
    /// No answer after every attempt.
    NoAnswer,
}

/// The answer to a local subscribe or unsubscribe, when it can be given at
/// once; otherwise the answer comes later as an [`Effect`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    /// Done: answer success now.
    Done,
    /// Waiting for the master: the answer comes as Confirm or Refuse.
    Pending,
    /// An unsubscribe of something this subscriber does not hold (OpenSM
    /// answers ERR_REQ_INVALID).
    NotHeld,
}

#[derive(Debug)]
struct Entry<S> {
    /// Holders confirmed to the subscriber.
    confirmed: HashSet<S>,
    /// Holders waiting for the master's first answer.
    waiting: HashSet<S>,
    /// Whether the master holds this filter; `None` after a request that
    /// got no answer (it may or may not have been applied).
    at_master: Option<bool>,
    /// A request for this filter is out: subscribe (true) or unsubscribe.
    in_flight: Option<bool>,
    /// The last request failed for want of an answer: try again on
    /// [`Registry::retry`].
    stalled: bool,
}

impl<S> Entry<S> {
    fn new() -> Self {
        Self {
            confirmed: HashSet::new(),
            waiting: HashSet::new(),
            at_master: Some(false),
            in_flight: None,
            stalled: false,
        }
    }

    fn wanted(&self) -> bool {
        !self.confirmed.is_empty() || !self.waiting.is_empty()
    }

    fn is_idle_and_empty(&self) -> bool {
        !self.wanted() && self.at_master == Some(false) && self.in_flight.is_none()
    }
}

/// The subscriptions of one port.
#[derive(Debug)]
pub struct Registry<S> {
    entries: BTreeMap<Filter, Entry<S>>,
    by_subscriber: HashMap<S, BTreeSet<Filter>>,
}

impl<S> Default for Registry<S> {
    fn default() -> Self {
        Self {
            entries: BTreeMap::new(),
            by_subscriber: HashMap::new(),
        }
    }
}

impl<S: Clone + Eq + Hash> Registry<S> {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// `subscriber` subscribes to `filter`.
    pub fn subscribe(
        &mut self,
        subscriber: S,
        filter: Filter,
        effects: &mut Vec<Effect<S>>,
    ) -> Reply {
        let entry = self.entries.entry(filter).or_insert_with(Entry::new);
        if entry.confirmed.contains(&subscriber) {
            // OpenSM overwrites an identical subscription: success.
            return Reply::Done;
        }
        if entry.waiting.contains(&subscriber) {
            return Reply::Pending;
        }
        self.by_subscriber
            .entry(subscriber.clone())
            .or_default()
            .insert(filter);
        let reply = if entry.at_master == Some(true) && entry.in_flight.is_none() {
            entry.confirmed.insert(subscriber);
            Reply::Done
        } else {
            entry.waiting.insert(subscriber);
            Reply::Pending
        };
        self.reconcile(filter, effects);
        reply
    }

    /// `subscriber` unsubscribes from `filter`.
    pub fn unsubscribe(
        &mut self,
        subscriber: &S,
        filter: Filter,
        effects: &mut Vec<Effect<S>>,
    ) -> Reply {
        let Some(entry) = self.entries.get_mut(&filter) else {
            return Reply::NotHeld;
        };
        let confirmed = entry.confirmed.remove(subscriber);
        let waiting = entry.waiting.remove(subscriber);
        if !confirmed && !waiting {
            return Reply::NotHeld;
        }
        if waiting {
            effects.push(Effect::Refuse {
                subscriber: subscriber.clone(),
                filter,
                reason: Refusal::NoAnswer,
            });
        }
        self.forget_holding(subscriber, filter);
        self.reconcile(filter, effects);
        Reply::Done
    }

    /// Everything `subscriber` holds goes (its connection closed, its lease
    /// ended). Returns how many subscriptions it held.
    pub fn remove_subscriber(&mut self, subscriber: &S, effects: &mut Vec<Effect<S>>) -> usize {
        let Some(filters) = self.by_subscriber.remove(subscriber) else {
            return 0;
        };
        for filter in &filters {
            if let Some(entry) = self.entries.get_mut(filter) {
                entry.confirmed.remove(subscriber);
                entry.waiting.remove(subscriber);
            }
            self.reconcile(*filter, effects);
        }
        filters.len()
    }

    /// The master answered the request for `filter` (or did not).
    pub fn upstream_result(
        &mut self,
        filter: Filter,
        subscribe: bool,
        result: UpstreamResult,
        effects: &mut Vec<Effect<S>>,
    ) {
        let Some(entry) = self.entries.get_mut(&filter) else {
            return;
        };
        if entry.in_flight != Some(subscribe) {
            return;
        }
        entry.in_flight = None;
        match result {
            UpstreamResult::Accepted => {
                entry.at_master = Some(subscribe);
                entry.stalled = false;
                if subscribe {
                    for s in entry.waiting.drain() {
                        effects.push(Effect::Confirm {
                            subscriber: s.clone(),
                            filter,
                        });
                        entry.confirmed.insert(s);
                    }
                }
            }
            UpstreamResult::Refused(status) if subscribe => {
                // The master will not take this filter: whoever still
                // waits for it is refused, and confirmed holders (a
                // re-registration refused) lose it too. What the master
                // held before, it still holds: an unknown state stays
                // unknown and is settled by an unsubscribe.
                let reason = Refusal::Master(status);
                let losers: Vec<S> = entry
                    .waiting
                    .drain()
                    .chain(entry.confirmed.drain())
                    .collect();
                for s in losers {
                    effects.push(Effect::Refuse {
                        subscriber: s.clone(),
                        filter,
                        reason,
                    });
                    self.forget_holding(&s, filter);
                }
            }
            UpstreamResult::Refused(_) => {
                // An unsubscribe the master does not recognise: it does not
                // hold the filter.
                entry.at_master = Some(false);
            }
            UpstreamResult::NoAnswer => {
                // The master may have applied it or not: settle it on the
                // retry, whichever way the holders then want it.
                entry.at_master = None;
                entry.stalled = true;
                if subscribe {
                    for s in entry.waiting.drain().collect::<Vec<_>>() {
                        effects.push(Effect::Refuse {
                            subscriber: s.clone(),
                            filter,
                            reason: Refusal::NoAnswer,
                        });
                        self.forget_holding(&s, filter);
                    }
                }
            }
        }
        self.reconcile(filter, effects);
    }

    /// Tries again every request that got no answer.
    pub fn retry(&mut self, effects: &mut Vec<Effect<S>>) {
        let stalled: Vec<Filter> = self
            .entries
            .iter()
            .filter(|(_, e)| e.stalled)
            .map(|(f, _)| *f)
            .collect();
        for filter in stalled {
            if let Some(e) = self.entries.get_mut(&filter) {
                e.stalled = false;
            }
            self.reconcile(filter, effects);
        }
    }

    /// True when some request got no answer and waits for [`Registry::retry`].
    pub fn has_stalled(&self) -> bool {
        self.entries.values().any(|e| e.stalled)
    }

    /// The master lost (or may have lost) every subscription: a new SM, a
    /// restart, ClientReregister. Every held filter is subscribed again;
    /// holders stay confirmed. Requests in flight are forgotten.
    pub fn reregister_all(&mut self, effects: &mut Vec<Effect<S>>) {
        let filters: Vec<Filter> = self.entries.keys().copied().collect();
        for filter in filters {
            if let Some(e) = self.entries.get_mut(&filter) {
                e.at_master = Some(false);
                e.in_flight = None;
                e.stalled = false;
            }
            self.reconcile(filter, effects);
        }
    }

    /// Sends what `filter` needs, if anything, and drops it when nothing
    /// is left of it.
    fn reconcile(&mut self, filter: Filter, effects: &mut Vec<Effect<S>>) {
        let Some(entry) = self.entries.get_mut(&filter) else {
            return;
        };
        if entry.in_flight.is_none() && entry.at_master == Some(true) {
            // Holders that waited out an unsubscribe the master refused
            // are served: it still holds the filter.
            for s in entry.waiting.drain() {
                effects.push(Effect::Confirm {
                    subscriber: s.clone(),
                    filter,
                });
                entry.confirmed.insert(s);
            }
        }
        if entry.in_flight.is_none() && !entry.stalled && entry.at_master != Some(entry.wanted()) {
            let subscribe = entry.wanted();
            entry.in_flight = Some(subscribe);
            effects.push(Effect::Send { filter, subscribe });
        }
        if entry.is_idle_and_empty() {
            self.entries.remove(&filter);
        }
    }

    fn forget_holding(&mut self, subscriber: &S, filter: Filter) {
        if let Some(set) = self.by_subscriber.get_mut(subscriber) {
            set.remove(&filter);
            if set.is_empty() {
                self.by_subscriber.remove(subscriber);
            }
        }
    }

    /// The confirmed subscribers `notice` is for, each once, and how many
    /// distinct filters the master holds that match it (each of which
    /// makes the master send the notice once).
    pub fn recipients(&self, notice: &Notice) -> (Vec<S>, usize) {
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        let mut copies = 0;
        for (filter, entry) in &self.entries {
            if !filter.matches(notice) {
                continue;
            }
            if entry.at_master != Some(false) {
                copies += 1;
            }
            for s in &entry.confirmed {
                if seen.insert(s.clone()) {
                    out.push(s.clone());
                }
            }
        }
        (out, copies)
    }

    /// A previous agent of this port may have left `filter` at the master:
    /// it is unsubscribed there unless somebody here holds it (then it is
    /// subscribed again, which the master takes as the same subscription).
    pub fn assume_held(&mut self, filter: Filter, effects: &mut Vec<Effect<S>>) {
        let entry = self.entries.entry(filter).or_insert_with(Entry::new);
        if entry.in_flight.is_none() && entry.at_master == Some(false) {
            entry.at_master = None;
        }
        self.reconcile(filter, effects);
    }

    /// The filters the master holds or may hold because of this registry:
    /// held, being subscribed, or in an unknown state.
    pub fn possibly_at_master(&self) -> impl Iterator<Item = Filter> + '_ {
        self.entries
            .iter()
            .filter(|(_, e)| e.at_master != Some(false) || e.in_flight == Some(true))
            .map(|(f, _)| *f)
    }

    /// The filters the master holds.
    pub fn at_master(&self) -> impl Iterator<Item = Filter> + '_ {
        self.entries
            .iter()
            .filter(|(_, e)| e.at_master == Some(true))
            .map(|(f, _)| *f)
    }

    /// Every (subscriber, filter) held, confirmed or waiting.
    pub fn holdings(&self) -> impl Iterator<Item = (&S, Filter)> + '_ {
        self.by_subscriber
            .iter()
            .flat_map(|(s, fs)| fs.iter().map(move |f| (s, *f)))
    }

    /// True when `subscriber` holds `filter` (confirmed, or waiting for
    /// the master).
    pub fn holds(&self, subscriber: &S, filter: &Filter) -> bool {
        self.by_subscriber
            .get(subscriber)
            .is_some_and(|filters| filters.contains(filter))
    }

    /// True when `subscriber` holds any filter.
    pub fn holds_any(&self, subscriber: &S) -> bool {
        self.by_subscriber.contains_key(subscriber)
    }

    /// Distinct filters with at least one holder.
    pub fn filters(&self) -> usize {
        self.entries.values().filter(|e| e.wanted()).count()
    }

    /// Subscribers holding something.
    pub fn subscribers(&self) -> usize {
        self.by_subscriber.len()
    }

    /// Requests to the master in flight.
    pub fn in_flight(&self) -> usize {
        self.entries
            .values()
            .filter(|e| e.in_flight.is_some())
            .count()
    }
}
