//! Corpus helpers shared by the examples: ISA answers and SE files of one example directory.

use std::fs;
use std::path::Path;

use rocprof_trace_decoder::isa::{IsaError, IsaProvider};
use rocprof_trace_decoder::records::Pc;

/// ISA answers from the corpus's `code_object_0.isa.json`, answered from a table sorted by
/// address (as the reference's benchmark harness did).
pub struct IsaTable {
    load_base: u64,
    /// `(vaddr, size, text)` by ascending `vaddr`.
    rows: Vec<(u64, u64, String)>,
}

/// A table that knows no address.
impl Default for IsaTable {
    fn default() -> Self {
        IsaTable {
            load_base: 0,
            rows: Vec::new(),
        }
    }
}

impl IsaTable {
    pub fn load(dir: &Path) -> Option<IsaTable> {
        let text = fs::read_to_string(dir.join("code_object_0.isa.json")).ok()?;
        let json: serde_json::Value = serde_json::from_str(&text).ok()?;
        let load_base = json["load_base"].as_u64().unwrap_or(0);
        let mut rows = Vec::new();
        for row in json["instructions"].as_array()? {
            rows.push((
                row[0].as_u64()?,
                row[1].as_u64()?,
                row[2].as_str()?.to_string(),
            ));
        }
        rows.sort_by_key(|row| row.0);
        Some(IsaTable { load_base, rows })
    }
}

impl IsaProvider for IsaTable {
    fn disassemble(&mut self, pc: Pc, text: &mut Vec<u8>) -> Result<u64, IsaError> {
        let vaddr = if pc.code_object_id == 0 {
            pc.address.wrapping_sub(self.load_base)
        } else {
            pc.address
        };
        let row = self
            .rows
            .binary_search_by_key(&vaddr, |row| row.0)
            .map_err(|_| IsaError::UnknownAddress)?;
        let (_, size, line) = &self.rows[row];
        text.clear();
        text.extend_from_slice(line.as_bytes());
        Ok(*size)
    }
}

/// The example's `se*.att` files in SE order, with their bytes.
pub fn se_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "att"))
        .collect();
    files.sort_by_key(|p| {
        let stem = p
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        stem.trim_start_matches("se")
            .parse::<u32>()
            .unwrap_or(u32::MAX)
    });
    files
        .into_iter()
        .filter_map(|f| Some((f.display().to_string(), fs::read(&f).ok()?)))
        .collect()
}
