//! Each persona's mood window in memory, kept current by the projection's own
//! announcements, so that `mood.get` answers without reading the store.
//!
//! Every pass that adds an episode announces it (`pg_notify` on [`CHANNEL`], delivered at
//! commit, in commit order, to every mood process). Each persona's summary row numbers its
//! episodes (`episode_seq`), so an announcement that does not follow the cached window's
//! number reveals a gap and the window is read again instead. A window is answered from
//! memory only while nothing newer is known to exist: an announcement, or this process's
//! own pass before it commits, raises the persona's expected number, and a window behind
//! it is read again. A lost listener connection or a rebuild drops every window.

use std::collections::HashMap;
use std::sync::Mutex;

use ghost_shared::affect::{MoodConstants, MoodState};
use serde::{Deserialize, Serialize};

use crate::episodes::EpisodeMark;
use crate::mood::{Episode, MoodWindow};

/// The notification channel of the projection's announcements.
pub const CHANNEL: &str = "ghost_mood";

/// Most personas whose window one process keeps in memory (any valid id can be asked for;
/// past this, another persona's window makes room and is read again when asked for).
const MAX_CACHED_WINDOWS: usize = 256;

/// Most personas whose expected number is remembered; past this all are forgotten together
/// with every window (each is then read again once).
const MAX_EXPECTED: usize = 4096;

/// What a pass of the `partner_mood_state` projection announces.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum MoodNotice {
    /// `episode` joined `persona`'s window as its `seq`-th episode.
    Episode {
        /// The persona.
        persona: String,
        /// Its number among the persona's episodes (the summary row's `episode_seq`).
        seq: i64,
        /// The event's transaction (the projection's order).
        tx_id: i64,
        /// The event's position.
        position: i64,
        /// The episode.
        episode: Episode,
    },
    /// Every window was emptied (a rebuild started): nothing cached holds.
    Reset,
}

/// A persona's window as the store had it at `seq`.
struct Cached {
    window: MoodWindow,
    mark: EpisodeMark,
    seq: i64,
}

#[derive(Default)]
struct Inner {
    windows: HashMap<String, Cached>,
    /// The highest episode number known to exist (or to be about to), per persona.
    expected: HashMap<String, i64>,
    /// Moves on whenever announcements may have been missed: a read begun before does not
    /// fill the cache.
    epoch: u64,
    /// Whether the listener is connected (announcements arrive).
    listening: bool,
}

/// The rows a catch-up read returned: the summary row's count and number, and the
/// episodes after the mark the read started from.
#[derive(Debug, Default)]
pub struct ReadWindow {
    /// Rows the persona's window has.
    pub total: i64,
    /// The summary row's episode number.
    pub seq: i64,
    /// Episodes after the read's mark, in the projection's order.
    pub episodes: Vec<(EpisodeMark, Episode)>,
}

/// The windows of one process.
pub struct WindowCache {
    constants: MoodConstants,
    inner: Mutex<Inner>,
}

/// Where a catch-up read starts: the cached mark and the epoch it began in.
#[derive(Debug, Clone, Copy)]
pub struct ReadStart {
    /// The mark the cached window reached (the default when none is cached).
    pub mark: EpisodeMark,
    epoch: u64,
}

impl WindowCache {
    /// An empty cache for windows built with `constants`.
    pub fn new(constants: MoodConstants) -> Self {
        Self {
            constants,
            inner: Mutex::new(Inner::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // The state is a cache: a panic elsewhere leaves nothing that must not be read.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The mood of `persona` at `now` from memory, when its window is known to be current.
    pub fn current(&self, persona: &str, now: f64) -> Option<MoodState> {
        let inner = self.lock();
        if !inner.listening {
            return None;
        }
        let cached = inner.windows.get(persona)?;
        let expected = inner.expected.get(persona).copied().unwrap_or(0);
        (cached.seq >= expected).then(|| cached.window.state_at(now))
    }

    /// Where a catch-up read of `persona` starts.
    pub fn begin_read(&self, persona: &str) -> ReadStart {
        let inner = self.lock();
        ReadStart {
            mark: inner
                .windows
                .get(persona)
                .map(|c| c.mark)
                .unwrap_or_default(),
            epoch: inner.epoch,
        }
    }

    /// Where a read of a whole window starts (from the first episode).
    pub fn begin_whole_read(&self) -> ReadStart {
        ReadStart {
            mark: EpisodeMark::default(),
            epoch: self.lock().epoch,
        }
    }

    /// Brings `persona`'s window up to what the read returned and answers at `now`; `None`
    /// when the rows do not follow the cached window (read the whole window instead). A
    /// whole read always answers; it is kept only when it is consistent and no announcement
    /// can have been missed while it ran.
    pub fn catch_up(
        &self,
        persona: &str,
        start: ReadStart,
        read: ReadWindow,
        now: f64,
    ) -> Result<Option<MoodState>, String> {
        let mut inner = self.lock();
        let whole = start.mark == EpisodeMark::default();
        let mut cached = match inner.windows.remove(persona) {
            // Announcements moved the window on while the read ran, past what it returned.
            Some(c) if c.mark >= start.mark && c.seq >= read.seq => {
                let state = c.window.state_at(now);
                inner.windows.insert(persona.to_owned(), c);
                return Ok(Some(state));
            }
            Some(c) if c.mark >= start.mark => c,
            // Dropped or replaced meanwhile: only a whole read can stand alone.
            _ if !whole => return Ok(None),
            _ => Cached {
                window: MoodWindow::new(self.constants).map_err(|e| e.to_string())?,
                mark: EpisodeMark::default(),
                seq: 0,
            },
        };
        for (mark, episode) in read.episodes {
            if mark > cached.mark {
                cached.window.insert(episode).map_err(|e| e.to_string())?;
                cached.mark = mark;
            }
        }
        let state = cached.window.state_at(now);
        if cached.window.len() as i64 != read.total {
            // The rows changed in a way catching up cannot follow (a rebuild, a trim of
            // rows this window never had): not kept.
            return Ok(whole.then_some(state));
        }
        cached.seq = read.seq;
        if inner.listening && inner.epoch == start.epoch {
            if inner
                .expected
                .get(persona)
                .is_some_and(|e| *e <= cached.seq)
            {
                inner.expected.remove(persona);
            }
            make_room(&mut inner.windows, persona);
            inner.windows.insert(persona.to_owned(), cached);
        }
        Ok(Some(state))
    }

    /// This process's pass is adding episode `seq` of `persona` (before it commits): until
    /// its announcement arrives, the window is read again.
    pub fn expect(&self, persona: &str, seq: i64) {
        let mut inner = self.lock();
        raise_expected(&mut inner, persona, seq);
    }

    /// Applies an announcement.
    pub fn announced(&self, notice: MoodNotice) {
        let mut inner = self.lock();
        match notice {
            MoodNotice::Reset => {
                inner.windows.clear();
                inner.expected.clear();
                inner.epoch += 1;
            }
            MoodNotice::Episode {
                persona,
                seq,
                tx_id,
                position,
                episode,
            } => {
                raise_expected(&mut inner, &persona, seq);
                let Some(cached) = inner.windows.get_mut(&persona) else {
                    return;
                };
                if seq <= cached.seq {
                    return; // a read already brought it in
                }
                let follows = seq == cached.seq + 1;
                if follows && cached.window.insert(episode).is_ok() {
                    cached.seq = seq;
                    cached.mark = cached.mark.max(EpisodeMark { tx_id, position });
                } else {
                    // A gap (a missed announcement, a rebuild): read it again when asked.
                    inner.windows.remove(&persona);
                }
            }
        }
    }

    /// The listener is connected (again): announcements arrive from now on. Whatever was
    /// cached before may have missed some and is dropped.
    pub fn listening(&self) {
        let mut inner = self.lock();
        inner.windows.clear();
        inner.epoch += 1;
        inner.listening = true;
    }

    /// The listener lost its connection: nothing is answered from memory until it is back.
    pub fn deaf(&self) {
        let mut inner = self.lock();
        inner.windows.clear();
        inner.epoch += 1;
        inner.listening = false;
    }
}

fn raise_expected(inner: &mut Inner, persona: &str, seq: i64) {
    if !inner.expected.contains_key(persona) && inner.expected.len() >= MAX_EXPECTED {
        inner.expected.clear();
        inner.windows.clear();
        inner.epoch += 1;
    }
    let e = inner.expected.entry(persona.to_owned()).or_insert(0);
    *e = (*e).max(seq);
}

/// At the limit, another persona's window makes room for `persona`'s.
fn make_room(windows: &mut HashMap<String, Cached>, persona: &str) {
    if !windows.contains_key(persona) && windows.len() >= MAX_CACHED_WINDOWS {
        if let Some(other) = windows.keys().next().cloned() {
            windows.remove(&other);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ghost_shared::affect::AffectLabel;

    fn ep(at: f64) -> Episode {
        Episode {
            at,
            label: AffectLabel::Joy,
            intensity: 0.5,
            salience: 0.5,
            confidence: Some(0.5),
            policy: None,
        }
    }

    fn mark(position: i64) -> EpisodeMark {
        EpisodeMark { tx_id: 1, position }
    }

    fn notice(seq: i64, position: i64, at: f64) -> MoodNotice {
        MoodNotice::Episode {
            persona: "p".into(),
            seq,
            tx_id: 1,
            position,
            episode: ep(at),
        }
    }

    /// What a first read of `p` returns: one episode, numbered 1.
    fn first_read() -> ReadWindow {
        ReadWindow {
            total: 1,
            seq: 1,
            episodes: vec![(mark(10), ep(100.0))],
        }
    }

    /// A cache holding `p`'s window of one episode (seq 1), read from the store.
    fn warm() -> WindowCache {
        let cache = WindowCache::new(MoodConstants::default());
        cache.listening();
        let start = cache.begin_read("p");
        let read = first_read();
        assert!(cache.catch_up("p", start, read, 200.0).unwrap().is_some());
        assert!(cache.current("p", 200.0).is_some());
        cache
    }

    fn with(episodes: &[f64]) -> MoodState {
        let mut w = MoodWindow::new(MoodConstants::default()).unwrap();
        for at in episodes {
            w.insert(ep(*at)).unwrap();
        }
        w.state_at(200.0)
    }

    #[test]
    fn an_announcement_that_follows_extends_the_window() {
        let cache = warm();
        cache.announced(notice(2, 11, 150.0));
        assert_eq!(cache.current("p", 200.0), Some(with(&[100.0, 150.0])));
        // Heard again (a read brought it in first): nothing changes.
        cache.announced(notice(2, 11, 150.0));
        assert_eq!(cache.current("p", 200.0), Some(with(&[100.0, 150.0])));
    }

    #[test]
    fn a_gap_drops_the_window() {
        let cache = warm();
        cache.announced(notice(3, 12, 150.0));
        assert_eq!(cache.current("p", 200.0), None);
    }

    #[test]
    fn an_own_pass_not_yet_announced_makes_the_window_read_again() {
        let cache = warm();
        cache.expect("p", 2);
        assert_eq!(cache.current("p", 200.0), None);
        cache.announced(notice(2, 11, 150.0));
        assert_eq!(cache.current("p", 200.0), Some(with(&[100.0, 150.0])));
    }

    #[test]
    fn an_announcement_during_a_first_read_keeps_the_window_behind() {
        let cache = WindowCache::new(MoodConstants::default());
        cache.listening();
        let start = cache.begin_read("p");
        // Committed after the read's snapshot, heard before the read returned.
        cache.announced(notice(2, 11, 150.0));
        let read = first_read();
        let answered = cache.catch_up("p", start, read, 200.0).unwrap();
        assert_eq!(answered, Some(with(&[100.0])));
        assert_eq!(cache.current("p", 200.0), None, "seq 2 is known to exist");
    }

    #[test]
    fn a_window_moved_on_during_a_read_answers_for_it() {
        let cache = warm();
        let start = cache.begin_read("p");
        cache.announced(notice(2, 11, 150.0));
        // The read's snapshot predates episode 2: the window already holds more.
        let read = ReadWindow {
            total: 1,
            seq: 1,
            episodes: Vec::new(),
        };
        let answered = cache.catch_up("p", start, read, 200.0).unwrap();
        assert_eq!(answered, Some(with(&[100.0, 150.0])));
        assert_eq!(cache.current("p", 200.0), Some(with(&[100.0, 150.0])));
    }

    #[test]
    fn nothing_is_answered_from_memory_without_a_listener_or_after_a_reset() {
        let cache = warm();
        cache.deaf();
        assert_eq!(cache.current("p", 200.0), None);
        let start = cache.begin_read("p");
        let read = first_read();
        assert!(cache.catch_up("p", start, read, 200.0).unwrap().is_some());
        assert_eq!(cache.current("p", 200.0), None, "not kept while deaf");
        cache.listening();
        let cache = warm();
        cache.announced(MoodNotice::Reset);
        assert_eq!(cache.current("p", 200.0), None);
    }

    #[test]
    fn a_read_begun_before_a_reconnection_is_not_kept() {
        let cache = WindowCache::new(MoodConstants::default());
        cache.listening();
        let start = cache.begin_read("p");
        cache.listening(); // reconnected meanwhile: announcements may have been missed
        let read = first_read();
        assert!(cache.catch_up("p", start, read, 200.0).unwrap().is_some());
        assert_eq!(cache.current("p", 200.0), None);
    }

    #[test]
    fn announcements_travel_as_json() {
        let n = notice(2, 11, 150.0);
        let text = serde_json::to_string(&n).unwrap();
        assert_eq!(serde_json::from_str::<MoodNotice>(&text).unwrap(), n);
        let reset = serde_json::to_string(&MoodNotice::Reset).unwrap();
        assert_eq!(reset, r#"{"kind":"reset"}"#);
    }
}
