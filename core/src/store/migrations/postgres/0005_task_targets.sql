-- PostgreSQL's form of sqlite/0005_task_targets.sql.
-- The search index a task is for. On PostgreSQL several data directories, each with
-- its own search index, can share one database; a search task (a handed-off search operation, a
-- restore's rebuild) names the index it must run on (its `search/INSTANCE` id), and only the
-- process writing that index claims it. NULL: any runner may claim it (every other task, and
-- search tasks queued before this migration).
ALTER TABLE tasks ADD COLUMN target TEXT;
