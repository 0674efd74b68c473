//! Per-wave-location state (occupancy start PCs), allocated one group of locations at a time.
//!
//! A location index names a wave slot anywhere on the shader engine (thousands of them), while a
//! trace touches few; zeroing a full table for every SE buffer would cost more than decoding a
//! small buffer.

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
}
