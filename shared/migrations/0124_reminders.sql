-- Reminders (issue 46): the `reminders` projection, written from the Reminder* events by the
-- gateway's runner, one row per reminder with its next due time. The scheduler claims due
-- rows with FOR UPDATE SKIP LOCKED on the system's clock (ghost_now()) and leases them on
-- the real clock (claimed_until): the one column no event writes, so that several
-- instances share the work and a claim lost with its process is taken again.
CREATE TABLE reminders (
    reminder_id        uuid PRIMARY KEY,
    person             text NOT NULL,
    session_id         text NOT NULL,
    channel            text NOT NULL,
    target             jsonb,
    text               text NOT NULL,
    rule               text,
    -- The rule's start (its first occurrence, or where a move put it).
    first_at           timestamptz NOT NULL,
    time_zone          text NOT NULL,
    -- The next occurrence; NULL once it is over.
    due_at             timestamptz,
    status             text NOT NULL CHECK (status IN ('scheduled', 'done', 'cancelled')),
    created_at         timestamptz NOT NULL,
    scheduled_event_id uuid NOT NULL,
    delivered_count    integer NOT NULL DEFAULT 0,
    claimed_until      timestamptz
);

CREATE INDEX reminders_due ON reminders (due_at) WHERE status = 'scheduled';
CREATE INDEX reminders_by_person ON reminders (person, created_at);
