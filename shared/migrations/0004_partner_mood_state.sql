-- Read model of the mood service: per persona, the newest labelled episodes (oldest first)
-- from which the mood at any instant is computed (seed 004).
CREATE TABLE partner_mood_state (
    persona       text PRIMARY KEY,
    episodes      jsonb NOT NULL,
    episode_count integer NOT NULL,
    last_event_id uuid NOT NULL,
    updated_at    timestamptz NOT NULL
);
