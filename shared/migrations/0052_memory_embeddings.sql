-- Vector recall (issue 12): one embedding per (recalled item, embedding model), stored as
-- real[] and ranked in process, so no extension beyond contrib is needed. Filled lazily by
-- recall (newest utterances and the persona's states first); a cache, not a projection:
-- ids are event and state ids, so a rebuild keeps it valid.
CREATE TABLE memory_embeddings (
    item_id    text NOT NULL,
    model      text NOT NULL,
    persona    text,
    session_id text,
    text       text NOT NULL,
    vector     real[] NOT NULL,
    PRIMARY KEY (item_id, model)
);
