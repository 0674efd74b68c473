//! Where the corpus is: `../shared/corpus` beside the repository. Tests that read it skip, saying
//! so, when it is absent.

use std::path::{Path, PathBuf};

/// The corpus folder, or `None` (with a note) when it is not there.
pub fn corpus() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!("skipping: corpus folder {} not found", dir.display());
        None
    }
}
