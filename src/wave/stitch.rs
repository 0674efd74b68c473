//! PC reconstruction ("stitching", SQTT_FORMAT §3.6 with ERRATA G2, G3, G6, G7, G9).
//!
//! The trace gives each instruction a category but no address. Starting from the PCs the trace
//! pins (wave start, NEW_PC), the walk follows the code in execution order and gives each record
//! the address of the first line whose text class matches it.

use std::collections::hash_map::Entry;
use std::collections::HashMap;

use crate::isa::classify::{classify, Substrings, TextClass};
use crate::isa::IsaProvider;
use crate::records::{Category, Inst, Pc};
use crate::spare::{Recycle, Spare};

use super::PcSlot;

/// Consecutive mismatching lines after which a wave's walk gives up.
const MAX_FAILURES: u32 = 1000;
/// Consecutive lines visited without placing a record (skipped lines included) after which the
/// walk gives up: bounds the work an ISA provider answering for every address can cause.
const MAX_LINES_WITHOUT_PROGRESS: u32 = 100_000;

/// Architecture-specific matching rules.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StitchRules {
    /// gfx12: `v_mov_b64` lines stretch their VALU record.
    pub gfx12: bool,
    /// gfx12 header bit 59: `s_barrier_wait` may have produced no token.
    pub exclude_barrier_wait: bool,
    /// RDNA rescue rules: IMMED records absorbed by memory/VALU lines, an `s_waitcnt` line
    /// cancelling one absorption and taking the record at hand.
    pub rdna_rescue: bool,
    /// gfx9: `s_barrier` and `v_mfma_scale_*` lines have their own rules, and two adjacent
    /// records that match in swapped order are swapped.
    pub gfx9: bool,
}

/// Begin and end time of the wave being stitched (the MFMA-scale adjustment's bounds).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WaveSpan {
    pub begin: i64,
    pub end: i64,
}

/// Line class after the architecture post-fixes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LineClass {
    Text(TextClass),
    /// gfx12 `v_mov_b64*`.
    VMovB64,
    /// gfx9 `v_mfma_scale_*`: its scale load starts before the token.
    MfmaScale,
    /// gfx9 `s_barrier`: an IMMED record, or a MESSAGE followed by its IMMED.
    Gfx9Barrier,
}

/// What a line's text starts with or contains, beyond its class.
mod flag {
    pub const V_MOV_B64: u8 = 1;
    pub const WAITCNT: u8 = 1 << 2;
    pub const LOAD: u8 = 1 << 3;
    pub const SCRATCH: u8 = 1 << 4;
    pub const BARRIER_WAIT: u8 = 1 << 5;
    pub const MFMA_SCALE: u8 = 1 << 6;
    pub const BARRIER: u8 = 1 << 7;
}

/// One disassembled line, classified once; `class` and `accepts` hold the classification under
/// the rules of the walk ([`Line::derive`]), so the walk does no text work per record.
#[derive(Clone, Copy, Debug)]
struct Line {
    /// Bytes to the next line (a reported size of 0 advances by 4).
    size: u64,
    /// The branch displacement parsed from the text (None: not a number).
    branch_offset: Option<i32>,
    /// The line that followed this one in an earlier call ([`NO_LINE`]: none): where the
    /// look-ahead query looks first.
    hint: u32,
    /// Record categories this line produces by a plain match, one bit per category.
    accepts: u16,
    /// What the walk's tight loop may do at this line once it is linked ([`Link`]).
    plainly: Plainly,
    /// Record categories the walk steps over this line for, counting a failure, under no rule
    /// but the plain mismatch (step 8's last case), one bit per category.
    misses: u16,
    text: TextClass,
    class: LineClass,
    flags: u8,
}

/// What a line's text says, whatever its PC, size or the walk's rules.
#[derive(Clone, Copy, Debug)]
struct TextFacts {
    class: TextClass,
    flags: u8,
    branch_offset: Option<i32>,
}

impl TextFacts {
    fn of(text: &[u8]) -> Self {
        let substrings = Substrings::find(text);
        let class = classify(text, substrings);
        // Each prefix is tested only on lines of its own first two bytes (constant lengths: the
        // comparisons are inlined).
        let on = |prefix: &[u8], bit: u8| if text.starts_with(prefix) { bit } else { 0 };
        let mut flags = match text.get(..2) {
            Some(b"v_") => on(b"v_mov_b64", flag::V_MOV_B64) | on(b"v_mfma_scale", flag::MFMA_SCALE),
            Some(b"s_") => {
                on(b"s_waitcnt", flag::WAITCNT)
                    | on(b"s_barrier_wait", flag::BARRIER_WAIT)
                    | on(b"s_barrier", flag::BARRIER)
            }
            _ => 0,
        };
        if substrings.load {
            flags |= flag::LOAD;
        }
        if substrings.scratch {
            flags |= flag::SCRATCH;
        }
        TextFacts {
            class,
            flags,
            branch_offset: if class == TextClass::Branch {
                parse_branch_offset(text)
            } else {
                None
            },
        }
    }
}

impl Line {
    fn new(facts: TextFacts, memory_size: u64, rules: &StitchRules) -> Self {
        let TextFacts {
            class,
            flags,
            branch_offset,
        } = facts;
        let mut line = Line {
            size: if memory_size == 0 { 4 } else { memory_size },
            branch_offset,
            hint: NO_LINE,
            accepts: 0,
            plainly: Plainly::NOTHING,
            misses: 0,
            text: class,
            class: LineClass::Text(class),
            flags,
        };
        line.derive(rules);
        line
    }

    fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }

    /// The class and accepted categories under `rules`.
    fn derive(&mut self, rules: &StitchRules) {
        self.class = match self.text {
            TextClass::Valu if rules.gfx12 && self.has(flag::V_MOV_B64) => LineClass::VMovB64,
            TextClass::Valu if rules.gfx9 && self.has(flag::MFMA_SCALE) => LineClass::MfmaScale,
            TextClass::Immed if rules.gfx9 && self.has(flag::BARRIER) => LineClass::Gfx9Barrier,
            class => LineClass::Text(class),
        };
        self.accepts = match self.class {
            LineClass::Text(text) => TEXT_ACCEPTS[text as usize],
            _ => 0,
        };
        self.misses = self.plain_misses(rules);
        self.plainly = if self.flags & unplain(rules) != 0 {
            Plainly::NOTHING
        } else {
            Plainly {
                accepts: self.accepts,
                other: match self.class {
                    LineClass::MfmaScale => Other::MfmaScale,
                    LineClass::Text(TextClass::Branch) if self.branch_offset.is_some() => {
                        Other::Branch
                    }
                    LineClass::Text(TextClass::Skip | TextClass::DontKnow) => Other::StepOver,
                    _ => Other::Stop,
                },
            }
        };
    }

    /// The categories for which step 8 of the walk reaches its last case at this line, a
    /// mismatch without a rule of its own (steps 6 and 7 passed it).
    fn plain_misses(&self, rules: &StitchRules) -> u16 {
        let LineClass::Text(text) = self.class else {
            return 0;
        };
        if rules.gfx9
            || self.has(flag::WAITCNT | flag::LOAD)
            || matches!(
                text,
                TextClass::Branch | TextClass::Skip | TextClass::DontKnow
            )
        {
            return 0;
        }
        let absorbed = if rules.rdna_rescue && absorbs_immediate(self.class) {
            bit(Category::Immed)
        } else {
            0
        };
        ALL_CATEGORIES & !self.accepts & !bit(Category::Context) & !absorbed
    }

    /// Whether a record of `category` is what this line produces (a plain match).
    #[inline]
    fn accepts(&self, category: Category) -> bool {
        self.accepts_raw(category as u8)
    }

    /// [`Line::accepts`] for a record's raw category byte.
    #[inline]
    fn accepts_raw(&self, category: u8) -> bool {
        has_bit(self.accepts, category)
    }

    fn branch_target(&self, pc: Pc) -> Option<Pc> {
        let offset = i64::from(self.branch_offset?);
        Some(Pc::new(
            pc.address.wrapping_add(4).wrapping_add((offset * 4) as u64),
            pc.code_object_id,
        ))
    }
}

/// What the walk's tight loop does at a line (steps 6, 8 and 9 of [`SharedStitch::stitch`] in
/// the cases that need neither a query nor the full rules). Nothing for a line whose flags the
/// rules look at (`unplain`).
#[derive(Clone, Copy, Debug)]
struct Plainly {
    /// Categories of the records placed at the line.
    accepts: u16,
    /// What a record of another category does.
    other: Other,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Other {
    /// The full walk takes it.
    Stop,
    /// A gfx9 `v_mfma_scale_*` line: a VALU record is placed, with an adjustment.
    MfmaScale,
    /// A branch line with a target: a JUMP record is placed and the walk goes on at the
    /// target once [`SharedStitch::taken`] knows its line in this call.
    Branch,
    /// A token-less line: stepped over.
    StepOver,
}

impl Plainly {
    const NOTHING: Plainly = Plainly {
        accepts: 0,
        other: Other::Stop,
    };
}

/// What the walk's tight loop reads of a cached line, by line id, apart from [`Line`]: a record
/// that matches a linked line costs one 16-byte read.
#[derive(Clone, Copy, Debug)]
struct Link {
    /// [`Line::size`].
    size: u64,
    /// Cache id of the line after this one once the look-ahead query has found it cached
    /// ([`NO_LINE`] until then): the walk follows it without asking or hashing again.
    next: u32,
    /// [`Line::plainly`] once linked, nothing before: while it is other than nothing, `next` is
    /// the id of a line in the cache (the tight loop follows it without a bounds check).
    plainly: Plainly,
}

impl Link {
    fn unlinked(line: &Line) -> Self {
        Link {
            size: line.size,
            next: NO_LINE,
            plainly: Plainly::NOTHING,
        }
    }
}

/// The flags of lines the walk's tight loop leaves to the full rules: gfx12 may leave
/// `s_barrier_wait` without a token, and the walk marks those lines.
fn unplain(rules: &StitchRules) -> u8 {
    if rules.gfx12 {
        flag::BARRIER_WAIT
    } else {
        0
    }
}

/// Whether bit `category` of a per-category set is set (none is for a category byte past 15).
#[inline]
fn has_bit(set: u16, category: u8) -> bool {
    set & CATEGORY_BIT[usize::from(category)] != 0
}

/// By category byte: its bit in a per-category set, none past 15 (a load instead of a range
/// check and a shift in the walk's tight loop).
const CATEGORY_BIT: [u16; 256] = {
    let mut table = [0; 256];
    let mut k = 0;
    while k < 16 {
        table[k] = 1 << k;
        k += 1;
    }
    table
};

/// Every category a record can match a line by: all but NONE.
const CATEGORIES: &[Category] = Category::ALL.split_at(1).1;

/// The last space-separated word read as C `stoi` does (leading digits), SIMM16 sign-folded.
fn parse_branch_offset(text: &[u8]) -> Option<i32> {
    let word = text.rsplit(|&c| c == b' ').next()?;
    let word = word.trim_ascii_start();
    let (negative, digits) = match word.first() {
        Some(b'-') => (true, &word[1..]),
        Some(b'+') => (false, &word[1..]),
        _ => (false, word),
    };
    let len = digits.iter().take_while(|c| c.is_ascii_digit()).count();
    if len == 0 {
        return None;
    }
    let mut value: i64 = 0;
    for &c in &digits[..len] {
        value = value.checked_mul(10)?.checked_add(i64::from(c - b'0'))?;
        if value > i64::from(i32::MAX) + 1 {
            return None;
        }
    }
    let value = if negative { -value } else { value };
    if value > i64::from(i32::MAX) {
        return None;
    }
    i32::try_from(if value >= 32768 { value - 65536 } else { value }).ok()
}

/// A category's bit in a per-category set.
const fn bit(category: Category) -> u16 {
    1 << category as u16
}

const ALL_CATEGORIES: u16 = {
    let mut set = 0;
    let mut k = 0;
    while k < CATEGORIES.len() {
        set |= bit(CATEGORIES[k]);
        k += 1;
    }
    set
};

/// The categories of records for which token-less lines are stepped over.
const STEPPED_OVER: u16 = ALL_CATEGORIES & !bit(Category::Context);

/// Every text class, in numeric order.
const TEXT_CLASSES: [TextClass; 11] = [
    TextClass::Smem,
    TextClass::Salu,
    TextClass::Vmem,
    TextClass::Flat,
    TextClass::Lds,
    TextClass::Valu,
    TextClass::Immed,
    TextClass::Bvh,
    TextClass::Branch,
    TextClass::Skip,
    TextClass::DontKnow,
];

/// By text class: the categories a line of that class produces ([`trivial_match`]).
const TEXT_ACCEPTS: [u16; TEXT_CLASSES.len()] = {
    let mut table = [0; TEXT_CLASSES.len()];
    let mut t = 0;
    while t < TEXT_CLASSES.len() {
        let mut k = 0;
        while k < CATEGORIES.len() {
            if trivial_match(CATEGORIES[k], LineClass::Text(TEXT_CLASSES[t])) {
                table[t] |= bit(CATEGORIES[k]);
            }
            k += 1;
        }
        t += 1;
    }
    table
};

/// Whether a record of category `record` is what a line of class `line` produces.
const fn trivial_match(record: Category, line: LineClass) -> bool {
    use Category as C;
    same_class(line, record)
        || matches!(
            (record, line),
            (C::Next, LineClass::Text(TextClass::Branch))
                | (C::Message, LineClass::Text(TextClass::Immed))
                | (C::Flat, LineClass::Text(TextClass::Vmem))
        )
}

/// Whether a line of class `line` is of the record category itself (the classes both share).
const fn same_class(line: LineClass, record: Category) -> bool {
    use Category as C;
    let line = match line {
        LineClass::Text(line) => line,
        // An `s_barrier` line is an IMMED line to this test (docs/timing/gfx9.md S6).
        LineClass::Gfx9Barrier => TextClass::Immed,
        _ => return false,
    };
    matches!(
        (record, line),
        (C::Smem, TextClass::Smem)
            | (C::Salu, TextClass::Salu)
            | (C::Vmem, TextClass::Vmem)
            | (C::Flat, TextClass::Flat)
            | (C::Lds, TextClass::Lds)
            | (C::Valu, TextClass::Valu)
            | (C::Immed, TextClass::Immed)
            | (C::Bvh, TextClass::Bvh)
    )
}

/// Lines an IMMED record may be attributed to when it matches nothing else (ERRATA G3).
const fn absorbs_immediate(line: LineClass) -> bool {
    matches!(
        line,
        LineClass::VMovB64
            | LineClass::Text(TextClass::Vmem | TextClass::Flat | TextClass::Lds | TextClass::Valu)
    )
}

fn category_of(inst: &Inst) -> Option<Category> {
    Category::from_u8(inst.category()).filter(|&c| c != Category::None)
}

/// Id of a line that is not in the cache.
const NO_LINE: u32 = u32::MAX;

/// A PC on the walk, with the cache id of its line when known ([`NO_LINE`] otherwise).
#[derive(Clone, Copy, Debug)]
struct Cursor {
    pc: Pc,
    id: u32,
}

impl Cursor {
    fn at(pc: Pc) -> Self {
        Cursor { pc, id: NO_LINE }
    }
}

/// [`SharedStitch::renew`] for an answer other than the earlier call's (or of memory size 0):
/// what changed is read again.
#[cold]
#[inline(never)]
fn renew_changed(
    known: &mut Known,
    line: &mut Line,
    link: &mut Link,
    texts: &mut Vec<u8>,
    rules: &StitchRules,
    memory_size: u64,
    text: &[u8],
) {
    if texts.get(known.text.clone()) != Some(text) {
        known.facts = TextFacts::of(text);
        known.text = keep(texts, text);
        known.memory_size = memory_size;
        *line = Line::new(known.facts, memory_size, rules);
    } else if known.memory_size != memory_size {
        known.memory_size = memory_size;
        *line = Line::new(known.facts, memory_size, rules);
    } else if link.next != NO_LINE {
        // The link of an earlier call is only a hint in this one.
        line.hint = link.next;
    }
    *link = Link::unlinked(line);
}

/// Appends `text` to `texts`; returns where it is.
fn keep(texts: &mut Vec<u8>, text: &[u8]) -> std::ops::Range<usize> {
    texts.extend_from_slice(text);
    texts.len() - text.len()..texts.len()
}

/// Where a branch line's branch went, to a line asked for in the same call.
#[derive(Clone, Copy, Debug)]
struct Taken {
    /// The call (a call's own stamp: nothing to reset when the branch line is renewed).
    call: u32,
    /// The target's line id and address.
    id: u32,
    address: u64,
}

/// What the thread's parse calls asked and were answered for one PC, by line id.
#[derive(Clone, Debug)]
struct Known {
    pc: Pc,
    /// The call in which the line is this call's (asked for in it, memory size other than 0).
    call: u32,
    memory_size: u64,
    /// The text of the last answer for the PC (in `SharedStitch::texts`), and what it says.
    text: std::ops::Range<usize>,
    facts: TextFacts,
    /// What the walks of this call did at the line if it is an `s_barrier_wait` line
    /// ([`barrier_mark`] bits; valid in call `barrier_call` only).
    barrier: u8,
    barrier_call: u32,
}

/// What the walks of a parse call did at an `s_barrier_wait` line (the reference keeps both on
/// its shared line, so they reach every later wave of the call, and the next SE buffer of it).
mod barrier_mark {
    /// A record was placed at the line: it is no longer taken for token-less.
    pub const PLACED: u8 = 1;
    /// The line was taken for token-less: it matches no record from then on.
    pub const TOKENLESS: u8 = 1 << 1;
}

/// The lines the thread's parse calls were answered, and scratch space reused across waves.
#[derive(Default)]
pub struct SharedStitch {
    /// Every PC's line by id, across the thread's calls. Every call asks for each PC again
    /// (answers may change between calls), so a line is only used once asked for in this call
    /// ([`Known::call`]); an unchanged answer keeps what was read from it.
    lines: Vec<Line>,
    /// By line id.
    links: Vec<Link>,
    /// By line id.
    known: Vec<Known>,
    /// By the id of a branch line, where the walk took the branch: only as long as the
    /// highest such id.
    taken: Vec<Taken>,
    /// Line ids by PC.
    ids: HashMap<Pc, u32, rustc_hash::FxBuildHasher>,
    texts: Vec<u8>,
    /// Numbers the thread's calls, for `Known::call`.
    call: u32,
    /// Where a provider that does not lend its text copies it.
    text: Vec<u8>,
    /// The line of the last answer [`SharedStitch::look_up`] did not cache.
    uncached: Option<Line>,
    /// The rules the lines' classes were derived under.
    rules: StitchRules,
    /// Token-less `s_barrier_wait` lines found by the last walk: `(record index, pc)`.
    pub excluded: Vec<(usize, Pc)>,
}

/// A thread's cache buffers larger than this are not kept for its next parse call.
const KEPT_LINES: usize = 1 << 16;
const KEPT_TEXT: usize = 1 << 22;

thread_local! {
    static SPARE_STITCH: std::cell::Cell<Option<Box<SharedStitch>>> =
        const { std::cell::Cell::new(None) };
}

/// Ends a call's cache; its buffers go to the thread's next call unless they grew large.
impl Recycle for SharedStitch {
    fn recycle(&mut self) -> bool {
        if self.lines.capacity() > KEPT_LINES {
            return false;
        }
        self.call = self.call.wrapping_add(1);
        if self.texts.len() > KEPT_TEXT || self.call == 0 {
            self.lines.clear();
            self.links.clear();
            self.known.clear();
            self.taken.clear();
            self.ids.clear();
            self.texts.clear();
        }
        self.text.clear();
        self.excluded.clear();
        true
    }
}

impl SharedStitch {
    /// A cache for a new parse call, in the buffers a previous call on this thread left (no
    /// answer is used before it is asked for again: ISA answers may change between calls).
    pub fn for_new_call() -> Spare<Self> {
        Spare::take(&SPARE_STITCH)
    }

    fn line(&mut self, isa: &mut dyn IsaProvider, pc: Pc) -> Option<Line> {
        self.line_at(isa, Cursor::at(pc)).map(|(line, _)| line)
    }

    /// The line at `cursor` and its cache id ([`NO_LINE`]: answered but not cached).
    #[inline]
    fn line_at(&mut self, isa: &mut dyn IsaProvider, cursor: Cursor) -> Option<(Line, u32)> {
        if let Some(line) = self.lines.get(cursor.id as usize) {
            return Some((*line, cursor.id));
        }
        let id = self.look_up(isa, cursor.pc)?;
        let line = self.lines.get(id as usize).or(self.uncached.as_ref())?;
        Some((*line, id))
    }

    /// The id of the line at `pc`, asked for once in this call ([`NO_LINE`]: answered but not
    /// cached, the line is `uncached`), found by a search by PC.
    #[cold]
    fn look_up(&mut self, isa: &mut dyn IsaProvider, pc: Pc) -> Option<u32> {
        let id = match self.ids.entry(pc) {
                Entry::Occupied(id) => *id.get(),
                Entry::Vacant(vacant) => {
                    let (memory_size, text) = isa.answer(pc, &mut self.text).ok()?;
                    let facts = TextFacts::of(text);
                    let line = Line::new(facts, memory_size, &self.rules);
                    let Some(id) = u32::try_from(self.lines.len())
                        .ok()
                        .filter(|&id| id != NO_LINE)
                    else {
                        self.uncached = Some(line);
                        return Some(NO_LINE);
                    };
                    vacant.insert(id);
                    self.lines.push(line);
                    self.links.push(Link::unlinked(&line));
                    self.known.push(Known {
                        pc,
                        call: self.call.wrapping_sub(1),
                        memory_size,
                        text: keep(&mut self.texts, text),
                        facts,
                        barrier: 0,
                        barrier_call: self.call.wrapping_sub(1),
                    });
                    return Some(self.this_call(id));
                }
        };
        self.renew(isa, id)
    }

    /// Line `id` asked for again in this call (once: then it is this call's).
    #[inline]
    fn renew(&mut self, isa: &mut dyn IsaProvider, id: u32) -> Option<u32> {
        let (Some(known), Some(line), Some(link)) = (
            self.known.get_mut(id as usize),
            self.lines.get_mut(id as usize),
            self.links.get_mut(id as usize),
        ) else {
            return None;
        };
        if known.call == self.call {
            return Some(id);
        }
        let (memory_size, text) = isa.answer(known.pc, &mut self.text).ok()?;
        if memory_size != 0
            && memory_size == known.memory_size
            && self.texts.get(known.text.clone()) == Some(text)
        {
            // The answer of an earlier call (the common case): the line is this call's as it
            // was derived, and its link only a hint.
            known.call = self.call;
            if link.next != NO_LINE {
                line.hint = link.next;
            }
            link.next = NO_LINE;
            link.plainly = Plainly::NOTHING;
            return Some(id);
        }
        renew_changed(known, line, link, &mut self.texts, &self.rules, memory_size, text);
        Some(self.this_call(id))
    }

    /// Makes line `id` this call's unless its memory size is 0 (the reference asks again for
    /// those: the line is `uncached`); returns its id for this call.
    fn this_call(&mut self, id: u32) -> u32 {
        match (
            self.known.get_mut(id as usize),
            self.lines.get(id as usize),
        ) {
            (Some(known), _) if known.memory_size != 0 => {
                known.call = self.call;
                id
            }
            (_, line) => {
                self.uncached = line.copied();
                NO_LINE
            }
        }
    }

    /// The line after `line` (at `cursor`), asked for once as the reference's look-ahead does.
    #[inline]
    fn following(&mut self, isa: &mut dyn IsaProvider, cursor: Cursor, line: &Line) -> Cursor {
        let pc = advance(cursor.pc, line.size);
        let id = match self.links.get(cursor.id as usize) {
            Some(link) if link.next != NO_LINE => link.next,
            _ => self.link_following(isa, cursor.id, pc, line.hint),
        };
        Cursor { pc, id }
    }

    /// The id of the line at `pc`, which follows line `id` and is not linked to it yet (`hint`:
    /// the line that followed it in an earlier call); links them.
    #[inline(never)]
    fn link_following(&mut self, isa: &mut dyn IsaProvider, id: u32, pc: Pc, hint: u32) -> u32 {
        // The line that followed in an earlier call is renewed without a search by PC.
        let next = if self.known.get(hint as usize).is_some_and(|known| known.pc == pc) {
            self.renew(isa, hint)
        } else {
            self.look_up(isa, pc)
        };
        let next = next.unwrap_or(NO_LINE);
        if next != NO_LINE {
            if let (Some(line), Some(link)) =
                (self.lines.get(id as usize), self.links.get_mut(id as usize))
            {
                link.next = next;
                link.plainly = line.plainly;
            }
        }
        next
    }

    /// The cursor at `target`, where branch line `id` goes: with the target's line id if it was
    /// asked for in this call (no query), which the line keeps for the tight loop.
    fn branch_cursor(&mut self, id: u32, target: Pc) -> Cursor {
        let taken = match self.ids.get(&target) {
            Some(&t) if self.known.get(t as usize).is_some_and(|k| k.call == self.call) => t,
            _ => return Cursor::at(target),
        };
        // A branch line not cached (NO_LINE) keeps nothing.
        if id != NO_LINE {
            let id = id as usize;
            let none = Taken {
                call: self.call.wrapping_sub(1),
                id: NO_LINE,
                address: 0,
            };
            if self.taken.len() <= id {
                self.taken.resize(id + 1, none);
            }
            self.taken[id] = Taken {
                call: self.call,
                id: taken,
                address: target.address,
            };
        }
        Cursor {
            pc: target,
            id: taken,
        }
    }

    /// The [`barrier_mark`] bits of line `id` in this call.
    fn barrier_marks(&self, id: u32) -> u8 {
        self.known
            .get(id as usize)
            .filter(|k| k.barrier_call == self.call)
            .map_or(0, |k| k.barrier)
    }

    /// Sets [`barrier_mark`] bits of line `id` for the rest of this call (a line not cached
    /// keeps none: it is asked for again).
    fn mark_barrier(&mut self, id: u32, mark: u8) {
        if let Some(known) = self.known.get_mut(id as usize) {
            if known.barrier_call != self.call {
                known.barrier_call = self.call;
                known.barrier = 0;
            }
            known.barrier |= mark;
        }
    }

    /// Whether an IMMED record `start` met at an `s_barrier_wait` line is not the barrier's
    /// (the line produced no token): the reference's look-ahead, quirks included. From the
    /// line after the barrier (`first`), line by line: a token-less line moves on one record,
    /// any other line is tested against the record at hand (a plain match, a JUMP on a branch
    /// line, or an IMMED on a line that absorbs it) and moves on **two** records. It stops at
    /// the first line that fails the test (the answer: the record is the barrier's), at the
    /// end of the records or of the code, or, at a record other than IMMED met at a line other
    /// than VALU, when an earlier such pair had another line class.
    fn barrier_lookahead(
        &mut self,
        isa: &mut dyn IsaProvider,
        insts: &[Inst],
        start: usize,
        first: Cursor,
    ) -> bool {
        let mut tokenless = true;
        let Some((mut line, mut id)) = self.line_at(isa, first) else {
            return tokenless;
        };
        let mut pc = first.pc;
        let mut kind: Option<LineClass> = None;
        let mut k = start;
        while let Some(inst) = insts.get(k) {
            let category = inst.category();
            // The reference moves its look-ahead on before testing the pair; a line it cannot
            // get ends the search there.
            let next_pc = if line.text == TextClass::Branch && category == Category::Jump as u8 {
                match line.branch_target(pc) {
                    Some(target) => target,
                    None => break,
                }
            } else {
                advance(pc, line.size)
            };
            let Some((next_line, next_id)) = self.line_at(isa, Cursor::at(next_pc)) else {
                break;
            };
            let marked = self.barrier_marks(id) & barrier_mark::TOKENLESS != 0;
            let this = line;
            (line, id, pc) = (next_line, next_id, next_pc);
            if matches!(this.text, TextClass::Skip | TextClass::DontKnow) {
                k += 1;
                continue;
            }
            tokenless = !marked
                && (this.accepts_raw(category)
                    || (this.class == LineClass::Text(TextClass::Branch)
                        && category == Category::Jump as u8)
                    || (category == Category::Immed as u8 && absorbs_immediate(this.class)));
            if !tokenless {
                break;
            }
            if category != Category::Immed as u8 && this.class != LineClass::Text(TextClass::Valu) {
                if kind.is_some_and(|kind| kind != this.class) {
                    break;
                }
                kind = Some(this.class);
            }
            k += 2;
        }
        tokenless
    }

    /// gfx9 rescue: records `i` and `i + 1` arrived in swapped order if `i + 1` is of this
    /// line's very class and `i` of the following line's (no cross-class match such as FLAT for a
    /// `global_*` line: the reference compares the category numbers; docs/timing/gfx9.md S6).
    fn matches_swapped(
        &mut self,
        isa: &mut dyn IsaProvider,
        insts: &[Inst],
        i: usize,
        line: &Line,
        following: Cursor,
    ) -> bool {
        let (Some(this), Some(second)) = (
            insts.get(i).and_then(category_of),
            insts.get(i + 1).and_then(category_of),
        ) else {
            return false;
        };
        same_class(line.class, second)
            && self
                .line_at(isa, following)
                .is_some_and(|(l, _)| same_class(l.class, this))
    }

    /// Step 0 of the walk, the common case kept tight (and out of line, so that its few
    /// variables stay in registers): from a cached line on, the records before `limit` that
    /// match their line plainly or as a gfx9 `v_mfma_scale_*`, the token-less lines between
    /// them and the lines a record plainly misses (steps 5, 6, 8 and 9 of
    /// [`SharedStitch::stitch`] for them, with the same look-ahead queries in the same order).
    /// Over lines already linked, [`linked_run`] takes them without a query.
    #[inline(never)]
    fn plain_matches(
        &mut self,
        isa: &mut dyn IsaProvider,
        insts: &mut [Inst],
        limit: usize,
        walk: PlainWalk,
        unplain: u8,
        span: WaveSpan,
    ) -> PlainWalk {
        let limit = limit.min(insts.len());
        // The walk's fields in locals, not in the returned value's memory.
        let PlainWalk {
            mut i,
            mut cursor,
            mut idle,
            mut failures,
        } = walk;
        let walk = loop {
            // The run stays below the walk's limit of lines without progress; a walk at it
            // stops in `plain_action`. A walk at an unlinked line (the first over code in a
            // call) skips the call.
            let linked = self
                .links
                .get(cursor.id as usize)
                .is_some_and(|link| link.next != NO_LINE);
            if linked && idle < MAX_LINES_WITHOUT_PROGRESS {
                let walk = PlainWalk {
                    i,
                    cursor,
                    idle,
                    failures,
                };
                PlainWalk {
                    i,
                    cursor,
                    idle,
                    failures,
                } = linked_run(&self.taken, self.call, &self.links, insts, limit, walk, span);
            }
            // Anything else the run does not take: steps with the look-ahead query, until the
            // walk is at a linked line again (the first walk over code in a call links it).
            let stopped = loop {
                if i >= limit {
                    break true;
                }
                let id = cursor.id;
                let (Some(line), Some(link), Some(category)) = (
                    self.lines.get(id as usize),
                    self.links.get(id as usize),
                    insts.get(i).map(Inst::category),
                ) else {
                    break true;
                };
                let (line, link) = (*line, *link);
                let action = plain_action(&line, category, unplain, idle, failures);
                if action == Plain::Stop {
                    break true;
                }
                let pc = advance(cursor.pc, link.size);
                let next = if link.next != NO_LINE {
                    link.next
                } else {
                    self.link_following(isa, id, pc, line.hint)
                };
                let walk = PlainWalk {
                    i,
                    cursor,
                    idle,
                    failures,
                };
                PlainWalk {
                    i,
                    cursor,
                    idle,
                    failures,
                } = walk.apply(action, &line, insts, Cursor { pc, id: next }, span);
                if self.links.get(next as usize).is_some_and(|l| l.next != NO_LINE) {
                    break false;
                }
            };
            if stopped {
                break PlainWalk {
                    i,
                    cursor,
                    idle,
                    failures,
                };
            }
        };
        walk
    }

    /// Gives the records of one wave their PCs; returns how many got one. Token-less
    /// `s_barrier_wait` lines are reported in `excluded`, as `(record index, pc)` in walk order,
    /// the first line of a record index only.
    pub fn stitch(
        &mut self,
        isa: &mut dyn IsaProvider,
        insts: &mut [Inst],
        slots: &[PcSlot],
        rules: &StitchRules,
        span: WaveSpan,
        excluded: &mut Vec<(usize, Pc)>,
    ) -> usize {
        if *rules != self.rules {
            self.rules = *rules;
            for (line, link) in self.lines.iter_mut().zip(&mut self.links) {
                line.derive(rules);
                if link.next != NO_LINE {
                    link.plainly = line.plainly;
                }
            }
        }
        let n = insts.len();
        let mut i = 0usize;
        let mut slot = 0usize;
        let mut next: Option<Cursor> = None;
        let mut failures = 0u32;
        let mut idle_lines = 0u32;
        let mut absorbed = 0u32;
        let mut stitched = 0usize;
        // Lines that need the full rules: gfx12 may leave `s_barrier_wait` without a token.
        let unplain = unplain(rules);
        'walk: while i < n {
            // 0. The common case, kept tight: records that plainly match their line.
            if let Some(cursor) = next {
                let limit = slots.get(slot).map_or(n, |s| s.index.min(n));
                let start = PlainWalk {
                    i,
                    cursor,
                    idle: idle_lines,
                    failures,
                };
                let walk = self.plain_matches(isa, insts, limit, start, unplain, span);
                stitched += walk.i - i;
                i = walk.i;
                if i == n {
                    break;
                }
                idle_lines = walk.idle;
                failures = walk.failures;
                next = Some(walk.cursor);
            }
            // 1. PCs pinned by the trace.
            let mut pinned = None;
            while let Some(s) = slots.get(slot) {
                if s.index > i {
                    break;
                }
                slot += 1;
                if s.index < i {
                    continue;
                }
                match s.pc.and_then(|pc| Some((pc, self.line(isa, pc)?))) {
                    Some(found) => pinned = Some(found),
                    None => {
                        // Unknown address: the records up to the next pinned PC stay PC-less.
                        i = slots.get(slot).map_or(n, |s| s.index.max(i + 1));
                        next = None;
                        continue 'walk;
                    }
                }
            }
            let Some(category) = category_of(&insts[i]) else {
                break;
            };
            // 2. The trap handler's record has no line.
            if category == Category::Context {
                i += 1;
                continue;
            }
            // 3. A pinned record: token-less lines at its PC are stepped over.
            if let Some((mut pc, mut line)) = pinned {
                let mut steps = 0;
                while line.text == TextClass::Skip {
                    pc = advance(pc, line.size);
                    steps += 1;
                    match self.line(isa, pc) {
                        Some(l) if steps < MAX_LINES_WITHOUT_PROGRESS => line = l,
                        _ => break 'walk,
                    }
                }
                insts[i].pc = pc;
                stitched += 1;
                if line.class == LineClass::Gfx9Barrier && i + 1 < n {
                    // The barrier's second record shares its PC.
                    i += 1;
                    insts[i].pc = pc;
                    stitched += 1;
                }
                next = if line.text == TextClass::Branch && category == Category::Jump {
                    match line.branch_target(pc) {
                        Some(target) => Some(Cursor::at(target)),
                        None => break 'walk,
                    }
                } else {
                    Some(Cursor::at(advance(pc, line.size)))
                };
                i += 1;
                failures = 0;
                idle_lines = 0;
                continue;
            }
            // 4. gfx12: a first record whose PC the trace does not pin is looked for at the null
            // PC; without a line there the walk ends.
            if rules.gfx12 && i == 0 && next.is_none() {
                next = Some(Cursor::at(Pc::NONE));
            }
            // 5. The next line in execution order, and one line of look-ahead.
            let Some(cursor) = next else { break };
            let Some((line, id)) = self.line_at(isa, cursor) else {
                break;
            };
            let pc = cursor.pc;
            let following = self.following(isa, Cursor { pc, id }, &line);
            idle_lines += 1;
            if idle_lines > MAX_LINES_WITHOUT_PROGRESS {
                break;
            }
            // 6. Lines that produce no token.
            if matches!(line.text, TextClass::Skip | TextClass::DontKnow) {
                next = Some(following);
                continue;
            }
            // 7. gfx12 may leave s_barrier_wait without a token.
            let mut tokenless_line = false;
            if rules.gfx12 && line.has(flag::BARRIER_WAIT) {
                let marks = self.barrier_marks(id);
                tokenless_line = marks & barrier_mark::TOKENLESS != 0;
                if rules.exclude_barrier_wait
                    && (tokenless_line
                        || (marks & barrier_mark::PLACED == 0 && line.text == TextClass::Immed))
                    && (category != Category::Immed
                        || self.barrier_lookahead(isa, insts, i, following))
                {
                    // Only the first line of a record index becomes a record (and the list stays
                    // as long as the wave's records).
                    if excluded.last().is_none_or(|last| last.0 != i) {
                        excluded.push((i, pc));
                    }
                    self.mark_barrier(id, barrier_mark::TOKENLESS);
                    next = Some(following);
                    continue;
                }
            }
            // 8. Match.
            let class = line.class;
            let mut after = following;
            let mut passed_over = 0;
            let matched = if tokenless_line {
                // A line taken for token-less matches nothing any more.
                false
            } else if line.accepts(category) {
                true
            } else if class == LineClass::Text(TextClass::Branch) {
                if category != Category::Jump {
                    break;
                }
                match line.branch_target(pc) {
                    Some(target) => after = self.branch_cursor(id, target),
                    None => break,
                }
                true
            } else if class == LineClass::VMovB64 && category == Category::Valu {
                let inst = &mut insts[i];
                inst.duration = inst.duration.max(inst.stall() as i32 + 2);
                true
            } else if class == LineClass::MfmaScale && category == Category::Valu {
                adjust_mfma_scale(insts, i, span);
                true
            } else if class == LineClass::Gfx9Barrier {
                if category == Category::Message {
                    // Barrier entry (MESSAGE) and exit (IMMED) share the line; the record after
                    // the entry is passed over.
                    passed_over = 1;
                    if let Some(exit) = insts
                        .get_mut(i + 1)
                        .filter(|r| r.category() == Category::Immed as u8)
                    {
                        exit.pc = pc;
                        stitched += 1;
                    }
                }
                category == Category::Message || category == Category::Immed
            } else if rules.gfx9 && self.matches_swapped(isa, insts, i, &line, following) {
                insts.swap(i, i + 1);
                failures += 1;
                continue;
            } else if rules.rdna_rescue && category == Category::Immed && absorbs_immediate(class) {
                absorbed += 1;
                true
            } else if rules.rdna_rescue && line.has(flag::WAITCNT) && absorbed > 0 {
                absorbed -= 1;
                true
            } else if line.has(flag::WAITCNT | flag::LOAD) && !line.has(flag::SCRATCH) {
                break;
            } else {
                false
            };
            // 9. Advance.
            if matched {
                if line.has(flag::BARRIER_WAIT) {
                    self.mark_barrier(id, barrier_mark::PLACED);
                }
                insts[i].pc = pc;
                stitched += 1;
                i += 1 + passed_over;
                failures = 0;
                idle_lines = 0;
                next = Some(after);
            } else {
                failures += 1;
                if failures >= MAX_FAILURES {
                    break;
                }
                next = Some(following);
            }
        }
        stitched
    }
}

/// Where step 0 of the walk stands: the next record, its cursor, the lines visited since the
/// last record placed and the failures since then.
#[derive(Clone, Copy, Debug)]
struct PlainWalk {
    i: usize,
    cursor: Cursor,
    idle: u32,
    failures: u32,
}

/// What step 0 does at a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Plain {
    /// The record matches the line plainly, or as a gfx9 `v_mfma_scale_*` (steps 8, 9).
    Place,
    /// A token-less line (step 6).
    StepOver,
    /// A plain mismatch: one more failure (steps 8, 9).
    Miss,
    /// Anything else: the full walk takes over.
    Stop,
}

/// Step 0's action for a record of raw `category` at `line`. It stops where a limit of the walk
/// would end it, so that the full walk does that.
#[inline(always)]
fn plain_action(line: &Line, category: u8, unplain: u8, idle: u32, failures: u32) -> Plain {
    if line.flags & unplain != 0 || idle >= MAX_LINES_WITHOUT_PROGRESS {
        Plain::Stop
    } else if line.accepts_raw(category)
        || (line.class == LineClass::MfmaScale && category == Category::Valu as u8)
    {
        Plain::Place
    } else if matches!(line.text, TextClass::Skip | TextClass::DontKnow)
        && has_bit(STEPPED_OVER, category)
    {
        Plain::StepOver
    } else if has_bit(line.misses, category) && failures + 1 < MAX_FAILURES {
        Plain::Miss
    } else {
        Plain::Stop
    }
}

impl PlainWalk {
    /// Takes `action` at the cursor's `line`; `following` is the line after it.
    #[inline(always)]
    fn apply(
        mut self,
        action: Plain,
        line: &Line,
        insts: &mut [Inst],
        following: Cursor,
        span: WaveSpan,
    ) -> Self {
        match action {
            Plain::Place => {
                let category = insts.get(self.i).map_or(0, Inst::category);
                if !line.accepts_raw(category) {
                    adjust_mfma_scale(insts, self.i, span);
                }
                if let Some(inst) = insts.get_mut(self.i) {
                    inst.pc = self.cursor.pc;
                }
                self.i += 1;
                self.idle = 0;
                self.failures = 0;
            }
            Plain::StepOver => self.idle += 1,
            Plain::Miss => {
                self.idle += 1;
                self.failures += 1;
            }
            Plain::Stop => return self,
        }
        self.cursor = following;
        self
    }
}

/// The tight loop of the walk, from `walk` on while the lines are linked: what [`Plainly`] says,
/// for the records before `limit`. `walk.idle` is below [`MAX_LINES_WITHOUT_PROGRESS`] and
/// stays so.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn linked_run(
    taken: &[Taken],
    call: u32,
    links: &[Link],
    insts: &mut [Inst],
    limit: usize,
    walk: PlainWalk,
    span: WaveSpan,
) -> PlainWalk {
    let PlainWalk {
        mut i,
        cursor,
        mut idle,
        mut failures,
    } = walk;
    let Pc {
        mut address,
        code_object_id,
    } = cursor.pc;
    let mut id = cursor.id;
    let limit = limit.min(insts.len());
    // `idle` counts the lines stepped over since the last record placed: it restarts at the
    // first step after a record (`stepped_at`: the record index at the last step), so that a
    // record placed costs nothing for it.
    let entry = i;
    let mut stepped_at = i;
    while let Some(mut link) = links.get(id as usize) {
        // The common case: records placed at the lines they plainly match.
        while i < limit {
            let category = insts[i].category();
            if !has_bit(link.plainly.accepts, category) {
                // Off the common path, so that it costs the common records nothing.
                if link.plainly.other == Other::MfmaScale && category == Category::Valu as u8 {
                    adjust_mfma_scale(insts, i, span);
                } else {
                    break;
                }
            }
            insts[i].pc = Pc::new(address, code_object_id);
            address = address.wrapping_add(link.size);
            id = link.next;
            i += 1;
            // SAFETY: a line that places a record is linked, and a link is a line id of
            // `links` (see `Link::plainly`): the index is in bounds.
            link = unsafe { links.get_unchecked(id as usize) };
        }
        // A token-less line, or a taken branch to a known line.
        let Some(inst) = insts[..limit].get(i) else {
            break;
        };
        let category = inst.category();
        match link.plainly.other {
            Other::StepOver if has_bit(STEPPED_OVER, category) => {
                if i != stepped_at {
                    idle = 0;
                    stepped_at = i;
                }
                if idle + 1 >= MAX_LINES_WITHOUT_PROGRESS {
                    break;
                }
                idle += 1;
                address = address.wrapping_add(link.size);
                id = link.next;
            }
            Other::Branch if category == Category::Jump as u8 => {
                let Some(&target) = taken.get(id as usize).filter(|t| t.call == call) else {
                    break;
                };
                insts[i].pc = Pc::new(address, code_object_id);
                i += 1;
                address = target.address;
                id = target.id;
            }
            _ => break,
        }
    }
    if i != stepped_at {
        idle = 0;
    }
    if i != entry {
        failures = 0;
    }
    PlainWalk {
        i,
        cursor: Cursor {
            pc: Pc::new(address, code_object_id),
            id,
        },
        idle,
        failures,
    }
}

/// gfx9 `v_mfma_scale_*` (ERRATA part 2 G7): the scale load starts 4 cycles before the token
/// when the previous record has ended by then, and 4 more cycles are added when the next
/// record leaves room.
fn adjust_mfma_scale(insts: &mut [Inst], i: usize, span: WaveSpan) {
    let prev_end = i.checked_sub(1).map_or(span.begin, |p| end_of(&insts[p]));
    let next_start = insts.get(i + 1).map_or(span.end, |r| r.time);
    let inst = &mut insts[i];
    inst.duration = inst.duration.wrapping_add(4);
    if inst.time > prev_end {
        inst.time -= 4;
        if end_of(inst) < next_start {
            inst.duration = inst.duration.wrapping_add(4);
        }
    } else if end_of(inst) > next_start {
        inst.duration -= 4;
    }
}

fn end_of(inst: &Inst) -> i64 {
    inst.time.wrapping_add(i64::from(inst.duration))
}

fn advance(pc: Pc, size: u64) -> Pc {
    Pc::new(pc.address.wrapping_add(size), pc.code_object_id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa::IsaError;

    /// ISA answers from a list of `(address, size, text)`.
    struct Listing(Vec<(u64, u64, &'static str)>, usize);

    impl IsaProvider for Listing {
        fn disassemble(&mut self, pc: Pc, text: &mut Vec<u8>) -> Result<u64, IsaError> {
            self.1 += 1;
            let (_, size, t) = self
                .0
                .iter()
                .find(|l| l.0 == pc.address)
                .ok_or(IsaError::UnknownAddress)?;
            text.clear();
            text.extend_from_slice(t.as_bytes());
            Ok(*size)
        }
    }

    fn records(categories: &[Category]) -> Vec<Inst> {
        categories
            .iter()
            .map(|&c| Inst::new(c as u8, 0, 1, 0, Pc::NONE))
            .collect()
    }

    fn run(
        listing: &mut Listing,
        insts: &mut [Inst],
        rules: StitchRules,
    ) -> (usize, Vec<(usize, Pc)>) {
        let mut shared = SharedStitch::default();
        let mut excluded = Vec::new();
        let slots = [PcSlot {
            index: 0,
            pc: Some(Pc::new(0x100, 0)),
        }];
        let n = shared.stitch(
            listing,
            insts,
            &slots,
            &rules,
            WaveSpan::default(),
            &mut excluded,
        );
        (n, excluded)
    }

    fn pcs(insts: &[Inst]) -> Vec<u64> {
        insts.iter().map(|i| i.pc.address).collect()
    }

    const RDNA: StitchRules = StitchRules {
        gfx12: false,
        exclude_barrier_wait: false,
        rdna_rescue: true,
        gfx9: false,
    };

    #[test]
    fn follows_the_code_skipping_tokenless_lines() {
        use Category as C;
        let mut isa = Listing(
            vec![
                (0x100, 4, "s_load_b64 s[0:1], s[0:1], 0x0"),
                (0x104, 4, "s_delay_alu instid0(VALU_DEP_1)"),
                (0x108, 8, "v_add_f32 v0, v1, v2"),
                (0x110, 4, "s_waitcnt vmcnt(0)"),
                (0x114, 4, "s_cbranch_scc0 65534"),
                (0x118, 0, "s_endpgm"),
            ],
            0,
        );
        let mut insts = records(&[
            C::Smem,
            C::Valu,
            C::Immed,
            C::Jump,
            C::Immed,
            C::Next,
            C::Message,
        ]);
        let (n, _) = run(&mut isa, &mut insts, RDNA);
        assert_eq!(n, 7);
        // The taken branch (offset -2) goes back to 0x110 once, then falls through.
        assert_eq!(
            pcs(&insts),
            [0x100, 0x108, 0x110, 0x114, 0x110, 0x114, 0x118]
        );
    }

    #[test]
    fn waves_over_linked_lines_are_placed_as_the_first() {
        use Category as C;
        // The first wave links the lines; the next ones take them in the tight loop (token-less
        // lines stepped over, misses, a v_mfma_scale line).
        let cases = [
            (
                vec![
                    (0x100, 4, "s_load_b64 s[0:1], s[0:1], 0x0"),
                    (0x104, 4, "s_delay_alu instid0(VALU_DEP_1)"),
                    (0x108, 8, "v_add_f32 v0, v1, v2"),
                    (0x110, 4, "s_nop 0"),
                    (0x114, 4, "s_mov_b32 s0, 0"),
                    (0x118, 4, "v_add_f32 v0, v1, v2"),
                    (0x11c, 0, "s_endpgm"),
                ],
                vec![C::Smem, C::Valu, C::Valu, C::Message],
                RDNA,
            ),
            (
                vec![
                    (0x100, 4, "v_mfma_scale_f32_16x16x128_f8f6f4 v[0:3], v[4:11], v[12:19]"),
                    (0x104, 4, "v_add_f32 v0, v1, v2"),
                    (0x108, 4, "v_mfma_scale_f32_16x16x128_f8f6f4 v[0:3], v[4:11], v[12:19]"),
                    (0x10c, 4, "s_endpgm"),
                ],
                vec![C::Valu, C::Valu, C::Valu, C::Message],
                GFX9,
            ),
        ];
        for (lines, categories, rules) in cases {
            let slots = [PcSlot {
                index: 0,
                pc: Some(Pc::new(0x100, 0)),
            }];
            let mut shared = SharedStitch::default();
            let mut isa = Listing(lines, 0);
            let mut waves = (0..3).map(|k| {
                let mut insts = records(&categories);
                for (j, inst) in insts.iter_mut().enumerate() {
                    inst.time = 10 * j as i64 + k;
                }
                let span = WaveSpan { begin: 0, end: 100 };
                let n = shared.stitch(&mut isa, &mut insts, &slots, &rules, span, &mut Vec::new());
                (n, insts.iter().map(|i| (i.pc, i.time, i.duration)).collect::<Vec<_>>())
            });
            let first = waves.next().unwrap();
            assert_eq!(first.0, categories.len());
            for (k, wave) in waves.enumerate() {
                let shifted = first.1.iter().map(|&(pc, t, d)| (pc, t + k as i64 + 1, d));
                assert_eq!(wave.0, first.0);
                assert_eq!(wave.1, shifted.collect::<Vec<_>>());
            }
        }
    }

    #[test]
    fn a_loop_taken_again_follows_the_known_target() {
        use Category as C;
        // A three-line loop body taken three times, then the fall-through: from the second
        // time on, the tight loop takes the branch to the line it already knows.
        let lines = vec![
            (0x100, 4, "s_mov_b32 s0, 0"),
            (0x104, 4, "v_add_f32 v0, v1, v2"),
            (0x108, 4, "s_delay_alu instid0(VALU_DEP_1)"),
            (0x10c, 4, "v_add_f32 v0, v1, v2"),
            (0x110, 4, "s_cbranch_scc0 65532"),
            (0x114, 4, "s_endpgm"),
        ];
        let body = [C::Valu, C::Valu, C::Jump];
        let mut categories = vec![C::Salu];
        for _ in 0..3 {
            categories.extend(body);
        }
        categories.extend([C::Valu, C::Valu, C::Next, C::Message]);
        let mut expected = vec![0x100];
        for _ in 0..4 {
            expected.extend([0x104, 0x10c, 0x110]);
        }
        expected.push(0x114);
        let mut shared = SharedStitch::default();
        let mut isa = Listing(lines, 0);
        let slots = [PcSlot {
            index: 0,
            pc: Some(Pc::new(0x100, 0)),
        }];
        for _ in 0..2 {
            let mut insts = records(&categories);
            let span = WaveSpan::default();
            let n = shared.stitch(&mut isa, &mut insts, &slots, &RDNA, span, &mut Vec::new());
            assert_eq!(n, categories.len());
            assert_eq!(pcs(&insts), expected);
        }
        // Each line once, and the unknown address after s_endpgm once a wave.
        assert_eq!(isa.1, 8);
    }

    const GFX9: StitchRules = StitchRules {
        gfx12: false,
        exclude_barrier_wait: false,
        rdna_rescue: false,
        gfx9: true,
    };

    fn categories(insts: &[Inst]) -> Vec<u8> {
        insts.iter().map(Inst::category).collect()
    }

    #[test]
    fn gfx9_swaps_two_records_only_for_their_lines_very_classes() {
        use Category as C;
        let code = |memory: &'static str| {
            Listing(
                vec![
                    (0x100, 4, "s_mov_b32 s0, 0"),
                    (0x104, 4, memory),
                    (0x108, 4, "v_add_f32 v0, v1, v2"),
                ],
                0,
            )
        };
        // A VMEM record that overtook a VALU one is put back before it.
        let mut insts = records(&[C::Salu, C::Valu, C::Vmem]);
        run(
            &mut code("buffer_store_dword v1, off, s[0:3], 0"),
            &mut insts,
            GFX9,
        );
        let expected = [C::Salu as u8, C::Vmem as u8, C::Valu as u8];
        assert_eq!(categories(&insts), expected);
        assert_eq!(pcs(&insts), [0x100, 0x104, 0x108]);
        // A FLAT record matches a `global_*` line only plainly, never in the swap test.
        let mut insts = records(&[C::Salu, C::Valu, C::Flat]);
        run(
            &mut code("global_store_dword v[2:3], v1, off"),
            &mut insts,
            GFX9,
        );
        let expected = [C::Salu as u8, C::Valu as u8, C::Flat as u8];
        assert_eq!(categories(&insts), expected);
        assert_eq!(pcs(&insts), [0x100, 0x108, 0]);
    }

    #[test]
    fn gfx9_swap_takes_an_s_barrier_line_for_an_immed_line() {
        use Category as C;
        // An immediate that overtook a VALU record before the barrier's line (the reference's
        // output on a damaged stream): the two are put back in line order.
        let mut isa = Listing(
            vec![
                (0x100, 4, "v_add_f32 v0, v1, v2"),
                (0x104, 4, "v_add_f32 v0, v1, v2"),
                (0x108, 4, "s_barrier"),
                (0x10c, 4, "v_add_f32 v0, v1, v2"),
            ],
            0,
        );
        let mut insts = records(&[C::Valu, C::Immed, C::Valu, C::Valu]);
        run(&mut isa, &mut insts, GFX9);
        let expected = [C::Valu as u8, C::Valu as u8, C::Immed as u8, C::Valu as u8];
        assert_eq!(categories(&insts), expected);
        assert_eq!(pcs(&insts), [0x100, 0x104, 0x108, 0x10c]);
    }

    #[test]
    fn a_branch_line_met_by_another_category_stops_the_walk() {
        use Category as C;
        let mut isa = Listing(
            vec![
                (0x100, 4, "s_mov_b32 s0, 0"),
                (0x104, 4, "s_branch 3"),
                (0x108, 4, "v_nop"),
            ],
            0,
        );
        let mut insts = records(&[C::Salu, C::Valu, C::Valu]);
        let (n, _) = run(&mut isa, &mut insts, RDNA);
        assert_eq!(n, 1);
        assert_eq!(pcs(&insts), [0x100, 0, 0]);
    }

    #[test]
    fn immediates_are_absorbed_by_memory_lines_but_not_by_smem() {
        use Category as C;
        let lines = vec![
            (0x100, 4, "v_nop"),
            (0x104, 4, "s_prefetch_data s[0:1]"),
            (0x108, 4, "s_mov_b32 s0, 0"),
            (0x10c, 4, "global_store_b32 v0, v1, s[0:1]"),
        ];
        let mut insts = records(&[C::Valu, C::Immed]);
        let (n, _) = run(&mut Listing(lines, 0), &mut insts, RDNA);
        assert_eq!(n, 2);
        assert_eq!(pcs(&insts), [0x100, 0x10c]);
    }

    #[test]
    fn a_waitcnt_line_after_an_absorption_takes_the_next_record() {
        use Category as C;
        // The IMMED record is absorbed by the second VALU line; the s_waitcnt line then cancels
        // that absorption and takes the SALU record; the VMEM record goes on from there.
        let lines = vec![
            (0x100, 4, "v_nop"),
            (0x104, 4, "v_nop"),
            (0x108, 4, "s_waitcnt lgkmcnt(0)"),
            (0x10c, 4, "v_nop"),
            (0x110, 4, "s_mov_b32 s0, 0"),
            (0x114, 4, "global_load_b32 v0, v1, s[0:1]"),
        ];
        let mut insts = records(&[C::Valu, C::Immed, C::Salu, C::Vmem]);
        let (n, _) = run(&mut Listing(lines, 0), &mut insts, RDNA);
        assert_eq!(n, 4);
        assert_eq!(pcs(&insts), [0x100, 0x104, 0x108, 0x114]);
    }

    #[test]
    fn unmatched_load_or_waitcnt_lines_stop_the_walk() {
        use Category as C;
        let lines = vec![
            (0x100, 4, "v_nop"),
            (0x104, 4, "global_load_b32 v0, v1, s[0:1]"),
            (0x108, 4, "v_nop"),
        ];
        let mut insts = records(&[C::Valu, C::Valu]);
        assert_eq!(run(&mut Listing(lines, 0), &mut insts, RDNA).0, 1);
        let lines = vec![
            (0x100, 4, "v_nop"),
            (0x104, 4, "scratch_load_b32 v0, off, s0"),
            (0x108, 4, "v_nop"),
        ];
        let mut insts = records(&[C::Valu, C::Valu]);
        assert_eq!(
            run(&mut Listing(lines, 0), &mut insts, RDNA).0,
            2,
            "scratch_ loads are only skipped"
        );
    }

    const BARRIER_RULES: StitchRules = StitchRules {
        gfx12: true,
        exclude_barrier_wait: true,
        rdna_rescue: true,
        gfx9: false,
    };

    /// One wave stitched from 0x100 with a cache shared with other waves.
    fn run_shared(
        shared: &mut SharedStitch,
        listing: &mut Listing,
        insts: &mut [Inst],
    ) -> Vec<(usize, Pc)> {
        let mut excluded = Vec::new();
        let slots = [PcSlot {
            index: 0,
            pc: Some(Pc::new(0x100, 0)),
        }];
        shared.stitch(
            listing,
            insts,
            &slots,
            &BARRIER_RULES,
            WaveSpan::default(),
            &mut excluded,
        );
        excluded
    }

    #[test]
    fn gfx12_ds_bvh_lines_are_lds_lines_a_bvh_record_does_not_take() {
        use Category as C;
        let gfx12 = StitchRules {
            gfx12: true,
            ..RDNA
        };
        let lines = || {
            vec![
                (0x100, 4, "v_nop"),
                (0x104, 8, "ds_bvh_stack_push4_pop1_rtn_b32 v32, v0, v48, v[64:67]"),
                (0x10c, 8, "ds_add_u32 v0, v48"),
                (0x114, 8, "ds_load_b32 v32, v0"),
                (0x11c, 4, "v_nop"),
            ]
        };
        // The BVH record meets LDS lines it does not match, then the unmatched `_load_` line
        // ends the walk: it and every later record keep no PC.
        let mut insts = records(&[C::Valu, C::Bvh, C::Lds, C::Valu]);
        let (n, _) = run(&mut Listing(lines(), 0), &mut insts, gfx12);
        assert_eq!(n, 1);
        assert_eq!(pcs(&insts), [0x100, 0, 0, 0]);
        // An LDS record takes the `ds_bvh` line.
        let mut insts = records(&[C::Valu, C::Lds, C::Lds, C::Lds, C::Valu]);
        let (n, _) = run(&mut Listing(lines(), 0), &mut insts, gfx12);
        assert_eq!(n, 5);
        assert_eq!(pcs(&insts), [0x100, 0x104, 0x10c, 0x114, 0x11c]);
    }

    #[test]
    fn a_record_other_than_immed_at_a_barrier_wait_means_it_had_no_token() {
        use Category as C;
        let lines = vec![
            (0x100, 4, "s_barrier_signal -1"),
            (0x104, 4, "s_barrier_wait 0xffff"),
            (0x108, 4, "s_barrier_wait 0xffff"),
            (0x10c, 4, "v_nop"),
        ];
        let mut insts = records(&[C::Message, C::Valu]);
        let (n, excluded) = run(&mut Listing(lines, 0), &mut insts, BARRIER_RULES);
        assert_eq!(n, 2);
        assert_eq!(pcs(&insts), [0x100, 0x10c]);
        // Both lines are token-less; the first is the record index's.
        assert_eq!(excluded, [(1, Pc::new(0x104, 0))]);
    }

    #[test]
    fn an_immed_record_the_following_lines_do_not_take_is_the_barriers_own() {
        use Category as C;
        // The look-ahead tests the IMMED record against the SMEM line: no match.
        let lines = vec![
            (0x100, 4, "s_barrier_signal -1"),
            (0x104, 4, "s_barrier_wait 0xffff"),
            (0x108, 4, "s_load_b32 s0, s[0:1], 0x0"),
            // The look-ahead moves past a line before testing it: the last line of the code
            // is never tested.
            (0x10c, 4, "s_endpgm"),
        ];
        let mut insts = records(&[C::Message, C::Immed, C::Smem]);
        let (_, excluded) = run(&mut Listing(lines, 0), &mut insts, BARRIER_RULES);
        assert_eq!(pcs(&insts), [0x100, 0x104, 0x108]);
        assert!(excluded.is_empty());
    }

    #[test]
    fn the_barrier_look_ahead_moves_two_records_per_line() {
        use Category as C;
        let lines = vec![
            (0x100, 4, "s_barrier_signal -1"),
            (0x104, 4, "s_barrier_wait 0xffff"),
            (0x108, 4, "s_nop 0"),
            (0x10c, 4, "s_nop 0"),
            (0x110, 4, "s_add_u32 s0, s0, 1"),
        ];
        // Records 1 and 3 meet the two s_nop lines (IMMED: they match); record 2 (SALU) is
        // never tested. Token-less.
        let mut insts = records(&[C::Message, C::Immed, C::Salu, C::Immed]);
        let (_, excluded) = run(&mut Listing(lines.clone(), 0), &mut insts, BARRIER_RULES);
        assert_eq!(excluded, [(1, Pc::new(0x104, 0))]);
        // A token-less line moves on one record: the s_delay_alu line puts record 2 (SALU)
        // against the second s_nop, which fails: the IMMED record is the barrier's.
        let lines = vec![
            (0x100, 4, "s_barrier_signal -1"),
            (0x104, 4, "s_barrier_wait 0xffff"),
            (0x108, 4, "s_delay_alu instid0(VALU_DEP_1)"),
            (0x10c, 4, "s_nop 0"),
            (0x110, 4, "s_add_u32 s0, s0, 1"),
        ];
        let mut insts = records(&[C::Message, C::Immed, C::Salu, C::Immed]);
        let (_, excluded) = run(&mut Listing(lines, 0), &mut insts, BARRIER_RULES);
        assert!(excluded.is_empty());
        assert_eq!(insts[1].pc.address, 0x104);
    }

    #[test]
    fn barrier_wait_marks_reach_the_later_waves_of_the_call() {
        use Category as C;
        let lines = vec![
            (0x100, 4, "s_barrier_signal -1"),
            (0x104, 4, "s_barrier_wait 0xffff"),
            (0x108, 4, "s_add_u32 s0, s0, 1"),
            (0x10c, 4, "s_nop 0"),
            (0x110, 4, "s_endpgm"),
        ];
        // A record placed at the line (the look-ahead's SALU line does not take the IMMED):
        // later waves no longer take it for token-less, even for a record other than IMMED,
        // which fails there and goes on.
        let mut shared = SharedStitch::default();
        let mut listing = Listing(lines.clone(), 0);
        let mut first = records(&[C::Message, C::Immed, C::Salu]);
        assert!(run_shared(&mut shared, &mut listing, &mut first).is_empty());
        assert_eq!(pcs(&first), [0x100, 0x104, 0x108]);
        let mut second = records(&[C::Message, C::Salu]);
        assert!(run_shared(&mut shared, &mut listing, &mut second).is_empty());
        assert_eq!(pcs(&second), [0x100, 0x108]);
        // A line taken for token-less matches nothing for later waves: their IMMED record,
        // which the look-ahead gives to the barrier, is passed on to the s_nop.
        let mut shared = SharedStitch::default();
        let mut first = records(&[C::Message, C::Salu]);
        assert_eq!(
            run_shared(&mut shared, &mut listing, &mut first),
            [(1, Pc::new(0x104, 0))]
        );
        assert_eq!(pcs(&first), [0x100, 0x108]);
        let mut second = records(&[C::Message, C::Immed]);
        assert!(run_shared(&mut shared, &mut listing, &mut second).is_empty());
        assert_eq!(pcs(&second), [0x100, 0x10c]);
        // A new wave of another cache (another parse call) starts without marks.
        let mut third = records(&[C::Message, C::Immed]);
        let mut fresh = SharedStitch::default();
        assert!(run_shared(&mut fresh, &mut listing, &mut third).is_empty());
        assert_eq!(pcs(&third), [0x100, 0x104]);
    }

    #[test]
    fn zero_sized_answers_are_not_cached() {
        use Category as C;
        let lines = vec![(0x100, 0, "s_endpgm")];
        let mut isa = Listing(lines, 0);
        let mut shared = SharedStitch::default();
        let slots = [PcSlot {
            index: 0,
            pc: Some(Pc::new(0x100, 0)),
        }];
        for _ in 0..2 {
            let mut insts = records(&[C::Message]);
            shared.stitch(
                &mut isa,
                &mut insts,
                &slots,
                &RDNA,
                WaveSpan::default(),
                &mut Vec::new(),
            );
        }
        assert_eq!(isa.1, 2, "each wave asks for the size-0 line again");
    }

    #[test]
    fn every_call_asks_again_and_reads_a_changed_answer() {
        use Category as C;
        let slots = [PcSlot {
            index: 0,
            pc: Some(Pc::new(0x100, 0)),
        }];
        let stitch = |shared: &mut SharedStitch, isa: &mut Listing| {
            let mut insts = records(&[C::Valu, C::Valu, C::Message]);
            let args = (&slots[..], &RDNA, WaveSpan::default());
            let n = shared.stitch(isa, &mut insts, args.0, args.1, args.2, &mut Vec::new());
            (n, pcs(&insts))
        };
        let listing = |first: &'static str| {
            let lines = vec![
                (0x100, 4, first),
                (0x104, 4, "v_add_f32 v3, v4, v5"),
                (0x108, 4, "v_add_f32 v6, v7, v8"),
                (0x10c, 4, "s_endpgm"),
            ];
            Listing(lines, 0)
        };

        let mut isa = listing("v_add_f32 v0, v1, v2");
        let mut shared = SharedStitch::for_new_call();
        let before = stitch(&mut shared, &mut isa);
        shared.recycle();

        // The next call on the thread gets answers that changed: it asks again and reads them,
        // as a cache that never saw the old ones does.
        let mut changed = listing("s_delay_alu instid0(VALU_DEP_1)");
        let mut shared = SharedStitch::for_new_call();
        let after = stitch(&mut shared, &mut changed);
        shared.recycle();
        let mut fresh = listing("s_delay_alu instid0(VALU_DEP_1)");
        assert_eq!(after, stitch(&mut SharedStitch::default(), &mut fresh));
        assert_eq!(changed.1, fresh.1, "as many questions");
        assert_ne!(after, before);
    }

    #[test]
    fn a_changed_size_moves_the_following_line() {
        use Category as C;
        let slots = [PcSlot {
            index: 0,
            pc: Some(Pc::new(0x100, 0)),
        }];
        let stitch = |shared: &mut SharedStitch, isa: &mut Listing| {
            let mut insts = records(&[C::Valu, C::Salu, C::Message]);
            let args = (&slots[..], &RDNA, WaveSpan::default());
            let n = shared.stitch(isa, &mut insts, args.0, args.1, args.2, &mut Vec::new());
            (n, pcs(&insts))
        };
        let listing = |size: u64| {
            let lines = vec![
                (0x100, size, "v_add_f32 v0, v1, v2"),
                (0x104, 4, "v_add_f32 v3, v4, v5"),
                (0x108, 4, "s_mov_b32 s0, 0"),
                (0x10c, 4, "s_endpgm"),
            ];
            Listing(lines, 0)
        };
        let mut shared = SharedStitch::for_new_call();
        stitch(&mut shared, &mut listing(4));
        shared.recycle();
        // The line that followed 0x100 is no longer the one after it.
        let mut changed = listing(8);
        let after = stitch(&mut shared, &mut changed);
        let mut fresh = listing(8);
        assert_eq!(after, stitch(&mut SharedStitch::default(), &mut fresh));
        assert_eq!(after, (3, vec![0x100, 0x108, 0x10c]));
        assert_eq!(changed.1, fresh.1, "as many questions");
    }

    #[test]
    fn text_classes_are_listed_in_numeric_order() {
        for (k, class) in TEXT_CLASSES.iter().enumerate() {
            assert_eq!(*class as usize, k);
        }
    }

    #[test]
    fn branch_offsets_parse_like_stoi() {
        assert_eq!(parse_branch_offset(b"s_cbranch_execz 46"), Some(46));
        assert_eq!(parse_branch_offset(b"s_branch 65534"), Some(-2));
        assert_eq!(parse_branch_offset(b"s_branch 12abc"), Some(12));
        assert_eq!(parse_branch_offset(b"s_branch label"), None);
        assert_eq!(parse_branch_offset(b"s_branch 99999999999999999999"), None);
    }
}
