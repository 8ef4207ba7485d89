-- Media users send (LINE images), in the database rather than on a disk, so a service on
-- another machine (the persona) reaches what the gateway downloaded. Kept at least
-- media.retention_secs after download (seed 002: not deleted right after use), then
-- removed by the gateway's sweeper.
CREATE TABLE media (
    id           uuid PRIMARY KEY,
    content_type text,
    bytes        bytea NOT NULL,
    size_bytes   bigint NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE INDEX media_created ON media (created_at);
