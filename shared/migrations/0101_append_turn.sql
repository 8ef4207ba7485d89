-- A chat message's append checks that its session is not mid-turn in the same statement
-- (ghost_append_turn), instead of a read of the session's head before it: one round trip
-- and one statement fewer on every chat turn.
--
-- The session is mid-turn when its newest event, other than p_not_turn (the persona's
-- autonomy messages, which land in a conversation without being a turn), is not one of
-- p_ends_turn and is younger than p_running_secs. Then GH003 is raised and nothing is
-- stored. Otherwise the events are appended at the version read here: an append that
-- commits in between makes ghost_append refuse (GH001, or a unique violation), which the
-- caller reads as the same answer, a turn already running.
CREATE FUNCTION ghost_append_turn(
    p_stream text, p_events jsonb, p_ends_turn text[], p_not_turn text,
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
    SELECT coalesce(max(e.version), 0) INTO v_version FROM events e WHERE e.stream = p_stream;
    SELECT e.event_type, e.recorded_at INTO v_last_type, v_last_at
    FROM events e
    WHERE e.stream = p_stream AND e.event_type <> p_not_turn
    ORDER BY e.version DESC LIMIT 1;
    IF v_last_type IS NOT NULL AND NOT (v_last_type = ANY (p_ends_turn))
       AND v_last_at > clock_timestamp() - make_interval(secs => p_running_secs) THEN
        RAISE EXCEPTION 'stream % is in the middle of a turn', p_stream USING ERRCODE = 'GH003';
    END IF;
    RETURN QUERY SELECT * FROM ghost_append(p_stream, v_version, p_events);
END;
$$;

-- As migration 0099: plans made on a nearly empty store must still read by key.
ALTER FUNCTION ghost_append_turn(text, jsonb, text[], text, double precision) SET enable_seqscan = off;
ALTER FUNCTION ghost_append_turn(text, jsonb, text[], text, double precision) SET enable_bitmapscan = off;
