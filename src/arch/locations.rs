//! Per-wave-location state (occupancy start PCs).
//!
//! A location index names a wave slot anywhere on the shader engine (thousands of them), while a
//! trace touches few; zeroing a full table for every SE buffer would cost more than decoding a
//! small buffer. [`LocationTable`] allocates one group of locations at a time and clears a group
//! when a later buffer uses it again (gfx9); [`StampedTable`] (RDNA, whose gemm traces spent 2 %
//! clearing groups) clears nothing: each location carries the stamp of the buffer that wrote it,
//! a reset moves the table's stamp on, and a location with an older stamp reads as unwritten. gfx9
//! keeps the groups: its walk, which inlines its wave handlers, ran 3-4 % slower on the small
//! gfx950 traces with the stamped table.

use std::mem::MaybeUninit;

/// Values for `groups × GROUP` locations; untouched groups read as `T::default()`.
pub struct LocationTable<T, const GROUP: usize> {
    groups: Vec<Option<Box<[T; GROUP]>>>,
    /// Indices of the groups in use, so that a reset touches only those.
    allocated: Vec<usize>,
    /// Groups given back by a reset, for reuse.
    spare: Vec<Box<[T; GROUP]>>,
}

impl<T: Copy + Default, const GROUP: usize> LocationTable<T, GROUP> {
    /// A table for locations `0..locations`.
    pub fn new(locations: usize) -> Self {
        LocationTable {
            groups: std::iter::repeat_with(|| None)
                .take(locations.div_ceil(GROUP))
                .collect(),
            allocated: Vec::new(),
            spare: Vec::new(),
        }
    }

    /// The value at `location` (default when never written or out of range).
    #[inline]
    pub fn get(&self, location: usize) -> T {
        self.groups
            .get(location / GROUP)
            .and_then(|g| g.as_ref())
            .map_or_else(T::default, |g| g[location % GROUP])
    }

    /// Every location back to `T::default()`. The groups are kept for reuse and cleared when
    /// used again, so a reset costs what the last use touched, not what the table ever held.
    pub fn reset(&mut self) {
        for index in self.allocated.drain(..) {
            if let Some(group) = self.groups.get_mut(index).and_then(Option::take) {
                self.spare.push(group);
            }
        }
    }

    /// The value at `location` for writing; `None` out of range.
    #[inline]
    pub fn get_mut(&mut self, location: usize) -> Option<&mut T> {
        let index = location / GROUP;
        let group = self.groups.get_mut(index)?;
        if group.is_none() {
            Self::allocate(group, &mut self.allocated, &mut self.spare, index);
        }
        group.as_mut().map(|values| &mut values[location % GROUP])
    }

    /// A group's first write (out of line: the hot path stays small enough to inline).
    #[cold]
    #[inline(never)]
    fn allocate(
        group: &mut Option<Box<[T; GROUP]>>,
        allocated: &mut Vec<usize>,
        spare: &mut Vec<Box<[T; GROUP]>>,
        index: usize,
    ) {
        let values = match spare.pop() {
            Some(mut values) => {
                values.fill(T::default());
                values
            }
            None => Box::new([T::default(); GROUP]),
        };
        allocated.push(index);
        *group = Some(values);
    }
}

/// Values for locations `0..N`, each live or not (a wave location: whether a wave runs there);
/// a location not written since the last reset has no value. The length is a constant, so that
/// a location built from bit fields no wider than it needs no bounds check.
pub struct StampedTable<T, const N: usize> {
    /// Per location: the table's stamp when it was written (even, never 0), plus 1 while it is
    /// live, so that one compare tells a live location. Bytes, apart from the values, so that a
    /// new table costs a small zeroed allocation and an uninitialised one; the stamps come
    /// round again every 127 resets.
    stamps: Box<[u8; N]>,
    values: Box<[MaybeUninit<T>; N]>,
    stamp: u8,
}

const LIVE: u8 = 1;

impl<T: Copy, const N: usize> Default for StampedTable<T, N> {
    fn default() -> Self {
        let stamps = vec![0; N].into_boxed_slice().try_into();
        let values = Box::new_uninit_slice(N).try_into();
        let (Ok(stamps), Ok(values)) = (stamps, values) else {
            unreachable!("both hold N entries")
        };
        StampedTable {
            stamps,
            values,
            stamp: 2,
        }
    }
}

impl<T: Copy, const N: usize> StampedTable<T, N> {
    /// The value at `location` if written since the last reset (live or not).
    #[inline]
    pub fn get(&self, location: usize) -> Option<T> {
        if self.stamps.get(location)? & !LIVE != self.stamp {
            return None;
        }
        // SAFETY: a location holds the current stamp only once `set_live` has written its value.
        Some(unsafe { self.values[location].assume_init() })
    }

    /// The value at `location` if it is live.
    #[inline]
    pub fn live(&self, location: usize) -> Option<T> {
        if *self.stamps.get(location)? != self.stamp | LIVE {
            return None;
        }
        // SAFETY: as for `get`.
        Some(unsafe { self.values[location].assume_init() })
    }

    /// Writes `value` at `location`, live (nothing out of range).
    #[inline]
    pub fn set_live(&mut self, location: usize, value: T) {
        if let Some(stamp) = self.stamps.get_mut(location) {
            *stamp = self.stamp | LIVE;
            self.values[location].write(value);
        }
    }

    /// `location` is no longer live; its value stays. (A stale location's stamp stays stale.)
    #[inline]
    pub fn end_live(&mut self, location: usize) {
        if let Some(stamp) = self.stamps.get_mut(location) {
            *stamp &= !LIVE;
        }
    }

    /// Forgets every value.
    pub fn reset(&mut self) {
        self.stamp = self.stamp.wrapping_add(2);
        if self.stamp == 0 {
            // Once in 127 resets: no location may keep a stamp that comes round again.
            self.stamps.fill(0);
            self.stamp = 2;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn untouched_locations_read_default_and_writes_stick() {
        let mut table: LocationTable<u32, 8> = LocationTable::new(20);
        assert_eq!(table.get(13), 0);
        *table.get_mut(13).unwrap() = 7;
        assert_eq!((table.get(13), table.get(12), table.get(3)), (7, 0, 0));
        assert!(table.get_mut(24).is_none(), "past the last group");
        assert_eq!(table.get(1000), 0);
    }

    #[test]
    fn reset_forgets_every_value() {
        let mut table: LocationTable<u32, 8> = LocationTable::new(64);
        *table.get_mut(3).unwrap() = 1;
        *table.get_mut(40).unwrap() = 2;
        table.reset();
        assert_eq!((table.get(3), table.get(40)), (0, 0));
        *table.get_mut(41).unwrap() = 5;
        assert_eq!((table.get(40), table.get(41)), (0, 5));
    }

    #[test]
    fn stamped_locations_are_unwritten_until_set_and_live_until_ended() {
        let mut table: StampedTable<u32, 20> = StampedTable::default();
        assert_eq!((table.get(13), table.live(13)), (None, None));
        table.set_live(13, 7);
        assert_eq!(
            (table.get(13), table.live(13), table.get(12)),
            (Some(7), Some(7), None)
        );
        table.end_live(13);
        assert_eq!((table.get(13), table.live(13)), (Some(7), None));
        table.end_live(3);
        assert_eq!(
            table.get(3),
            None,
            "ending an unwritten location writes nothing"
        );
        table.set_live(20, 1);
        table.end_live(20);
        assert_eq!(
            (table.get(20), table.live(1000)),
            (None, None),
            "past the end"
        );
    }

    #[test]
    fn a_stamped_reset_forgets_every_value_live_or_not() {
        let mut table: StampedTable<u32, 64> = StampedTable::default();
        table.set_live(3, 1);
        table.set_live(40, 2);
        table.end_live(40);
        table.reset();
        assert_eq!(
            (table.get(3), table.live(3), table.get(40)),
            (None, None, None)
        );
        table.end_live(3);
        assert_eq!(
            table.get(3),
            None,
            "a stale location stays stale when ended"
        );
        table.set_live(41, 5);
        assert_eq!((table.get(40), table.live(41)), (None, Some(5)));
    }

    #[test]
    fn stamps_that_wrap_forget_every_value() {
        let mut table: StampedTable<u32, 8> = StampedTable::default();
        table.set_live(2, 9);
        table.stamp = 254;
        table.set_live(5, 4);
        table.end_live(5);
        table.reset();
        assert_eq!(table.stamp, 2);
        assert_eq!((table.get(2), table.get(5)), (None, None));
    }
}
