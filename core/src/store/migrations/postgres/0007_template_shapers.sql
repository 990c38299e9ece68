-- PostgreSQL's form of sqlite/0007_template_shapers.sql.
-- Who shaped each stored template, so that it never sees more than every one of them
-- may view. A shaper set is the user ids joined by commas ('0' is docmeta itself, a change made
-- through Docmeta::system); an empty set on a template that is not empty sees nothing.
--
-- Metadata types: one set for the default, one for the lookup (its creator and everyone who
-- changed that template since). Who wrote which field was not recorded before, so an existing
-- template gets every actor of its type's created and edited events (a NULL actor is docmeta
-- itself): a superset of its real shapers, so it never sees more than it should. A type whose
-- events are gone gets none: its templates see nothing until they are saved again.
ALTER TABLE metadata_types ADD COLUMN default_shapers TEXT NOT NULL DEFAULT '';
ALTER TABLE metadata_types ADD COLUMN lookup_shapers TEXT NOT NULL DEFAULT '';
UPDATE metadata_types SET default_shapers = COALESCE((
    SELECT string_agg(DISTINCT COALESCE(e.actor_id, 0)::text, ',') FROM events e
    WHERE e.target_kind = 'metadata.metadatatype' AND e.target_id = metadata_types.id
      AND e.name IN ('metadata.metadata_type_created', 'metadata.metadata_type_edited')
), '')
WHERE TRIM(default_value) <> '';
UPDATE metadata_types SET lookup_shapers = COALESCE((
    SELECT string_agg(DISTINCT COALESCE(e.actor_id, 0)::text, ',') FROM events e
    WHERE e.target_kind = 'metadata.metadatatype' AND e.target_id = metadata_types.id
      AND e.name IN ('metadata.metadata_type_created', 'metadata.metadata_type_edited')
), '')
WHERE TRIM(lookup) <> '';
-- Transitions: the shapers of the condition (its creator and everyone who changed it since).
-- Editors of a condition before this migration were not recorded: an existing condition keeps
-- its recorded creator (author_id, from migration 4) and none when that is unknown (NULL).
ALTER TABLE workflow_transitions ADD COLUMN condition_shapers TEXT NOT NULL DEFAULT '';
UPDATE workflow_transitions SET condition_shapers = CAST(author_id AS TEXT)
WHERE author_id IS NOT NULL AND TRIM(condition) <> '';
