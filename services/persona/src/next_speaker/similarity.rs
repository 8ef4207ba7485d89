//! Ratcliff/Obershelp similarity with the exact numbers of Python's
//! `difflib.SequenceMatcher(None, a, b).ratio()`, including its "autojunk" heuristic.
//!
//! The seed names `difflib.get_close_matches(word, possibilities, cutoff=0.85)`; there `b` is the
//! nominated word and `a` each possibility, and since the ratio is not symmetric in general
//! (matching blocks depend on which side is `b`, and autojunk only looks at `b`) the resolver
//! keeps that orientation.

use std::collections::HashMap;

/// Length from which difflib's autojunk treats frequent characters of `b` as "popular".
const AUTOJUNK_MIN_LEN: usize = 200;

/// Python's `SequenceMatcher(None, a, b).ratio()` over Unicode code points (`1.0` for two empty strings).
pub fn sequence_ratio(a: &str, b: &str) -> f64 {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    Matcher::default().ratio(&a, &b)
}

/// difflib's `real_quick_ratio()`: an upper bound of `ratio()` from the lengths alone, used to
/// skip candidates that cannot reach the cutoff (get_close_matches does the same).
pub(crate) fn real_quick_ratio(la: usize, lb: usize) -> f64 {
    calculate_ratio(la.min(lb), la + lb)
}

/// difflib's `quick_ratio()`: an upper bound of `ratio()` from the multiset intersection of
/// the characters, the second filter of get_close_matches.
pub(crate) fn quick_ratio(a: &[char], b: &[char]) -> f64 {
    let matches = if b.len() <= 64 {
        // Short names: mark used characters of b in a bitmask instead of building a map.
        let mut used = 0u64;
        a.iter()
            .filter(|&&c| {
                let free = b
                    .iter()
                    .enumerate()
                    .find(|&(j, &bc)| bc == c && used & (1u64 << j) == 0);
                free.map(|(j, _)| used |= 1u64 << j).is_some()
            })
            .count()
    } else {
        let mut avail: HashMap<char, usize> = HashMap::new();
        for &c in b {
            *avail.entry(c).or_insert(0) += 1;
        }
        a.iter()
            .filter(|c| match avail.get_mut(c) {
                Some(n) if *n > 0 => {
                    *n -= 1;
                    true
                }
                _ => false,
            })
            .count()
    };
    calculate_ratio(matches, a.len() + b.len())
}

/// difflib's `_calculate_ratio`: `2.0 * matches / length`, or 1.0 for two empty sequences.
fn calculate_ratio(matches: usize, length: usize) -> f64 {
    if length == 0 {
        return 1.0;
    }
    2.0 * matches as f64 / length as f64
}

/// Reusable buffers for `ratio()`, so matching one word against several names allocates once.
#[derive(Debug, Default)]
pub(crate) struct Matcher {
    /// DP rows indexed by j + 1, so that "the run ending at j - 1" is `row[j]`.
    prev: Vec<usize>,
    cur: Vec<usize>,
    /// Pending (alo, ahi, blo, bhi) ranges of get_matching_blocks.
    queue: Vec<(usize, usize, usize, usize)>,
    /// Per position of b: dropped from b2j by autojunk (empty when b is shorter than 200).
    popular: Vec<bool>,
}

impl Matcher {
    /// `SequenceMatcher(None, a, b).ratio()` over pre-split code points.
    pub(crate) fn ratio(&mut self, a: &[char], b: &[char]) -> f64 {
        let matches = self.matching_chars(a, b);
        calculate_ratio(matches, a.len() + b.len())
    }

    /// Sum of the sizes of difflib's matching blocks (`get_matching_blocks`); the order in
    /// which ranges are visited does not change the sum, so no sorting or merging is needed.
    fn matching_chars(&mut self, a: &[char], b: &[char]) -> usize {
        if a.is_empty() || b.is_empty() {
            return 0;
        }
        self.fill_popular(b);
        self.prev.clear();
        self.prev.resize(b.len() + 1, 0);
        self.cur.clear();
        self.cur.resize(b.len() + 1, 0);
        self.queue.clear();
        self.queue.push((0, a.len(), 0, b.len()));
        let mut total = 0usize;
        while let Some((alo, ahi, blo, bhi)) = self.queue.pop() {
            let (i, j, k) = self.find_longest_match(a, b, (alo, ahi, blo, bhi));
            if k > 0 {
                total += k;
                if alo < i && blo < j {
                    self.queue.push((alo, i, blo, j));
                }
                if i + k < ahi && j + k < bhi {
                    self.queue.push((i + k, ahi, j + k, bhi));
                }
            }
        }
        total
    }

    /// difflib's autojunk: only when `len(b) >= 200`, characters occurring more than
    /// `len(b) // 100 + 1` times may not seed a block.
    fn fill_popular(&mut self, b: &[char]) {
        self.popular.clear();
        if b.len() < AUTOJUNK_MIN_LEN {
            return;
        }
        let ntest = b.len() / 100 + 1;
        let mut counts: HashMap<char, usize> = HashMap::new();
        for &c in b {
            *counts.entry(c).or_insert(0) += 1;
        }
        self.popular
            .extend(b.iter().map(|c| counts.get(c).is_some_and(|&n| n > ntest)));
    }

    /// difflib's `find_longest_match` with `isjunk=None`: the longest block of non-popular
    /// characters (earliest in `a`, then earliest in `b`), then extended over equal
    /// neighbours, which may be popular characters since only true junk stops that extension.
    fn find_longest_match(
        &mut self,
        a: &[char],
        b: &[char],
        (alo, ahi, blo, bhi): (usize, usize, usize, usize),
    ) -> (usize, usize, usize) {
        let (mut besti, mut bestj, mut bestsize) = (alo, blo, 0usize);
        for slot in self.prev.iter_mut().take(bhi + 1).skip(blo) {
            *slot = 0;
        }
        for (i, &ai) in a.iter().enumerate().take(ahi).skip(alo) {
            if let Some(slot) = self.cur.get_mut(blo) {
                *slot = 0;
            }
            for j in blo..bhi {
                let matched =
                    b.get(j) == Some(&ai) && !self.popular.get(j).copied().unwrap_or(false);
                let k = if matched {
                    self.prev.get(j).copied().unwrap_or(0) + 1
                } else {
                    0
                };
                if let Some(slot) = self.cur.get_mut(j + 1) {
                    *slot = k;
                }
                if k > bestsize {
                    besti = i + 1 - k;
                    bestj = j + 1 - k;
                    bestsize = k;
                }
            }
            std::mem::swap(&mut self.prev, &mut self.cur);
        }
        // Extend backwards and forwards over equal characters (bjunk is empty without isjunk).
        while besti > alo && bestj > blo && a.get(besti - 1) == b.get(bestj - 1) {
            besti -= 1;
            bestj -= 1;
            bestsize += 1;
        }
        while besti + bestsize < ahi
            && bestj + bestsize < bhi
            && a.get(besti + bestsize) == b.get(bestj + bestsize)
        {
            bestsize += 1;
        }
        (besti, bestj, bestsize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(x: f64, y: f64) -> bool {
        (x - y).abs() < 1e-12
    }

    // Values derived by hand from difflib's algorithm (and cross-checked with CPython 3):
    // - "abcd" vs "bcde": longest block "bcd" (3); the leftovers "a" / "" and "" / "e" hold
    //   nothing -> M = 3, ratio = 2*3/8 = 0.75.
    // - "CLARIS" vs "CLARISS": block "CLARIS" (6) -> 12/13 = 0.923076923...
    // - "LUMINA" vs "CLARISS": no block longer than 1; the first one found is "L" (a[0], b[1]),
    //   then on the right "UMINA" / "ARISS" the earliest single match in a is "I" (a[3], b[4]),
    //   after which "NA" / "SS" and "UM" / "AR" share nothing -> M = 2, 4/13.
    // - "abxcd" vs "abcd": "ab" then "cd" -> M = 4, 8/9.
    // - "" vs "": 1.0 by definition; "" vs "x": 0.0.
    // - "ルミナ" vs "ルミナ♪": 6/7 = 0.857142... (passes the 0.85 cutoff).
    #[test]
    fn ratio_matches_python_difflib_for_short_strings() {
        assert!(close(sequence_ratio("abcd", "bcde"), 0.75));
        assert!(close(sequence_ratio("CLARIS", "CLARISS"), 12.0 / 13.0));
        assert!(close(sequence_ratio("LUMINA", "CLARISS"), 4.0 / 13.0));
        assert!(close(sequence_ratio("abxcd", "abcd"), 8.0 / 9.0));
        assert!(close(sequence_ratio("", ""), 1.0));
        assert!(close(sequence_ratio("", "x"), 0.0));
        assert!(close(sequence_ratio("ルミナ", "ルミナ♪"), 6.0 / 7.0));
    }

    // Ratcliff/Obershelp is greedy, not a longest common subsequence: in "abcXYZ" vs "XYZabc"
    // the first longest block is "abc" (earliest in a: a[0], b[3]); that leaves "" / "XYZ" on
    // the left and "XYZ" / "" on the right, so "XYZ" is never counted: M = 3, 6/12 = 0.5.
    // "qabxcabc" vs "abcqab": the earliest 3-block in a is "qab" (a[0], b[3]), leaving nothing
    // usable on either side -> M = 3, 6/14 (an LCS would find "abcab" = 5).
    #[test]
    fn ratio_is_greedy_like_difflib() {
        assert!(close(sequence_ratio("abcXYZ", "XYZabc"), 0.5));
        assert!(close(sequence_ratio("qabxcabc", "abcqab"), 6.0 / 14.0));
    }

    #[test]
    fn ratio_cross_checked_table() {
        // (a, b, ratio) from CPython's difflib.SequenceMatcher(None, a, b).ratio().
        // "ノクス" vs "ノックス": block "クス", then "ノ" on the left -> 6/7.
        // "CLARIS" vs "CRALIS": the only 2-block is "IS" (a[4], b[4]); on its left "CLAR" /
        // "CRAL" yields "C" (earliest in a), then "LAR" / "RAL" yields "L" -> M = 4, 8/12.
        let table: &[(&str, &str, f64)] = &[
            ("ab", "ba", 0.5),
            ("aab", "aba", 2.0 * 2.0 / 6.0),
            ("aba", "aab", 2.0 * 2.0 / 6.0),
            ("NOX", "NOXX", 6.0 / 7.0),
            ("ノクス", "ノックス", 6.0 / 7.0),
            ("CLARIS", "CRALIS", 8.0 / 12.0),
        ];
        for &(a, b, want) in table {
            let got = sequence_ratio(a, b);
            assert!(close(got, want), "ratio({a:?}, {b:?}) = {got}, want {want}");
        }
    }

    // Autojunk: with len(b) >= 200, characters of b occurring more than len(b)//100 + 1 times
    // cannot seed a block. b = "x" * 200 makes "x" popular (200 > 3). For a = "xx" no block
    // is seeded, but difflib still extends forward from (alo, blo) = (0, 0) over equal
    // characters, giving "xx" -> M = 2, 4/202. For a = "yxx" that extension stops at once
    // ('y' != 'x') -> M = 0. With b one character shorter (199, no autojunk) "yxx" finds "xx".
    #[test]
    fn ratio_applies_autojunk_to_long_b() {
        let b = "x".repeat(200);
        assert!(close(sequence_ratio("xx", &b), 4.0 / 202.0));
        assert!(close(sequence_ratio("yxx", &b), 0.0));
        let short = "x".repeat(199);
        assert!(close(sequence_ratio("yxx", &short), 4.0 / 202.0));
    }

    #[test]
    fn quick_ratio_counts_the_multiset_intersection() {
        let chars = |s: &str| s.chars().collect::<Vec<char>>();
        // LUMINA / CLARISS share L, I, A -> 6/13 (difflib: quick_ratio() = 0.4615...).
        assert!(close(
            quick_ratio(&chars("LUMINA"), &chars("CLARISS")),
            6.0 / 13.0
        ));
        // Each occurrence is used once: "aab" / "abb" share one "a" and one "b" -> 4/6.
        assert!(close(quick_ratio(&chars("aab"), &chars("abb")), 4.0 / 6.0));
        let long: Vec<char> = "ab".repeat(40).chars().collect();
        assert!(close(quick_ratio(&chars("aaz"), &long), 4.0 / 83.0));
        assert!(
            quick_ratio(&chars("CLARIS"), &chars("CLARISS")) >= sequence_ratio("CLARIS", "CLARISS")
        );
    }

    #[test]
    fn real_quick_ratio_bounds_ratio() {
        assert!(real_quick_ratio(6, 7) >= sequence_ratio("CLARIS", "CLARISS"));
        assert!(close(real_quick_ratio(0, 0), 1.0));
        assert!(close(real_quick_ratio(1, 3), 0.5));
    }
}
