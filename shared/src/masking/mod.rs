//! Masking of secrets and personal data before text reaches the cloud model or a log line.
//! The rules and their engine are pure and live in [`ghost_domain::masking`], re-exported
//! here whole; this module adds what touches the outside: reading a rules file
//! ([`masker_from_file`]) and a log writer that masks every line ([`log_writer`]).

pub use ghost_domain::masking::*;

pub mod log_writer;

use std::path::Path;

pub use log_writer::MaskingMakeWriter;

/// Reads and compiles a rules file; the error names the file (and the rule at fault).
pub fn masker_from_file(path: &Path) -> Result<Masker, MaskingRulesError> {
    let yaml = std::fs::read_to_string(path)
        .map_err(|e| MaskingRulesError(format!("cannot read {}: {e}", path.display())))?;
    Masker::from_yaml(&yaml).map_err(|e| MaskingRulesError(format!("{}: {}", path.display(), e.0)))
}
