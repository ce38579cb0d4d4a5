//! Record lists by LID, dense and compact: the store's `by_source` and
//! `by_dest`.
//!
//! A node's own table has one record per destination, so most lists hold
//! a single id. A `Vec` per LID would cost a 24-byte header plus a small
//! allocation each (about 56 bytes per record with the allocator's
//! overhead, measured as a third of a node's store at 8,192 nodes); here a
//! LID costs 8 bytes, and only a LID with two or more records has a `Vec`,
//! kept in a side slab.

use slab::Slab;

/// The records at one LID.
#[derive(Debug, Clone, Copy, Default)]
enum Ids {
    #[default]
    None,
    One(u32),
    /// The key of the list in [`LidLists::spill`].
    Many(u32),
}

/// Lists of record ids, one per LID.
#[derive(Debug, Default)]
pub(super) struct LidLists {
    table: Vec<Ids>,
    spill: Slab<Vec<u32>>,
}

impl LidLists {
    /// Heap bytes held, from capacities.
    pub(super) fn heap_bytes(&self) -> usize {
        let spilled: usize = self
            .spill
            .iter()
            .map(|(_, ids)| ids.capacity() * size_of::<u32>())
            .sum();
        self.table.capacity() * size_of::<Ids>()
            + self.spill.capacity() * (size_of::<Vec<u32>>() + size_of::<usize>())
            + spilled
    }

    /// The ids at `lid` (in no particular order).
    pub(super) fn get(&self, lid: u16) -> &[u32] {
        match self.table.get(usize::from(lid)) {
            None | Some(Ids::None) => &[],
            Some(Ids::One(id)) => std::slice::from_ref(id),
            Some(Ids::Many(key)) => self.spill.get(*key as usize).map_or(&[], Vec::as_slice),
        }
    }

    /// Every LID from `first` on with its ids, in LID order.
    pub(super) fn from(&self, first: u16) -> impl Iterator<Item = (u16, &[u32])> {
        (first..=u16::MAX)
            .take(self.table.len().saturating_sub(usize::from(first)))
            .map(|lid| (lid, self.get(lid)))
    }

    /// Adds `id` at `lid`, growing the table as needed.
    pub(super) fn push(&mut self, lid: u16, id: u32) {
        let i = usize::from(lid);
        if self.table.len() <= i {
            self.table.resize(i + 1, Ids::None);
        }
        let slot = &mut self.table[i];
        match *slot {
            Ids::None => *slot = Ids::One(id),
            Ids::One(first) => {
                // One list per LID at most: the key fits in 16 bits.
                let key = self.spill.insert(vec![first, id]) as u32;
                *slot = Ids::Many(key);
            }
            Ids::Many(key) => {
                if let Some(list) = self.spill.get_mut(key as usize) {
                    list.push(id);
                }
            }
        }
    }

    /// Removes `id` from `lid` (the order of the rest is not kept).
    pub(super) fn remove(&mut self, lid: u16, id: u32) {
        let Some(slot) = self.table.get_mut(usize::from(lid)) else {
            return;
        };
        match *slot {
            Ids::One(only) if only == id => *slot = Ids::None,
            Ids::None | Ids::One(_) => {}
            Ids::Many(key) => {
                let Some(list) = self.spill.get_mut(key as usize) else {
                    return;
                };
                if let Some(pos) = list.iter().position(|x| *x == id) {
                    list.swap_remove(pos);
                }
                if let [last] = list[..] {
                    self.spill.remove(key as usize);
                    *slot = Ids::One(last);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(ids: &[u32]) -> Vec<u32> {
        let mut v = ids.to_vec();
        v.sort_unstable();
        v
    }

    #[test]
    fn lists_grow_and_shrink_through_one_and_many() {
        let mut l = LidLists::default();
        assert!(l.get(5).is_empty());
        l.push(5, 10);
        assert_eq!(l.get(5), [10]);
        l.push(5, 11);
        l.push(5, 12);
        assert_eq!(sorted(l.get(5)), [10, 11, 12]);
        l.remove(5, 11);
        assert_eq!(sorted(l.get(5)), [10, 12]);
        l.remove(5, 10);
        assert_eq!(l.get(5), [12]);
        assert!(l.spill.is_empty(), "a list of one goes back inline");
        l.remove(5, 99);
        assert_eq!(l.get(5), [12], "removing an absent id changes nothing");
        l.remove(5, 12);
        assert!(l.get(5).is_empty());
        l.remove(60_000, 1);
        assert!(l.get(60_000).is_empty());
    }

    #[test]
    fn iteration_is_in_lid_order_from_the_first_asked() {
        let mut l = LidLists::default();
        for (lid, id) in [(9, 1), (2, 2), (9, 3), (4, 4)] {
            l.push(lid, id);
        }
        let seen: Vec<(u16, Vec<u32>)> = l
            .from(3)
            .filter(|(_, ids)| !ids.is_empty())
            .map(|(lid, ids)| (lid, sorted(ids)))
            .collect();
        assert_eq!(seen, [(4, vec![4]), (9, vec![1, 3])]);
        assert_eq!(l.from(10).count(), 0);
        assert_eq!(l.from(u16::MAX).count(), 0);
    }

    #[test]
    fn the_highest_lid_has_a_list() {
        let mut l = LidLists::default();
        l.push(u16::MAX, 7);
        l.push(u16::MAX, 8);
        assert_eq!(sorted(l.get(u16::MAX)), [7, 8]);
        assert_eq!(l.from(u16::MAX).count(), 1);
    }
}
