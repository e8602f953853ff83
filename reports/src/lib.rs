//! faultline reports: the machine-readable `results.json`, `junit.xml` for CI systems, the self-contained
//! `report.html` of a run and the store's `index.html`, all written atomically.
//!
//! The API the harness calls after each run (and `faultline report STORE_DIR`):
//! - [`write_report`]`(run_dir)` renders `run_dir/report.html` from the store folder alone;
//! - [`write_index`]`(store_root)` lists every run of the store in `store_root/index.html`, after the campaign view of
//!   the store's seed database ([`seeds`]) when it has one.
//!
//! Campaigns append to the seed database with [`seeds::append_seed`]; certifications render their report with
//! [`certification`]. [`triage`] turns a run's failing checks into findings and the seed database into failure
//! classes across seeds and nights (`faultline triage`, and the campaign view of the index).

mod behaviour_view;
mod campaign_view;
pub mod certification;
pub mod compare;
mod error;
pub mod explored;
pub mod html;
mod index;
pub mod junit;
pub mod matrix;
mod pages;
pub mod results;
pub mod seeds;
pub mod shrink;
pub mod triage;

pub use error::ReportError;
pub use html::write_report;
pub use index::write_index;

use std::io::Write;
use std::path::Path;

/// Writes `bytes` to `path` atomically: a temp file beside it, fsync, rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let mut file = std::fs::File::create(&tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)
}
