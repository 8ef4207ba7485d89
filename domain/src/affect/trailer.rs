//! Splitting a finished reply at the trailer marker.

use serde::{Deserialize, Serialize};

/// The marker of seed 004; kept as the default so prompts written for the spec keep working.
pub const DEFAULT_TRAILER_MARKER: &str = "<<<COCORO_GHOST_PARTNER_AFFECT_JSON_v1>>>";

/// Splits `full` at the FIRST occurrence of `marker`.
///
/// Returns the reply (text before the marker, trailing whitespace removed) and the raw text after
/// the marker (`None` when the marker does not occur). Without a marker the reply is the whole
/// text with trailing whitespace removed, the same rule [`super::TrailerStreamFilter`] applies.
/// An empty marker never matches (it would otherwise swallow the whole reply).
pub fn split_trailer<'a>(full: &'a str, marker: &str) -> (&'a str, Option<&'a str>) {
    if marker.is_empty() {
        return (full.trim_end(), None);
    }
    match full.split_once(marker) {
        Some((reply, trailer)) => (reply.trim_end(), Some(trailer)),
        None => (full.trim_end(), None),
    }
}

/// Configuration of the trailer marker (`[affect]` section or similar of a service config).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrailerConfig {
    /// The marker line that separates the reply from the affect JSON.
    #[serde(default = "default_marker")]
    pub marker: String,
}

fn default_marker() -> String {
    DEFAULT_TRAILER_MARKER.to_owned()
}

impl Default for TrailerConfig {
    /// Uses [`DEFAULT_TRAILER_MARKER`].
    fn default() -> Self {
        TrailerConfig {
            marker: default_marker(),
        }
    }
}

/// Why a [`TrailerConfig`] is unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TrailerConfigError {
    /// An empty marker would match everywhere.
    #[error("trailer `marker` must not be empty")]
    EmptyMarker,
    /// The marker is one line by definition; a line break would never be produced as such.
    #[error("trailer `marker` must be a single line")]
    MultiLineMarker,
}

impl TrailerConfig {
    /// Checks the marker is non-empty and a single line.
    pub fn validate(&self) -> Result<(), TrailerConfigError> {
        if self.marker.is_empty() {
            return Err(TrailerConfigError::EmptyMarker);
        }
        if self.marker.contains(['\n', '\r']) {
            return Err(TrailerConfigError::MultiLineMarker);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: &str = DEFAULT_TRAILER_MARKER;

    #[test]
    fn splits_at_marker_and_trims_the_newline_before_it() {
        let full = format!("こんにちは！\n{M}\n{{\"a\":1}}");
        let (reply, trailer) = split_trailer(&full, M);
        assert_eq!(reply, "こんにちは！");
        assert_eq!(trailer, Some("\n{\"a\":1}"));
    }

    #[test]
    fn splits_at_the_first_marker_only() {
        let full = format!("a{M}b{M}c");
        assert_eq!(split_trailer(&full, M), ("a", Some(&*format!("b{M}c"))));
    }

    #[test]
    fn without_marker_the_whole_text_is_the_reply() {
        assert_eq!(split_trailer("hello \n", M), ("hello", None));
        assert_eq!(split_trailer("<<<COCORO rest", M), ("<<<COCORO rest", None));
    }

    #[test]
    fn empty_marker_never_matches() {
        assert_eq!(split_trailer("abc", ""), ("abc", None));
    }

    #[test]
    fn custom_marker_is_honoured() {
        assert_eq!(
            split_trailer("x\n@@AFFECT@@{}", "@@AFFECT@@"),
            ("x", Some("{}"))
        );
    }

    #[test]
    fn config_defaults_and_validation() {
        let c: TrailerConfig = serde_json::from_str("{}").unwrap();
        assert_eq!(c.marker, M);
        assert!(c.validate().is_ok());
        let empty = TrailerConfig {
            marker: String::new(),
        };
        assert_eq!(empty.validate(), Err(TrailerConfigError::EmptyMarker));
        let multi = TrailerConfig {
            marker: "a\nb".into(),
        };
        assert_eq!(multi.validate(), Err(TrailerConfigError::MultiLineMarker));
        assert!(serde_json::from_str::<TrailerConfig>(r#"{"markr":"x"}"#).is_err());
    }
}
