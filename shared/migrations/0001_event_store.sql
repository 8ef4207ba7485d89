-- The append-only event store: the single source of truth.
--
-- `position` is identity and a global order of insertion, but sequence values become
-- visible in commit order, not insert order. Readers that need a gap-safe order use
-- (tx_id, position) and only read transactions older than every running one
-- (see EventStore::read_all_after).
CREATE TABLE events (
    position       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tx_id          bigint NOT NULL DEFAULT (pg_current_xact_id()::text::bigint),
    event_id       uuid NOT NULL UNIQUE,
    stream         text NOT NULL,
    version        integer NOT NULL CHECK (version > 0),
    event_type     text NOT NULL,
    schema_version integer NOT NULL DEFAULT 1,
    payload        jsonb NOT NULL,
    metadata       jsonb NOT NULL,
    recorded_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT events_stream_version UNIQUE (stream, version)
);

CREATE INDEX events_tx_order ON events (tx_id, position);

-- Events are facts: nobody updates or deletes them.
CREATE FUNCTION events_are_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'events are append-only (% refused)', TG_OP;
END;
$$;

CREATE TRIGGER events_no_update BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION events_are_immutable();

-- Committed events not yet confirmed by JetStream. Written in the append transaction,
-- removed once the publish is acknowledged; the relay sweeps whatever a crash left behind.
CREATE TABLE outbox (
    position    bigint PRIMARY KEY REFERENCES events (position),
    enqueued_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- Where each projection has read up to, in the gap-safe (tx_id, position) order.
CREATE TABLE projection_checkpoints (
    name       text PRIMARY KEY,
    tx_id      bigint NOT NULL DEFAULT 0,
    position   bigint NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
