-- The mood service keeps each persona's window in memory and, per `mood.get`, reads only
-- the episodes applied since (services/mood/src/service.rs). The projection applies events
-- in the store's gap-safe (tx_id, position) order, not in position order, so that order is
-- kept on each row: everything newer than the last row read is exactly what came since.
-- Rows from before this column are NULL and sort first (read whole at the first query).
ALTER TABLE mood_episodes ADD COLUMN tx_id bigint;
