//! The closed vocabularies of memory (seed 001, CocoroGhost's WritePlan shape): each is an
//! enum that serialises as its snake_case name and parses only a listed value.

use serde::{Deserialize, Serialize};

/// Defines a vocabulary enum with `as_str`, `parse` and `NAMES`.
macro_rules! vocab {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum $name {
            $($(#[$vdoc])* $variant),+
        }

        impl $name {
            /// Every listed value, as written in JSON.
            pub const NAMES: &'static [&'static str] = &[$($text),+];

            /// The value as written in JSON.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $text),+
                }
            }

            /// The value named `text`, if it is listed.
            pub fn parse(text: &str) -> Option<Self> {
                match text {
                    $($text => Some(Self::$variant),)+
                    _ => None,
                }
            }
        }
    };
}

vocab!(
    /// What a state holds.
    StateKind {
        /// Something true about the world or the user.
        Fact => "fact",
        /// How two people or things relate.
        Relation => "relation",
        /// Something to do (the only kind `mark_done` applies to).
        Task => "task",
        /// A summary of a person, topic, period or thread.
        Summary => "summary",
        /// The persona's long mood.
        LongMoodState => "long_mood_state",
    }
);

vocab!(
    /// Whom a new state is about (memory is per person: issue 35).
    StateAbout {
        /// The person who spoke in this turn (the default).
        Speaker => "speaker",
        /// No one in particular: the persona's own plans and moods, the world.
        Nobody => "nobody",
    }
);

vocab!(
    /// What a state update does.
    StateOp {
        /// Create a state (no `state_id`) or add a revision to one.
        Upsert => "upsert",
        /// End a state's validity.
        Close => "close",
        /// Mark a task done.
        MarkDone => "mark_done",
    }
);

vocab!(
    /// Where a state stands.
    StateStatus {
        /// Valid now.
        Active => "active",
        /// Closed (its validity ended).
        Closed => "closed",
        /// A task marked done.
        Done => "done",
    }
);

vocab!(
    /// What a preference is about.
    PreferenceDomain {
        /// Food and drink.
        Food => "food",
        /// Topics of conversation, hobbies.
        Topic => "topic",
        /// How the user wants to be talked to.
        Style => "style",
    }
);

vocab!(
    /// Like or dislike.
    Polarity {
        /// The user likes it.
        Like => "like",
        /// The user dislikes it.
        Dislike => "dislike",
    }
);

impl Polarity {
    /// The other polarity.
    pub fn opposite(self) -> Self {
        match self {
            Self::Like => Self::Dislike,
            Self::Dislike => Self::Like,
        }
    }
}

vocab!(
    /// What a preference update does.
    PreferenceOp {
        /// Note a possible preference (never demotes a confirmed one).
        UpsertCandidate => "upsert_candidate",
        /// Confirm it (revokes a confirmed opposite).
        Confirm => "confirm",
        /// Revoke it.
        Revoke => "revoke",
    }
);

vocab!(
    /// Where a preference stands.
    PreferenceStatus {
        /// Noticed, not confirmed.
        Candidate => "candidate",
        /// Confirmed.
        Confirmed => "confirmed",
        /// No longer holds.
        Revoked => "revoked",
    }
);

vocab!(
    /// What an attention target is.
    TargetType {
        /// A topic.
        Topic => "topic",
        /// A goal.
        Goal => "goal",
        /// A person (or something about one).
        Person => "person",
    }
);

vocab!(
    /// How the persona means to engage now.
    InteractionMode {
        /// Watch and listen.
        Observe => "observe",
        /// Help actively.
        Support => "support",
        /// Hold back.
        Wait => "wait",
        /// Look for something new.
        Explore => "explore",
    }
);

vocab!(
    /// The stage of life a memory is about.
    LifeStage {
        /// Elementary school.
        Elementary => "elementary",
        /// Middle (junior high) school.
        Middle => "middle",
        /// High school.
        High => "high",
        /// University.
        University => "university",
        /// Working life.
        Work => "work",
        /// Not known.
        Unknown => "unknown",
    }
);

vocab!(
    /// How one event links to another.
    LinkLabel {
        /// Answers it.
        ReplyTo => "reply_to",
        /// Same topic.
        SameTopic => "same_topic",
        /// Caused by it.
        CausedBy => "caused_by",
    }
);
