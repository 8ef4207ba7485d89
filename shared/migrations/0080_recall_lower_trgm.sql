-- Recall's term search (`lower(text) LIKE '%term%'`, persona recall/terms.rs): trigram
-- indexes on the lowercased text, so the search is case-insensitive without ILIKE's slower
-- recheck. The 0051 indexes stay for the sentence-similarity fallback (`%`).
CREATE INDEX assistant_text_lower_trgm ON assistant_text USING gin (lower(text) gin_trgm_ops);
CREATE INDEX memory_states_lower_trgm ON memory_states USING gin (lower(body_text) gin_trgm_ops);
