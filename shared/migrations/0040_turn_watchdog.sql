-- The turn watchdog looks for user messages older than its limit (services/router/src/watchdog.rs).
CREATE INDEX events_user_messages_recorded ON events (recorded_at)
    WHERE event_type = 'UserMessageReceived';
