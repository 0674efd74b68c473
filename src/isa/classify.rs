//! Classification of ISA text lines for PC stitching (SQTT_FORMAT §3.6).
//!
//! The reference walks a prefix trie with a quirk this reproduces: a character with no child is
//! skipped (the walk stays on its node), and the first node carrying a class decides.

use std::sync::LazyLock;

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

#[derive(Default)]
struct Node {
    children: Vec<(u8, u32)>,
    class: Option<TextClass>,
}

/// The prefix trie, built once per process (see [`classify`]).
struct Classifier {
    nodes: Vec<Node>,
}

impl Default for Classifier {
    fn default() -> Self {
        let mut c = Classifier {
            nodes: vec![Node::default()],
        };
        for (class, words) in PREFIXES {
            for word in *words {
                c.insert(word.as_bytes(), *class);
            }
        }
        c
    }
}

impl Classifier {
    fn insert(&mut self, word: &[u8], class: TextClass) {
        let mut node = 0usize;
        for &ch in word {
            node = match self.child(node, ch) {
                Some(next) => next,
                None => {
                    self.nodes.push(Node::default());
                    let next = self.nodes.len() - 1;
                    self.nodes[node].children.push((ch, next as u32));
                    next
                }
            };
        }
        self.nodes[node].class = Some(class);
    }

    fn child(&self, node: usize, ch: u8) -> Option<usize> {
        self.nodes[node]
            .children
            .iter()
            .find(|(c, _)| *c == ch)
            .map(|(_, n)| *n as usize)
    }

    fn walk(&self, text: &[u8]) -> Option<TextClass> {
        let mut node = 0usize;
        for &ch in text {
            if let Some(next) = self.child(node, ch) {
                node = next;
                if let Some(class) = self.nodes[node].class {
                    return Some(class);
                }
            }
        }
        None
    }

    fn classify(&self, text: &[u8]) -> TextClass {
        if contains(text, b"branch") {
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

/// The architecture-independent class of one line of text.
pub fn classify(text: &[u8]) -> TextClass {
    static CLASSIFIER: LazyLock<Classifier> = LazyLock::new(Classifier::default);
    CLASSIFIER.classify(text)
}

pub fn contains(text: &[u8], needle: &[u8]) -> bool {
    text.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(text: &str) -> TextClass {
        classify(text.as_bytes())
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
}
