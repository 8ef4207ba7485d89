//! The everyday lines between the facts: most of a long conversation is small talk, and a
//! write plan files some of it as states too, so a person's memory holds far more than the
//! facts asked about (recency alone cannot reach an old fact). Lines are drawn from
//! templates with varied slots, so no two sessions repeat each other word for word.

/// A line template: `{}` is replaced by a slot word; the state the plan files, if any.
struct Template {
    said: &'static str,
    body: Option<&'static str>,
    slots: &'static [&'static str],
}

const ANIMALS: &[&str] = &[
    "whales",
    "octopuses",
    "wolves",
    "penguins",
    "bees",
    "owls",
    "elephants",
    "sharks",
];
const PROJECTS: &[&str] = &[
    "billing",
    "migration",
    "launch",
    "audit",
    "redesign",
    "hiring",
];
const THINGS: &[&str] = &[
    "faucet", "shelf", "blender", "lamp", "drawer", "kettle", "toaster", "umbrella", "backpack",
    "keyboard",
];
const CITIES: &[&str] = &["Osaka", "Kyoto", "Nara", "Kobe", "Yokohama", "Hiroshima"];
const STORIES: &[&str] = &[
    "pirates",
    "astronauts",
    "chess",
    "volcanoes",
    "detectives",
    "samurai",
    "robots",
];
const PLACES: &[&str] = &["river", "station", "park", "harbor", "library", "mall"];
const DISHES: &[&str] = &[
    "lentils",
    "salmon",
    "mushrooms",
    "eggplant",
    "tofu",
    "pumpkin",
    "shrimp",
];

const ENGLISH: &[Template] = &[
    Template {
        said: "I watched a documentary about {} last night.",
        body: Some("They watched a documentary about {}"),
        slots: ANIMALS,
    },
    Template {
        said: "Work was busy, three meetings about the {} project.",
        body: Some("They have meetings about the {} project"),
        slots: PROJECTS,
    },
    Template {
        said: "I finally fixed the {} in the kitchen.",
        body: Some("They fixed the {} in the kitchen"),
        slots: THINGS,
    },
    Template {
        said: "The weather in {} was awful this weekend.",
        body: None,
        slots: CITIES,
    },
    Template {
        said: "I'm reading a novel about {}.",
        body: Some("They are reading a novel about {}"),
        slots: STORIES,
    },
    Template {
        said: "My coworker keeps talking about {}.",
        body: None,
        slots: STORIES,
    },
    Template {
        said: "I bought a new {} online.",
        body: Some("They bought a new {}"),
        slots: THINGS,
    },
    Template {
        said: "Traffic was terrible on the way to the {}.",
        body: None,
        slots: PLACES,
    },
    Template {
        said: "I tried a recipe with {} tonight.",
        body: Some("They cooked a recipe with {}"),
        slots: DISHES,
    },
    Template {
        said: "I might visit {} next month.",
        body: Some("They might visit {} next month"),
        slots: CITIES,
    },
    Template {
        said: "Had a long walk by the {} this morning.",
        body: None,
        slots: PLACES,
    },
    Template {
        said: "My neighbour's kid is obsessed with {}.",
        body: None,
        slots: ANIMALS,
    },
];

const JA_PLACES: &[&str] = &["公園", "図書館", "駅前", "川沿い", "商店街"];
const JA_THINGS: &[&str] = &["冷蔵庫", "電子レンジ", "掃除機", "スマートフォン", "自転車"];
const JA_WORK: &[&str] = &["予算", "会議", "企画書", "報告書"];
const JA_DISHES: &[&str] = &["カレーライス", "ハンバーグ", "肉じゃが", "オムライス"];

const JAPANESE: &[Template] = &[
    Template {
        said: "今日は{}まで散歩した。",
        body: Some("マスターは{}まで散歩した"),
        slots: JA_PLACES,
    },
    Template {
        said: "最近{}を買い替えた。",
        body: Some("マスターは{}を買い替えた"),
        slots: JA_THINGS,
    },
    Template {
        said: "仕事で{}の資料を作っていた。",
        body: None,
        slots: JA_WORK,
    },
    Template {
        said: "{}を作ってみたよ。",
        body: Some("マスターは{}を作った"),
        slots: JA_DISHES,
    },
    Template {
        said: "週末は{}で雨宿りしてた。",
        body: None,
        slots: JA_PLACES,
    },
];

/// The persona's replies to small talk.
pub const REPLIES_EN: &[&str] = &[
    "That sounds nice.",
    "I see, tell me more.",
    "I'll keep that in mind.",
    "Oh, how did it go?",
    "Got it.",
];
/// The same in Japanese.
pub const REPLIES_JA: &[&str] = &[
    "そうなんだ。",
    "いいね！",
    "覚えておくね。",
    "大変だったね。",
];

/// One line of small talk: what is said and the state filed from it, if any.
pub fn line(japanese: bool, pick: &mut impl FnMut(usize) -> usize) -> (String, Option<String>) {
    let templates = if japanese { JAPANESE } else { ENGLISH };
    let t = &templates[pick(templates.len())];
    let slot = t.slots[pick(t.slots.len())];
    (
        t.said.replace("{}", slot),
        t.body.map(|b| b.replace("{}", slot)),
    )
}
