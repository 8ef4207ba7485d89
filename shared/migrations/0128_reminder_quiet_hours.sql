-- A person's own quiet hours (issue 46 item 4), set by them in a conversation ("/remind
-- quiet 22:00-07:00", "don't remind me between 23:00 and 6:30", "no more quiet hours"): the
-- `reminders` projection keeps the latest per person from `ReminderQuietHoursSet`.
-- `quiet_hours` NULL means they turned them off: never quiet, whatever
-- `reminders.quiet_hours` says; no row means the configuration's.
CREATE TABLE reminder_quiet_hours (
    person text PRIMARY KEY,
    quiet_hours text,
    set_at timestamptz NOT NULL,
    position bigint NOT NULL
);
