-- Recall (seed 001 B-1): trigram similarity over what was said and what the persona holds
-- as states (pg_trgm ships with postgresql-contrib), and recency across sessions.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE INDEX assistant_text_trgm ON assistant_text USING gin (text gin_trgm_ops);
CREATE INDEX assistant_text_recent ON assistant_text (position DESC);
CREATE INDEX memory_states_trgm ON memory_states USING gin (body_text gin_trgm_ops);
CREATE INDEX memory_event_annotations_time ON memory_event_annotations (persona, about_year_start, about_year_end);
