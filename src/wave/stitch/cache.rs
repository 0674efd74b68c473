//! The per-thread line cache: every PC's line as the ISA answered it, asked for again once in
//! each parse call, with the links between consecutive lines the fast paths follow.

use std::collections::hash_map::Entry;
use std::collections::HashMap;

use crate::isa::IsaProvider;
use crate::records::Pc;
use crate::spare::{Recycle, Spare};

use super::fast::Shortcut;
use super::line::{Line, TextFacts};
use super::StitchRules;

/// What the run over linked lines ([`super::fast`]) reads of a cached line, by line id, apart
/// from [`Line`]: a record that matches a linked line costs one 16-byte read.
#[derive(Clone, Copy, Debug)]
pub(super) struct Link {
    /// [`Line::size`].
    pub(super) size: u64,
    /// Cache id of the line after this one once the look-ahead query has found it cached
    /// ([`NO_LINE`] until then): the walk follows it without asking or hashing again.
    pub(super) next: u32,
    /// [`Line::shortcut`] once linked, none before: while it is other than none, `next` is the
    /// id of a line in the cache (the run follows it without a bounds check).
    pub(super) shortcut: Shortcut,
}

impl Link {
    fn unlinked(line: &Line) -> Self {
        Link {
            size: line.size,
            next: NO_LINE,
            shortcut: Shortcut::NONE,
        }
    }
}

/// Id of a line that is not in the cache.
pub(super) const NO_LINE: u32 = u32::MAX;

/// A PC on the walk, with the cache id of its line when known ([`NO_LINE`] otherwise).
#[derive(Clone, Copy, Debug)]
pub(super) struct Cursor {
    pub(super) pc: Pc,
    pub(super) id: u32,
}

impl Cursor {
    pub(super) fn at(pc: Pc) -> Self {
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
pub(super) struct Taken {
    /// The call (a call's own stamp: nothing to reset when the branch line is renewed).
    pub(super) call: u32,
    /// The target's line id and address.
    pub(super) id: u32,
    pub(super) address: u64,
}

/// What the thread's parse calls asked and were answered for one PC, by line id.
#[derive(Clone, Debug)]
struct Known {
    pub(super) pc: Pc,
    /// The call in which the line is this call's (asked for in it, memory size other than 0).
    pub(super) call: u32,
    pub(super) memory_size: u64,
    /// The text of the last answer for the PC (in `SharedStitch::texts`), and what it says.
    pub(super) text: std::ops::Range<usize>,
    pub(super) facts: TextFacts,
    /// What the walks of this call did at the line if it is an `s_barrier_wait` line
    /// ([`barrier_mark`] bits; valid in call `barrier_call` only).
    pub(super) barrier: u8,
    barrier_call: u32,
}

/// What the walks of a parse call did at an `s_barrier_wait` line (the reference keeps both on
/// its shared line, so they reach every later wave of the call, and the next SE buffer of it).
pub(super) mod barrier_mark {
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
    pub(super) lines: Vec<Line>,
    /// By line id.
    pub(super) links: Vec<Link>,
    /// By line id.
    known: Vec<Known>,
    /// By the id of a branch line, where the walk took the branch: only as long as the
    /// highest such id.
    pub(super) taken: Vec<Taken>,
    /// Line ids by PC.
    pub(super) ids: HashMap<Pc, u32, rustc_hash::FxBuildHasher>,
    texts: Vec<u8>,
    /// Numbers the thread's calls, for `Known::call`.
    pub(super) call: u32,
    /// Where a provider writes its answer (the client's callback writes into it as the buffer
    /// offered to it, [`crate::isa::callback::CallbackIsa`]); emptied at each call's end.
    pub(super) text: Vec<u8>,
    /// The line of the last answer [`SharedStitch::look_up`] did not cache.
    uncached: Option<Line>,
    /// The id of the line at the last PC a wave's first record was pinned to, if cached: a
    /// kernel's waves start at one PC ([`SharedStitch::entry_line`]).
    entry: (Pc, u32),
    /// The rules the lines' classes were derived under.
    pub(super) rules: StitchRules,
    /// Token-less `s_barrier_wait` lines found by the last walk: `(record index, pc)`.
    pub excluded: Vec<(usize, Pc)>,
}

/// At most this many lines' room is made ahead of a thread's first walk ([`SharedStitch::make_room`]).
const ROOM_AHEAD: usize = 2048;
/// Text bytes made room for per line: disassembly lines are about 30 bytes long.
const TEXT_PER_LINE: usize = 32;

/// A thread's cache buffers larger than this are not kept for its next parse call.
const KEPT_LINES: usize = 1 << 16;
const KEPT_TEXT: usize = 1 << 22;
/// An answer buffer grown past this for an odd answer is not kept.
const KEPT_ANSWER: usize = 4096;

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
        if self.text.capacity() > KEPT_ANSWER {
            self.text = Vec::new();
        }
        self.text.clear();
        self.excluded.clear();
        true
    }
}

impl SharedStitch {
    /// A cache for a new parse call, in the buffers a previous call on this thread left (no
    /// answer is used before it is asked for again: ISA answers may change between calls).
    #[cold]
    #[inline(never)]
    pub fn for_new_call() -> Spare<Self> {
        Spare::take(&SPARE_STITCH)
    }

    /// Before a thread's first walk, of a wave of `records` records: room for twice as many
    /// lines (at most [`ROOM_AHEAD`]), so that the first calls of a thread do not grow the
    /// cache's five buffers from nothing by doubling, copying them each time. Straight code has
    /// a line per record (and token-less lines between). A wave of more than twice
    /// [`ROOM_AHEAD`] records loops, and says little about its lines: the buffers then grow as
    /// lines come (room made ahead would also stand where its growing record buffers could
    /// have grown in place).
    #[inline]
    pub(super) fn make_room(&mut self, records: usize) {
        if self.lines.capacity() == 0 && records <= 2 * ROOM_AHEAD {
            self.grow((2 * records).min(ROOM_AHEAD));
        }
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self, lines: usize) {
        self.lines.reserve(lines);
        self.links.reserve(lines);
        self.known.reserve(lines);
        self.ids.reserve(lines);
        self.texts.reserve(lines * TEXT_PER_LINE);
    }

    /// [`SharedStitch::line_at`] `pc` for a wave's first record: the line of the last such
    /// PC is found again without a search once it is this call's.
    #[inline]
    pub(super) fn entry_line<I: IsaProvider + ?Sized>(
        &mut self,
        isa: &mut I,
        pc: Pc,
    ) -> Option<(Line, u32)> {
        let (entry, id) = self.entry;
        let this_call = |k: &Known| k.pc == pc && k.call == self.call;
        if entry == pc && self.known.get(id as usize).is_some_and(this_call) {
            return self.lines.get(id as usize).map(|line| (*line, id));
        }
        let found = self.line_at(isa, Cursor::at(pc))?;
        self.entry = (pc, found.1);
        Some(found)
    }

    /// The line at `cursor` and its cache id ([`NO_LINE`]: answered but not cached).
    #[inline]
    pub(super) fn line_at<I: IsaProvider + ?Sized>(
        &mut self,
        isa: &mut I,
        cursor: Cursor,
    ) -> Option<(Line, u32)> {
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
    fn look_up<I: IsaProvider + ?Sized>(&mut self, isa: &mut I, pc: Pc) -> Option<u32> {
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
    #[inline(always)]
    fn renew<I: IsaProvider + ?Sized>(&mut self, isa: &mut I, id: u32) -> Option<u32> {
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
            link.shortcut = Shortcut::NONE;
            return Some(id);
        }
        renew_changed(
            known,
            line,
            link,
            &mut self.texts,
            &self.rules,
            memory_size,
            text,
        );
        Some(self.this_call(id))
    }

    /// Makes line `id` this call's unless its memory size is 0 (the reference asks again for
    /// those: the line is `uncached`); returns its id for this call.
    fn this_call(&mut self, id: u32) -> u32 {
        match (self.known.get_mut(id as usize), self.lines.get(id as usize)) {
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

    /// The cursor at `pc`, the line after line `id`, with its line id when that line was asked
    /// for in this call already: the two are linked then (as the look-ahead query links them,
    /// without a query, which would find the line in the cache anyway). Else the walk finds it
    /// by PC, asking for it where the reference asks.
    pub(super) fn following_if_known(&mut self, id: u32, pc: Pc) -> Cursor {
        let linked = match self.links.get(id as usize) {
            Some(link) if link.next != NO_LINE => link.next,
            Some(_) => match self.asked_this_call(pc) {
                Some(next) => {
                    if let Some(line) = self.lines.get(id as usize) {
                        self.link(id, next, line.shortcut);
                    }
                    next
                }
                None => return Cursor::at(pc),
            },
            None => return Cursor::at(pc),
        };
        Cursor { pc, id: linked }
    }

    /// The line after `line` (at `cursor`), asked for once as the reference's look-ahead does.
    #[inline]
    pub(super) fn following<I: IsaProvider + ?Sized>(
        &mut self,
        isa: &mut I,
        cursor: Cursor,
        line: &Line,
    ) -> Cursor {
        let pc = advance(cursor.pc, line.size);
        let id = match self.links.get(cursor.id as usize) {
            Some(link) if link.next != NO_LINE => link.next,
            _ => self.link_following(isa, cursor.id, pc, line),
        };
        Cursor { pc, id }
    }

    /// The id of the line at `pc`, which follows `line` (line `id`) and is not linked to it
    /// yet; links them.
    #[inline(never)]
    pub(super) fn link_following<I: IsaProvider + ?Sized>(
        &mut self,
        isa: &mut I,
        id: u32,
        pc: Pc,
        line: &Line,
    ) -> u32 {
        if let Some(next) = self.link_hinted(isa, id, line, pc) {
            return next;
        }
        let next = self.look_up(isa, pc).unwrap_or(NO_LINE);
        self.link(id, next, line.shortcut);
        next
    }

    /// [`SharedStitch::link_following`] where the line at `pc` is `line`'s hint, the line that
    /// followed it in an earlier call: renewed without a search by PC. `None` where the hint is
    /// not at `pc` (nothing is asked then).
    #[inline(always)]
    pub(super) fn link_hinted<I: IsaProvider + ?Sized>(
        &mut self,
        isa: &mut I,
        id: u32,
        line: &Line,
        pc: Pc,
    ) -> Option<u32> {
        if self
            .known
            .get(line.hint as usize)
            .is_none_or(|known| known.pc != pc)
        {
            return None;
        }
        let next = self.renew(isa, line.hint).unwrap_or(NO_LINE);
        self.link(id, next, line.shortcut);
        Some(next)
    }

    /// The id of the line at `pc` if it was asked for in this call: found without a query.
    #[inline]
    fn asked_this_call(&self, pc: Pc) -> Option<u32> {
        let &id = self.ids.get(&pc)?;
        let known = self.known.get(id as usize)?;
        (known.call == self.call).then_some(id)
    }

    /// Links line `id` (whose [`Line::shortcut`] is `shortcut`) to line `next`, which follows
    /// it in this call; a line not cached ([`NO_LINE`]: asked for again each time) is linked to
    /// nothing.
    #[inline]
    fn link(&mut self, id: u32, next: u32, shortcut: Shortcut) {
        if next == NO_LINE {
            return;
        }
        if let Some(link) = self.links.get_mut(id as usize) {
            link.next = next;
            link.shortcut = shortcut;
        }
    }

    /// The cursor at `target`, where branch line `id` goes: with the target's line id if it was
    /// asked for in this call (no query), which the line keeps for the run over linked lines.
    pub(super) fn branch_cursor(&mut self, id: u32, target: Pc) -> Cursor {
        let Some(taken) = self.asked_this_call(target) else {
            return Cursor::at(target);
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
    pub(super) fn barrier_marks(&self, id: u32) -> u8 {
        self.known
            .get(id as usize)
            .filter(|k| k.barrier_call == self.call)
            .map_or(0, |k| k.barrier)
    }

    /// Sets [`barrier_mark`] bits of line `id` for the rest of this call (a line not cached
    /// keeps none: it is asked for again).
    pub(super) fn mark_barrier(&mut self, id: u32, mark: u8) {
        if let Some(known) = self.known.get_mut(id as usize) {
            if known.barrier_call != self.call {
                known.barrier_call = self.call;
                known.barrier = 0;
            }
            known.barrier |= mark;
        }
    }
}

pub(super) fn advance(pc: Pc, size: u64) -> Pc {
    Pc::new(pc.address.wrapping_add(size), pc.code_object_id)
}
