//! The fast paths: the walk's common steps (steps 5, 6, 8 and 9 of [`SharedStitch::stitch`]
//! where only a plain match, a token-less line, a plain mismatch, an IMMED absorption or its
//! cancellation is met), taken without the full rules. [`SharedStitch::take_common_steps`] asks
//! for each line as the reference walk does and links it to the line after; [`follow_links`]
//! runs over linked lines without asking. Both hand back to the reference walk wherever another
//! rule could apply.

use crate::isa::classify::TextClass;
use crate::isa::IsaProvider;
use crate::records::{Category, Inst, Pc};

use super::cache::{advance, Cursor, Link, SharedStitch, Taken, NO_LINE};
use super::line::{absorbed_bit, flag, has_bit, Line, LineClass, WALKED};
use super::walk::adjust_mfma_scale;
use super::{StitchRules, WaveSpan, MAX_FAILURES, MAX_LINES_WITHOUT_PROGRESS};

/// What [`follow_links`] does at a line (steps 6, 8 and 9 of [`SharedStitch::stitch`] in the
/// cases that need neither a query nor the full rules), decided once per line. Nothing for a
/// line whose flags the rules look at ([`full_walk_flags`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct Shortcut {
    /// Categories of the records placed at the line.
    places: u16,
    /// What a record of another category does.
    otherwise: Otherwise,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Otherwise {
    /// The reference walk takes it.
    FullWalk,
    /// A `v_mfma_scale_*` line: a VALU record is placed, with its adjustment.
    PlaceMfmaScale,
    /// A branch line with a target: a JUMP record is placed and the walk goes on at the
    /// target once [`SharedStitch::taken`] knows its line in this call.
    TakeBranch,
    /// A token-less line: stepped over.
    StepOver,
    /// A line of plain mismatches ([`Line::misses`] is every category it does not place but
    /// CONTEXT): the record waits for a later line.
    Miss,
    /// A line that absorbs an IMMED record ([`StitchRules::absorb_immediates`]); every other
    /// category it does not place is a plain mismatch.
    AbsorbOrMiss,
    /// A line that absorbs an IMMED record; the reference walk takes any other.
    Absorb,
    /// An `s_waitcnt` line under [`StitchRules::absorb_immediates`]: a record it does not place
    /// cancels an absorption if one is open, else the reference walk takes it.
    Cancel,
}

impl Shortcut {
    pub(super) const NONE: Shortcut = Shortcut {
        places: 0,
        otherwise: Otherwise::FullWalk,
    };

    /// What [`follow_links`] may do at `line` under `rules`; `absorbs`: whether the line
    /// absorbs an IMMED record ([`super::line::absorbs_here`]).
    pub(super) fn of(line: &Line, rules: &StitchRules, absorbs: bool) -> Self {
        if line.flags & full_walk_flags(rules) != 0 {
            return Shortcut::NONE;
        }
        // The mismatches are every category not placed but CONTEXT (and IMMED where absorbed),
        // or none.
        debug_assert!(
            line.misses == 0 || line.misses == WALKED & !line.accepts & !absorbed_bit(absorbs),
            "{line:?}"
        );
        // Lines with mismatches are of a text class other than branch and token-less.
        let otherwise = match line.class {
            _ if line.misses != 0 && absorbs => Otherwise::AbsorbOrMiss,
            _ if line.misses != 0 => Otherwise::Miss,
            LineClass::MfmaScale => Otherwise::PlaceMfmaScale,
            LineClass::Text(TextClass::Branch) if line.branch_offset.is_some() => {
                Otherwise::TakeBranch
            }
            LineClass::Text(TextClass::Skip | TextClass::DontKnow) => Otherwise::StepOver,
            _ if absorbs => Otherwise::Absorb,
            _ if cancels(line, rules) => Otherwise::Cancel,
            _ => Otherwise::FullWalk,
        };
        Shortcut {
            places: line.accepts,
            otherwise,
        }
    }
}

/// Whether a record the line does not place (nor absorbs) cancels an open absorption there: an
/// `s_waitcnt` line of a text class, with no earlier case of step 8 to test first (as for
/// [`super::line::absorbs_here`]).
fn cancels(line: &Line, rules: &StitchRules) -> bool {
    rules.absorb_immediates
        && !rules.swap_overtaken_records
        && line.has(flag::WAITCNT)
        && matches!(line.class, LineClass::Text(text) if text != TextClass::Branch)
}

/// The flags of lines the fast paths leave to the reference walk: `s_barrier_wait` lines when
/// they may be token-less, or keep the call's token-less marks (step 7).
pub(super) fn full_walk_flags(rules: &StitchRules) -> u8 {
    if rules.barrier_waits_matter() {
        flag::BARRIER_WAIT
    } else {
        0
    }
}

impl SharedStitch {
    /// Step 0 of the walk, the common case kept tight (and out of line, so that its few
    /// variables stay in registers): from a cached line on, the records before `limit` that
    /// match their line plainly or as a `v_mfma_scale_*`, or are absorbed or taken by a
    /// cancelling `s_waitcnt` line, the token-less lines between them and the lines a record
    /// plainly misses (steps 5, 6, 8 and 9 of [`SharedStitch::stitch`] for them, with the same
    /// look-ahead queries in the same order). Over lines already linked, [`follow_links`] takes
    /// them without a query.
    #[inline(never)]
    pub(super) fn take_common_steps<I: IsaProvider + ?Sized>(
        &mut self,
        isa: &mut I,
        insts: &mut [Inst],
        limit: usize,
        walk: Position,
        full_walk_flags: u8,
        span: WaveSpan,
    ) -> Position {
        let limit = limit.min(insts.len());
        // The walk's fields in locals, not in the returned value's memory.
        let Position {
            mut i,
            mut cursor,
            mut idle,
            mut failures,
            mut absorbed,
        } = walk;
        let walk = loop {
            // The run stays below the walk's limit of lines without progress; a walk at it
            // stops in `common_step`. A walk at an unlinked line (the first over code in a
            // call) skips the call.
            let linked = self
                .links
                .get(cursor.id as usize)
                .is_some_and(|link| link.next != NO_LINE);
            if linked && idle < MAX_LINES_WITHOUT_PROGRESS {
                let walk = Position {
                    i,
                    cursor,
                    idle,
                    failures,
                    absorbed,
                };
                Position {
                    i,
                    cursor,
                    idle,
                    failures,
                    absorbed,
                } = follow_links(
                    &self.taken,
                    self.call,
                    &self.links,
                    insts,
                    limit,
                    walk,
                    span,
                );
            }
            // Anything else the run does not take: steps with the look-ahead query, until the
            // walk is at a linked line again (the first walk over code in a call links it).
            let stopped = loop {
                Position {
                    i,
                    cursor,
                    idle,
                    failures,
                    absorbed,
                } = self.renew_along_hints(
                    isa,
                    insts,
                    limit,
                    Position {
                        i,
                        cursor,
                        idle,
                        failures,
                        absorbed,
                    },
                );
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
                let counts = (idle, failures, absorbed);
                let step = common_step(&line, category, full_walk_flags, counts);
                if step == CommonStep::FullWalk {
                    break true;
                }
                let pc = advance(cursor.pc, link.size);
                let next = if link.next != NO_LINE {
                    link.next
                } else if let Some(next) = self.link_hinted(isa, id, &line, pc) {
                    // The first walk over code in a call, mostly: the line that followed
                    // before, renewed here (out of line, the call costs more than the rest).
                    next
                } else {
                    self.link_following(isa, id, pc, &line)
                };
                let walk = Position {
                    i,
                    cursor,
                    idle,
                    failures,
                    absorbed,
                };
                Position {
                    i,
                    cursor,
                    idle,
                    failures,
                    absorbed,
                } = walk.take(step, &line, insts, Cursor { pc, id: next }, span);
                if self
                    .links
                    .get(next as usize)
                    .is_some_and(|l| l.next != NO_LINE)
                {
                    break false;
                }
            };
            if stopped {
                break Position {
                    i,
                    cursor,
                    idle,
                    failures,
                    absorbed,
                };
            }
        };
        walk
    }
}

impl SharedStitch {
    /// The first walk over code in a call, in the common case: while the record is placed at
    /// its line plainly, or the line is token-less and stepped over, and the line after it is
    /// the one that followed it in an earlier call, that line is asked for again (the reference
    /// walk's look-ahead query, in its order) and linked, in a loop of its own: the steps of
    /// [`SharedStitch::take_common_steps`] for these cases, without its others.
    #[inline(always)]
    fn renew_along_hints<I: IsaProvider + ?Sized>(
        &mut self,
        isa: &mut I,
        insts: &mut [Inst],
        limit: usize,
        walk: Position,
    ) -> Position {
        let Position {
            mut i,
            mut cursor,
            mut idle,
            mut failures,
            absorbed,
        } = walk;
        while i < limit && idle < MAX_LINES_WITHOUT_PROGRESS {
            let id = cursor.id;
            let (Some(&line), Some(link), Some(category)) = (
                self.lines.get(id as usize),
                self.links.get(id as usize),
                insts.get(i).map(Inst::category),
            ) else {
                break;
            };
            // A line linked in this call is the run's (`follow_links`).
            if link.next != NO_LINE {
                break;
            }
            // As `common_step`, for its three common steps (its first test is the shortcut's:
            // a line that needs the full walk has none, and places nothing).
            let shortcut = line.shortcut;
            let step = if has_bit(shortcut.places, category) {
                CommonStep::Place
            } else if shortcut.otherwise == Otherwise::StepOver && has_bit(WALKED, category) {
                CommonStep::StepOver
            } else if matches!(
                shortcut.otherwise,
                Otherwise::Miss | Otherwise::AbsorbOrMiss
            ) && has_bit(line.misses, category)
                && failures + 1 < MAX_FAILURES
            {
                CommonStep::Miss
            } else {
                break;
            };
            let pc = advance(cursor.pc, line.size);
            let Some(next) = self.link_hinted(isa, id, &line, pc) else {
                break;
            };
            match step {
                CommonStep::Place => {
                    if let Some(inst) = insts.get_mut(i) {
                        inst.pc = cursor.pc;
                    }
                    i += 1;
                    idle = 0;
                    failures = 0;
                }
                CommonStep::Miss => {
                    idle += 1;
                    failures += 1;
                }
                _ => idle += 1,
            }
            cursor = Cursor { pc, id: next };
        }
        Position {
            i,
            cursor,
            idle,
            failures,
            absorbed,
        }
    }
}

/// Where step 0 of the walk stands: the next record, its cursor, the lines visited since the
/// last record placed, the failures since then, and the IMMED records absorbed and not yet
/// cancelled ([`StitchRules::absorb_immediates`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct Position {
    pub(super) i: usize,
    pub(super) cursor: Cursor,
    pub(super) idle: u32,
    pub(super) failures: u32,
    pub(super) absorbed: u32,
}

/// What step 0 does at a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CommonStep {
    /// The record matches the line plainly, or as a `v_mfma_scale_*` (steps 8, 9).
    Place,
    /// An IMMED record absorbed by the line (steps 8, 9).
    Absorb,
    /// A record taken by an `s_waitcnt` line, which cancels an absorption (steps 8, 9).
    Cancel,
    /// A token-less line (step 6).
    StepOver,
    /// A plain mismatch: one more failure (steps 8, 9).
    Miss,
    /// Anything else: the reference walk takes over.
    FullWalk,
}

/// Step 0's step for a record of raw `category` at `line`, with the walk's lines without
/// progress, failures and open absorptions (as in [`Position`]). It hands over where a limit of
/// the walk would end it, so that the reference walk does that.
#[inline(always)]
fn common_step(
    line: &Line,
    category: u8,
    full_walk_flags: u8,
    (idle, failures, absorbed): (u32, u32, u32),
) -> CommonStep {
    if line.flags & full_walk_flags != 0 || idle >= MAX_LINES_WITHOUT_PROGRESS {
        CommonStep::FullWalk
    } else if line.accepts_raw(category)
        || (line.class == LineClass::MfmaScale && category == Category::Valu as u8)
    {
        CommonStep::Place
    } else if matches!(line.text, TextClass::Skip | TextClass::DontKnow)
        && has_bit(WALKED, category)
    {
        CommonStep::StepOver
    } else if has_bit(line.misses, category) {
        // (A category missed is neither absorbed nor cancels an absorption.)
        if failures + 1 < MAX_FAILURES {
            CommonStep::Miss
        } else {
            CommonStep::FullWalk
        }
    } else if matches!(
        line.shortcut.otherwise,
        Otherwise::Absorb | Otherwise::AbsorbOrMiss
    ) && category == Category::Immed as u8
    {
        CommonStep::Absorb
    } else if line.shortcut.otherwise == Otherwise::Cancel
        && absorbed > 0
        && has_bit(WALKED, category)
    {
        CommonStep::Cancel
    } else {
        CommonStep::FullWalk
    }
}

impl Position {
    /// Takes `step` at the cursor's `line`; `following` is the line after it.
    #[inline(always)]
    fn take(
        mut self,
        step: CommonStep,
        line: &Line,
        insts: &mut [Inst],
        following: Cursor,
        span: WaveSpan,
    ) -> Self {
        match step {
            CommonStep::Place | CommonStep::Absorb | CommonStep::Cancel => {
                match step {
                    CommonStep::Absorb => self.absorbed += 1,
                    CommonStep::Cancel => self.absorbed -= 1,
                    _ => {
                        let category = insts.get(self.i).map_or(0, Inst::category);
                        if !line.accepts_raw(category) {
                            adjust_mfma_scale(insts, self.i, span);
                        }
                    }
                }
                if let Some(inst) = insts.get_mut(self.i) {
                    inst.pc = self.cursor.pc;
                }
                self.i += 1;
                self.idle = 0;
                self.failures = 0;
            }
            CommonStep::StepOver => self.idle += 1,
            CommonStep::Miss => {
                self.idle += 1;
                self.failures += 1;
            }
            CommonStep::FullWalk => return self,
        }
        self.cursor = following;
        self
    }
}

/// The tight loop of the walk, from `walk` on while the lines are linked: what each line's
/// [`Shortcut`] says, for the records before `limit`. `walk.idle` is below
/// [`MAX_LINES_WITHOUT_PROGRESS`] and stays so; `walk.failures` stays below [`MAX_FAILURES`].
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn follow_links(
    taken: &[Taken],
    call: u32,
    links: &[Link],
    insts: &mut [Inst],
    limit: usize,
    walk: Position,
    span: WaveSpan,
) -> Position {
    let Position {
        mut i,
        cursor,
        mut idle,
        mut failures,
        mut absorbed,
    } = walk;
    let Pc {
        mut address,
        code_object_id,
    } = cursor.pc;
    let limit = limit.min(insts.len());
    // `idle` counts the lines stepped over or missed since the last record placed, `failures`
    // those missed: each restarts at the first such line after a record (`stepped_at`,
    // `missed_at`: the record index at the last one), so that a record placed costs nothing
    // for them.
    let (mut stepped_at, mut missed_at) = (i, i);
    let Some(mut link) = links.get(cursor.id as usize) else {
        return walk;
    };
    loop {
        // The common case: records placed at the lines they plainly match.
        while i < limit {
            let category = insts[i].category();
            if !has_bit(link.shortcut.places, category) {
                // Off the common path, so that it costs the common records nothing.
                match link.shortcut.otherwise {
                    Otherwise::PlaceMfmaScale if category == Category::Valu as u8 => {
                        adjust_mfma_scale(insts, i, span);
                    }
                    Otherwise::StepOver if has_bit(WALKED, category) => {
                        // A token-less line: stepped over, as often as a line is in a row.
                        if i != stepped_at {
                            idle = 0;
                            stepped_at = i;
                        }
                        if idle + 1 >= MAX_LINES_WITHOUT_PROGRESS {
                            break;
                        }
                        idle += 1;
                        address = address.wrapping_add(link.size);
                        // SAFETY: a line with a shortcut is linked, and a link is a line id of
                        // `links` (see `Link::shortcut`).
                        link = unsafe { links.get_unchecked(link.next as usize) };
                        continue;
                    }
                    // Absorbed, after the run.
                    Otherwise::AbsorbOrMiss if category == Category::Immed as u8 => break,
                    Otherwise::Miss | Otherwise::AbsorbOrMiss if has_bit(WALKED, category) => {
                        // A plain mismatch: the record is for a later line.
                        if i != stepped_at {
                            idle = 0;
                            stepped_at = i;
                        }
                        if i != missed_at {
                            failures = 0;
                            missed_at = i;
                        }
                        if idle + 1 >= MAX_LINES_WITHOUT_PROGRESS || failures + 1 >= MAX_FAILURES {
                            break;
                        }
                        idle += 1;
                        failures += 1;
                        address = address.wrapping_add(link.size);
                        // SAFETY: as above.
                        link = unsafe { links.get_unchecked(link.next as usize) };
                        continue;
                    }
                    _ => break,
                }
            }
            insts[i].pc = Pc::new(address, code_object_id);
            address = address.wrapping_add(link.size);
            i += 1;
            // SAFETY: a line that places a record is linked, and a link is a line id of
            // `links` (see `Link::shortcut`): the index is in bounds.
            link = unsafe { links.get_unchecked(link.next as usize) };
        }
        // Rarer: an absorption, its cancellation, a taken branch to a known line.
        let Some(inst) = insts[..limit].get(i) else {
            break;
        };
        let category = inst.category();
        match link.shortcut.otherwise {
            Otherwise::Absorb | Otherwise::AbsorbOrMiss if category == Category::Immed as u8 => {
                absorbed += 1;
            }
            Otherwise::Cancel if absorbed > 0 && has_bit(WALKED, category) => absorbed -= 1,
            Otherwise::TakeBranch if category == Category::Jump as u8 => {
                let branch = id_of(links, link);
                let Some(&target) = taken.get(branch as usize).filter(|t| t.call == call) else {
                    break;
                };
                let Some(target_link) = links.get(target.id as usize) else {
                    break;
                };
                insts[i].pc = Pc::new(address, code_object_id);
                i += 1;
                address = target.address;
                link = target_link;
                continue;
            }
            _ => break,
        }
        insts[i].pc = Pc::new(address, code_object_id);
        address = address.wrapping_add(link.size);
        i += 1;
        // SAFETY: a line that places a record is linked (see above).
        link = unsafe { links.get_unchecked(link.next as usize) };
    }
    if i != stepped_at {
        idle = 0;
    }
    if i != missed_at {
        failures = 0;
    }
    Position {
        i,
        cursor: Cursor {
            pc: Pc::new(address, code_object_id),
            id: id_of(links, link),
        },
        idle,
        failures,
        absorbed,
    }
}

/// The line id of `link`, an element of `links` (the run follows links by reference, so that
/// it keeps no id in a register).
fn id_of(links: &[Link], link: &Link) -> u32 {
    let offset = link as *const Link as usize - links.as_ptr() as usize;
    (offset / std::mem::size_of::<Link>()) as u32
}
