-- A person's own time zone (issue 46), set by them in a conversation ("/remind zone
-- Asia/Tokyo", "my time zone is Tokyo"): the `reminders` projection keeps the latest per
-- person from `ReminderZoneSet`; reminders asked afterwards are read in it (the
-- configuration's `reminders.time_zones` / `time_zone` when a person set none).
CREATE TABLE reminder_zones (
    person text PRIMARY KEY,
    time_zone text NOT NULL,
    set_at timestamptz NOT NULL,
    position bigint NOT NULL
);
