-- Read model of the mood service (seed 004): per persona, the newest labelled episodes
-- (one row each, so an update touches one row, not the whole window) and a summary row.
CREATE TABLE mood_episodes (
    persona    text NOT NULL,
    position   bigint NOT NULL,
    at         double precision NOT NULL,
    label      text NOT NULL,
    intensity  double precision NOT NULL,
    salience   double precision NOT NULL,
    confidence double precision,
    policy     jsonb,
    PRIMARY KEY (persona, position)
);

CREATE INDEX mood_episodes_window ON mood_episodes (persona, at, position);

CREATE TABLE partner_mood_state (
    persona       text PRIMARY KEY,
    episode_count integer NOT NULL,
    last_event_id uuid NOT NULL,
    updated_at    timestamptz NOT NULL
);
