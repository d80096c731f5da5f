//! Intrusive doubly linked lists of frames, linked by index through the [`FrameTable`].
//!
//! Linux's `struct list_head` with O(1) push at either end, pop at either end and unlink of
//! any member. The list head lives with whoever owns the list (a buddy free area, a PCP);
//! the links live in the frames. A frame is on at most one list at a time.
//!
//! One departure from `list_head`: the first member's `prev` link is unspecified (the list
//! knows its head, so nothing reads it). Taking the head therefore writes only the list, not
//! the entry of the frame behind it: an allocation from a per-CPU list touches one frame's
//! entry instead of two. Every other `prev` link, and every `next` link (the last one `NIL`),
//! is kept exact.

use crate::check::{check_fail, CheckError};
use crate::meta::{FrameMeta, FrameState, FrameTable, NIL};

/// Head of a frame list: the first and last frame indices. An empty list has `head` [`NIL`]
/// and any `tail` (popping the last member leaves it stale: one store fewer per allocation);
/// `tail` counts only while `head` is not `NIL`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FrameList {
    head: u32,
    tail: u32,
}

impl Default for FrameList {
    fn default() -> Self {
        FrameList::new()
    }
}

impl FrameList {
    pub(crate) const fn new() -> FrameList {
        FrameList {
            head: NIL,
            tail: NIL,
        }
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.head == NIL
    }

    /// First frame (`list_first_entry_or_null`).
    #[inline]
    pub(crate) fn first(&self) -> Option<u32> {
        (self.head != NIL).then_some(self.head)
    }

    /// Last frame (`list_last_entry`).
    #[inline]
    pub(crate) fn last(&self) -> Option<u32> {
        (self.head != NIL).then_some(self.tail)
    }

    /// Unlinks and returns the first frame (`list_first_entry` + `list_del`). The frame's own
    /// links are left as they were: a frame on no list has no meaningful links, and the next
    /// push overwrites them. The new head's `prev` is not written (see the module doc).
    #[inline]
    pub(crate) fn pop_head(&mut self, t: &FrameTable) -> Option<u32> {
        self.pop_head_in(t.entries())
    }

    /// [`FrameList::pop_head`] over the table's entries.
    #[inline(always)]
    pub(crate) fn pop_head_in(&mut self, m: &[FrameMeta]) -> Option<u32> {
        let idx = self.head;
        // One test for "empty" and for the table's bounds: `NIL` is past the end of every
        // table (indices are `u32`, `NIL` is `u32::MAX`).
        debug_assert!(
            idx == NIL || (idx as usize) < m.len(),
            "list head out of the table"
        );
        let e = m.get(idx as usize)?;
        // Emptied, the list keeps a stale `tail` (see the struct).
        self.head = e.next();
        Some(idx)
    }

    /// `list_add`: push at the head.
    #[inline]
    pub(crate) fn push_head(&mut self, t: &FrameTable, idx: u32) {
        self.push_head_in(t.entries(), idx);
    }

    /// [`FrameList::push_head`] over the table's entries.
    #[inline(always)]
    pub(crate) fn push_head_in(&mut self, m: &[FrameMeta], idx: u32) {
        self.push_head_entry(m, idx, &m[idx as usize]);
    }

    /// [`FrameList::push_head_in`] for a caller that already holds `e`, the entry `m[idx]`.
    #[inline(always)]
    pub(crate) fn push_head_entry(&mut self, m: &[FrameMeta], idx: u32, e: &FrameMeta) {
        e.set_next(self.head); // `prev` of the head is unspecified
                               // As in `pop_head_in`: one test for "empty" and for the bounds.
        debug_assert!(
            self.head == NIL || (self.head as usize) < m.len(),
            "list head out of the table"
        );
        match m.get(self.head as usize) {
            Some(head) => head.set_prev(idx),
            None => self.tail = idx,
        }
        self.head = idx;
    }

    /// `list_add_tail`: push at the tail.
    #[inline]
    pub(crate) fn push_tail(&mut self, t: &FrameTable, idx: u32) {
        t.set_next(idx, NIL);
        if self.head == NIL {
            t.set_prev(idx, NIL);
            self.head = idx;
        } else {
            t.set_prev(idx, self.tail);
            t.set_next(self.tail, idx);
        }
        self.tail = idx;
    }

    /// `list_del`: unlink a member.
    #[inline]
    pub(crate) fn unlink(&mut self, t: &FrameTable, idx: u32) {
        let next = t.next(idx);
        if self.head == idx {
            // The new head's `prev` is unspecified: nothing to write there (nor to `tail`
            // when the list empties).
            self.head = next;
        } else {
            let prev = t.prev(idx);
            t.set_next(prev, next);
            if next == NIL {
                self.tail = prev;
            } else {
                t.set_prev(next, prev);
            }
        }
        t.set_next(idx, NIL);
        t.set_prev(idx, NIL);
    }

    /// Walks the list for an invariant check: the links must agree both ways (the head's `prev`
    /// aside, which is unspecified) and end at the
    /// recorded tail, there must be no cycle, and every member must be in state `want`; `each`
    /// checks whatever else the owner of the list requires of a member. Failures carry `id`.
    /// Returns the number of members.
    pub(crate) fn check(
        &self,
        t: &FrameTable,
        want: FrameState,
        id: &'static str,
        mut each: impl FnMut(u32) -> Result<(), CheckError>,
    ) -> Result<u64, CheckError> {
        let mut prev = NIL;
        let mut n = 0u64;
        for idx in self.iter(t) {
            let pfn = Some(t.pfn_of(idx));
            n += 1;
            if n > t.len() as u64 {
                return Err(check_fail(id, pfn, "list has a cycle"));
            }
            if prev != NIL && t.prev(idx) != prev {
                return Err(check_fail(id, pfn, "prev link disagrees with next link"));
            }
            if t.state(idx) != want {
                return Err(check_fail(
                    id,
                    pfn,
                    "list member is not a head of the list's kind and order",
                ));
            }
            each(idx)?;
            prev = idx;
        }
        if prev != NIL && self.tail != prev {
            return Err(check_fail(
                id,
                None,
                "list tail does not match the last member",
            ));
        }
        Ok(n)
    }

    /// Iterates from head to tail. The list must not change during iteration.
    pub(crate) fn iter<'a>(&self, t: &'a FrameTable) -> FrameListIter<'a> {
        FrameListIter {
            table: t,
            cur: self.head,
        }
    }
}

/// Iterator over a [`FrameList`], head to tail.
pub(crate) struct FrameListIter<'a> {
    table: &'a FrameTable,
    cur: u32,
}

impl Iterator for FrameListIter<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        if self.cur == NIL {
            return None;
        }
        let idx = self.cur;
        self.cur = self.table.next(idx);
        Some(idx)
    }
}

#[cfg(all(test, feature = "std"))]
mod tests {
    use super::*;
    use crate::types::{Order, Pfn};
    use std::vec::Vec;

    fn collect(l: &FrameList, t: &FrameTable) -> Vec<u32> {
        l.iter(t).collect()
    }

    #[test]
    fn push_pop_and_unlink_keep_list_well_formed() {
        let t = FrameTable::allocate(Pfn(0), Order::ZERO, 8).unwrap();
        let mut l = FrameList::new();
        l.push_head(&t, 1);
        l.push_tail(&t, 2);
        l.push_head(&t, 0);
        l.push_tail(&t, 3);
        assert_eq!(collect(&l, &t), [0, 1, 2, 3]);
        l.unlink(&t, 2);
        assert_eq!(collect(&l, &t), [0, 1, 3]);
        l.unlink(&t, 3);
        l.unlink(&t, 0);
        assert_eq!(collect(&l, &t), [1]);
        assert_eq!((l.first(), l.last()), (Some(1), Some(1)));
        l.unlink(&t, 1);
        assert!(l.is_empty());
        assert_eq!(l.last(), None);
    }
}
