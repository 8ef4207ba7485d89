-- The states revised or closed since they were first filed (issue 35): recall ranks an
-- utterance whose state has since changed below the change, and finds those states here
-- without reading every state of the persona.
CREATE INDEX memory_states_revised ON memory_states (persona) WHERE revision > 1;
