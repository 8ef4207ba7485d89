-- Forgotten memories (issue 35 item 2): the memory's rows are deleted; what stays is which
-- request forgot what and the ids of the events it rested on (no text), so a later write
-- plan resting on the same evidence cannot bring it back, and a rebuild forgets it again.
CREATE TABLE memory_forgotten (
    source_event_id    uuid PRIMARY KEY,
    persona            text NOT NULL,
    target             jsonb NOT NULL,
    evidence_event_ids uuid[] NOT NULL,
    position           bigint NOT NULL
);

CREATE INDEX memory_forgotten_persona ON memory_forgotten (persona);
