-- Recall's keyword source (issue 45 item 4): Postgres full-text search beside the trigrams,
-- English stemming ("lived" finds "live", "siblings" "sibling"); and the lines said in a
-- period a message names ("last week"), found by when they were said.
CREATE INDEX assistant_text_fts ON assistant_text USING gin (to_tsvector('english', text));
CREATE INDEX memory_states_fts ON memory_states USING gin (to_tsvector('english', body_text));
CREATE INDEX assistant_text_recorded ON assistant_text (recorded_at);
