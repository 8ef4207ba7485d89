-- A character's recall reads the summaries of the stage runs it spoke in
-- (services/persona/src/recall/stage_memories.rs): the newest few hundred `StageMemorySaved`
-- naming it among their speakers. This partial index holds only those summaries, newest
-- first, so the read never walks the rest of the store.
CREATE INDEX events_stage_memories_newest ON events (position DESC)
    WHERE event_type = 'StageMemorySaved';
