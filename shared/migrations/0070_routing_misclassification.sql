-- The user's corrections of a previous route (seed 002: negation and explicit commands are
-- the strongest misclassification signals), on the row of the correcting message.
ALTER TABLE routing_log
    ADD COLUMN corrects_event_id uuid,
    ADD COLUMN misrouted_as      text,
    ADD COLUMN misrouted_source  text,
    ADD COLUMN correction_signal text;
CREATE INDEX routing_log_corrections ON routing_log (recorded_at) WHERE corrects_event_id IS NOT NULL;
