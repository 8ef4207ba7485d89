-- The router reads two things of a session's user messages per turn (flow/turn.rs): how many
-- there are up to the one it routes (the summary cadence), and the last `/local` or
-- `/cloud` among them. Through the (stream, version) key both visit every event of the
-- session before the message, so a turn cost grew with the conversation's length. These
-- partial indexes hold only user messages, and only the few that may carry a mode command;
-- their predicates are the queries' own filters, so the planner can use them.
CREATE INDEX events_user_messages_by_stream ON events (stream, version)
    WHERE event_type = 'UserMessageReceived';

CREATE INDEX events_mode_commands ON events (stream, version)
    WHERE event_type = 'UserMessageReceived'
      AND (payload->>'text' ILIKE '%/local%' OR payload->>'text' ILIKE '%/cloud%');
