-- Each persona's episodes are numbered as the projection adds them (never lowered by a
-- trim), so the mood service can tell whether an announced episode directly follows the
-- window it holds in memory, and answer `mood.get` without reading the store.
ALTER TABLE partner_mood_state ADD COLUMN episode_seq bigint NOT NULL DEFAULT 0;
