-- The wake-up notification names the appended event types (comma separated) instead of
-- the stream: a projection runner wakes only for the types it projects (Projection::wakes_on)
-- and leaves the others to its next pass. Every runner woken by every append was most of
-- the statements Postgres ran for a chat turn. Only the notification changes.
CREATE OR REPLACE FUNCTION ghost_append(p_stream text, p_expected integer, p_events jsonb)
RETURNS TABLE (
    "position" bigint, tx_id bigint, event_id uuid, stream text, version integer,
    event_type text, schema_version integer, payload jsonb, metadata jsonb,
    recorded_at timestamptz, duplicate boolean
)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_ids uuid[];
    v_found integer;
    v_current integer;
BEGIN
    SELECT array_agg((e->>'event_id')::uuid) INTO v_ids FROM jsonb_array_elements(p_events) AS t(e);
    SELECT count(*) INTO v_found FROM events WHERE events.event_id = ANY(v_ids);
    IF v_found > 0 THEN
        IF v_found <> coalesce(array_length(v_ids, 1), 0) THEN
            RAISE EXCEPTION 'append to % mixes new and stored events', p_stream USING ERRCODE = 'GH002';
        END IF;
        RETURN QUERY
            SELECT e.position, e.tx_id, e.event_id, e.stream, e.version, e.event_type,
                   e.schema_version, e.payload, e.metadata, e.recorded_at, true
            FROM events e WHERE e.event_id = ANY(v_ids) ORDER BY e.position;
        RETURN;
    END IF;

    SELECT coalesce(max(e.version), 0) INTO v_current FROM events e WHERE e.stream = p_stream;
    IF p_expected >= 0 AND v_current <> p_expected THEN
        RAISE EXCEPTION 'stream % is at version %', p_stream, v_current
            USING ERRCODE = 'GH001', DETAIL = v_current::text;
    END IF;

    RETURN QUERY
        WITH ins AS (
            INSERT INTO events (event_id, stream, version, event_type, schema_version, payload, metadata)
            SELECT (t.e->>'event_id')::uuid, p_stream, v_current + t.o::integer,
                   t.e->>'event_type', (t.e->>'schema_version')::integer, t.e->'payload', t.e->'metadata'
            FROM jsonb_array_elements(p_events) WITH ORDINALITY AS t(e, o)
            RETURNING events.position, events.tx_id, events.event_id, events.stream, events.version,
                      events.event_type, events.schema_version, events.payload, events.metadata,
                      events.recorded_at
        ), queued AS (
            INSERT INTO outbox (position) SELECT ins.position FROM ins
        )
        SELECT ins.position, ins.tx_id, ins.event_id, ins.stream, ins.version, ins.event_type,
               ins.schema_version, ins.payload, ins.metadata, ins.recorded_at, false
        FROM ins ORDER BY ins.position;
    -- An empty payload (no types, or too many for a notification's 8000 bytes) wakes all.
    PERFORM pg_notify('ghost_events', (
        SELECT CASE WHEN length(x.types) < 7000 THEN x.types ELSE '' END
        FROM (SELECT coalesce(string_agg(DISTINCT t.e->>'event_type', ','), '') AS types
              FROM jsonb_array_elements(p_events) AS t(e)) x));
END;
$$;
