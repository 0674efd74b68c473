//! The `.sqtt_funcmap` ELF section (PYTHON.md §3.6, API.md §8.8): text rows that name the
//! marker ids an instrumented kernel writes with `s_ttracedata`.
//!
//! Rows are split on `\n` or NUL, trailing `\r`, space, tab and NUL are stripped, and each row
//! needs an `X:` prefix. Malformed rows are skipped.

use std::collections::HashMap;
use std::ffi::CString;

/// The ELF section holding the rows.
pub const SECTION: &str = ".sqtt_funcmap";

/// What a row names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    /// `K:` the kernel itself (no id).
    Kernel,
    /// `F:` a function scope.
    Function,
    /// `U:` a user scope.
    UserScope,
    /// `P:` a point marker.
    Point,
}

/// One named marker id.
#[derive(Debug)]
pub struct Entry {
    pub kind: EntryKind,
    pub id: u32,
    /// `None` for an empty name / absent source (reported to C as NULL).
    pub name: Option<CString>,
    pub source_location: Option<CString>,
    /// Payload words that follow the header marker (`R:<id>:extra_payload_count=<n>`).
    pub extra_payload_count: u32,
}

/// A packed shader clock in the marker words (`M:` row).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MarkerEncoding {
    pub shader_clock_bits: u32,
    pub shader_clock_shift: u32,
}

/// The parsed section.
#[derive(Debug, Default)]
pub struct Funcmap {
    /// Entries with ids (F/U/P); a later duplicate replaces an earlier one.
    entries: HashMap<u32, Entry>,
    pub encoding: MarkerEncoding,
    /// `W:` wave size, if given.
    pub wave_size: Option<u32>,
}

/// A marker word: `(id << 2) | ENTER << 1 | EXIT_PREV`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MarkerValue {
    pub id: u32,
    pub enter: bool,
    pub exit_previous: bool,
}

impl MarkerValue {
    fn plain(word: u32) -> Self {
        MarkerValue {
            id: word >> 2,
            enter: word >> 1 & 1 != 0,
            exit_previous: word & 1 != 0,
        }
    }

    fn is_bare_exit(&self) -> bool {
        self.id == 0 && self.exit_previous && !self.enter
    }
}

/// Decimal digits only, at most `u32::MAX`.
fn parse_u32(text: &str) -> Option<u32> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse::<u64>().ok().and_then(|v| u32::try_from(v).ok())
}

/// `<id>:<rest>`.
fn split_id(payload: &str) -> Option<(u32, &str)> {
    let (id, rest) = payload.split_once(':')?;
    Some((parse_u32(id)?, rest))
}

fn c_string(text: &str) -> Option<CString> {
    if text.is_empty() {
        None
    } else {
        // A NUL cannot occur: rows are split at NUL.
        CString::new(text).ok()
    }
}

/// `key=value` attributes separated by `;`.
fn attributes(payload: &str) -> impl Iterator<Item = (&str, &str)> {
    payload.split(';').filter_map(|a| a.split_once('='))
}

impl Funcmap {
    pub fn parse(section: &[u8]) -> Funcmap {
        let mut map = Funcmap::default();
        let mut extra_payloads = HashMap::new();
        let text = String::from_utf8_lossy(section);
        for line in text.split(['\n', '\0']) {
            let line = line.trim_end_matches(['\r', ' ', '\t', '\0']);
            let bytes = line.as_bytes();
            if bytes.len() < 2 || bytes[1] != b':' {
                continue;
            }
            let payload = &line[2..];
            match bytes[0] {
                b'W' => {
                    if let Some(w) = parse_u32(payload) {
                        map.wave_size = Some(w);
                    }
                }
                b'M' => map.encoding_row(payload),
                b'R' => {
                    if let Some((id, rest)) = split_id(payload) {
                        for (key, value) in attributes(rest) {
                            if key == "extra_payload_count" {
                                if let Some(count) = parse_u32(value) {
                                    extra_payloads.insert(id, count);
                                }
                            }
                        }
                    }
                }
                prefix @ (b'F' | b'U' | b'P') => {
                    let Some((id, name_loc)) = split_id(payload) else {
                        continue;
                    };
                    let (name, source) = name_loc.split_once('@').unwrap_or((name_loc, ""));
                    if name.is_empty() {
                        continue;
                    }
                    let kind = match prefix {
                        b'F' => EntryKind::Function,
                        b'U' => EntryKind::UserScope,
                        _ => EntryKind::Point,
                    };
                    map.entries.insert(
                        id,
                        Entry {
                            kind,
                            id,
                            name: c_string(name),
                            source_location: c_string(source),
                            extra_payload_count: 0,
                        },
                    );
                }
                // `K:` names the kernel, which carries no id and yields no marker record.
                _ => {}
            }
        }
        for (id, count) in extra_payloads {
            if let Some(entry) = map.entries.get_mut(&id) {
                entry.extra_payload_count = count;
            }
        }
        map
    }

    /// `shader_clock_bits=<n>;shader_clock_shift=<n>`, accepted only when consistent.
    fn encoding_row(&mut self, payload: &str) {
        let (mut bits, mut shift) = (None, None);
        for (key, value) in attributes(payload) {
            let slot = match key {
                "shader_clock_bits" => &mut bits,
                "shader_clock_shift" => &mut shift,
                _ => continue,
            };
            match parse_u32(value) {
                Some(v) => *slot = Some(v),
                None => return,
            }
        }
        let Some(bits) = bits else { return };
        let shift_value = shift.unwrap_or(0);
        let valid = (bits == 0 || shift.is_some())
            && bits <= 29
            && shift_value <= 32
            && bits <= 32 - shift_value;
        if valid {
            self.encoding = MarkerEncoding {
                shader_clock_bits: bits,
                shader_clock_shift: shift_value,
            };
        }
    }

    pub fn find(&self, id: u32) -> Option<&Entry> {
        self.entries.get(&id)
    }

    /// Splits a marker word. With a packed shader clock, ids of known entries (and bare exits)
    /// take only the low `30 − bits` id bits; other words keep the plain layout.
    pub fn decode(&self, word: u32) -> MarkerValue {
        let plain = MarkerValue::plain(word);
        let bits = self.encoding.shader_clock_bits;
        if bits == 0 {
            return plain;
        }
        let id_bits = 30 - bits;
        let packed = MarkerValue {
            id: (word >> 2) & ((1u32 << id_bits) - 1),
            ..plain
        };
        if self.find(packed.id).is_some() || packed.is_bare_exit() {
            packed
        } else {
            plain
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_name_ids_kinds_sources_and_payloads() {
        let map = Funcmap::parse(
            b"K:my_kernel@k.cpp:1\nF:1:helper@k.cpp:10\r\nU:2:loop\0P:3:tick@k.cpp:30 \n\
              R:3:extra_payload_count=2;other=1\nW:64\nX:junk\nF:x:bad\nF:4:\nbroken\n",
        );
        let helper = map.find(1).unwrap();
        assert_eq!(helper.kind, EntryKind::Function);
        assert_eq!(helper.name.as_deref().unwrap().to_str(), Ok("helper"));
        assert_eq!(
            helper.source_location.as_deref().unwrap().to_str(),
            Ok("k.cpp:10")
        );
        let scope = map.find(2).unwrap();
        assert_eq!(
            (scope.kind, scope.source_location.is_none()),
            (EntryKind::UserScope, true)
        );
        let point = map.find(3).unwrap();
        assert_eq!(
            (point.kind, point.extra_payload_count),
            (EntryKind::Point, 2)
        );
        assert!(map.find(4).is_none(), "empty names are skipped");
        assert!(map.find(0).is_none(), "the kernel row has no id");
        assert_eq!(map.wave_size, Some(64));
    }

    #[test]
    fn encoding_rows_are_checked() {
        let accepted = |row: &str| Funcmap::parse(row.as_bytes()).encoding;
        assert_eq!(
            accepted("M:shader_clock_bits=10;shader_clock_shift=4"),
            MarkerEncoding {
                shader_clock_bits: 10,
                shader_clock_shift: 4
            }
        );
        assert_eq!(
            accepted("M:shader_clock_bits=10"),
            MarkerEncoding::default()
        );
        assert_eq!(
            accepted("M:shader_clock_bits=30;shader_clock_shift=0"),
            MarkerEncoding::default()
        );
        assert_eq!(
            accepted("M:shader_clock_bits=20;shader_clock_shift=20"),
            MarkerEncoding::default()
        );
        assert_eq!(
            accepted("M:shader_clock_bits=x;shader_clock_shift=1"),
            MarkerEncoding::default()
        );
    }

    #[test]
    fn marker_words_with_a_packed_clock() {
        let map = Funcmap::parse(b"F:5:f\nM:shader_clock_bits=20;shader_clock_shift=12\n");
        // id 5 in the low 10 id bits, clock bits above.
        let word = 0xABCDE << 12 | 5 << 2 | 0b10;
        let value = map.decode(word);
        assert_eq!(
            (value.id, value.enter, value.exit_previous),
            (5, true, false)
        );
        // An unknown packed id keeps the plain layout.
        assert_eq!(map.decode(0xABCDE << 12 | 9 << 2).id, (0xABCDE << 10) | 9);
        assert_eq!(map.decode(0xABCDE << 12 | 1).id, 0, "bare exit");
        let plain = Funcmap::parse(b"F:5:f\n");
        assert_eq!(plain.decode(7 << 2 | 3).id, 7);
    }
}
