//! Corpus helpers shared by the examples: ISA answers and SE files of one example directory.

use std::collections::HashMap;
use std::fs;
use std::path::Path;

use rocprof_trace_decoder::isa::{IsaError, IsaProvider};
use rocprof_trace_decoder::records::Pc;

/// ISA answers from the corpus's `code_object_0.isa.json`.
pub struct IsaTable {
    pub load_base: u64,
    pub by_vaddr: HashMap<u64, (u64, String)>,
}

impl IsaTable {
    pub fn load(dir: &Path) -> Option<IsaTable> {
        let text = fs::read_to_string(dir.join("code_object_0.isa.json")).ok()?;
        let json: serde_json::Value = serde_json::from_str(&text).ok()?;
        let load_base = json["load_base"].as_u64().unwrap_or(0);
        let mut by_vaddr = HashMap::new();
        for row in json["instructions"].as_array()? {
            let vaddr = row[0].as_u64()?;
            let size = row[1].as_u64()?;
            by_vaddr.insert(vaddr, (size, row[2].as_str()?.to_string()));
        }
        Some(IsaTable {
            load_base,
            by_vaddr,
        })
    }
}

impl IsaProvider for IsaTable {
    fn disassemble(&mut self, pc: Pc, text: &mut Vec<u8>) -> Result<u64, IsaError> {
        let vaddr = if pc.code_object_id == 0 {
            pc.address.wrapping_sub(self.load_base)
        } else {
            pc.address
        };
        let (size, line) = self.by_vaddr.get(&vaddr).ok_or(IsaError::UnknownAddress)?;
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
