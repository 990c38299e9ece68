-- PostgreSQL's form of sqlite/0004_template_authors.sql.
-- Who created each workflow action and transition. Their templates (an
-- edit_metadata value, a condition) render with what that user may view (a superuser: every
-- value). 0 is docmeta itself (created through Docmeta::system: everything); NULL, a row stored
-- before this migration, whose author is unknown: its templates see no metadata value.
ALTER TABLE workflow_state_actions ADD COLUMN author_id BIGINT;
ALTER TABLE workflow_transitions ADD COLUMN author_id BIGINT;
