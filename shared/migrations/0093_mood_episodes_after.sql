-- The mood service reads a persona's episodes after the last (tx_id, position) it read, on
-- every `mood.get` (services/mood/src/episodes.rs, `load_after`). Without an index in that
-- order the read walked the persona's whole window (up to max_episodes rows) each time.
CREATE INDEX mood_episodes_after ON mood_episodes (persona, (COALESCE(tx_id, 0)), position);
