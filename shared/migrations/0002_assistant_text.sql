-- Read model: the conversation of each session as the user and the persona saw it.
CREATE TABLE assistant_text (
    session_id  text NOT NULL,
    position    bigint NOT NULL,
    event_id    uuid NOT NULL UNIQUE,
    role        text NOT NULL CHECK (role IN ('user', 'assistant')),
    speaker     text NOT NULL,
    source      text NOT NULL,
    text        text NOT NULL,
    recorded_at timestamptz NOT NULL,
    PRIMARY KEY (session_id, position)
);
