-- Every message's state read (services/router/src/flow/turn.rs, `state_before_sql`) looks
-- for the conversation's paused work (`ConfirmationPending`) and whether it was claimed or
-- decided (`ConfirmationCheckRequested`, `ConfirmationResolved`). Through the (stream,
-- version) key those reads would walk every event of the window; this partial index holds
-- only these three types, so they cost a few entries however long the conversation.
CREATE INDEX events_confirmations_by_stream ON events (stream, version)
    WHERE event_type IN ('ConfirmationPending', 'ConfirmationCheckRequested', 'ConfirmationResolved');
