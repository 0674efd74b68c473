//! Record delivery: the record filter of `set_record_filter`, pooled batches and immediate mode.
//!
//! Decoders hand every record to an [`Emitter`]; it drops types the filter disables, pools the
//! batched types and hands them to the [`RecordSink`] at flush points, in the reference's order.

pub mod check;

use crate::records::{
    for_each_record_kind, record_payload, Dispatch, Event, InfoCode, InstOtherSimd, Marker,
    Occupancy, PerfEvent, Realtime, RecordKind, ShaderData, Wave,
};
use crate::spare::{Recycle, Spare};
use std::ffi::c_void;

macro_rules! sink_record_enum {
    ($($(#[$doc:meta])* $kind:ident = $code:literal, $c_name:literal:
        $shape:ident $payload:ty $(=> $view:ident)?;)*) => {
        /// One delivery to the client, borrowed for the duration of the call.
        #[derive(Debug)]
        pub enum Record<'a> {
            $($(#[$doc])* $kind(record_payload!($shape 'a $payload)),)*
        }

        impl Record<'_> {
            pub fn kind(&self) -> RecordKind {
                match self {
                    $(Record::$kind(_) => RecordKind::$kind,)*
                }
            }
        }
    };
}
for_each_record_kind!(sink_record_enum);

/// Where records go: the C trace callback, a test collector, a benchmark counter.
pub trait RecordSink {
    /// Returns the client's status; the full parse ignores it, quick scan stops on non-zero.
    fn deliver(&mut self, record: Record<'_>) -> i32;
}

/// A C trace callback: `(record type, records, count, userdata) -> status`.
pub type RecordCallback = unsafe extern "C" fn(i32, *mut c_void, u64, *mut c_void) -> i32;

/// A client's C trace callback with its userdata, and the one place it is called: the C parse
/// calls deliver every record through it (`ffi::parse::TraceCallbackSink`), and the emitter calls
/// it itself for EVENT records, the most frequent of the records delivered one by one
/// ([`Emitter::hand_events_to`]).
#[derive(Clone, Copy, Debug)]
pub struct ClientCallback {
    callback: RecordCallback,
    userdata: *mut c_void,
}

impl ClientCallback {
    /// # Safety
    /// `callback` must accept a record type, a pointer to that many records of it, their count
    /// and `userdata`, and read the records only during the call.
    pub unsafe fn new(callback: RecordCallback, userdata: *mut c_void) -> Self {
        ClientCallback { callback, userdata }
    }

    /// Hands the client `count` records of type `kind` at `records`; returns its status.
    ///
    /// # Safety
    /// `records` and `count` must describe records of `kind` (or, for a count of 0, the value
    /// the API passes as the pointer) that live until the call returns.
    pub unsafe fn call(self, kind: RecordKind, records: *mut c_void, count: u64) -> i32 {
        // SAFETY: `new`'s contract and this function's.
        unsafe { (self.callback)(kind as i32, records, count, self.userdata) }
    }

    fn deliver_event(self, event: &Event) -> i32 {
        let pointer = event as *const Event as *mut c_void;
        // SAFETY: one EVENT record, which lives until the call returns.
        unsafe { self.call(RecordKind::Event, pointer, 1) }
    }
}

impl<F: FnMut(Record<'_>) -> i32> RecordSink for F {
    fn deliver(&mut self, record: Record<'_>) -> i32 {
        self(record)
    }
}

/// How one record type is delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    Off,
    Pooled,
    Immediate,
}

/// The validated filter of `set_record_filter`; the default delivers every type, pooled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Filter {
    modes: [Delivery; RecordKind::COUNT],
}

impl Default for Filter {
    fn default() -> Self {
        Filter {
            modes: [Delivery::Pooled; RecordKind::COUNT],
        }
    }
}

impl Filter {
    /// A filter that delivers nothing; enable types with [`Filter::set`].
    pub fn none() -> Self {
        Filter {
            modes: [Delivery::Off; RecordKind::COUNT],
        }
    }

    pub fn set(&mut self, kind: RecordKind, delivery: Delivery) {
        self.modes[kind as usize] = delivery;
    }

    pub fn mode(&self, kind: RecordKind) -> Delivery {
        self.modes[kind as usize]
    }

    pub fn enabled(&self, kind: RecordKind) -> bool {
        self.mode(kind) != Delivery::Off
    }

    /// Only these types may be delivered one by one (API.md §4.11).
    pub fn may_be_immediate(kind: RecordKind) -> bool {
        matches!(
            kind,
            RecordKind::ShaderData
                | RecordKind::Occupancy
                | RecordKind::Realtime
                | RecordKind::Marker
        )
    }
}

/// What a decoder knows of the order of the occupancy records it pooled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OccupancyOrder {
    /// Nothing: the batch is sorted by time (stable) if it is not in time order.
    Unknown,
    /// Pooled in time order: the batch is handed over as it is.
    InTimeOrder,
}

/// Pooled batches are handed over when this many records have accumulated (SQTT_FORMAT §4).
pub const POOL_LIMIT: usize = 65_536;

/// Applies the filter and pools batched records between flush points.
pub struct Emitter<'s> {
    sink: &'s mut dyn RecordSink,
    filter: Filter,
    /// The client's C callback, which the sink wraps too, for EVENT records where the filter
    /// delivers them.
    events: Option<ClientCallback>,
    pools: Spare<Pools>,
    /// For each pooled type (by [`Pooled::SLOT`]): how many records its pool holds before it
    /// must grow or its batch be handed over; 0 unless the type is pooled. Never more than the
    /// pool's capacity. A record within it is written in place after one compare
    /// ([`Emitter::pool_if_room`]); any other takes [`Emitter::add_in_full`], which measures the
    /// room again. 0 until then: only the occupancy room is measured when the emitter is made.
    rooms: [usize; POOLED_TYPES],
}

/// The pooled batches. Their buffers outlive the emitter: a thread's next parse call reuses them
/// instead of growing new ones from empty (rocprofv3 makes one call per SE buffer).
#[derive(Default)]
pub struct Pools {
    occupancy: Vec<Occupancy>,
    realtime: Vec<Realtime>,
    shader_data: Vec<ShaderData>,
    other_simd: Vec<InstOtherSimd>,
    perf: Vec<PerfEvent>,
}

impl Recycle for Pools {
    /// Kept unless a buffer is larger than a full batch (a huge buffer's occupancy), so that no
    /// more than that stays with the thread between calls.
    fn recycle(&mut self) -> bool {
        fn keep<T>(v: &mut Vec<T>) -> bool {
            v.clear();
            v.capacity() <= POOL_LIMIT
        }
        keep(&mut self.occupancy)
            & keep(&mut self.realtime)
            & keep(&mut self.shader_data)
            & keep(&mut self.other_simd)
            & keep(&mut self.perf)
    }
}

/// How many record types are pooled.
const POOLED_TYPES: usize = 5;

/// A record type the emitter pools: its batch, and the record a batch is handed over as.
pub trait Pooled: Copy {
    const KIND: RecordKind;
    /// Its place among the pooled types (`0..POOLED_TYPES`).
    const SLOT: usize;
    /// Whether a batch goes out as soon as it holds [`POOL_LIMIT`] records. Occupancy batches
    /// are flushed by the decoders (RDNA sorts them), PERFEVENT batches once per buffer.
    const FLUSH_AT_LIMIT: bool;
    /// The room a thread's first batch of the type is given with its first record, so that it
    /// does not grow from nothing by doubling: realtime samples and other-SIMD records come by
    /// the dozen in an SE buffer (at most 60 and 72 in the old corpus, REFERENCE_BEHAVIOUR §2).
    const FIRST_ROOM: usize;
    fn batch(pools: &mut Pools) -> &mut Vec<Self>;
    fn record(batch: &[Self]) -> Record<'_>;
}

macro_rules! pooled {
    ($type:ty, $kind:ident, $field:ident, $slot:literal, $flush_at_limit:expr,
     $first_room:expr) => {
        impl Pooled for $type {
            const KIND: RecordKind = RecordKind::$kind;
            const SLOT: usize = $slot;
            const FLUSH_AT_LIMIT: bool = $flush_at_limit;
            const FIRST_ROOM: usize = $first_room;
            fn batch(pools: &mut Pools) -> &mut Vec<Self> {
                &mut pools.$field
            }
            fn record(batch: &[Self]) -> Record<'_> {
                Record::$kind(batch)
            }
        }
    };
}

pooled!(Occupancy, Occupancy, occupancy, 0, false, 0);
pooled!(Realtime, Realtime, realtime, 1, true, 64);
pooled!(ShaderData, ShaderData, shader_data, 2, true, 0);
pooled!(InstOtherSimd, InstOtherSimd, other_simd, 3, true, 128);
pooled!(PerfEvent, PerfEvent, perf, 4, false, 0);

/// Whether no record's time is below the one before it. The batch is almost always in order:
/// one branch on four comparisons costs less than a branch on each.
fn in_time_order(records: &[Occupancy]) -> bool {
    let Some(first) = records.first() else {
        return true;
    };
    let mut previous = first.time;
    let mut chunks = records[1..].chunks_exact(4);
    for chunk in chunks.by_ref() {
        let [a, b, c, d] = [chunk[0].time, chunk[1].time, chunk[2].time, chunk[3].time];
        if (a < previous) | (b < a) | (c < b) | (d < c) {
            return false;
        }
        previous = d;
    }
    for record in chunks.remainder() {
        if record.time < previous {
            return false;
        }
        previous = record.time;
    }
    true
}

/// Every record reaches the sink through here; in debug builds it is checked against the ABI's
/// ranges first ([`crate::sink::check`]), so that an internal value cannot reach a client unnoticed.
#[inline(always)]
fn hand_over(sink: &mut dyn RecordSink, record: Record<'_>) -> i32 {
    debug_assert_valid(&record);
    sink.deliver(record)
}

#[inline(always)]
fn debug_assert_valid(record: &Record<'_>) {
    if cfg!(debug_assertions) {
        // SAFETY: the decoder's WAVE arrays are live while their record is delivered.
        if let Err(violation) = unsafe { crate::sink::check::record(record) } {
            panic!("invalid record about to be delivered: {violation}");
        }
    }
}

/// Immediate delivery of one record. Out of line: the record's address is taken only here, so the
/// pooled path can build records in registers instead of through the stack.
#[cold]
#[inline(never)]
fn deliver_one<T>(sink: &mut dyn RecordSink, rec: T, wrap: for<'r> fn(&'r [T]) -> Record<'r>) {
    hand_over(sink, wrap(std::slice::from_ref(&rec)));
}

thread_local! {
    static SPARE_POOLS: std::cell::Cell<Option<Box<Pools>>> = const { std::cell::Cell::new(None) };
}

impl<'s> Emitter<'s> {
    pub fn new(sink: &'s mut dyn RecordSink, filter: Filter) -> Self {
        let mut emitter = Emitter {
            sink,
            filter,
            events: None,
            pools: Spare::take(&SPARE_POOLS),
            rooms: [0; POOLED_TYPES],
        };
        // The others are measured by their type's first record: most calls have none of them.
        // The RDNA wave starts' lean path needs the occupancy room from the first start on.
        emitter.measure_room::<Occupancy>();
        emitter
    }

    /// Hands EVENT records to `callback` instead of the sink: the C callback the sink wraps.
    pub fn hand_events_to(&mut self, callback: ClientCallback) {
        if self.filter.enabled(RecordKind::Event) {
            self.events = Some(callback);
        }
    }

    /// [`Emitter::rooms`] of `T` for its pool as it is. (Where it is not measured again, the
    /// room only falls behind the pool's capacity, which never shrinks.)
    fn measure_room<T: Pooled>(&mut self) {
        self.rooms[T::SLOT] = match self.filter.mode(T::KIND) {
            Delivery::Pooled => T::batch(&mut self.pools).capacity().min(POOL_LIMIT - 1),
            _ => 0,
        };
    }

    pub fn filter(&self) -> &Filter {
        &self.filter
    }

    pub fn wants(&self, kind: RecordKind) -> bool {
        self.filter.enabled(kind)
    }

    /// Delivers a record that is never pooled (GFXIP, WAVE, INFO, DISPATCH, RT_FREQUENCY; EVENT
    /// records go through [`Emitter::event`]).
    pub fn single(&mut self, record: Record<'_>) -> i32 {
        if self.filter.enabled(record.kind()) {
            hand_over(self.sink, record)
        } else {
            0
        }
    }

    /// Delivers an EVENT record (never pooled).
    pub fn event(&mut self, event: &Event) -> i32 {
        debug_assert_valid(&Record::Event(event));
        match self.events {
            Some(callback) => callback.deliver_event(event),
            None => self.event_through_sink(event),
        }
    }

    /// [`Emitter::event`] without a C callback: through the sink, if the filter delivers it.
    #[cold]
    #[inline(never)]
    fn event_through_sink(&mut self, event: &Event) -> i32 {
        if self.filter.enabled(RecordKind::Event) {
            self.sink.deliver(Record::Event(event))
        } else {
            0
        }
    }

    /// The record `make` builds, of a pooled type: dropped, handed over at once, or pooled (and
    /// the batch handed over when it is full), as the filter says. The lean path builds it in the
    /// pool; a record passed by value was built on the stack first and copied (a store-forwarding
    /// stall on each record). `make` runs once, or again on the cold path: a plain constructor.
    /// Records of many fields (occupancy) are built first and handed over as `move || record`:
    /// a closure over their fields cost the wave starts more (docs/PERFORMANCE.md, twentieth
    /// round).
    #[inline(always)]
    pub fn add<T: Pooled>(&mut self, make: impl FnOnce() -> T + Copy) {
        if !self.pool_if_room(make()) {
            self.add_in_full(make());
        }
    }

    /// Pools a record when that needs neither growth nor a batch hand-over, and says whether it
    /// did: a caller's lean path then makes no call.
    #[inline(always)]
    pub fn pool_if_room<T: Pooled>(&mut self, rec: T) -> bool {
        let room = self.rooms[T::SLOT];
        let pool = T::batch(&mut self.pools);
        let len = pool.len();
        if len < room {
            // SAFETY: `len` is below the pool's capacity (the room never exceeds it), so the
            // slot after its records is allocated; once written it may be counted.
            unsafe {
                pool.as_mut_ptr().add(len).write(rec);
                pool.set_len(len + 1);
            }
            true
        } else {
            false
        }
    }

    /// [`Emitter::add`] of a record the pool has no room for, or of a type that is not pooled.
    /// Cold: nearly every record of a pooled type fits the room.
    #[cold]
    #[inline(never)]
    fn add_in_full<T: Pooled>(&mut self, rec: T) {
        match self.filter.mode(T::KIND) {
            Delivery::Off => {}
            Delivery::Immediate => deliver_one(self.sink, rec, T::record),
            Delivery::Pooled => {
                let batch = T::batch(&mut self.pools);
                if batch.capacity() == 0 {
                    batch.reserve_exact(T::FIRST_ROOM);
                }
                batch.push(rec);
                if T::FLUSH_AT_LIMIT && batch.len() >= POOL_LIMIT {
                    self.flush::<T>();
                }
                self.measure_room::<T>();
            }
        }
    }

    /// Hands the batch of `T` over, in the order it was pooled.
    pub fn flush<T: Pooled>(&mut self) {
        let batch = T::batch(&mut self.pools);
        if !batch.is_empty() {
            hand_over(self.sink, T::record(batch));
            batch.clear();
        }
    }

    /// An occupancy record that goes before the ones pooled so far: the start of a wave whose
    /// start was never seen, at time 0, ahead of its end.
    pub fn occupancy_first(&mut self, rec: Occupancy) {
        match self.filter.mode(RecordKind::Occupancy) {
            Delivery::Pooled => {
                self.pools.occupancy.insert(0, rec);
                self.measure_room::<Occupancy>();
            }
            _ => self.add(move || rec),
        }
    }

    /// RDNA occupancy is sorted by time (stable) when its batch is handed over, unless the
    /// decoder pooled it in time order.
    pub fn flush_occupancy(&mut self, order: OccupancyOrder) {
        match order {
            // Mostly in time order already: the check costs less than the sort's run detection.
            OccupancyOrder::Unknown => {
                if !in_time_order(&self.pools.occupancy) {
                    self.pools.occupancy.sort_by_key(|o| o.time);
                }
            }
            OccupancyOrder::InTimeOrder => debug_assert!(in_time_order(&self.pools.occupancy)),
        }
        self.flush::<Occupancy>();
    }

    pub fn pending_occupancy(&mut self) -> &mut [Occupancy] {
        &mut self.pools.occupancy
    }

    /// The last pooled realtime sample not yet handed over (the RDNA merge rule edits it).
    pub fn last_pending_realtime(&mut self) -> Option<&mut Realtime> {
        self.pools.realtime.last_mut()
    }

    /// The realtime and shader clocks of [`Self::last_pending_realtime`], read by index: the
    /// reference `last` returns is tested for null once more.
    #[inline(always)]
    pub fn last_pending_realtime_clocks(&self) -> Option<(u64, i64)> {
        let pool = &self.pools.realtime;
        let last = &pool[pool.len().checked_sub(1)?];
        Some((last.realtime_clock, last.shader_clock))
    }

    pub fn markers(&mut self, recs: &[Marker]) {
        if self.filter.enabled(RecordKind::Marker) && !recs.is_empty() {
            if self.filter.mode(RecordKind::Marker) == Delivery::Immediate {
                for m in recs {
                    hand_over(self.sink, Record::Marker(std::slice::from_ref(m)));
                }
            } else {
                hand_over(self.sink, Record::Marker(recs));
            }
        }
    }

    /// End of one SE buffer, after its occupancy batch: the other pooled batches in the
    /// reference's order.
    pub fn flush_buffer_end(&mut self) {
        self.flush::<Realtime>();
        self.flush::<ShaderData>();
        self.flush::<InstOtherSimd>();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{OccupancyFlags, Pc};

    #[test]
    fn time_order_is_that_of_is_sorted_at_every_length_and_place_of_a_descent() {
        // A xorshift of its own: the sink is below the crate's test helpers.
        let mut state = 0x0CC0_7135_0A7E_D5E1_u64;
        let mut below_20 = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % 20
        };
        let record =
            |time: u64| Occupancy::new(Pc::NONE, time as i64, 0, 0, 0, OccupancyFlags::default());
        let mut descents = 0;
        for len in 0..40 {
            for _ in 0..200 {
                // Mostly ascending, with equal times and now and then one step back.
                let mut time = 100;
                let records: Vec<_> = (0..len)
                    .map(|_| {
                        time = match below_20() {
                            0 => time - 1,
                            1..=5 => time,
                            _ => time + 1,
                        };
                        record(time)
                    })
                    .collect();
                let sorted = records.is_sorted_by_key(|o| o.time);
                descents += usize::from(!sorted);
                assert_eq!(in_time_order(&records), sorted, "{records:?}");
            }
        }
        assert!(descents > 1000, "{descents} batches out of order");
    }

    /// What each call of the sink got: the record type and its batch's records' times.
    fn deliveries(filter: Filter, calls: usize, records: usize) -> Vec<(RecordKind, Vec<i64>)> {
        let mut got = Vec::new();
        let mut sink = |record: Record<'_>| {
            let times = match &record {
                Record::Realtime(batch) => batch.iter().map(|r| r.shader_clock).collect(),
                Record::Occupancy(batch) => batch.iter().map(|o| o.time as i64).collect(),
                _ => Vec::new(),
            };
            got.push((record.kind(), times));
            0
        };
        // Later calls take the pools the earlier ones handed back, with their capacity: records
        // then go in place, within the room, from the first one on.
        for call in 0..calls {
            let mut emitter = Emitter::new(&mut sink, filter);
            for i in 0..records {
                let time = (call * records + i) as i64;
                emitter.add(move || Realtime::new(time, 1));
                let flags = OccupancyFlags::default();
                emitter.add(move || Occupancy::new(Pc::NONE, time, 0, 0, 0, flags));
            }
            emitter.flush_occupancy(OccupancyOrder::Unknown);
            emitter.flush_buffer_end();
        }
        got
    }

    #[test]
    fn pooled_records_keep_their_order_and_batches_in_and_out_of_the_room() {
        let records = 2 * POOL_LIMIT + 3;
        let got = deliveries(Filter::default(), 3, records);
        for call in 0..3 {
            let (first, limit) = ((call * records) as i64, POOL_LIMIT as i64);
            let times = |n: i64, from: i64| (from..from + n).collect::<Vec<_>>();
            // Realtime batches go out as they fill, occupancy once per buffer (by time).
            let expected = vec![
                (RecordKind::Realtime, times(limit, first)),
                (RecordKind::Realtime, times(limit, first + limit)),
                (RecordKind::Occupancy, times(records as i64, first)),
                (RecordKind::Realtime, times(3, first + 2 * limit)),
            ];
            assert_eq!(got[4 * call..4 * call + 4], expected, "call {call}");
        }
        assert_eq!(got.len(), 12);
    }

    #[test]
    fn immediate_and_disabled_types_are_never_pooled() {
        let mut filter = Filter::default();
        filter.set(RecordKind::Realtime, Delivery::Immediate);
        filter.set(RecordKind::Occupancy, Delivery::Off);
        let got = deliveries(filter, 2, 5);
        let expected: Vec<_> = (0..10).map(|t| (RecordKind::Realtime, vec![t])).collect();
        assert_eq!(got, expected);
    }
}
