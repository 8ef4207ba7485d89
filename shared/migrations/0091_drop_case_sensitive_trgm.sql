-- Recall searches `lower(text)` only (the trigram index of migration 0080 serves both the
-- search terms and the whole-sentence similarity: trigrams are case-folded, so the
-- similarity is the same). The trigram indexes on the raw text (migration 0051) only cost:
-- every reply's assistant_text insert maintained two GIN indexes.
DROP INDEX IF EXISTS assistant_text_trgm;
DROP INDEX IF EXISTS memory_states_trgm;
