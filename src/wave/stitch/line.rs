//! Line facts: what a disassembled line's text says, and its class and accepted record
//! categories under the walk's rules.

use crate::isa::classify::{classify, Substrings, TextClass};
use crate::records::{Category, Inst, Pc};

use super::cache::NO_LINE;
use super::fast::Shortcut;
use super::StitchRules;

/// Line class after the architecture post-fixes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum LineClass {
    Text(TextClass),
    /// `v_mov_b64*` under [`StitchRules::v_mov_b64_issues_twice`].
    VMovB64,
    /// `v_mfma_scale_*` under [`StitchRules::mfma_scale_loads_early`]: its scale load starts
    /// before the token.
    MfmaScale,
    /// `s_barrier` under [`StitchRules::barrier_takes_message_and_immed`]: an IMMED record, or a
    /// MESSAGE followed by its IMMED.
    Barrier,
}

/// What a line's text starts with or contains, beyond its class.
pub(super) mod flag {
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
pub(super) struct Line {
    /// Bytes to the next line (a reported size of 0 advances by 4).
    pub(super) size: u64,
    /// The branch displacement parsed from the text (None: not a number).
    pub(super) branch_offset: Option<i32>,
    /// The line that followed this one in an earlier call ([`NO_LINE`]: none): where the
    /// look-ahead query looks first.
    pub(super) hint: u32,
    /// Record categories this line produces by a plain match, one bit per category.
    pub(super) accepts: u16,
    /// What the run over linked lines does at this line once it is linked.
    pub(super) shortcut: Shortcut,
    /// Record categories the walk steps over this line for, counting a failure, under no rule
    /// but the plain mismatch (step 8's last case), one bit per category.
    pub(super) misses: u16,
    pub(super) text: TextClass,
    pub(super) class: LineClass,
    pub(super) flags: u8,
}

/// What a line's text says, whatever its PC, size or the walk's rules.
#[derive(Clone, Copy, Debug)]
pub(super) struct TextFacts {
    pub(super) class: TextClass,
    pub(super) flags: u8,
    branch_offset: Option<i32>,
}

impl TextFacts {
    pub(super) fn of(text: &[u8]) -> Self {
        let substrings = Substrings::find(text);
        let class = classify(text, substrings);
        // Each prefix is tested only on lines of its own first two bytes (constant lengths: the
        // comparisons are inlined).
        let on = |prefix: &[u8], bit: u8| if text.starts_with(prefix) { bit } else { 0 };
        let mut flags = match text.get(..2) {
            Some(b"v_") => {
                on(b"v_mov_b64", flag::V_MOV_B64) | on(b"v_mfma_scale", flag::MFMA_SCALE)
            }
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
    pub(super) fn new(facts: TextFacts, memory_size: u64, rules: &StitchRules) -> Self {
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
            shortcut: Shortcut::NONE,
            misses: 0,
            text: class,
            class: LineClass::Text(class),
            flags,
        };
        line.derive(rules);
        line
    }

    pub(super) fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }

    /// The class and accepted categories under `rules`.
    pub(super) fn derive(&mut self, rules: &StitchRules) {
        self.class = match self.text {
            TextClass::Valu if rules.v_mov_b64_issues_twice && self.has(flag::V_MOV_B64) => {
                LineClass::VMovB64
            }
            TextClass::Valu if rules.mfma_scale_loads_early && self.has(flag::MFMA_SCALE) => {
                LineClass::MfmaScale
            }
            TextClass::Immed
                if rules.barrier_takes_message_and_immed && self.has(flag::BARRIER) =>
            {
                LineClass::Barrier
            }
            class => LineClass::Text(class),
        };
        self.accepts = match self.class {
            LineClass::Text(text) => TEXT_ACCEPTS[text as usize],
            _ => 0,
        };
        let absorbs = absorbs_here(self.class, rules);
        self.misses = self.misses_without_rule(rules, absorbs);
        self.shortcut = Shortcut::of(self, rules, absorbs);
    }

    /// The categories for which step 8 of the walk reaches its last case at this line, a
    /// mismatch without a rule of its own (steps 6 and 7 passed it). `absorbs`: whether the
    /// line absorbs an IMMED record ([`absorbs_here`]).
    fn misses_without_rule(&self, rules: &StitchRules, absorbs: bool) -> u16 {
        let LineClass::Text(text) = self.class else {
            return 0;
        };
        // The swap test may take any mismatch.
        if rules.swap_overtaken_records
            || self.has(flag::WAITCNT | flag::LOAD)
            || matches!(
                text,
                TextClass::Branch | TextClass::Skip | TextClass::DontKnow
            )
        {
            return 0;
        }
        WALKED & !self.accepts & !absorbed_bit(absorbs)
    }

    /// Whether a record of `category` is what this line produces (a plain match).
    #[inline]
    pub(super) fn accepts(&self, category: Category) -> bool {
        self.accepts_raw(category as u8)
    }

    /// [`Line::accepts`] for a record's raw category byte.
    #[inline]
    pub(super) fn accepts_raw(&self, category: u8) -> bool {
        has_bit(self.accepts, category)
    }

    pub(super) fn branch_target(&self, pc: Pc) -> Option<Pc> {
        let offset = i64::from(self.branch_offset?);
        Some(Pc::new(
            pc.address.wrapping_add(4).wrapping_add((offset * 4) as u64),
            pc.code_object_id,
        ))
    }
}

/// Whether bit `category` of a per-category set is set (none is for a category byte past 15).
#[inline]
pub(super) fn has_bit(set: u16, category: u8) -> bool {
    set & CATEGORY_BIT[usize::from(category)] != 0
}

/// By category byte: its bit in a per-category set, none past 15 (a load instead of a range
/// check and a shift in the run over linked lines).
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
pub(super) fn parse_branch_offset(text: &[u8]) -> Option<i32> {
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

/// The categories of records the walk moves over lines for: all but NONE and CONTEXT (the trap
/// handler's record has no line). Token-less lines are stepped over for them, and a line's plain
/// mismatches are among them.
pub(super) const WALKED: u16 = ALL_CATEGORIES & !bit(Category::Context);

/// Every text class, in numeric order.
pub(super) const TEXT_CLASSES: [TextClass; 11] = [
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
pub(super) const fn same_class(line: LineClass, record: Category) -> bool {
    use Category as C;
    let line = match line {
        LineClass::Text(line) => line,
        // An `s_barrier` line is an IMMED line to this test (docs/timing/gfx9.md S6).
        LineClass::Barrier => TextClass::Immed,
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

/// Whether an IMMED record that a line of class `class` does not place is absorbed there under
/// `rules`, with no earlier case of step 8 of [`super::SharedStitch::stitch`] to test first
/// (where the swap test applies, it comes first, and only the reference walk takes the record).
pub(super) fn absorbs_here(class: LineClass, rules: &StitchRules) -> bool {
    rules.absorb_immediates && !rules.swap_overtaken_records && absorbs_immediate(class)
}

/// The IMMED bit where a line absorbs it ([`absorbs_here`]), else none.
pub(super) fn absorbed_bit(absorbs: bool) -> u16 {
    if absorbs {
        bit(Category::Immed)
    } else {
        0
    }
}

/// Lines an IMMED record may be attributed to when it matches nothing else (ERRATA G3).
pub(super) const fn absorbs_immediate(line: LineClass) -> bool {
    matches!(
        line,
        LineClass::VMovB64
            | LineClass::Text(TextClass::Vmem | TextClass::Flat | TextClass::Lds | TextClass::Valu)
    )
}

pub(super) fn category_of(inst: &Inst) -> Option<Category> {
    Category::from_u8(inst.category()).filter(|&c| c != Category::None)
}
