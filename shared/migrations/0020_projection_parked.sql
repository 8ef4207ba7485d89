-- Events a projection could not decode or apply. Each is parked here with the error, so the
-- projection's checkpoint moves past it instead of stalling on it; `ghost projections retry
-- <name>` applies them again and removes the rows that applied. A rebuild empties a
-- projection's rows and parks again whatever still fails.
CREATE TABLE projection_parked (
    projection text NOT NULL,
    event_id   uuid NOT NULL,
    position   bigint NOT NULL,
    tx_id      bigint NOT NULL,
    event_type text NOT NULL,
    error      text NOT NULL,
    attempts   integer NOT NULL DEFAULT 1,
    parked_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    retried_at timestamptz,
    PRIMARY KEY (projection, event_id)
);

CREATE INDEX projection_parked_order ON projection_parked (projection, tx_id, position);
