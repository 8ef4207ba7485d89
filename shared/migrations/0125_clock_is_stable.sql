-- ghost_now() (migration 0121) is one value for a whole comparison: declared STABLE, the
-- planner reads it once per index scan instead of once per row, so `recorded_at < ghost_now()
-- - ...` (the turn watchdog, the daily spend) can use the indexes on recorded_at again, as
-- they did with now(). Each row's default recorded_at is still read when the row is written.
ALTER FUNCTION ghost_now() STABLE;
