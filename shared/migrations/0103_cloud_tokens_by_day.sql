-- The coder sums the day's cloud token use before every cloud call (shared/src/spend.rs):
-- this partial index holds only those events, by time, so the sum reads the day's few
-- rows instead of the whole store.
CREATE INDEX events_cloud_tokens_recorded ON events (recorded_at)
    WHERE event_type = 'CloudTokensUsed';
