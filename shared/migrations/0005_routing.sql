-- Read models of the router (seed 002). All are projections: rebuildable from the events.

-- Per session: the local_only flag, the last primary route and the short-memory summary.
CREATE TABLE routing_sessions (
    session_id         text PRIMARY KEY,
    local_only         boolean NOT NULL DEFAULT false,
    last_primary_route text,
    summary            text,
    summary_turns      integer NOT NULL DEFAULT 0,
    updated_at         timestamptz NOT NULL
);

-- Per user message: how it was routed, what ran, how it ended (masked; never shown to users).
CREATE TABLE routing_log (
    user_event_id         uuid PRIMARY KEY,
    session_id            text NOT NULL,
    position              bigint NOT NULL,
    channel               text,
    input_masked          text,
    entry                 text,
    first_route           text,
    first_source          text,
    classifier_route      text,
    classifier_confidence double precision,
    user_override         boolean NOT NULL DEFAULT false,
    local_only            boolean NOT NULL DEFAULT false,
    rerouted              boolean NOT NULL DEFAULT false,
    worker_calls          integer NOT NULL DEFAULT 0,
    coder_calls           integer NOT NULL DEFAULT 0,
    needs_next_loop       boolean,
    risk                  text,
    fit                   boolean,
    loop_decisions        jsonb NOT NULL DEFAULT '[]'::jsonb,
    final_route           text,
    parse_failures        jsonb NOT NULL DEFAULT '[]'::jsonb,
    recorded_at           timestamptz NOT NULL
);
CREATE INDEX routing_log_session ON routing_log (session_id, position);

-- ANALYZE results kept as structured JSON, so later turns can build on them.
CREATE TABLE analyze_results (
    event_id      uuid PRIMARY KEY,
    session_id    text NOT NULL,
    position      bigint NOT NULL,
    user_event_id uuid NOT NULL,
    result        jsonb NOT NULL,
    recorded_at   timestamptz NOT NULL
);
CREATE INDEX analyze_results_session ON analyze_results (session_id, position);
