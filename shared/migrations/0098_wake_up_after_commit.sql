-- The append functions no longer send the wake-up notification: the appending process
-- sends it after the commit (EventStore's wake-ups, shared/src/store/wakeups.rs).
-- A transaction that notifies holds a database-wide lock from its pre-commit step to its
-- end, its WAL flush included, so every appending commit waited for the previous one's
-- flush instead of sharing it (pgbench, 16 clients, insert + commit: ~3,500 commits/s
-- without the notification, 1,100-1,600 with it). Only the notification changes.
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
END;
$$;

CREATE OR REPLACE FUNCTION ghost_append_batch(p_requests jsonb)
RETURNS TABLE (
    request integer, error_code text,
    "position" bigint, tx_id bigint, event_id uuid, stream text, version integer,
    event_type text, schema_version integer, payload jsonb, metadata jsonb,
    recorded_at timestamptz, duplicate boolean
)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_ids uuid[];
    v_positions bigint[];
    v_requests integer[];
BEGIN
    -- One request gains nothing from the one INSERT (it costs a subtransaction either
    -- way) and its plan costs more: ~0.2 ms per call, seen in paced webhook latency.
    IF jsonb_array_length(p_requests) < 2 THEN
        RETURN QUERY SELECT * FROM ghost_append_batch_each(p_requests);
        RETURN;
    END IF;
    SELECT array_agg((x.e->>'event_id')::uuid) INTO v_ids
    FROM jsonb_array_elements(p_requests) AS t(r), jsonb_array_elements(t.r->'events') AS x(e);
    -- `= ANY(array)` is an index lookup per id; a join to the request's JSON is not.
    IF NOT EXISTS (SELECT 1 FROM jsonb_array_elements(p_requests) AS t(r)
                   WHERE (t.r->>'expected')::integer >= 0)
       AND NOT EXISTS (SELECT 1 FROM events e WHERE e.event_id = ANY(v_ids)) THEN
        BEGIN
            WITH ev AS (
                SELECT t.o::integer AS request, t.r->>'stream' AS stream, x.e, x.i,
                       row_number() OVER (PARTITION BY t.r->>'stream' ORDER BY t.o, x.i) AS nth
                FROM jsonb_array_elements(p_requests) WITH ORDINALITY AS t(r, o),
                     jsonb_array_elements(t.r->'events') WITH ORDINALITY AS x(e, i)
            ), cur AS (
                SELECT s.stream,
                       coalesce((SELECT max(e.version) FROM events e WHERE e.stream = s.stream), 0) AS version
                FROM (SELECT DISTINCT ev.stream FROM ev) s
            ), ins AS (
                INSERT INTO events (event_id, stream, version, event_type, schema_version, payload, metadata)
                SELECT (ev.e->>'event_id')::uuid, ev.stream, cur.version + ev.nth::integer,
                       ev.e->>'event_type', (ev.e->>'schema_version')::integer,
                       ev.e->'payload', ev.e->'metadata'
                FROM ev JOIN cur ON cur.stream = ev.stream
                ORDER BY ev.request, ev.i
                RETURNING events.position, events.event_id
            ), queued AS (
                INSERT INTO outbox (position) SELECT ins.position FROM ins
            )
            -- Aggregating reads every inserted row before anything is returned, so an
            -- error undoes the whole INSERT and leaves nothing in this function's result.
            SELECT array_agg(ins.position ORDER BY ins.position),
                   array_agg(ev.request ORDER BY ins.position)
            INTO v_positions, v_requests
            FROM ins JOIN ev ON (ev.e->>'event_id')::uuid = ins.event_id;
        EXCEPTION
            WHEN unique_violation THEN
                v_positions := NULL;
        END;
        IF v_positions IS NOT NULL THEN
            RETURN QUERY
                SELECT s.request, NULL::text, e.position, e.tx_id, e.event_id, e.stream,
                       e.version, e.event_type, e.schema_version, e.payload, e.metadata,
                       e.recorded_at, false
                FROM unnest(v_positions, v_requests) AS s(at, request)
                JOIN events e ON e.position = s.at
                ORDER BY s.request, e.position;
            RETURN;
        END IF;
    END IF;
    RETURN QUERY SELECT * FROM ghost_append_batch_each(p_requests);
END;
$$;
