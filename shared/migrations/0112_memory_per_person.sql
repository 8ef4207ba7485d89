-- Memory is about someone (issue 35 item 1): each state names the person it is about (NULL:
-- about no one in particular), each preference the person whose it is. Rows written before
-- belong to the default person `user`, as the events they came from decode (a field they
-- lack reads as `user`), so a rebuild from position 0 gives these same rows. The projection
-- always names the person (NULL: no one); the default only speaks for older rows.
ALTER TABLE memory_states ADD COLUMN person text DEFAULT 'user';
CREATE INDEX memory_states_person_recent ON memory_states (persona, person, position DESC);

UPDATE memory_state_revisions SET state = state || '{"person": "user"}'::jsonb
 WHERE NOT state ? 'person';

ALTER TABLE preferences ADD COLUMN person text NOT NULL DEFAULT 'user';
ALTER TABLE preferences DROP CONSTRAINT preferences_pkey;
ALTER TABLE preferences ADD PRIMARY KEY (persona, person, domain, subject_key, polarity);
