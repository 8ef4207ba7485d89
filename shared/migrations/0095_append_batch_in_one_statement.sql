-- Group commit without a subtransaction per request: a batch whose requests all take any
-- version (webhooks, stage turns) and store only new events is stored by one INSERT.
-- A subtransaction per request cost ~0.35 ms per event (pgbench, 100 one-event requests:
-- 44.7 ms, 7.2 ms as one statement), and past 64 of them in one transaction every other
-- session's snapshot overflows to pg_subtrans.
--
-- Anything else (and a batch of one) takes the per-request path of 0090, renamed
-- ghost_append_batch_each:
-- an expected version, an event id already stored (a redelivery), or a unique violation
-- from the one INSERT (a concurrent writer took a version, or the batch holds one id
-- twice). The INSERT is then undone as a whole, so either path answers for every request.
ALTER FUNCTION ghost_append_batch(jsonb) RENAME TO ghost_append_batch_each;

CREATE FUNCTION ghost_append_batch(p_requests jsonb)
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
            -- One wake-up for the batch, naming its event types (as ghost_append does).
            PERFORM pg_notify('ghost_events', (
                SELECT CASE WHEN length(x.types) < 7000 THEN x.types ELSE '' END
                FROM (SELECT coalesce(string_agg(DISTINCT e.event_type, ','), '') AS types
                      FROM events e WHERE e.position = ANY(v_positions)) x));
            RETURN;
        END IF;
    END IF;
    RETURN QUERY SELECT * FROM ghost_append_batch_each(p_requests);
END;
$$;
