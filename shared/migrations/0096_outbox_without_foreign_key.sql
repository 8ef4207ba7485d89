-- The outbox's foreign key to events guarded nothing (events are never deleted, and only
-- ghost_append writes outbox rows, for the events it has just inserted) and cost a
-- FOR KEY SHARE row lock on every new event: a lookup, a WAL record and a dirtied heap
-- page per event, on every append.
ALTER TABLE outbox DROP CONSTRAINT outbox_position_fkey;
