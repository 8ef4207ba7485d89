-- An append that is new and at the expected version (nearly every append) now runs as
-- one statement: the duplicate check, the stream's version and both inserts in one CTE.
-- The checks of the earlier function ran as four statements, each with its own executor
-- start, and every row came back with its payload and metadata, which the caller drops
-- for a new event: 0.41 → 0.35 ms an append on its own (pgbench, one client, this
-- machine), and a chat turn appends three times.
--
-- When the fast path stores nothing (an id already stored, or the stream at another
-- version), the earlier function, kept as ghost_append_checked, sorts it out: it returns
-- the stored copies or raises GH001 / GH002 exactly as before.
ALTER FUNCTION ghost_append(text, integer, jsonb) RENAME TO ghost_append_checked;

CREATE FUNCTION ghost_append(p_stream text, p_expected integer, p_events jsonb)
RETURNS TABLE (
    "position" bigint, tx_id bigint, event_id uuid, stream text, version integer,
    event_type text, schema_version integer, payload jsonb, metadata jsonb,
    recorded_at timestamptz, duplicate boolean
)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    -- A new event's payload and metadata are what the caller sent: not sent back.
    RETURN QUERY
        WITH new AS (
            SELECT (t.e->>'event_id')::uuid AS id, t.e, t.o::integer AS o
            FROM jsonb_array_elements(p_events) WITH ORDINALITY AS t(e, o)
        ), cur AS (
            SELECT coalesce(max(e.version), 0) AS v FROM events e WHERE e.stream = p_stream
        ), ins AS (
            INSERT INTO events (event_id, stream, version, event_type, schema_version, payload, metadata)
            SELECT new.id, p_stream, cur.v + new.o, new.e->>'event_type',
                   (new.e->>'schema_version')::integer, new.e->'payload', new.e->'metadata'
            FROM new, cur
            WHERE (p_expected < 0 OR cur.v = p_expected)
              AND NOT EXISTS (SELECT 1 FROM events d WHERE d.event_id IN (SELECT new.id FROM new))
            RETURNING events.position, events.tx_id, events.event_id, events.stream,
                      events.version, events.event_type, events.schema_version,
                      events.recorded_at
        ), queued AS (
            INSERT INTO outbox (position) SELECT ins.position FROM ins
        )
        SELECT ins.position, ins.tx_id, ins.event_id, ins.stream, ins.version, ins.event_type,
               ins.schema_version, NULL::jsonb, NULL::jsonb, ins.recorded_at, false
        FROM ins ORDER BY ins.position;
    IF FOUND THEN
        RETURN;
    END IF;
    RETURN QUERY SELECT * FROM ghost_append_checked(p_stream, p_expected, p_events);
END;
$$;

-- As migration 0099: plans made on a nearly empty store must still read by key.
ALTER FUNCTION ghost_append(text, integer, jsonb) SET enable_seqscan = off;
ALTER FUNCTION ghost_append(text, integer, jsonb) SET enable_bitmapscan = off;
