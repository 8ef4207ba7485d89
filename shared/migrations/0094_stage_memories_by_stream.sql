-- Every stage turn reads the summaries earlier runs of its stage saved (the newest few
-- `StageMemorySaved` before it; services/persona/src/stage/turn.rs). Through the
-- (stream, version) key that read walked back over the stage's whole history, so a turn's
-- cost grew with the stage's age. This partial index holds only those summaries.
CREATE INDEX events_stage_memories_by_stream ON events (stream, version)
    WHERE event_type = 'StageMemorySaved';
