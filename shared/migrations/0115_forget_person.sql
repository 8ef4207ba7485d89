-- Forgetting a person (issue 35; why redaction: shared/src/memory/forget_person.rs).
-- Events stay append-only, with one audited exception: inside a transaction that set
-- `ghost.redaction` to a request's id, an event's payload and type may change, only to a
-- payload that names that request (`redacted_by`); every other column stays. Rows are
-- never deleted.
CREATE OR REPLACE FUNCTION events_are_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    request text := coalesce(current_setting('ghost.redaction', true), '');
BEGIN
    IF TG_OP = 'UPDATE' AND request <> ''
       AND NEW.payload ->> 'redacted_by' = request
       AND NEW.position = OLD.position AND NEW.tx_id = OLD.tx_id
       AND NEW.event_id = OLD.event_id AND NEW.stream = OLD.stream
       AND NEW.version = OLD.version AND NEW.schema_version = OLD.schema_version
       AND NEW.metadata = OLD.metadata AND NEW.recorded_at = OLD.recorded_at
    THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'events are append-only (% refused)', TG_OP;
END;
$$;

-- One row per carried-out request: what it changed (ids, no text), written in the
-- redaction's transaction, so a redelivered request finds it done and only reports.
CREATE TABLE person_redactions (
    request_id  uuid PRIMARY KEY,
    person      text NOT NULL,
    event_ids   uuid[] NOT NULL,
    redacted    jsonb NOT NULL,
    scrubbed    jsonb NOT NULL,
    redacted_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
