-- The persona keeps the stored vectors in process (recall's vector source read every vector
-- in scope per recall: 15.7 s at 100,000). It loads what is new since its last load: rows in
-- insertion order (`seq`), and when each was written, so a row whose insert may not be
-- visible yet (younger than a few seconds) is read again next time.
ALTER TABLE memory_embeddings
    ADD COLUMN seq bigserial,
    ADD COLUMN created_at timestamptz NOT NULL DEFAULT clock_timestamp();
CREATE INDEX memory_embeddings_model_seq ON memory_embeddings (model, seq);

-- Recall's backfill looks for missing vectors among the newest utterances only: newest
-- first by position, without sorting the whole conversation text.
CREATE INDEX assistant_text_position ON assistant_text (position DESC);
