//! The cast a nomination is matched against (`config.yaml` `characters[]`), with every name's
//! normalized form precomputed so a resolution never re-normalizes the registry.

use serde::{Deserialize, Deserializer, Serialize};

use self::cast::Cast;
use super::normalize::normalize_name;
use super::similarity::{quick_ratio, real_quick_ratio, Matcher};

mod cast;
#[cfg(test)]
mod work_tests;

/// The id that always means the human user, never a character (seed 000: `USER` is rejected).
pub const RESERVED_USER_ID: &str = "USER";

/// One character as configured: `name` is the internal_id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpeakerEntry {
    /// The internal_id (`characters[].name`, e.g. `LUMINA`); `internal_id` is accepted as an alias.
    #[serde(alias = "internal_id")]
    pub name: String,
    /// Display name (e.g. `ルミナ`); empty when not configured.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub display_name: String,
    /// Short mark (e.g. `る`); empty when not configured.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub short_name: String,
}

impl SpeakerEntry {
    /// An entry from its three names.
    pub fn new(
        name: impl Into<String>,
        display_name: impl Into<String>,
        short_name: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            display_name: display_name.into(),
            short_name: short_name.into(),
        }
    }
}

/// Accepts an explicit YAML/JSON `null` for an optional name.
fn null_as_empty<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(d)?.unwrap_or_default())
}

/// Why a registry could not be built.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The YAML document is malformed or lacks `characters: [{name, …}]`.
    #[error("invalid character registry YAML: {0}")]
    Yaml(#[from] serde_norway::Error),
    /// No characters at all.
    #[error("character registry is empty")]
    Empty,
    /// An entry whose `name` is blank.
    #[error("character #{index} has an empty `name`")]
    EmptyId {
        /// Zero-based position in registry order.
        index: usize,
    },
    /// An entry whose `name` normalizes to nothing (only punctuation), so it can never be nominated.
    #[error("character `{id}` has a `name` with no letters left after normalization")]
    UnnameableId {
        /// The configured name.
        id: String,
    },
    /// Two entries share an internal_id (compared after normalization, so `Nox` and `NOX` clash).
    #[error("duplicate character `name` `{id}` (clashes with `{first}`)")]
    DuplicateId {
        /// The later, rejected name.
        id: String,
        /// The earlier name it clashes with.
        first: String,
    },
    /// An entry that tries to take the user's id.
    #[error("character `name` `{id}` is reserved for the user")]
    ReservedId {
        /// The configured name.
        id: String,
    },
}

/// Which matching step accepted a nominated name (seed 000 "照合ルール", in order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchKind {
    /// 1. exact internal_id.
    InternalId,
    /// 2. exact display_name.
    DisplayName,
    /// 3. exact short_name.
    ShortName,
    /// 4. a derived synonym (case, width, bracket, quote, honorific variants of the three names).
    Synonym,
    /// 5. Ratcliff/Obershelp ratio at or above the policy threshold.
    Fuzzy,
}

impl MatchKind {
    /// Snake-case name for logs.
    pub fn as_str(self) -> &'static str {
        match self {
            MatchKind::InternalId => "internal_id",
            MatchKind::DisplayName => "display_name",
            MatchKind::ShortName => "short_name",
            MatchKind::Synonym => "synonym",
            MatchKind::Fuzzy => "fuzzy",
        }
    }
}

/// A normalized name and its code points (for the similarity ratio).
#[derive(Debug, Clone)]
struct NormName {
    text: String,
    chars: Vec<char>,
}

impl NormName {
    fn new(raw: &str) -> Self {
        let text = normalize_name(raw);
        let chars = text.chars().collect();
        Self { text, chars }
    }
}

/// An entry plus the normalized forms of its internal_id, display_name and short_name.
#[derive(Debug, Clone)]
struct Member {
    entry: SpeakerEntry,
    normalized: [NormName; 3],
}

/// The registered characters in registry (configuration) order.
#[derive(Debug, Clone)]
pub struct SpeakerRegistry {
    members: Cast<Member>,
}

/// Shape of the YAML document; other top-level keys and per-character fields are ignored.
#[derive(Deserialize)]
struct RegistryDoc {
    characters: Vec<SpeakerEntry>,
}

impl SpeakerRegistry {
    /// Builds a registry from entries in order; names are trimmed, ids must be non-empty,
    /// unique (after normalization) and not `USER`.
    pub fn new(entries: Vec<SpeakerEntry>) -> Result<Self, RegistryError> {
        if entries.is_empty() {
            return Err(RegistryError::Empty);
        }
        let mut members: Vec<Member> = Vec::with_capacity(entries.len());
        for (index, entry) in entries.into_iter().enumerate() {
            let entry = SpeakerEntry::new(
                entry.name.trim(),
                entry.display_name.trim(),
                entry.short_name.trim(),
            );
            if entry.name.is_empty() {
                return Err(RegistryError::EmptyId { index });
            }
            let member = Member::new(entry);
            let id_norm = &member.normalized[0].text;
            if id_norm.is_empty() {
                return Err(RegistryError::UnnameableId {
                    id: member.entry.name,
                });
            }
            if id_norm == RESERVED_USER_ID {
                return Err(RegistryError::ReservedId {
                    id: member.entry.name,
                });
            }
            if let Some(first) = members.iter().find(|m| &m.normalized[0].text == id_norm) {
                return Err(RegistryError::DuplicateId {
                    id: member.entry.name,
                    first: first.entry.name.clone(),
                });
            }
            members.push(member);
        }
        warn_ambiguous_names(&members);
        Ok(Self {
            members: Cast::new(members),
        })
    }

    /// Parses `characters: [{name, display_name, short_name, …}]` from a YAML document.
    pub fn from_yaml(text: &str) -> Result<Self, RegistryError> {
        let doc: RegistryDoc = serde_norway::from_str(text)?;
        Self::new(doc.characters)
    }

    /// The seed's example cast (LUMINA/ルミナ/る, CLARIS/クラリス/く, NOX/ノクス/の), for probes.
    pub fn seed_example() -> Self {
        let members = [
            ("LUMINA", "ルミナ", "る"),
            ("CLARIS", "クラリス", "く"),
            ("NOX", "ノクス", "の"),
        ]
        .into_iter()
        .map(|(id, display, short)| Member::new(SpeakerEntry::new(id, display, short)))
        .collect();
        Self {
            members: Cast::new(members),
        }
    }

    /// The entries in registry order.
    pub fn entries(&self) -> impl Iterator<Item = &SpeakerEntry> + '_ {
        self.members.iter().map(|m| &m.entry)
    }

    /// The internal ids in registry order.
    pub fn ids(&self) -> impl Iterator<Item = &str> + '_ {
        self.members.iter().map(|m| m.entry.name.as_str())
    }

    /// Number of characters (never zero).
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Always false: construction rejects an empty cast (kept for API symmetry with `len`).
    pub fn is_empty(&self) -> bool {
        self.members.len() == 0
    }

    /// The entry at a registry position.
    pub fn entry(&self, index: usize) -> Option<&SpeakerEntry> {
        self.members.get(index).map(|m| &m.entry)
    }

    /// Registry position of an internal id: exact first, then by normalized form (so a caller
    /// passing `lumina` for `LUMINA` still has its own nominations treated as self-nominations).
    pub fn position(&self, id: &str) -> Option<usize> {
        if let Some(i) = self.members.iter().position(|m| m.entry.name == id) {
            return Some(i);
        }
        let norm = normalize_name(id);
        if norm.is_empty() {
            return None;
        }
        self.members
            .iter()
            .position(|m| m.normalized[0].text == norm)
    }

    /// The entry registered under an internal id (see [`SpeakerRegistry::position`]).
    pub fn get(&self, id: &str) -> Option<&SpeakerEntry> {
        self.position(id).and_then(|i| self.entry(i))
    }

    /// Everyone except `current_id`, in registry order (the prompt's `{other_characters}`).
    pub fn others<'a>(&'a self, current_id: &str) -> impl Iterator<Item = &'a SpeakerEntry> + 'a {
        let current = self.position(current_id);
        self.members
            .iter()
            .enumerate()
            .filter(move |(i, _)| Some(*i) != current)
            .map(|(_, m)| &m.entry)
    }

    /// Matches an already-normalized name, in the seed's order: exact internal_id, exact
    /// display_name, exact short_name, derived synonyms, then the best fuzzy ratio at or above
    /// `threshold` (ties go to the earlier candidate in that same order). Empty never matches.
    pub fn lookup(&self, normalized: &str, threshold: f64) -> Option<(usize, MatchKind)> {
        if normalized.is_empty() {
            return None;
        }
        let exact = [
            (MatchKind::InternalId, 0usize),
            (MatchKind::DisplayName, 1),
            (MatchKind::ShortName, 2),
        ];
        for (kind, field) in exact {
            if let Some(i) = self
                .members
                .iter()
                .position(|m| m.entry.field(field) == normalized)
            {
                return Some((i, kind));
            }
        }
        for field in 0..3 {
            if let Some(i) = self
                .members
                .iter()
                .position(|m| m.normalized[field].text == normalized)
            {
                return Some((i, MatchKind::Synonym));
            }
        }
        self.fuzzy(normalized, threshold)
            .map(|i| (i, MatchKind::Fuzzy))
    }

    /// Step 5: the candidate with the highest ratio (difflib orientation: candidate is `a`, the
    /// nominated word is `b`), skipping candidates whose upper bounds already fall short, as
    /// get_close_matches does (real_quick_ratio, then quick_ratio).
    fn fuzzy(&self, normalized: &str, threshold: f64) -> Option<usize> {
        let word: Vec<char> = normalized.chars().collect();
        let mut matcher = Matcher::default();
        let mut best: Option<(usize, f64)> = None;
        for field in 0..3 {
            for (i, m) in self.members.iter().enumerate() {
                let cand = &m.normalized[field].chars;
                if cand.is_empty()
                    || real_quick_ratio(cand.len(), word.len()) < threshold
                    || quick_ratio(cand, &word) < threshold
                {
                    continue;
                }
                let score = matcher.ratio(cand, &word);
                let better = best.is_none_or(|(_, s)| score > s);
                if score >= threshold && better {
                    best = Some((i, score));
                }
            }
        }
        best.map(|(i, _)| i)
    }
}

/// Seed 000 allows duplicate display names but recommends internal_id nominations for them:
/// say so once at load time, since such a name always resolves to the first in registry order.
fn warn_ambiguous_names(members: &[Member]) {
    for (field, label) in [(1usize, "display_name"), (2, "short_name")] {
        for (i, m) in members.iter().enumerate() {
            let name = &m.normalized[field].text;
            if name.is_empty() {
                continue;
            }
            let clash = members
                .iter()
                .skip(i + 1)
                .find(|other| &other.normalized[field].text == name);
            if let Some(other) = clash {
                tracing::warn!(
                    target: "operation",
                    field = label,
                    name = %name,
                    first = %m.entry.name,
                    shadowed = %other.entry.name,
                    "ambiguous character name: nominations resolve to the first in registry order"
                );
            }
        }
    }
}

impl Member {
    fn new(entry: SpeakerEntry) -> Self {
        let normalized = [
            NormName::new(&entry.name),
            NormName::new(&entry.display_name),
            NormName::new(&entry.short_name),
        ];
        Self { entry, normalized }
    }
}

impl SpeakerEntry {
    /// Field by matching-order index (0 id, 1 display, 2 short); an empty name never matches.
    fn field(&self, index: usize) -> &str {
        let s = match index {
            0 => &self.name,
            1 => &self.display_name,
            _ => &self.short_name,
        };
        s.as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reg(entries: &[(&str, &str, &str)]) -> SpeakerRegistry {
        let entries = entries
            .iter()
            .map(|(a, b, c)| SpeakerEntry::new(*a, *b, *c))
            .collect();
        match SpeakerRegistry::new(entries) {
            Ok(r) => r,
            Err(e) => panic!("test registry rejected: {e}"),
        }
    }

    #[test]
    fn from_yaml_reads_characters_in_order_and_ignores_other_fields() {
        let yaml = "
llm: {model: x}
characters:
  - name: LUMINA
    display_name: ルミナ
    short_name: る
    persona: long text
  - name: NOX
    display_name: ノクス
";
        let r = SpeakerRegistry::from_yaml(yaml);
        let r = r.as_ref().map(|r| r.ids().collect::<Vec<_>>());
        assert_eq!(r.ok(), Some(vec!["LUMINA", "NOX"]));
        let r = SpeakerRegistry::from_yaml(yaml).ok();
        assert_eq!(
            r.and_then(|r| r.get("NOX").cloned()).map(|e| e.short_name),
            Some(String::new())
        );
    }

    #[test]
    fn from_yaml_reports_bad_documents() {
        assert!(matches!(
            SpeakerRegistry::from_yaml("characters: ["),
            Err(RegistryError::Yaml(_))
        ));
        assert!(matches!(
            SpeakerRegistry::from_yaml("other: 1"),
            Err(RegistryError::Yaml(_))
        ));
        assert!(matches!(
            SpeakerRegistry::from_yaml("characters:\n  - display_name: x"),
            Err(RegistryError::Yaml(_))
        ));
        assert!(matches!(
            SpeakerRegistry::from_yaml("characters: []"),
            Err(RegistryError::Empty)
        ));
        assert!(matches!(
            SpeakerRegistry::from_yaml("characters:\n  - name: A\n  - name: '  '"),
            Err(RegistryError::EmptyId { index: 1 })
        ));
        assert!(matches!(
            SpeakerRegistry::from_yaml("characters:\n  - name: NOX\n  - name: nox"),
            Err(RegistryError::DuplicateId { .. })
        ));
        assert!(matches!(
            SpeakerRegistry::from_yaml("characters:\n  - name: user"),
            Err(RegistryError::ReservedId { .. })
        ));
        assert!(matches!(
            SpeakerRegistry::from_yaml("characters:\n  - name: '!!'"),
            Err(RegistryError::UnnameableId { .. })
        ));
    }

    #[test]
    fn entries_accept_the_internal_id_alias_and_null_names() {
        let e: Result<SpeakerEntry, _> =
            serde_json::from_str(r#"{"internal_id":"NOX","display_name":null}"#);
        assert_eq!(e.ok(), Some(SpeakerEntry::new("NOX", "", "")));
    }

    #[test]
    fn matching_order_prefers_internal_id_over_display_name() {
        // "NOX" is B's display name but A's internal id: the id wins.
        let r = reg(&[("X", "NOX", "x"), ("NOX", "ノクス", "の")]);
        assert_eq!(r.lookup("NOX", 0.85), Some((1, MatchKind::InternalId)));
    }

    #[test]
    fn matching_order_prefers_display_name_over_short_name() {
        let r = reg(&[("A", "あ", "る"), ("LUMINA", "る", "ル")]);
        assert_eq!(r.lookup("る", 0.85), Some((1, MatchKind::DisplayName)));
    }

    #[test]
    fn matching_order_prefers_short_name_over_synonyms() {
        // A's display name "(く)" normalizes to "く", B's short name is "く".
        let r = reg(&[("A", "(く)", "a"), ("B", "bee", "く")]);
        assert_eq!(r.lookup("く", 0.85), Some((1, MatchKind::ShortName)));
    }

    #[test]
    fn exact_steps_come_before_synonyms() {
        // A's internal id "Lumina" only matches "LUMINA" as a synonym; B's display is exact.
        let r = reg(&[("Lumina", "ルミナ", "る"), ("B", "LUMINA", "b")]);
        assert_eq!(r.lookup("LUMINA", 0.85), Some((1, MatchKind::DisplayName)));
        assert_eq!(r.lookup("ルミナ", 0.85), Some((0, MatchKind::DisplayName)));
    }

    #[test]
    fn synonyms_cover_case_width_and_brackets() {
        let r = reg(&[("Lumina", "（ルミナ）", "ﾙ")]);
        assert_eq!(r.lookup("LUMINA", 0.85), Some((0, MatchKind::Synonym)));
        assert_eq!(r.lookup("ルミナ", 0.85), Some((0, MatchKind::Synonym)));
        assert_eq!(r.lookup("ル", 0.85), Some((0, MatchKind::Synonym)));
    }

    #[test]
    fn fuzzy_uses_the_threshold() {
        let r = SpeakerRegistry::seed_example();
        assert_eq!(r.lookup("CLARISS", 0.85), Some((1, MatchKind::Fuzzy)));
        // 12/13 = 0.923 is below 0.95.
        assert_eq!(r.lookup("CLARISS", 0.95), None);
        assert_eq!(r.lookup("MIKU", 0.85), None);
        // 6/7 = 0.857 for a one-character addition to a three-character name.
        assert_eq!(r.lookup("ノクスX", 0.85), Some((2, MatchKind::Fuzzy)));
        assert_eq!(r.lookup("ノクスX", 0.86), None);
    }

    #[test]
    fn fuzzy_prefers_the_highest_ratio() {
        // "ABCDEFGHX" vs "ABCDEFGH": 16/17; vs "ABCDEFGHXY": 18/19 (higher, later in order).
        let r = reg(&[("ABCDEFGH", "", ""), ("ABCDEFGHXY", "", "")]);
        assert_eq!(r.lookup("ABCDEFGHX", 0.85), Some((1, MatchKind::Fuzzy)));
    }

    #[test]
    fn empty_names_never_match() {
        let r = reg(&[("A", "", "")]);
        assert_eq!(r.lookup("", 0.0), None);
    }

    #[test]
    fn position_and_others() {
        let r = SpeakerRegistry::seed_example();
        assert_eq!(r.position("CLARIS"), Some(1));
        assert_eq!(r.position("claris"), Some(1));
        assert_eq!(r.position("MIKU"), None);
        let others: Vec<&str> = r.others("CLARIS").map(|e| e.name.as_str()).collect();
        assert_eq!(others, ["LUMINA", "NOX"]);
        assert_eq!(r.len(), 3);
        assert!(!r.is_empty());
    }
}
