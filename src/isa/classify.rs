//! Classification of ISA text lines for PC stitching (SQTT_FORMAT §3.6).
//!
//! The reference walks a prefix trie with a quirk this reproduces: a character with no child is
//! skipped (the walk stays on its node), and the first node carrying a class decides.

/// What kind of token a line of ISA text is expected to produce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextClass {
    Smem,
    Salu,
    Vmem,
    Flat,
    Lds,
    Valu,
    Immed,
    Bvh,
    /// Contains `branch`: a taken branch follows its target, a not-taken one falls through.
    Branch,
    /// Produces no token (`s_delay_alu`, `s_wait_alu`, ...): the walk steps over it.
    Skip,
    /// Unrecognised or empty text: the walk steps over it.
    DontKnow,
}

const PREFIXES: &[(TextClass, &[&str])] = &[
    (
        TextClass::Immed,
        &[
            "s_waitcnt",
            "s_wait_idle",
            "s_wait_kmcnt",
            "s_wait_loadcnt",
            "s_wait_storecnt",
            "s_wait_bvhcnt",
            "s_wait_expcnt",
            "s_wait_dscnt",
            "s_wait_samplecnt",
            "s_wait_event",
            "s_wait_xcnt",
            "s_wait_tensor",
            "s_wait_async",
            "s_nop",
            "s_sleep",
            "s_wakeup",
            "s_sendmsg",
            "s_setprio ",
            "s_set_inst",
            "s_inst_prefetch",
            "s_setkill",
            "s_version",
            "s_trap",
            "s_barrie",
            "s_endpgm",
            "s_icache_inv",
            "s_dcache_inv",
            "s_incperflvl",
            "s_sethalt",
            "s_decperflvl",
            "s_setvskip",
            "s_ttrace",
            "s_clause",
            "s_monitor",
        ],
    ),
    (
        TextClass::Skip,
        &[
            "s_wait_dep",
            "s_wait_alu",
            "s_delay",
            "s_set_vgpr",
            "buffer_nop",
        ],
    ),
    (
        TextClass::Salu,
        &[
            "s_setprio_inc",
            "s_call",
            "s_cvt",
            "s_getreg",
            "s_setreg",
            "s_add",
            "s_sub",
            "s_and",
            "s_or",
            "s_pack",
            "s_round",
            "s_denorm",
            "s_ctz",
            "s_cls",
            "s_cmp",
            "s_bit",
            "s_mov",
            "s_mul",
            "s_ash",
            "s_bf",
            "s_lsh",
            "s_min",
            "s_max",
            "s_abs",
            "s_cmov",
            "s_not",
            "s_nor",
            "s_wqm",
            "s_quadmask",
            "s_brev",
            "s_bcnt",
            "s_f",
            "s_sext",
            "s_cselect",
            "s_xor",
            "s_xnor",
            "s_nand",
            "s_getpc",
            "s_setpc",
            "s_swappc",
            "s_get_pc",
            "s_set_pc",
            "s_swap_pc",
        ],
    ),
    (
        TextClass::Smem,
        &[
            "s_load",
            "s_buffer",
            "s_atomic",
            "s_atc",
            "s_scratch",
            "s_store",
            "s_dcache",
            "s_memrealtime",
            "s_prefetch",
        ],
    ),
    (
        TextClass::Vmem,
        &[
            "buffer_l", "buffer_s", "buffer_a", "buffer_g", "buffer_i", "buffer_w", "buffer_p",
            "buffer_d", "tbuffer_", "global_", "scratch_", "cluster_", "tensor_", "dds_",
            "image_l", "image_s", "image_a", "image_m", "image_g",
        ],
    ),
    (TextClass::Flat, &["flat_"]),
    (TextClass::Lds, &["ds_", "lds_"]),
    (TextClass::Bvh, &["image_bvh"]),
];

/// Marks a byte that no prefix contains, and a missing child.
const NONE: u16 = u16::MAX;

/// How many distinct bytes the prefixes use: the width of a node's row of children.
const COLUMNS: usize = {
    let mut seen = [false; 256];
    let mut count = 0;
    let mut p = 0;
    while p < PREFIXES.len() {
        let mut w = 0;
        while w < PREFIXES[p].1.len() {
            let word = PREFIXES[p].1[w].as_bytes();
            let mut k = 0;
            while k < word.len() {
                if !seen[word[k] as usize] {
                    seen[word[k] as usize] = true;
                    count += 1;
                }
                k += 1;
            }
            w += 1;
        }
        p += 1;
    }
    count
};

/// At most one node per prefix byte, and the root.
const MAX_NODES: usize = {
    let mut count = 1;
    let mut p = 0;
    while p < PREFIXES.len() {
        let mut w = 0;
        while w < PREFIXES[p].1.len() {
            count += PREFIXES[p].1[w].len();
            w += 1;
        }
        p += 1;
    }
    count
};

/// The prefix trie, built at compile time (see [`classify`]). Children are a dense row per node
/// over the bytes the prefixes use, so each character of a line costs two lookups.
struct Classifier {
    /// Byte -> column in a node's row of children, or [`NONE`].
    column: [u16; 256],
    /// `children[node][column]`: the child node, or [`NONE`].
    children: [[u16; COLUMNS]; MAX_NODES],
    classes: [Option<TextClass>; MAX_NODES],
}

static CLASSIFIER: Classifier = Classifier::build();

impl Classifier {
    /// The trie of [`PREFIXES`]: columns in the order their bytes first appear, nodes in the
    /// order they are first needed.
    const fn build() -> Self {
        let mut c = Classifier {
            column: [NONE; 256],
            children: [[NONE; COLUMNS]; MAX_NODES],
            classes: [None; MAX_NODES],
        };
        let mut columns = 0u16;
        let mut nodes = 1usize;
        let mut p = 0;
        while p < PREFIXES.len() {
            let (class, words) = PREFIXES[p];
            let mut w = 0;
            while w < words.len() {
                let word = words[w].as_bytes();
                let mut node = 0usize;
                let mut k = 0;
                while k < word.len() {
                    let ch = word[k] as usize;
                    if c.column[ch] == NONE {
                        c.column[ch] = columns;
                        columns += 1;
                    }
                    let column = c.column[ch] as usize;
                    if c.children[node][column] == NONE {
                        c.children[node][column] = nodes as u16;
                        nodes += 1;
                    }
                    node = c.children[node][column] as usize;
                    k += 1;
                }
                c.classes[node] = Some(class);
                w += 1;
            }
            p += 1;
        }
        c
    }

    fn walk(&self, text: &[u8]) -> Option<TextClass> {
        let mut node = 0usize;
        for &ch in text {
            let column = self.column[usize::from(ch)];
            if column == NONE {
                continue;
            }
            let next = self
                .children
                .get(node)
                .and_then(|row| row.get(usize::from(column)));
            if let Some(&next) = next.filter(|&&n| n != NONE) {
                node = usize::from(next);
                if let Some(class) = self.classes.get(node).copied().flatten() {
                    return Some(class);
                }
            }
        }
        None
    }

    fn classify(&self, text: &[u8], substrings: Substrings) -> TextClass {
        if substrings.branch {
            TextClass::Branch
        } else if text.starts_with(b"v_") {
            TextClass::Valu
        } else if let Some(class) = self.walk(text) {
            class
        } else if text.starts_with(b"s_") {
            TextClass::Salu
        } else {
            TextClass::DontKnow
        }
    }
}

/// The substrings that matter wherever they appear in a line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Substrings {
    pub branch: bool,
    pub load: bool,
    pub scratch: bool,
}

impl Substrings {
    /// Sixteen bytes at a time (disassembly lines can be long: comments, encodings): only where
    /// a byte is `h` (the end of `branch`, inside `scratch_`) or `d` (inside `_load_`) is text
    /// compared.
    pub fn find(text: &[u8]) -> Self {
        let mut found = Substrings::default();
        let mut chunks = text.chunks_exact(16);
        let mut base = 0;
        for chunk in &mut chunks {
            if let Ok(bytes) = chunk.try_into() {
                found.check(text, base, marks(bytes));
            }
            base += 16;
        }
        let rest = chunks.remainder();
        if let (false, Some(last)) = (rest.is_empty(), text.last_chunk::<16>()) {
            // The last 16 bytes, of which the read ones are dropped.
            found.check(text, base, marks(last) >> (16 - rest.len()));
        } else if !rest.is_empty() {
            // A short line: its bytes, zeros after them (which are neither `h` nor `d`).
            let mut last = [0; 16];
            last[..rest.len()].copy_from_slice(rest);
            found.check(text, base, marks(&last));
        }
        found
    }

    /// Compares the text around each `h` or `d` of the 16 bytes at `base` (`marks`: a bit for
    /// each).
    #[inline(always)]
    fn check(&mut self, text: &[u8], base: usize, mut marks: u32) {
        while marks != 0 {
            let at = base + marks.trailing_zeros() as usize;
            marks &= marks - 1;
            let has = |start: Option<usize>, needle: &[u8]| {
                start.is_some_and(|s| text.get(s..s + needle.len()) == Some(needle))
            };
            match text.get(at) {
                Some(b'h') => {
                    self.branch |= has(at.checked_sub(5), b"branch");
                    self.scratch |= has(at.checked_sub(6), b"scratch_");
                }
                Some(b'd') => self.load |= has(at.checked_sub(4), b"_load_"),
                _ => {}
            }
        }
    }
}

/// A bit for each `h` or `d` of `bytes`: two vector compares and a mask extraction.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn marks(bytes: &[u8; 16]) -> u32 {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    // SAFETY: SSE2 is part of every x86_64 target; the load reads the 16 bytes of `bytes`,
    // unaligned.
    unsafe {
        let v = _mm_loadu_si128(bytes.as_ptr().cast());
        let h = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'h' as i8));
        let d = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'd' as i8));
        _mm_movemask_epi8(_mm_or_si128(h, d)) as u32
    }
}

/// A bit for each `h` or `d` of `bytes`.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn marks(bytes: &[u8; 16]) -> u32 {
    let mut marks = 0;
    for (i, &byte) in bytes.iter().enumerate() {
        marks |= u32::from((byte == b'h') | (byte == b'd')) << i;
    }
    marks
}

/// The architecture-independent class of one line of text, given its [`Substrings`].
pub fn classify(text: &[u8], substrings: Substrings) -> TextClass {
    CLASSIFIER.classify(text, substrings)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(text: &str) -> TextClass {
        let text = text.as_bytes();
        classify(text, Substrings::find(text))
    }

    #[test]
    fn first_rules_win() {
        assert_eq!(class("s_cbranch_execz 46"), TextClass::Branch);
        assert_eq!(class("v_branch_like"), TextClass::Branch);
        assert_eq!(class("v_add_f32 v0, v1, v2"), TextClass::Valu);
        assert_eq!(class("v_nop"), TextClass::Valu);
        assert_eq!(class("s_mov_b32 s0, 0"), TextClass::Salu);
        assert_eq!(class("s_code_end"), TextClass::Salu);
        assert_eq!(class("exp mrt0 off"), TextClass::DontKnow);
        assert_eq!(class(""), TextClass::DontKnow);
    }

    #[test]
    fn prefixes_pick_the_class() {
        assert_eq!(class("s_waitcnt vmcnt(0)"), TextClass::Immed);
        assert_eq!(class("s_wait_kmcnt 0x0"), TextClass::Immed);
        assert_eq!(class("s_wait_alu 0xfffe"), TextClass::Skip);
        assert_eq!(class("s_delay_alu instid0(VALU_DEP_1)"), TextClass::Skip);
        assert_eq!(class("s_load_b64 s[0:1], s[0:1], 0x0"), TextClass::Smem);
        assert_eq!(class("global_load_b32 v0, v1, s[0:1]"), TextClass::Vmem);
        assert_eq!(class("flat_load_b32 v0, v[0:1]"), TextClass::Flat);
        assert_eq!(class("ds_load_b32 v0, v1"), TextClass::Lds);
        assert_eq!(class("image_bvh_intersect_ray"), TextClass::Bvh);
        assert_eq!(class("s_barrier_wait 0xffff"), TextClass::Immed);
        assert_eq!(class("s_setprio 3"), TextClass::Immed);
        assert_eq!(class("s_setprio_inc_wg 1"), TextClass::Salu);
        assert_eq!(class("s_endpgm"), TextClass::Immed);
    }

    #[test]
    fn characters_without_a_child_are_skipped() {
        // `s_waitcnt_vscnt` stops at the `s_waitcnt` node.
        assert_eq!(class("s_waitcnt_vscnt null, 0x0"), TextClass::Immed);
        // 'y' has no child after `s_`, so `s_ymov` walks on as `s_mov`.
        assert_eq!(class("s_ymov"), TextClass::Salu);
        // Non-`s_` text can fall into the trie after skipped characters.
        assert_eq!(class("xds_read"), TextClass::Lds);
    }

    /// Substrings by a plain search, for comparison.
    fn naive(text: &[u8]) -> Substrings {
        let has = |needle: &[u8]| text.windows(needle.len()).any(|w| w == needle);
        Substrings {
            branch: has(b"branch"),
            load: has(b"_load_"),
            scratch: has(b"scratch_"),
        }
    }

    #[test]
    fn substrings_match_a_plain_search() {
        let pieces: [&[u8]; 9] = [
            b"branch",
            b"_load_",
            b"scratch_",
            b"h",
            b"d",
            b"_",
            b"bran",
            b"x",
            b"\x00\x01i",
        ];
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..20_000 {
            let mut text = Vec::new();
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let mut bits = state;
            for _ in 0..(bits % 12) {
                bits /= 12;
                text.extend_from_slice(pieces[(bits % 9) as usize]);
                bits /= 9;
            }
            assert_eq!(Substrings::find(&text), naive(&text), "{text:?}");
        }
    }

    #[test]
    fn substrings_are_found_anywhere() {
        let found = Substrings::find(b"global_load_b32 v0 // scratch_ s_cbranch");
        assert_eq!(
            found,
            Substrings {
                branch: true,
                load: true,
                scratch: true
            }
        );
        assert_eq!(
            Substrings::find(b"bran _loa scratch"),
            Substrings::default()
        );
        assert_eq!(Substrings::find(b""), Substrings::default());
    }
}
