-- The append functions read the store only by key: an event id already stored, a
-- stream's highest version. PL/pgSQL keeps each statement's plan for the life of the
-- connection, and a plan made while the store was nearly empty (a new deployment's first
-- appends, before any ANALYZE) scans the whole table: a sequential scan for the event-id
-- check was seen reading all 6,268 events of a store on every append (1.3 ms, growing
-- with the store). Without sequential or bitmap scans the planner takes the key's index
-- whatever the statistics say. These settings hold only while the functions run.
ALTER FUNCTION ghost_append(text, integer, jsonb) SET enable_seqscan = off;
ALTER FUNCTION ghost_append(text, integer, jsonb) SET enable_bitmapscan = off;
ALTER FUNCTION ghost_append_batch(jsonb) SET enable_seqscan = off;
ALTER FUNCTION ghost_append_batch(jsonb) SET enable_bitmapscan = off;
ALTER FUNCTION ghost_append_batch_each(jsonb) SET enable_seqscan = off;
ALTER FUNCTION ghost_append_batch_each(jsonb) SET enable_bitmapscan = off;
