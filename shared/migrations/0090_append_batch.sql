-- Group commit: many appends in one transaction and one round trip (webhook
-- acknowledgements: the commit's fsync is shared by every webhook of the batch).
--
-- p_requests: [{stream, expected, events: [...]}, ...], each as ghost_append takes it,
-- applied in array order (so one conversation's requests keep their order).
-- Each request runs in its own subtransaction: one that fails comes back as a row with
-- its SQLSTATE in error_code and nothing of it stored, and the others still commit.
-- A unique violation (a concurrent writer took the version, or stored the same ids) is
-- retried like EventStore::append does; the retry then sees the other writer's rows.
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
    v_req jsonb;
    v_index integer;
    v_try integer;
BEGIN
    FOR v_req, v_index IN
        SELECT t.r, t.o::integer FROM jsonb_array_elements(p_requests) WITH ORDINALITY AS t(r, o)
    LOOP
        v_try := 0;
        LOOP
            v_try := v_try + 1;
            BEGIN
                -- ghost_append materialises its rows before returning: an error leaves
                -- none of this request's rows in the result.
                RETURN QUERY
                    SELECT v_index, NULL::text, a.*
                    FROM ghost_append(v_req->>'stream', (v_req->>'expected')::integer, v_req->'events') a;
                EXIT;
            EXCEPTION
                WHEN unique_violation THEN
                    IF v_try >= 16 THEN
                        RETURN QUERY SELECT v_index, SQLSTATE::text, NULL::bigint, NULL::bigint,
                            NULL::uuid, NULL::text, NULL::integer, NULL::text, NULL::integer,
                            NULL::jsonb, NULL::jsonb, NULL::timestamptz, NULL::boolean;
                        EXIT;
                    END IF;
                WHEN others THEN
                    RETURN QUERY SELECT v_index, SQLSTATE::text, NULL::bigint, NULL::bigint,
                        NULL::uuid, NULL::text, NULL::integer, NULL::text, NULL::integer,
                        NULL::jsonb, NULL::jsonb, NULL::timestamptz, NULL::boolean;
                    EXIT;
            END;
        END LOOP;
    END LOOP;
END;
$$;
