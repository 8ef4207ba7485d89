-- A chat turn's append asks whether the session is mid-turn from its newest event that is
-- part of a turn. Several kinds of event land in a conversation outside any turn (the
-- persona's autonomy messages and their pushes, reminders asked through the API and their
-- occurrences): all of them are skipped now, not only the one type of migration 0101, so a
-- reminder said in a conversation does not leave it "busy" for the turn's timeout.
DROP FUNCTION ghost_append_turn(text, jsonb, text[], text, double precision);

CREATE FUNCTION ghost_append_turn(
    p_stream text, p_events jsonb, p_ends_turn text[], p_not_turn text[],
    p_running_secs double precision
)
RETURNS TABLE (
    "position" bigint, tx_id bigint, event_id uuid, stream text, version integer,
    event_type text, schema_version integer, payload jsonb, metadata jsonb,
    recorded_at timestamptz, duplicate boolean
)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_version integer;
    v_last_type text;
    v_last_at timestamptz;
BEGIN
    RETURN QUERY
        WITH new AS (
            SELECT (t.e->>'event_id')::uuid AS id, t.e, t.o::integer AS o
            FROM jsonb_array_elements(p_events) WITH ORDINALITY AS t(e, o)
        ), cur AS (
            SELECT coalesce(max(e.version), 0) AS v FROM events e WHERE e.stream = p_stream
        ), busy AS (
            SELECT 1 FROM (
                SELECT e.event_type, e.recorded_at FROM events e
                WHERE e.stream = p_stream AND e.event_type <> ALL (p_not_turn)
                ORDER BY e.version DESC LIMIT 1
            ) l
            WHERE NOT (l.event_type = ANY (p_ends_turn))
              AND l.recorded_at > ghost_now() - make_interval(secs => p_running_secs)
        ), ins AS (
            INSERT INTO events (event_id, stream, version, event_type, schema_version, payload, metadata)
            SELECT new.id, p_stream, cur.v + new.o, new.e->>'event_type',
                   (new.e->>'schema_version')::integer, new.e->'payload', new.e->'metadata'
            FROM new, cur
            WHERE NOT EXISTS (SELECT 1 FROM busy)
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
    -- Nothing stored: the earlier body sorts out why.
    SELECT coalesce(max(e.version), 0) INTO v_version FROM events e WHERE e.stream = p_stream;
    SELECT e.event_type, e.recorded_at INTO v_last_type, v_last_at
    FROM events e
    WHERE e.stream = p_stream AND e.event_type <> ALL (p_not_turn)
    ORDER BY e.version DESC LIMIT 1;
    IF v_last_type IS NOT NULL AND NOT (v_last_type = ANY (p_ends_turn))
       AND v_last_at > ghost_now() - make_interval(secs => p_running_secs) THEN
        RAISE EXCEPTION 'stream % is in the middle of a turn', p_stream USING ERRCODE = 'GH003';
    END IF;
    RETURN QUERY SELECT * FROM ghost_append_checked(p_stream, v_version, p_events);
END;
$$;

-- As migration 0099 (CREATE OR REPLACE drops them): plans made on a nearly empty store
-- must still read by key.
ALTER FUNCTION ghost_append_turn(text, jsonb, text[], text[], double precision) SET enable_seqscan = off;
ALTER FUNCTION ghost_append_turn(text, jsonb, text[], text[], double precision) SET enable_bitmapscan = off;
