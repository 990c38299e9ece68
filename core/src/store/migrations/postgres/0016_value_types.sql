-- Typed metadata types: what a type's values are (`text`, `integer`, `decimal`, `date`,
-- `datetime`, `time` or `boolean`; see `ValueType`). Every existing type stays text.
ALTER TABLE metadata_types ADD COLUMN value_type TEXT NOT NULL DEFAULT 'text';
