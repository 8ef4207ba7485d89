//! The registry's members behind one door, so a test can count how many a resolution visits
//! (seed 000: O(characters)). The count exists only in test builds; elsewhere the hook is an
//! empty closure the compiler removes.

/// Members in registry order, reachable only through [`Cast::iter`] and [`Cast::get`]: no
/// code path can visit a member without it being counted.
#[derive(Debug, Clone)]
pub(super) struct Cast<T>(Vec<T>);

impl<T> Cast<T> {
    pub(super) fn new(members: Vec<T>) -> Self {
        Self(members)
    }

    /// Every member in order, each one counted as it is reached.
    pub(super) fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.0.iter().inspect(|_| visited())
    }

    /// The member at `index`, counted.
    pub(super) fn get(&self, index: usize) -> Option<&T> {
        visited();
        self.0.get(index)
    }

    pub(super) fn len(&self) -> usize {
        self.0.len()
    }
}

#[cfg(test)]
thread_local! {
    static VISITS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

#[inline(always)]
fn visited() {
    #[cfg(test)]
    VISITS.with(|v| v.set(v.get() + 1));
}

/// Runs `f` and returns how many members it visited on this thread.
#[cfg(test)]
pub(super) fn count_visits<R>(f: impl FnOnce() -> R) -> (R, u64) {
    let before = VISITS.with(|v| v.get());
    let out = f();
    (out, VISITS.with(|v| v.get()) - before)
}
