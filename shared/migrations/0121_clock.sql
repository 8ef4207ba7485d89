-- One clock for the whole system (issue 45): recency, about_time, summaries, decay and
-- reminders read it. It is the database's wall clock plus an offset kept here, which an
-- evaluation with `clock.simulated: true` moves forward (`POST /api/clock/advance`) so that a
-- week passes in minutes. The offset only grows, so the clock never runs backwards, and it
-- stays with the database. Every event's `recorded_at` is read from it, and every comparison
-- of `recorded_at` with "now" in SQL uses it (ghost_now()).
CREATE TABLE ghost_clock (
    id boolean PRIMARY KEY DEFAULT true CHECK (id),
    offset_secs double precision NOT NULL DEFAULT 0 CHECK (offset_secs >= 0)
);
INSERT INTO ghost_clock DEFAULT VALUES;

CREATE FUNCTION ghost_now() RETURNS timestamptz LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
    SELECT clock_timestamp()
        + make_interval(secs => coalesce((SELECT offset_secs FROM ghost_clock), 0))
$$;

ALTER TABLE events ALTER COLUMN recorded_at SET DEFAULT ghost_now();
