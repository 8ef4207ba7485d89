//! Media users send (LINE images), kept in Postgres (`media`, migration 0021) so that every
//! service reaches it wherever it runs: the gateway downloads into it, the persona reads
//! from it, and a sweeper removes rows older than `media.retention_secs`. No service ever
//! reads another's disk.

use std::time::Duration;

use sqlx::{PgPool, Row};
use uuid::Uuid;

use crate::llm::ImageSource;

/// The media table (cheap to clone: a pool inside).
#[derive(Debug, Clone)]
pub struct MediaStore {
    pool: PgPool,
}

/// One stored medium.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredMedia {
    /// Its id.
    pub id: Uuid,
    /// MIME type the platform reported, if it did.
    pub content_type: Option<String>,
    /// The bytes.
    pub bytes: Vec<u8>,
}

impl MediaStore {
    /// The media table in `pool`'s database.
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }

    /// Stores `bytes` under `id`; storing the same id again changes nothing (a redelivered
    /// download is a no-op).
    pub async fn put(
        &self,
        id: Uuid,
        content_type: Option<&str>,
        bytes: &[u8],
    ) -> Result<(), sqlx::Error> {
        sqlx::query(
            "INSERT INTO media (id, content_type, bytes, size_bytes) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (id) DO NOTHING",
        )
        .bind(id)
        .bind(content_type)
        .bind(bytes)
        .bind(bytes.len() as i64)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The medium `id`, if it is (still) stored.
    pub async fn get(&self, id: Uuid) -> Result<Option<StoredMedia>, sqlx::Error> {
        let row = sqlx::query("SELECT content_type, bytes FROM media WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        row.map(|r| {
            Ok(StoredMedia {
                id,
                content_type: r.try_get(0)?,
                bytes: r.try_get(1)?,
            })
        })
        .transpose()
    }

    /// The size of medium `id` in bytes, if it is stored.
    pub async fn size(&self, id: Uuid) -> Result<Option<i64>, sqlx::Error> {
        sqlx::query_scalar("SELECT size_bytes FROM media WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await
    }

    /// Removes media stored more than `retention` ago; returns how many.
    pub async fn sweep(&self, retention: Duration) -> Result<u64, sqlx::Error> {
        let done = sqlx::query(
            "DELETE FROM media WHERE created_at < clock_timestamp() - make_interval(secs => $1)",
        )
        .bind(retention.as_secs_f64())
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected())
    }

    /// Medium `id` as an image for the LLM client (audited as `media:<id>`).
    pub fn image(&self, id: Uuid) -> MediaImage {
        MediaImage {
            store: self.clone(),
            id,
        }
    }
}

/// A stored medium as the source of an image part.
#[derive(Debug, Clone)]
pub struct MediaImage {
    store: MediaStore,
    id: Uuid,
}

#[async_trait::async_trait]
impl ImageSource for MediaImage {
    fn label(&self) -> String {
        format!("media:{}", self.id)
    }

    async fn load(&self) -> Result<(Vec<u8>, Option<String>), &'static str> {
        match self.store.get(self.id).await {
            Ok(Some(m)) => Ok((m.bytes, m.content_type)),
            Ok(None) => Err("media_not_found"),
            Err(e) => {
                tracing::warn!(media_id = %self.id, error = %e, "cannot read media");
                Err("media_unreadable")
            }
        }
    }

    async fn stat(&self) -> (bool, u64) {
        match self.store.size(self.id).await {
            Ok(Some(n)) => (true, n.max(0) as u64),
            _ => (false, 0),
        }
    }
}
