-- Long-term memory (seed 001, issue 12): the `memory` projection's tables, fed by the
-- write plan's events. Every row carries the position of the event that set it, so a
-- rebuild from zero gives identical rows.

-- The current revision of each state.
CREATE TABLE memory_states (
    persona            text NOT NULL,
    state_id           uuid PRIMARY KEY,
    kind               text NOT NULL,
    status             text NOT NULL,
    body_text          text NOT NULL,
    payload            jsonb,
    confidence         double precision NOT NULL,
    salience           double precision,
    valid_from_ts      bigint,
    valid_to_ts        bigint,
    revision           integer NOT NULL,
    evidence_event_ids uuid[] NOT NULL,
    reason             text NOT NULL,
    source_event_id    uuid NOT NULL,
    position           bigint NOT NULL
);

CREATE INDEX memory_states_recent ON memory_states (persona, position DESC);

-- Every revision of every state (history kept; the newest is in memory_states).
CREATE TABLE memory_state_revisions (
    state_id        uuid NOT NULL,
    revision        integer NOT NULL,
    persona         text NOT NULL,
    state           jsonb NOT NULL,
    source_event_id uuid NOT NULL,
    position        bigint NOT NULL,
    PRIMARY KEY (state_id, revision)
);

-- One row per (domain, subject key, polarity): candidate, confirmed or revoked.
CREATE TABLE preferences (
    persona            text NOT NULL,
    domain             text NOT NULL,
    subject_key        text NOT NULL,
    polarity           text NOT NULL,
    subject            text NOT NULL,
    status             text NOT NULL,
    confidence         double precision NOT NULL,
    evidence_event_ids uuid[] NOT NULL,
    reason             text NOT NULL,
    source_event_id    uuid NOT NULL,
    position           bigint NOT NULL,
    PRIMARY KEY (persona, domain, subject_key, polarity)
);

-- What each persona attends to now (one shared value: chat and autonomy read it).
CREATE TABLE persona_interest_state (
    persona                text PRIMARY KEY,
    attention_targets      jsonb NOT NULL,
    interaction_mode       text NOT NULL,
    updated_from_event_ids uuid[] NOT NULL,
    updated_at             double precision NOT NULL,
    source_event_id        uuid NOT NULL,
    position               bigint NOT NULL
);

-- The write plan's annotations of each utterance (about-time, entities, affect, context).
CREATE TABLE memory_event_annotations (
    source_event_id  uuid PRIMARY KEY,
    persona          text NOT NULL,
    life_stage       text,
    about_year_start integer,
    about_year_end   integer,
    annotation       jsonb NOT NULL,
    position         bigint NOT NULL
);
