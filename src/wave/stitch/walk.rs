//! The reference walk (SQTT_FORMAT §3.6): every rule, record by record.

use crate::isa::classify::TextClass;
use crate::isa::IsaProvider;
use crate::records::{Category, Inst, Pc};

use super::cache::{advance, barrier_mark, Cursor, SharedStitch, NO_LINE};
use super::fast::{full_walk_flags, Position};
use super::line::{absorbs_immediate, category_of, flag, same_class, Line, LineClass};
use super::{StitchRules, WaveSpan, MAX_FAILURES, MAX_LINES_WITHOUT_PROGRESS};
use crate::wave::PcSlot;

impl SharedStitch {
    /// Whether an IMMED record `start` met at an `s_barrier_wait` line is not the barrier's
    /// (the line produced no token): the reference's look-ahead, quirks included. From the
    /// line after the barrier (`first`), line by line: a token-less line moves on one record,
    /// any other line is tested against the record at hand (a plain match, a JUMP on a branch
    /// line, or an IMMED on a line that absorbs it) and moves on **two** records. It stops at
    /// the first line that fails the test (the answer: the record is the barrier's), at the
    /// end of the records or of the code, or, at a record other than IMMED met at a line other
    /// than VALU, when an earlier such pair had another line class.
    fn barrier_lookahead<I: IsaProvider + ?Sized>(
        &mut self,
        isa: &mut I,
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

    /// [`StitchRules::swap_overtaken_records`]: records `i` and `i + 1` arrived in swapped order if `i + 1` is of this
    /// line's very class and `i` of the following line's (no cross-class match such as FLAT for a
    /// `global_*` line: the reference compares the category numbers; docs/timing/gfx9.md S6).
    fn matches_swapped<I: IsaProvider + ?Sized>(
        &mut self,
        isa: &mut I,
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

    /// Gives the records of one wave their PCs; returns how many got one. Token-less
    /// `s_barrier_wait` lines are reported in `excluded`, as `(record index, pc)` in walk order,
    /// the first line of a record index only.
    pub fn stitch<I: IsaProvider + ?Sized>(
        &mut self,
        isa: &mut I,
        insts: &mut [Inst],
        slots: &[PcSlot],
        rules: &StitchRules,
        span: WaveSpan,
        excluded: &mut Vec<(usize, Pc)>,
    ) -> usize {
        self.walk::<_, true>(isa, insts, slots, rules, span, excluded)
    }

    /// [`SharedStitch::stitch`] by the reference walk alone, without its fast paths.
    #[cfg(test)]
    pub(super) fn stitch_by_reference<I: IsaProvider + ?Sized>(
        &mut self,
        isa: &mut I,
        insts: &mut [Inst],
        slots: &[PcSlot],
        rules: &StitchRules,
        span: WaveSpan,
        excluded: &mut Vec<(usize, Pc)>,
    ) -> usize {
        self.walk::<_, false>(isa, insts, slots, rules, span, excluded)
    }

    /// The walk, record by record; with `FAST_PATHS`, step 0 takes the common steps.
    #[inline(always)]
    fn walk<I: IsaProvider + ?Sized, const FAST_PATHS: bool>(
        &mut self,
        isa: &mut I,
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
                    link.shortcut = line.shortcut;
                }
            }
        }
        let n = insts.len();
        self.make_room(n);
        let mut i = 0usize;
        let mut slot = 0usize;
        let mut next: Option<Cursor> = None;
        let mut failures = 0u32;
        let mut idle_lines = 0u32;
        let mut absorbed = 0u32;
        let mut stitched = 0usize;
        // Lines that need the full rules (`s_barrier_wait`, step 7).
        let full_walk_flags = full_walk_flags(rules);
        'walk: while i < n {
            // 0. The common case, kept tight: records that plainly match their line.
            if let (true, Some(cursor)) = (FAST_PATHS, next) {
                let limit = slots.get(slot).map_or(n, |s| s.index.min(n));
                let start = Position {
                    i,
                    cursor,
                    idle: idle_lines,
                    failures,
                    absorbed,
                };
                let walk = self.take_common_steps(isa, insts, limit, start, full_walk_flags, span);
                stitched += walk.i - i;
                i = walk.i;
                if i == n {
                    break;
                }
                idle_lines = walk.idle;
                failures = walk.failures;
                absorbed = walk.absorbed;
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
                let line = match s.pc {
                    Some(pc) if FAST_PATHS && i == 0 => self.entry_line(isa, pc),
                    Some(pc) => self.line_at(isa, Cursor::at(pc)),
                    None => None,
                };
                match s.pc.zip(line) {
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
            if let Some((mut pc, (mut line, mut id))) = pinned {
                let mut steps = 0;
                while line.text == TextClass::Skip {
                    pc = advance(pc, line.size);
                    steps += 1;
                    match self.line_at(isa, Cursor::at(pc)) {
                        Some(found) if steps < MAX_LINES_WITHOUT_PROGRESS => (line, id) = found,
                        _ => break 'walk,
                    }
                }
                insts[i].pc = pc;
                stitched += 1;
                if line.class == LineClass::Barrier && i + 1 < n {
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
                    // The line after it known, the fast paths take the next record at once.
                    Some(self.following_if_known(id, advance(pc, line.size)))
                };
                i += 1;
                failures = 0;
                idle_lines = 0;
                continue;
            }
            // 4. A first record whose PC the trace does not pin may be looked for at the null
            // PC; without a line there the walk ends.
            if rules.first_record_at_null_pc && i == 0 && next.is_none() {
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
            // 7. An s_barrier_wait line may have produced no token.
            let mut tokenless_line = false;
            if rules.barrier_waits_matter() && line.has(flag::BARRIER_WAIT) {
                let marks = self.barrier_marks(id);
                tokenless_line = marks & barrier_mark::TOKENLESS != 0;
                if rules.find_tokenless_barrier_waits
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
            } else if class == LineClass::Barrier {
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
            } else if rules.swap_overtaken_records
                && self.matches_swapped(isa, insts, i, &line, following)
            {
                insts.swap(i, i + 1);
                failures += 1;
                continue;
            } else if rules.absorb_immediates
                && category == Category::Immed
                && absorbs_immediate(class)
            {
                absorbed += 1;
                true
            } else if rules.absorb_immediates && line.has(flag::WAITCNT) && absorbed > 0 {
                absorbed -= 1;
                true
            } else if line.has(flag::WAITCNT | flag::LOAD) && !line.has(flag::SCRATCH) {
                break;
            } else {
                false
            };
            // 9. Advance.
            if matched {
                // Kept only where step 7 reads it (the fast paths place records at these lines
                // without it elsewhere).
                if rules.barrier_waits_matter() && line.has(flag::BARRIER_WAIT) {
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

/// [`StitchRules::mfma_scale_loads_early`] at a `v_mfma_scale_*` line (ERRATA part 2 G7): the scale load starts 4 cycles before the token
/// when the previous record has ended by then, and 4 more cycles are added when the next
/// record leaves room.
pub(super) fn adjust_mfma_scale(insts: &mut [Inst], i: usize, span: WaveSpan) {
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
