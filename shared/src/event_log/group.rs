//! Group commit for many small, independent appends (one webhook each).
//!
//! One transaction per webhook made the commit's fsync the ceiling of the gateway's
//! acknowledgements. Here callers hand their appends to a few committer tasks; each takes
//! every append waiting (up to a bound) and stores them in one transaction
//! ([`EventStore::append_batch`]). A caller is answered only after the transaction that
//! holds its appends commits, and its events are published right after the answer (the
//! outbox covers a crash in between, as for [`EventLog::append`]).

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot, Mutex};
use tracing::warn;

use super::EventLog;
use crate::store::{AppendOutcome, AppendRequest, EventStore, StoreError};

/// Failure of a grouped append.
#[derive(Debug, thiserror::Error)]
pub enum GroupAppendError {
    /// An append failed; the caller's other appends may have committed (they are
    /// idempotent by event id, so the caller retries the whole set).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The committer tasks are gone (the process is stopping): nothing was committed.
    #[error("the group committer has stopped")]
    Stopped,
}

/// One caller's appends and where its answer goes.
struct Job {
    requests: Vec<AppendRequest>,
    reply: oneshot::Sender<Vec<Result<AppendOutcome, StoreError>>>,
}

/// Hands appends to committer tasks that share one transaction among many callers
/// (cheap to clone).
#[derive(Clone, Debug)]
pub struct GroupAppender {
    jobs: mpsc::Sender<Job>,
}

impl GroupAppender {
    /// Spawns `committers` tasks (transactions in flight at once) that each commit up to
    /// `max_batch` appends per transaction.
    pub fn spawn(log: EventLog, committers: usize, max_batch: usize) -> Self {
        let (jobs, rx) = mpsc::channel(max_batch.max(1) * committers.max(1) * 4);
        let rx = Arc::new(Mutex::new(rx));
        for _ in 0..committers.max(1) {
            tokio::spawn(commit_loop(log.clone(), rx.clone(), max_batch.max(1)));
        }
        Self { jobs }
    }

    /// Appends `requests` (in their order, in one transaction shared with other callers')
    /// and answers once that transaction has committed.
    pub async fn append(
        &self,
        requests: Vec<AppendRequest>,
    ) -> Result<Vec<AppendOutcome>, GroupAppendError> {
        if requests.is_empty() {
            return Ok(Vec::new());
        }
        let (reply, answer) = oneshot::channel();
        self.jobs
            .send(Job { requests, reply })
            .await
            .map_err(|_| GroupAppendError::Stopped)?;
        let results = answer.await.map_err(|_| GroupAppendError::Stopped)?;
        results
            .into_iter()
            .map(|r| r.map_err(GroupAppendError::from))
            .collect()
    }
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job")
            .field("requests", &self.requests.len())
            .finish()
    }
}

/// Takes every waiting job (up to `max_batch` appends), commits them together, answers,
/// publishes; until the sending side is gone.
async fn commit_loop(log: EventLog, jobs: Arc<Mutex<mpsc::Receiver<Job>>>, max_batch: usize) {
    loop {
        let mut batch = Vec::new();
        {
            let mut rx = jobs.lock().await;
            let Some(first) = rx.recv().await else {
                return;
            };
            let mut appends = first.requests.len();
            batch.push(first);
            while appends < max_batch {
                match rx.try_recv() {
                    Ok(job) => {
                        appends += job.requests.len();
                        batch.push(job);
                    }
                    Err(_) => break,
                }
            }
        }
        commit(&log, batch).await;
    }
}

/// Commits one batch, answers each caller with its own results, then publishes.
async fn commit(log: &EventLog, batch: Vec<Job>) {
    let mut counts = Vec::with_capacity(batch.len());
    let mut replies = Vec::with_capacity(batch.len());
    let mut requests = Vec::new();
    for job in batch {
        counts.push(job.requests.len());
        requests.extend(job.requests);
        replies.push(job.reply);
    }
    let results = match log.store().append_batch(&requests).await {
        Ok(results) => results,
        // Nothing committed: each append alone, so one bad append fails only its caller.
        Err(e) => {
            warn!(error = %e, appends = requests.len(), "group commit failed; appending one by one");
            one_by_one(log.store(), &requests).await
        }
    };
    crate::fault::point("store.after_commit");
    let committed: Vec<AppendOutcome> = results
        .iter()
        .filter_map(|r| r.as_ref().ok().cloned())
        .collect();
    let mut results = results.into_iter();
    for (reply, count) in replies.into_iter().zip(counts) {
        // A caller that gave up (its request was cancelled) still had its appends committed.
        let _ = reply.send(results.by_ref().take(count).collect());
    }
    if let Err(e) = log.publish_outcomes(&committed).await {
        warn!(error = %e, "could not check the outbox after a group commit; the relay publishes");
    }
}

async fn one_by_one(
    store: &EventStore,
    requests: &[AppendRequest],
) -> Vec<Result<AppendOutcome, StoreError>> {
    let mut results = Vec::with_capacity(requests.len());
    for r in requests {
        results.push(store.append(&r.stream, r.expected, &r.events).await);
    }
    results
}
