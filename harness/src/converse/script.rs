//! The conversation `ghost-harness converse` holds, as typed data: three people (Mina on
//! `/api/chat`; Ben and Haruto on LINE, each alone with the persona and together in one
//! group), eight simulated days, English and Japanese. Each planted [`Fact`] says who told
//! it, where and on which day, the message that carries it, the corrections that replace it
//! and the questions that ask it days later in other words; [`TALK`] is the small talk
//! around them. [`Script::build`] orders it all into the turns to send, day by day.
//!
//! Why data and not prose: the report scores recall against the exact message that carried a
//! fact, so the script has to know which turn that was.

use serde::Serialize;

/// Someone talking to the persona.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Who {
    /// English, over `/api/chat` (`user_id` `mina`).
    Mina,
    /// English, on LINE.
    Ben,
    /// Japanese, on LINE.
    Haruto,
}

impl Who {
    /// The speaker id Ghost knows them by (`/api/chat`'s `user_id`, or the LINE `userId`).
    pub fn speaker(self) -> &'static str {
        match self {
            Who::Mina => "mina",
            Who::Ben => "U0000000000000000000000000000be01",
            Who::Haruto => "U00000000000000000000000000a4a70",
        }
    }
}

/// Where a message is said.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Via {
    /// `POST /api/chat` (Mina's conversation).
    Chat,
    /// A LINE 1:1 chat with the persona.
    LineDirect,
    /// The LINE group of Ben and Haruto (the message mentions the bot).
    LineGroup,
}

/// The LINE group Ben and Haruto share.
pub const GROUP_ID: &str = "C0000000000000000000000000000g01";

/// The language of a fact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Lang {
    /// English.
    En,
    /// Japanese.
    Ja,
}

/// One message of the script at a day and place.
#[derive(Debug, Clone, Copy)]
pub struct Said {
    /// The simulated day (1 = the first).
    pub day: u32,
    /// Where.
    pub via: Via,
    /// What.
    pub text: &'static str,
}

/// A fact someone tells the persona, to be recalled later.
#[derive(Debug, Clone, Copy)]
pub struct Fact {
    /// Its id in the report.
    pub id: &'static str,
    /// Who told it (and who asks about it).
    pub who: Who,
    /// Its language.
    pub lang: Lang,
    /// The message that carries it.
    pub told: Said,
    /// A later message that replaces it ("actually we moved to Kyoto"), if any.
    pub corrected: Option<Said>,
    /// The questions that ask it, days later and in other words.
    pub asked: &'static [Said],
    /// Words a reply that names the fact contains (its newest form).
    pub answer: &'static [&'static str],
    /// Part of the short run (`--short`, the CI test).
    pub short: bool,
}

const fn said(day: u32, via: Via, text: &'static str) -> Said {
    Said { day, via, text }
}

use Via::{Chat, LineDirect, LineGroup};

/// The planted facts.
pub const FACTS: &[Fact] = &[
    Fact {
        id: "mina-sister-city",
        who: Who::Mina,
        lang: Lang::En,
        told: said(
            1,
            Chat,
            "My sister Emma moved to Lisbon last year, she teaches English there.",
        ),
        corrected: None,
        asked: &[
            said(4, Chat, "Which city is my sibling living in these days?"),
            said(8, Chat, "Where did Emma end up settling?"),
        ],
        answer: &["Lisbon"],
        short: true,
    },
    Fact {
        id: "mina-home",
        who: Who::Mina,
        lang: Lang::En,
        told: said(
            1,
            Chat,
            "We live in Osaka, in a small flat near the castle.",
        ),
        corrected: Some(said(
            3,
            Chat,
            "Actually we moved to Kyoto last weekend, the new flat is by the river.",
        )),
        asked: &[
            said(5, Chat, "Remind me, which town is our home in now?"),
            said(
                8,
                Chat,
                "If a parcel came for me, which city would it go to?",
            ),
        ],
        answer: &["Kyoto"],
        short: true,
    },
    Fact {
        id: "mina-allergy",
        who: Who::Mina,
        lang: Lang::En,
        told: said(2, Chat, "I am allergic to peanuts, so I never eat satay."),
        corrected: None,
        asked: &[said(6, Chat, "Is there any food I should stay away from?")],
        answer: &["peanut"],
        short: false,
    },
    Fact {
        id: "mina-dog",
        who: Who::Mina,
        lang: Lang::En,
        told: said(
            2,
            Chat,
            "Our corgi is called Biscuit and he is three years old.",
        ),
        corrected: None,
        asked: &[said(7, Chat, "What was the name of my dog again?")],
        answer: &["Biscuit"],
        short: false,
    },
    Fact {
        id: "ben-job",
        who: Who::Ben,
        lang: Lang::En,
        told: said(
            1,
            LineDirect,
            "I started a new job as a baker in Leeds, early mornings!",
        ),
        corrected: None,
        asked: &[
            said(5, LineDirect, "What do I do for a living now?"),
            said(8, LineDirect, "Which town do I work in?"),
        ],
        answer: &["baker", "Leeds"],
        short: false,
    },
    Fact {
        id: "ben-marathon",
        who: Who::Ben,
        lang: Lang::En,
        told: said(
            2,
            LineGroup,
            "I'm running the city marathon on the 14th of next month.",
        ),
        corrected: None,
        asked: &[said(6, LineGroup, "When is my big race happening?")],
        answer: &["14"],
        short: false,
    },
    Fact {
        id: "ben-band",
        who: Who::Ben,
        lang: Lang::En,
        told: said(3, LineDirect, "I play bass in a band called The Lanterns."),
        corrected: Some(said(
            5,
            LineDirect,
            "Actually the band renamed itself, we are Night Owls now.",
        )),
        asked: &[said(7, LineDirect, "What is my band called these days?")],
        answer: &["Night Owls"],
        short: false,
    },
    Fact {
        id: "haruto-cat",
        who: Who::Haruto,
        lang: Lang::Ja,
        told: said(
            1,
            LineDirect,
            "うちの猫の名前はモチです。白くて丸いんです。",
        ),
        corrected: None,
        asked: &[
            said(4, LineDirect, "僕のペットの名前、覚えてる？"),
            said(8, LineDirect, "うちの猫はなんて名前だっけ？"),
        ],
        answer: &["モチ"],
        short: false,
    },
    Fact {
        id: "haruto-hometown",
        who: Who::Haruto,
        lang: Lang::Ja,
        told: said(
            2,
            LineGroup,
            "僕の実家は札幌にあります。冬はとても寒いです。",
        ),
        corrected: None,
        asked: &[said(6, LineGroup, "僕の実家ってどこにあるんだっけ？")],
        answer: &["札幌"],
        short: true,
    },
    Fact {
        id: "haruto-work",
        who: Who::Haruto,
        lang: Lang::Ja,
        told: said(
            2,
            LineDirect,
            "来月から名古屋の会社で働くことになりました。",
        ),
        corrected: Some(said(4, LineDirect, "実は勤務地が福岡に変わりました。")),
        asked: &[said(7, LineDirect, "僕の新しい勤務地はどこだっけ？")],
        answer: &["福岡"],
        short: false,
    },
    Fact {
        id: "haruto-ramen",
        who: Who::Haruto,
        lang: Lang::Ja,
        told: said(3, LineDirect, "辛い味噌ラーメンが大好物です。"),
        corrected: None,
        asked: &[said(7, LineDirect, "僕の好きな食べ物は何でしょう？")],
        answer: &["ラーメン"],
        short: false,
    },
    Fact {
        id: "haruto-sister",
        who: Who::Haruto,
        lang: Lang::Ja,
        told: said(3, LineGroup, "妹は来年の春に大学を卒業します。"),
        corrected: None,
        asked: &[said(8, LineGroup, "僕の妹はいつ卒業するって言ったっけ？")],
        answer: &["春"],
        short: false,
    },
];

/// Small talk: who says it, and where, and when.
#[derive(Debug, Clone, Copy)]
pub struct Talk {
    /// Who.
    pub who: Who,
    /// When, where, what.
    pub said: Said,
    /// Part of the short run.
    pub short: bool,
}

const fn talk(who: Who, day: u32, via: Via, text: &'static str) -> Talk {
    Talk {
        who,
        said: said(day, via, text),
        short: false,
    }
}

/// The small talk around the facts.
pub const TALK: &[Talk] = &[
    talk(Who::Mina, 1, Chat, "Hello! How are you today?"),
    talk(Who::Ben, 1, LineDirect, "Hey Kuro, what's up?"),
    talk(
        Who::Haruto,
        1,
        LineDirect,
        "こんにちは！今日はいい天気ですね。",
    ),
    talk(
        Who::Mina,
        2,
        Chat,
        "The weather is lovely, I might go for a walk.",
    ),
    Talk {
        who: Who::Ben,
        said: said(
            2,
            LineGroup,
            "Morning everyone, anyone up for coffee later?",
        ),
        short: true,
    },
    talk(
        Who::Haruto,
        2,
        LineGroup,
        "おはようございます！コーヒーいいですね。",
    ),
    talk(
        Who::Ben,
        3,
        LineGroup,
        "That new film was fun, did you like it?",
    ),
    talk(
        Who::Mina,
        3,
        Chat,
        "Moving house is so tiring, I need a nap.",
    ),
    talk(Who::Haruto, 3, LineDirect, "最近ちょっと忙しいです。"),
    talk(Who::Ben, 4, LineDirect, "Long shift today, my feet hurt."),
    talk(Who::Mina, 4, Chat, "Do you like rainy days?"),
    talk(Who::Haruto, 4, LineGroup, "週末は何をする予定ですか？"),
    talk(
        Who::Ben,
        4,
        LineGroup,
        "I'll probably just rest this weekend.",
    ),
    talk(
        Who::Mina,
        5,
        Chat,
        "I tried a new tea shop today, very calm place.",
    ),
    talk(Who::Haruto, 5, LineDirect, "今日は雨でした。"),
    talk(
        Who::Ben,
        5,
        LineGroup,
        "Anyone watching the football tonight?",
    ),
    talk(Who::Mina, 6, Chat, "Tell me something cheerful, please."),
    talk(Who::Haruto, 6, LineDirect, "おすすめの本はありますか？"),
    talk(Who::Ben, 6, LineDirect, "Thanks for listening yesterday."),
    talk(Who::Mina, 7, Chat, "I'm thinking of learning to draw."),
    talk(Who::Haruto, 7, LineGroup, "みんな元気？"),
    talk(Who::Ben, 7, LineGroup, "All good here, busy week though."),
    talk(Who::Mina, 5, Chat, "What should I cook for dinner tonight?"),
    talk(Who::Ben, 3, LineDirect, "Do you ever get bored?"),
    talk(Who::Haruto, 5, LineGroup, "今日のランチはカレーでした。"),
    talk(
        Who::Mina,
        6,
        Chat,
        "My neighbour's garden is full of sunflowers.",
    ),
    talk(Who::Ben, 7, LineDirect, "Got any tips for sleeping better?"),
    talk(
        Who::Haruto,
        7,
        LineDirect,
        "明日は早起きしないといけません。",
    ),
    talk(Who::Mina, 8, Chat, "Good morning! Last day of my holiday."),
    talk(Who::Haruto, 8, LineDirect, "また明日話しましょう。"),
    talk(Who::Ben, 8, LineDirect, "Catch you later, Kuro."),
];

/// What a turn is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Purpose {
    /// Carries a fact.
    Tell {
        /// The fact.
        fact: &'static str,
    },
    /// Replaces a fact's earlier form.
    Correct {
        /// The fact.
        fact: &'static str,
    },
    /// Asks a fact.
    Ask {
        /// The fact.
        fact: &'static str,
    },
    /// Small talk.
    Talk,
}

/// One message to send.
#[derive(Debug, Clone, Copy)]
pub struct Turn {
    /// Who says it.
    pub who: Who,
    /// When, where, what.
    pub said: Said,
    /// Why it is in the script.
    pub purpose: Purpose,
}

/// The turns of one run and the facts they plant.
#[derive(Debug, Clone)]
pub struct Script {
    /// In the order they are sent (by day).
    pub turns: Vec<Turn>,
    /// The facts planted.
    pub facts: Vec<&'static Fact>,
}

impl Script {
    /// The whole script, or the short one (the facts and talk marked `short`, each fact
    /// asked once).
    pub fn build(short: bool) -> Script {
        let facts: Vec<&'static Fact> = FACTS.iter().filter(|f| f.short || !short).collect();
        // Within a day: what is told, then small talk, then corrections, then questions.
        let mut keyed: Vec<(u32, u8, Turn)> = Vec::new();
        for f in &facts {
            let turn = |said: Said, purpose| Turn {
                who: f.who,
                said,
                purpose,
            };
            keyed.push((f.told.day, 0, turn(f.told, Purpose::Tell { fact: f.id })));
            if let Some(c) = f.corrected {
                keyed.push((c.day, 2, turn(c, Purpose::Correct { fact: f.id })));
            }
            let asked = if short { &f.asked[..1] } else { f.asked };
            for q in asked {
                keyed.push((q.day, 3, turn(*q, Purpose::Ask { fact: f.id })));
            }
        }
        for t in TALK.iter().filter(|t| t.short || !short) {
            let turn = Turn {
                who: t.who,
                said: t.said,
                purpose: Purpose::Talk,
            };
            keyed.push((t.said.day, 1, turn));
        }
        keyed.sort_by_key(|(day, order, _)| (*day, *order));
        Script {
            turns: keyed.into_iter().map(|(_, _, t)| t).collect(),
            facts,
        }
    }

    /// The first and last day.
    pub fn days(&self) -> (u32, u32) {
        let days = self.turns.iter().map(|t| t.said.day);
        (days.clone().min().unwrap_or(1), days.max().unwrap_or(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_full_script_is_long_enough_and_every_fact_is_asked_later() {
        let s = Script::build(false);
        assert!(s.turns.len() >= 60, "{} turns", s.turns.len());
        let (first, last) = s.days();
        assert!(last - first >= 7);
        for f in FACTS {
            assert!(f.asked.iter().all(|q| q.day > f.told.day), "{}", f.id);
            if let Some(c) = f.corrected {
                assert!(c.day > f.told.day && f.asked.iter().all(|q| q.day > c.day));
            }
        }
        let short = Script::build(true);
        assert!(short.turns.len() < s.turns.len());
        assert!(short.facts.iter().any(|f| f.corrected.is_some()));
        assert!(short.turns.iter().any(|t| t.said.via == Via::LineGroup));
    }
}
