-- Who spoke in each conversation (issue 35): recall asks, for every candidate line of
-- another conversation, whether anyone but the speaker spoke there; with this index that is
-- two range probes instead of a scan of the conversation.
CREATE INDEX assistant_text_session_speakers ON assistant_text (session_id, speaker)
    WHERE role = 'user';
