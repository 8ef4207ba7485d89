//! The facts the seeded conversation plants, each with the questions that should recall it.
//! Written so the measure means something: several people hold facts on the same subjects
//! (tea, pets, cities), so another person's memory is always a close match; every English
//! fact has a paraphrase question sharing no content word with it (only meaning can find
//! it); some facts are corrected later, so an old form competes with the new one.

/// The language a fact is said in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Lang {
    /// English (the embedding model's language).
    En,
    /// Japanese (trigram recall only, in effect).
    Ja,
}

/// A later correction of a fact.
#[derive(Debug, Clone, Copy)]
pub struct Correction {
    /// What the person says to correct it.
    pub said: &'static str,
    /// The state's new body.
    pub body: &'static str,
    /// The question whose answer is the new form.
    pub asked: &'static str,
    /// Whether the plan closes the old state and files a new one (else it revises it).
    pub replaces: bool,
}

/// One fact a person tells the persona.
#[derive(Debug, Clone, Copy)]
pub struct Fact {
    /// Who says it (and whose memory it is).
    pub owner: &'static str,
    /// Its language.
    pub lang: Lang,
    /// Said in the group conversation (else in one of the owner's own).
    pub in_group: bool,
    /// The line the person says.
    pub said: &'static str,
    /// The state the write plan files (the persona's view).
    pub body: &'static str,
    /// The state's topic and the utterance's annotated entity.
    pub topic: &'static str,
    /// A preference the plan confirms: (domain, polarity, subject).
    pub preference: Option<(&'static str, &'static str, &'static str)>,
    /// The year the line is about (the plan annotates it).
    pub year: Option<i32>,
    /// A question sharing words with the fact.
    pub asked: &'static str,
    /// A question sharing no content word with it (English only).
    pub paraphrase: Option<&'static str>,
    /// A later correction.
    pub correction: Option<Correction>,
}

const fn fact(
    owner: &'static str,
    said: &'static str,
    body: &'static str,
    topic: &'static str,
    asked: &'static str,
) -> Fact {
    Fact {
        owner,
        lang: Lang::En,
        in_group: false,
        said,
        body,
        topic,
        preference: None,
        year: None,
        asked,
        paraphrase: None,
        correction: None,
    }
}

impl Fact {
    const fn ja(mut self) -> Self {
        self.lang = Lang::Ja;
        self
    }
    const fn group(mut self) -> Self {
        self.in_group = true;
        self
    }
    const fn likes(
        mut self,
        domain: &'static str,
        polarity: &'static str,
        subject: &'static str,
    ) -> Self {
        self.preference = Some((domain, polarity, subject));
        self
    }
    const fn about(mut self, year: i32) -> Self {
        self.year = Some(year);
        self
    }
    const fn or(mut self, paraphrase: &'static str) -> Self {
        self.paraphrase = Some(paraphrase);
        self
    }
    const fn corrected(
        mut self,
        said: &'static str,
        body: &'static str,
        asked: &'static str,
        replaces: bool,
    ) -> Self {
        self.correction = Some(Correction {
            said,
            body,
            asked,
            replaces,
        });
        self
    }
}

/// The people: the console's default person and three who also share a LINE group.
pub const PEOPLE: [&str; 4] = [ghost_shared::memory::DEFAULT_PERSON, "ann", "ben", "cho"];
/// The people in the group conversation.
pub const GROUP: [&str; 3] = ["ann", "ben", "cho"];

/// Every planted fact.
pub const FACTS: &[Fact] = &[
    // The default person (the console).
    fact(
        "user",
        "I love green tea, I make a whole pot every morning.",
        "They make a pot of green tea every morning",
        "green tea",
        "Which tea do I make every morning?",
    )
    .likes("food", "like", "green tea")
    .or("What do I like to drink when I wake up?"),
    fact(
        "user",
        "My sister Mika works as a nurse in Nagoya.",
        "Their sister Mika is a nurse in Nagoya",
        "Mika",
        "What does my sister Mika do in Nagoya?",
    )
    .or("Which of my siblings has a hospital job?"),
    fact(
        "user",
        "I'm training for the Tokyo marathon in March.",
        "They are training for the Tokyo marathon in March",
        "marathon",
        "How is my marathon training going?",
    )
    .corrected(
        "The marathon got postponed, it's in October now.",
        "They are training for the Tokyo marathon, postponed to October",
        "When is the marathon I'm training for now?",
        false,
    ),
    fact(
        "user",
        "I'm allergic to peanuts, even a little is dangerous.",
        "They are allergic to peanuts",
        "peanuts",
        "Do you remember my peanut allergy?",
    )
    .likes("food", "dislike", "peanuts")
    .or("Is there a food that could put me in hospital?"),
    fact(
        "user",
        "In 2019 I lived in Sapporo for a whole year.",
        "They lived in Sapporo during 2019",
        "Sapporo",
        "Where did I live in 2019?",
    )
    .about(2019),
    fact(
        "user",
        "猫のミケを十年飼っている。",
        "マスターは猫のミケを十年飼っている",
        "ミケ",
        "ミケのこと覚えてる？",
    )
    .ja(),
    fact(
        "user",
        "毎週土曜日にヨガ教室に通っている。",
        "マスターは毎週土曜日にヨガ教室に通っている",
        "ヨガ",
        "土曜日の習い事、覚えてる？",
    )
    .ja(),
    // Ann.
    fact(
        "ann",
        "I can't stand green tea, I drink espresso all day.",
        "They dislike green tea and drink espresso all day",
        "espresso",
        "Do you remember how much espresso I drink?",
    )
    .likes("food", "dislike", "green tea")
    .or("What's my usual caffeine fix?")
    .corrected(
        "My doctor told me to quit espresso, it's decaf only now.",
        "They quit espresso on their doctor's advice and drink decaf",
        "What coffee am I allowed these days?",
        true,
    ),
    fact(
        "ann",
        "I work as a carpenter, mostly building furniture.",
        "They are a carpenter who builds furniture",
        "carpentry",
        "Do you remember what I build at work?",
    )
    .or("What's my profession?"),
    fact(
        "ann",
        "I moved to Sendai last spring.",
        "They live in Sendai",
        "Sendai",
        "Do you remember when I moved to Sendai?",
    )
    .corrected(
        "We moved again, we live in Fukuoka now.",
        "They moved from Sendai and live in Fukuoka now",
        "Which city do I live in now?",
        false,
    ),
    fact(
        "ann",
        "My daughter Sora starts elementary school in April.",
        "Their daughter Sora starts elementary school in April",
        "Sora",
        "When does Sora start elementary school?",
    )
    .group()
    .or("What big step is my kid taking this spring?"),
    fact(
        "ann",
        "辛いラーメンが大好きで、毎週食べている。",
        "アンは辛いラーメンが大好きで毎週食べる",
        "ラーメン",
        "ラーメンの好み、覚えてる？",
    )
    .ja()
    .likes("food", "like", "ラーメン"),
    // Ben.
    fact(
        "ben",
        "I adore matcha, I whisk a bowl every afternoon.",
        "They whisk a bowl of matcha every afternoon",
        "matcha",
        "Do you remember when I whisk my matcha?",
    )
    .likes("food", "like", "matcha")
    .or("What's my favourite thing to sip after lunch?"),
    fact(
        "ben",
        "I play bass guitar in a jazz band on Fridays.",
        "They play bass guitar in a jazz band on Fridays",
        "jazz",
        "When does my jazz band play?",
    )
    .group()
    .or("What instrument do I perform with?"),
    fact(
        "ben",
        "My dog Pochi is a shiba inu.",
        "Their dog Pochi is a shiba inu",
        "Pochi",
        "Do you remember my dog Pochi?",
    )
    .or("What kind of pet do I have at home?")
    .corrected(
        "I had it wrong, Pochi is an akita, the breeder checked.",
        "Their dog Pochi is an akita, not a shiba",
        "What breed is my dog Pochi?",
        false,
    ),
    fact(
        "ben",
        "I'm allergic to cats, I sneeze all day near them.",
        "They are allergic to cats",
        "cats",
        "Do you remember my cat allergy?",
    )
    .group()
    .or("Which animals make me ill?"),
    fact(
        "ben",
        "趣味は釣りで、毎月琵琶湖に行く。",
        "ベンは毎月琵琶湖へ釣りに行く",
        "釣り",
        "琵琶湖の話、覚えてる？",
    )
    .ja(),
    // Cho.
    fact(
        "cho",
        "I'm vegetarian, I haven't eaten meat in years.",
        "They are vegetarian and eat no meat",
        "vegetarian",
        "Do you remember that I'm vegetarian?",
    )
    .likes("food", "dislike", "meat")
    .or("Is there anything I refuse to eat?"),
    fact(
        "cho",
        "I'm learning Korean for my trip to Seoul.",
        "They are learning Korean for a trip to Seoul",
        "Korean",
        "Why am I learning Korean?",
    )
    .or("Which foreign language am I studying?")
    .corrected(
        "The trip changed, I'm going to Busan instead of Seoul.",
        "They are learning Korean for a trip to Busan, not Seoul",
        "Which city am I visiting on my trip now?",
        true,
    ),
    fact(
        "cho",
        "My favourite band is Radiohead, I've seen them live twice.",
        "Their favourite band is Radiohead",
        "Radiohead",
        "Do you remember my favourite band?",
    )
    .group()
    .likes("topic", "like", "Radiohead")
    .or("Which musicians do I love most?"),
    fact(
        "cho",
        "I grow tomatoes and basil on my balcony.",
        "They grow tomatoes and basil on their balcony",
        "balcony garden",
        "What do I grow on my balcony?",
    )
    .or("Which plants am I raising at home?"),
    fact(
        "cho",
        "来月、京都で茶道の体験をする予定。",
        "チョウは来月京都で茶道を体験する",
        "茶道",
        "茶道の予定、覚えてる？",
    )
    .ja(),
];
