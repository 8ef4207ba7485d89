//! The newest events of a stream, read in windows of versions back from its head.
//!
//! `WHERE stream = $1 ORDER BY version DESC LIMIT n` reads like a walk back from the head,
//! but the generic plan a long-lived connection settles on estimates any one stream at a
//! couple of rows, so it fetches every event of the stream by bitmap and sorts them: a
//! reply in a 300-turn conversation read its 1,200 events to keep 20, and each turn read
//! more than the last. Bounding the versions first (`version > head - window`, the head
//! found by a one-entry index probe) caps what any plan reads at the window. A window that
//! holds too few of the wanted events is widened, up to the whole stream, so the answer is
//! the same as the unbounded read's.

use sqlx::{PgConnection, Row};
use uuid::Uuid;

use super::read::{oldest_first, EVENT_COLUMNS};
use super::StoreError;
use crate::envelope::RecordedEvent;

/// First window, in versions per wanted event: a chat turn stores about four events, two
/// of them utterances.
const VERSIONS_PER_EVENT: i64 = 4;
/// Versions added to the first window, so a short read still sees a whole turn or two.
const FIRST_WINDOW_SLACK: i64 = 16;
/// How much each further window grows.
const GROWTH: i64 = 8;
/// Beyond this the next window is the whole stream.
const WIDEST_WINDOW: i64 = 1 << 16;

/// Which events of a stream's tail are wanted.
#[derive(Debug, Clone, Copy)]
pub enum TailFilter<'a> {
    /// Every event.
    All,
    /// Events of these types, and the one event `also` whatever its type.
    Types {
        /// The wanted types.
        types: &'a [&'a str],
        /// One more event wanted by id.
        also: Uuid,
    },
}

/// The newest `limit` events of `stream` that `filter` wants, oldest first, read on
/// `conn` (a transaction, or a connection taken from the pool for the one or two reads).
pub async fn read_tail_in(
    conn: &mut PgConnection,
    stream: &str,
    filter: TailFilter<'_>,
    limit: i64,
) -> Result<Vec<RecordedEvent>, StoreError> {
    Ok(read_tail_checking_in(conn, stream, filter, limit, None)
        .await?
        .0)
}

/// [`read_tail_in`], and in the same statement whether any event of `ids` is stored
/// anywhere (`None` when the read returned no row to carry the answer): a reader that
/// must not act on a request already answered asks both in one round trip.
pub async fn read_tail_checking_in(
    conn: &mut PgConnection,
    stream: &str,
    filter: TailFilter<'_>,
    limit: i64,
    ids: Option<&[Uuid]>,
) -> Result<(Vec<RecordedEvent>, Option<bool>), StoreError> {
    let condition = match filter {
        TailFilter::All => "",
        TailFilter::Types { .. } => " AND (event_type = ANY($4) OR event_id = $5)",
    };
    let check = match ids {
        None => String::new(),
        Some(_) => {
            let n = match filter {
                TailFilter::All => 4,
                TailFilter::Types { .. } => 6,
            };
            format!(", EXISTS (SELECT 1 FROM events WHERE event_id = ANY(${n})) AS stored")
        }
    };
    // `COALESCE(…, 0)`: a NULL window ($2) is the whole stream. The head is returned with
    // each row, to tell a window that held the whole stream from one that cut it.
    let sql = format!(
        "SELECT {EVENT_COLUMNS}, (SELECT max(version) FROM events WHERE stream = $1) AS head{check} \
         FROM events WHERE stream = $1 \
         AND version > COALESCE((SELECT max(version) FROM events WHERE stream = $1) - $2, 0)\
         {condition} ORDER BY version DESC LIMIT $3"
    );
    let mut window = Some(limit.max(1).saturating_mul(VERSIONS_PER_EVENT) + FIRST_WINDOW_SLACK);
    loop {
        let query = sqlx::query(&sql).bind(stream).bind(window).bind(limit);
        let query = match filter {
            TailFilter::All => query,
            TailFilter::Types { types, also } => query.bind(types).bind(also),
        };
        let query = match ids {
            Some(ids) => query.bind(ids),
            None => query,
        };
        let rows = query.fetch_all(&mut *conn).await?;
        let stored = match (ids, rows.first()) {
            (Some(_), Some(row)) => Some(row.try_get::<bool, _>("stored")?),
            _ => None,
        };
        let head: Option<i32> = match rows.first() {
            Some(row) => row.try_get("head")?,
            None => None,
        };
        let whole_stream_read = match (window, head) {
            (None, _) => true,
            // Nothing wanted in the window (or no stream): only the whole stream can tell.
            (Some(_), None) => false,
            (Some(w), Some(h)) => i64::from(h) <= w,
        };
        if rows.len() as i64 >= limit || whole_stream_read {
            return Ok((oldest_first(&rows)?, stored));
        }
        window = match (window, head) {
            (Some(w), Some(_)) if w < WIDEST_WINDOW => Some(w * GROWTH),
            _ => None,
        };
    }
}
