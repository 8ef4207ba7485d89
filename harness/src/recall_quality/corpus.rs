//! The conversation, generated from a fixed seed: sessions over simulated months, each one
//! person's (on the console or `/api/chat`) or the group's (a LINE group of three), each
//! turn a line and the persona's reply and the write plan made of it; then the questions.
//! Every fact is said in an early session of its owner (or in the group), its correction
//! in a late one; small talk fills the rest.

use ghost_shared::events::Channel;

use super::facts::{Lang, FACTS, GROUP, PEOPLE};
use super::filler;

/// Simulated time of the first session (2026-01-01, Unix seconds).
pub const START: f64 = 1_767_225_600.0;
/// Simulated days the conversation spans.
pub const DAYS: f64 = 180.0;

/// What the write plan of a turn records.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    /// Nothing to remember (an annotation only).
    Nothing,
    /// A state filed from small talk.
    SmallTalk(String),
    /// Fact `i` of [`FACTS`].
    Fact(usize),
    /// The correction of fact `i`.
    Correction(usize),
}

/// One turn: a person's line, the persona's reply and the plan.
#[derive(Debug, Clone)]
pub struct Turn {
    /// Who spoke.
    pub speaker: &'static str,
    /// What they said.
    pub said: String,
    /// The persona's reply.
    pub reply: String,
    /// The plan made of the turn.
    pub plan: Plan,
}

/// One conversation.
#[derive(Debug, Clone)]
pub struct Session {
    /// Its id.
    pub id: String,
    /// The channel (LINE for the group).
    pub channel: Channel,
    /// Whether it is the group's.
    pub group: bool,
    /// When it happened (simulated Unix seconds).
    pub at: f64,
    /// Its turns, in order.
    pub turns: Vec<Turn>,
}

/// What a question tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// Shares words with the fact.
    Lexical,
    /// Shares no content word with it.
    Paraphrase,
    /// Asks for a corrected fact's newest form.
    Correction,
}

/// A question whose evidence is fact `fact` (its newest form for a correction).
#[derive(Debug, Clone)]
pub struct Question {
    /// Who asks (the fact's owner).
    pub asker: &'static str,
    /// The words.
    pub text: &'static str,
    /// Its language.
    pub lang: Lang,
    /// What it tests.
    pub kind: Kind,
    /// The fact asked about.
    pub fact: usize,
}

/// The whole conversation and the questions.
#[derive(Debug, Clone)]
pub struct Corpus {
    /// Sessions, oldest first.
    pub sessions: Vec<Session>,
    /// The questions, asked after the last session.
    pub questions: Vec<Question>,
    /// When the questions are asked (simulated).
    pub now: f64,
}

/// xorshift64*: reproducible from the seed, no dependency.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n.max(1)
    }
}

/// Who session `i` of `n` belongs to: `None` for the group (every tenth session). The
/// first and last few go round the people, so each has early and late sessions.
fn owner_of(i: usize, n: usize, rng: &mut Rng) -> Option<&'static str> {
    if i % 10 == 5 {
        return None;
    }
    if i < 8 || i + 8 >= n {
        return Some(PEOPLE[i % PEOPLE.len()]);
    }
    // The console's person talks most.
    Some(PEOPLE[[0, 0, 1, 2, 3][rng.below(5)]])
}

/// A small-talk turn by `speaker`.
fn small_talk(speaker: &'static str, rng: &mut Rng) -> Turn {
    let japanese = rng.below(4) == 0;
    let (said, body) = filler::line(japanese, &mut |n| rng.below(n));
    let replies = if japanese {
        filler::REPLIES_JA
    } else {
        filler::REPLIES_EN
    };
    Turn {
        speaker,
        said,
        reply: replies[rng.below(replies.len())].to_owned(),
        plan: body.map_or(Plan::Nothing, Plan::SmallTalk),
    }
}

/// The persona's reply to a fact: in the group it repeats it, naming whose it is (what it
/// says there carries that person's memory and must stay in the group).
fn fact_reply(group: bool, speaker: &str, body: &str, lang: Lang) -> String {
    match (group, lang) {
        (true, _) => format!("Noted, {speaker}: {body}."),
        (false, Lang::En) => "Thanks for telling me, I'll remember.".to_owned(),
        (false, Lang::Ja) => "覚えておくね。".to_owned(),
    }
}

/// The conversation of `sessions` sessions from `seed` (at least one session per fact and
/// correction is made room for).
pub fn generate(seed: u64, sessions: usize) -> Corpus {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let n = sessions.max(FACTS.len() * 2 + 10);
    let step = DAYS * 86_400.0 / n as f64;
    let mut out: Vec<Session> = (0..n)
        .map(|i| {
            let owner = owner_of(i, n, &mut rng);
            let at = START + i as f64 * step + rng.below(3_600) as f64;
            let turns = (0..3 + rng.below(5))
                .map(|_| {
                    let speaker = owner.unwrap_or_else(|| GROUP[rng.below(GROUP.len())]);
                    small_talk(speaker, &mut rng)
                })
                .collect();
            Session {
                id: format!("rq-{i:04}"),
                channel: if owner.is_some() {
                    Channel::Http
                } else {
                    Channel::Line
                },
                group: owner.is_none(),
                at,
                turns,
            }
        })
        .collect();
    // Facts into the first 60% of the sessions, corrections into the last 25%.
    let early = n * 6 / 10;
    let late = n * 3 / 4;
    for (i, f) in FACTS.iter().enumerate() {
        let fits = |s: &Session, from: usize, to: usize, k: usize| {
            (from..to).contains(&k)
                && (s.group == f.in_group)
                && (f.in_group || owner(s) == Some(f.owner))
        };
        place(
            &mut out,
            &mut rng,
            |s, k| fits(s, 0, early, k),
            Turn {
                speaker: f.owner,
                said: f.said.to_owned(),
                reply: fact_reply(f.in_group, f.owner, f.body, f.lang),
                plan: Plan::Fact(i),
            },
        );
        if let Some(c) = f.correction {
            // A correction is said to the persona alone.
            place(
                &mut out,
                &mut rng,
                |s, k| (late..n).contains(&k) && owner(s) == Some(f.owner),
                Turn {
                    speaker: f.owner,
                    said: c.said.to_owned(),
                    reply: fact_reply(false, f.owner, c.body, f.lang),
                    plan: Plan::Correction(i),
                },
            );
        }
    }
    let mut questions = Vec::new();
    for (i, f) in FACTS.iter().enumerate() {
        let ask = |text, kind| Question {
            asker: f.owner,
            text,
            lang: f.lang,
            kind,
            fact: i,
        };
        match f.correction {
            Some(c) => questions.push(ask(c.asked, Kind::Correction)),
            None => {
                questions.push(ask(f.asked, Kind::Lexical));
                questions.extend(f.paraphrase.map(|p| ask(p, Kind::Paraphrase)));
            }
        }
    }
    Corpus {
        now: START + DAYS * 86_400.0 + 3_600.0,
        sessions: out,
        questions,
    }
}

/// The one person of a session that is not the group's.
fn owner(s: &Session) -> Option<&'static str> {
    (!s.group)
        .then(|| s.turns.first().map(|t| t.speaker))
        .flatten()
}

/// Puts `turn` at a random place of a random session that `fits` (by session and index);
/// when none does, into a new session of its own at the end of the range.
fn place(out: &mut [Session], rng: &mut Rng, fits: impl Fn(&Session, usize) -> bool, turn: Turn) {
    let fitting: Vec<usize> = (0..out.len()).filter(|&k| fits(&out[k], k)).collect();
    assert!(!fitting.is_empty(), "no session fits {:?}", turn.said);
    let s = &mut out[fitting[rng.below(fitting.len())]];
    let at = rng.below(s.turns.len() + 1);
    s.turns.insert(at, turn);
}
