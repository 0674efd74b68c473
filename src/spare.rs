//! Buffers a thread's parse calls hand on from one to the next.
//!
//! rocprofv3 makes one parse call per SE buffer, so what a call sets up (record pools, ISA
//! caches, location tables) is set up thousands of times; growing it from empty each time costs
//! more than many small buffers take to decode. Each such part lives in a thread-local slot
//! between calls, boxed: taking it and handing it back moves a pointer.

use std::cell::Cell;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::thread::LocalKey;

/// The thread-local slot of one part.
pub type Slot<T> = LocalKey<Cell<Option<Box<T>>>>;

/// A part that can be handed on to the thread's next call.
pub trait Recycle: Default + 'static {
    /// Empties the part for its next user; `false` when it grew too large to keep.
    fn recycle(&mut self) -> bool;
}

/// A part taken from its slot (or new), handed back emptied when dropped.
pub struct Spare<T: Recycle> {
    value: ManuallyDrop<Box<T>>,
    slot: &'static Slot<T>,
}

impl<T: Recycle> Spare<T> {
    pub fn take(slot: &'static Slot<T>) -> Self {
        let value = slot.try_with(Cell::take).ok().flatten().unwrap_or_default();
        Spare {
            value: ManuallyDrop::new(value),
            slot,
        }
    }
}

impl<T: Recycle> Drop for Spare<T> {
    fn drop(&mut self) {
        // SAFETY: `value` is taken once, here, and not used afterwards.
        let mut value = unsafe { ManuallyDrop::take(&mut self.value) };
        if value.recycle() {
            // Fails only while the thread is exiting; the part is then simply freed.
            let _ = self.slot.try_with(|slot| slot.set(Some(value)));
        }
    }
}

impl<T: Recycle> Deref for Spare<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T: Recycle> DerefMut for Spare<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.value
    }
}

/// Keeps the largest of `buffers` (by `size`) whose sizes add up to at most `budget`, largest
/// first, and frees the others: what a thread keeps of its wave buffers between calls.
pub fn keep_largest<T>(buffers: &mut Vec<T>, budget: usize, size: impl Fn(&T) -> usize) {
    buffers.sort_unstable_by_key(|b| std::cmp::Reverse(size(b)));
    let mut kept = 0;
    buffers.retain(|b| {
        let fits = kept + size(b) <= budget;
        kept += if fits { size(b) } else { 0 };
        fits
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Buffer(Vec<u32>);

    impl Recycle for Buffer {
        fn recycle(&mut self) -> bool {
            self.0.clear();
            self.0.capacity() <= 100
        }
    }

    #[test]
    fn keep_largest_keeps_the_largest_that_fit_the_budget_largest_first() {
        let mut sizes = vec![3, 9, 1, 6, 4];
        keep_largest(&mut sizes, 11, |&s| s);
        // 9 fits, 6 and 4 would exceed 11, 1 still fits.
        assert_eq!(sizes, [9, 1]);
        let mut sizes = vec![3, 9, 1];
        keep_largest(&mut sizes, 0, |&s| s);
        assert!(sizes.is_empty());
    }

    thread_local! {
        static SLOT: Cell<Option<Box<Buffer>>> = const { Cell::new(None) };
    }

    #[test]
    fn a_part_comes_back_emptied_unless_it_grew_too_large() {
        let mut first = Spare::take(&SLOT);
        first.0.extend(0..10);
        let address = first.0.as_ptr();
        drop(first);
        let mut second = Spare::take(&SLOT);
        assert!(second.0.is_empty());
        assert_eq!(second.0.as_ptr(), address, "the same buffer");
        second.0.extend(0..1000);
        drop(second);
        let third = Spare::take(&SLOT);
        assert_eq!(third.0.capacity(), 0, "a new part");
    }
}
