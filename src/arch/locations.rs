//! Per-wave-location state (occupancy start PCs).
//!
//! A location index names a wave slot anywhere on the shader engine (thousands of them), while a
//! trace touches few; zeroing a full table for every SE buffer would cost more than decoding a
//! small buffer. [`LocationTable`] allocates one group of locations at a time and clears a group
//! when a later buffer uses it again (gfx9); [`StampedTable`] (RDNA, whose gemm traces spent 2 %
//! clearing groups) clears nothing: each location carries the stamp of the buffer that wrote it,
//! a reset moves the table's stamp on, and a location with an older stamp reads as default. gfx9
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

/// Values for locations `0..len`; unwritten ones read as `T::default()`.
pub struct StampedTable<T> {
    /// The table's stamp when each location was written; 0 never is one. Bytes, apart from the
    /// values, so that a new table costs a small zeroed allocation (a byte per location) and an
    /// uninitialised one; the stamps come round again every 255 resets.
    stamps: Box<[u8]>,
    /// As long as `stamps`.
    values: Box<[MaybeUninit<T>]>,
    stamp: u8,
}

impl<T: Copy + Default> StampedTable<T> {
    /// A table for locations `0..locations`.
    pub fn new(locations: usize) -> Self {
        StampedTable {
            stamps: vec![0; locations].into_boxed_slice(),
            values: Box::new_uninit_slice(locations),
            stamp: 1,
        }
    }

    /// The value at `location` (default when not written since the last reset, or out of range).
    #[inline]
    pub fn get(&self, location: usize) -> T {
        match self.stamps.get(location) {
            Some(&stamp) if stamp == self.stamp => {
                // SAFETY: `values` is as long as `stamps`, and a location holds the current stamp
                // only once `get_mut` has written its value.
                unsafe { self.values.get_unchecked(location).assume_init() }
            }
            _ => T::default(),
        }
    }

    /// The value at `location` for writing when it was written since the last reset; `None`
    /// otherwise (no default is written).
    #[inline]
    pub fn written_mut(&mut self, location: usize) -> Option<&mut T> {
        if *self.stamps.get(location)? != self.stamp {
            return None;
        }
        // SAFETY: `values` is as long as `stamps`, and a location holds the current stamp only
        // once `get_mut` has written its value.
        Some(unsafe { self.values.get_unchecked_mut(location).assume_init_mut() })
    }

    /// Every location back to `T::default()`.
    pub fn reset(&mut self) {
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            // Once in 255 resets: no location may keep a stamp that comes round again.
            self.stamps.fill(0);
            self.stamp = 1;
        }
    }

    /// Writes `value` at `location` (nothing out of range): no older value is read.
    #[inline]
    pub fn set(&mut self, location: usize, value: T) {
        if let Some(stamp) = self.stamps.get_mut(location) {
            *stamp = self.stamp;
            // SAFETY: `values` is as long as `stamps`.
            unsafe { self.values.get_unchecked_mut(location) }.write(value);
        }
    }

    /// The value at `location` for writing; `None` out of range.
    #[inline]
    pub fn get_mut(&mut self, location: usize) -> Option<&mut T> {
        let stamp = self.stamps.get_mut(location)?;
        // SAFETY: `values` is as long as `stamps`.
        let value = unsafe { self.values.get_unchecked_mut(location) };
        if *stamp != self.stamp {
            value.write(T::default());
            *stamp = self.stamp;
        }
        // SAFETY: the value was written, above or when the location took the current stamp.
        Some(unsafe { value.assume_init_mut() })
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
    fn stamped_untouched_locations_read_default_and_writes_stick() {
        let mut table: StampedTable<u32> = StampedTable::new(20);
        assert_eq!(table.get(13), 0);
        *table.get_mut(13).unwrap() = 7;
        assert_eq!((table.get(13), table.get(12), table.get(3)), (7, 0, 0));
        assert!(table.get_mut(20).is_none(), "past the end");
        assert_eq!(table.get(1000), 0);
    }

    #[test]
    fn stamped_reset_forgets_every_value() {
        let mut table: StampedTable<u32> = StampedTable::new(64);
        *table.get_mut(3).unwrap() = 1;
        *table.get_mut(40).unwrap() = 2;
        table.reset();
        assert_eq!((table.get(3), table.get(40)), (0, 0));
        *table.get_mut(41).unwrap() = 5;
        assert_eq!((table.get(40), table.get(41)), (0, 5));
        assert_eq!(
            *table.get_mut(3).unwrap(),
            0,
            "a stale location is written as default"
        );
        assert!(
            table.written_mut(40).is_none(),
            "a stale location is not written"
        );
        assert_eq!(table.written_mut(41).copied(), Some(5));
        assert!(table.written_mut(64).is_none(), "past the end");
    }

    #[test]
    fn stamps_that_wrap_forget_every_value() {
        let mut table: StampedTable<u32> = StampedTable::new(8);
        *table.get_mut(2).unwrap() = 9;
        table.stamp = u8::MAX;
        *table.get_mut(5).unwrap() = 4;
        table.reset();
        assert_eq!(table.stamp, 1);
        assert_eq!((table.get(2), table.get(5)), (0, 0));
    }

    #[test]
    fn a_stamped_set_overwrites_without_reading_and_a_reset_forgets_it() {
        let mut table: StampedTable<u32> = StampedTable::new(8);
        table.set(5, 9);
        table.set(5, 4);
        table.set(8, 1);
        assert_eq!((table.get(5), table.get(4), table.get(8)), (4, 0, 0));
        assert_eq!(table.written_mut(5).copied(), Some(4));
        table.reset();
        assert_eq!((table.get(5), table.written_mut(5)), (0, None));
    }
}
