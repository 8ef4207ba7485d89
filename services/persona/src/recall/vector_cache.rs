//! The stored vectors, kept in the persona process (one cache per database and embedding
//! model). Reading every vector in scope from Postgres per recall cost 15.7 s at 100,000
//! utterances (`ghost-harness memory-bench --vectors`); here a recall compares the message with
//! every cached vector in memory and asks Postgres only about the nearest ones, whose scope
//! (whose memory, which conversation) and text it checks there. A row deleted since (a
//! forgotten memory or person) stays in the cache until the process restarts, but never
//! comes back: the check finds nothing for it.
//!
//! Loading is incremental, by `seq` (migration 0116). A sequence is not a commit order: a
//! row with a lower `seq` may become visible after a higher one. Every insert into
//! `memory_embeddings` is one statement, so a row younger than [`SETTLE`] is read again at
//! the next refresh until it is older; the watermark only passes settled rows.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use sqlx::{PgPool, Row};

/// How long after its insert a row is taken as visible to every later read.
const SETTLE: &str = "5 seconds";

/// The cached vectors of one model in one database.
#[derive(Default)]
pub struct VectorCache {
    loaded: tokio::sync::Mutex<Loaded>,
}

#[derive(Default)]
struct Loaded {
    /// Item ids, in load order.
    ids: Vec<String>,
    /// Their unit vectors, one after another (`dim` each).
    vectors: Vec<f32>,
    /// Where each item is.
    index: HashMap<String, usize>,
    dim: usize,
    /// Every row up to this `seq` is loaded.
    watermark: i64,
}

impl VectorCache {
    /// The cache of `model`'s vectors in `pool`'s database.
    pub fn of(pool: &PgPool, model: &str) -> Arc<VectorCache> {
        type Caches = Mutex<HashMap<(String, String), Arc<VectorCache>>>;
        static CACHES: OnceLock<Caches> = OnceLock::new();
        let options = pool.connect_options();
        let key = (
            format!(
                "{}:{}/{}",
                options.get_host(),
                options.get_port(),
                options.get_database().unwrap_or_default()
            ),
            model.to_owned(),
        );
        let mut caches = CACHES
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        caches.entry(key).or_default().clone()
    }

    /// Loads the rows written since the last refresh; then every stored item of `model`
    /// with a cosine of at least `min` to `query`, most similar first (ties by id).
    ///
    /// The work runs as its own task: a recall that stops waiting (the source's time
    /// bound) does not cancel a load, so a first load longer than the bound (about 20 s at
    /// 100,000 vectors) still completes for the recalls after it.
    pub async fn nearest(
        self: Arc<Self>,
        pool: &PgPool,
        model: &str,
        query: &[f32],
        min: f64,
    ) -> Result<Vec<(String, f64)>, sqlx::Error> {
        let (pool, model, query) = (pool.clone(), model.to_owned(), query.to_vec());
        tokio::spawn(async move {
            let mut loaded = self.loaded.lock().await;
            loaded.refresh(&pool, &model).await?;
            Ok(loaded.scored(&query, min))
        })
        .await
        .map_err(|e| sqlx::Error::Protocol(format!("comparing vectors: {e}")))?
    }
}

impl Loaded {
    fn scored(&self, query: &[f32], min: f64) -> Vec<(String, f64)> {
        let Some(query) = unit(query) else {
            return Vec::new();
        };
        if query.len() != self.dim {
            return Vec::new();
        }
        let mut scored: Vec<(String, f64)> = self
            .vectors
            .chunks_exact(self.dim)
            .zip(&self.ids)
            .filter_map(|(v, id)| {
                let s = f64::from(dot(v, &query));
                (s >= min).then(|| (id.clone(), s))
            })
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        scored
    }

    async fn refresh(&mut self, pool: &PgPool, model: &str) -> Result<(), sqlx::Error> {
        let rows = sqlx::query(&format!(
            "SELECT item_id, vector, seq, created_at < clock_timestamp() - interval '{SETTLE}' \
             AS settled FROM memory_embeddings WHERE model = $1 AND seq > $2 ORDER BY seq"
        ))
        .bind(model)
        .bind(self.watermark)
        .fetch_all(pool)
        .await?;
        // The watermark passes settled rows up to the first one that is not.
        let (mut watermark, mut advancing) = (self.watermark, true);
        for row in &rows {
            let id: String = row.try_get("item_id")?;
            let vector: Vec<f32> = row.try_get("vector")?;
            let seq: i64 = row.try_get("seq")?;
            advancing &= row.try_get::<bool, _>("settled")?;
            if advancing {
                watermark = seq;
            }
            self.put(id, &vector);
        }
        self.watermark = watermark;
        Ok(())
    }

    fn put(&mut self, id: String, vector: &[f32]) {
        let Some(v) = unit(vector) else {
            return;
        };
        if self.dim == 0 {
            self.dim = v.len();
        }
        if v.len() != self.dim {
            return;
        }
        match self.index.get(&id) {
            Some(&i) => self.vectors[i * self.dim..(i + 1) * self.dim].copy_from_slice(&v),
            None => {
                self.index.insert(id.clone(), self.ids.len());
                self.ids.push(id);
                self.vectors.extend_from_slice(&v);
            }
        }
    }
}

/// `v` scaled to length 1 (None for a zero vector).
fn unit(v: &[f32]) -> Option<Vec<f32>> {
    let norm = v
        .iter()
        .map(|x| f64::from(*x) * f64::from(*x))
        .sum::<f64>()
        .sqrt();
    (norm > 0.0).then(|| v.iter().map(|x| (f64::from(*x) / norm) as f32).collect())
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}
