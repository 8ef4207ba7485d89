//! The fake embedding model: a deterministic vector from the text, in which a few synonyms
//! share a concept, so tests can show recall by meaning between texts that share no trigram.

/// Dimensions of every fake vector.
pub const DIMENSIONS: usize = 64;

/// Words the fake model treats as one concept (word, concept).
pub const CONCEPTS: &[(&str, &str)] = &[
    ("cat", "cat"),
    ("cats", "cat"),
    ("kitten", "cat"),
    ("kitty", "cat"),
    ("tabby", "cat"),
    ("feline", "cat"),
    ("猫", "cat"),
    ("ねこ", "cat"),
];

/// The unit vector of `text`: each word (lower-cased, punctuation trimmed) mapped through
/// [`CONCEPTS`] and hashed (FNV-1a) into one dimension; the empty text gives all zeros.
pub fn vector(text: &str) -> Vec<f32> {
    let mut v = vec![0f32; DIMENSIONS];
    for word in text.split_whitespace() {
        let word = word
            .trim_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase();
        if word.is_empty() {
            continue;
        }
        let concept = CONCEPTS
            .iter()
            .find(|(w, _)| *w == word)
            .map_or(word.as_str(), |(_, c)| c);
        let hash = concept.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        v[(hash % DIMENSIONS as u64) as usize] += 1.0;
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

/// The texts of an embedding request's `input` (a string or an array of strings).
pub fn inputs(body: &serde_json::Value) -> Option<Vec<String>> {
    match body.get("input")? {
        serde_json::Value::String(s) => Some(vec![s.clone()]),
        serde_json::Value::Array(items) => items
            .iter()
            .map(|i| i.as_str().map(str::to_owned))
            .collect(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn synonyms_meet_and_strangers_do_not() {
        assert!(cosine(&vector("my tabby"), &vector("a kitten?")) > 0.4);
        assert_eq!(vector("Kitten!"), vector("cat"));
        assert!(cosine(&vector("kitten"), &vector("mountain hiking")) < 0.1);
        assert_eq!(vector(""), vec![0.0; DIMENSIONS]);
    }
}
