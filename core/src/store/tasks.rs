//! Statements of durable tasks: enqueueing, claiming (one runner per task), outcomes.
//!
//! Part of `store` (layer 3): imports only `error`, `model`, `config`, `events` and its siblings.

use chrono::{DateTime, Utc};

use super::Tx;
use super::records::*;
use crate::error::Result;
use crate::model::*;

/// The columns [`task`] reads, in its order.
const TASK_COLUMNS: &str = "id, name, payload, state, attempts, error, target";

impl Tx<'_> {
    // ----- tasks ------------------------------------------------------------------------

    /// Enqueues a task, to run now.
    pub fn enqueue_task(&mut self, name: &str, payload: &str) -> Result<TaskId> {
        self.enqueue_task_after(name, payload, chrono::Duration::zero())
    }

    /// Enqueues a task, to run now, that only a runner for `target` may claim (see
    /// [`claim_task_skipping`](Self::claim_task_skipping)): a search task names the index it is
    /// for, so that on a database shared by several data directories it runs on that one.
    pub fn enqueue_targeted_task(
        &mut self,
        name: &str,
        payload: &str,
        target: &str,
    ) -> Result<TaskId> {
        let now = to_micros(Utc::now());
        self.insert(
            "INSERT INTO tasks (name, payload, state, attempts, error, run_after, created, \
                 updated, target) \
             VALUES (?1, ?2, 'pending', 0, '', ?3, ?3, ?3, ?4) \
             RETURNING id",
            &[name.into(), payload.into(), now.into(), target.into()],
        )
        .map(TaskId)
    }

    /// Enqueues a task that workers leave alone for `delay` (its enqueuer runs it at once;
    /// workers take it only if that did not happen, e.g. after a crash).
    pub fn enqueue_task_after(
        &mut self,
        name: &str,
        payload: &str,
        delay: chrono::Duration,
    ) -> Result<TaskId> {
        let now = Utc::now();
        self.insert(
            "INSERT INTO tasks (name, payload, state, attempts, error, run_after, created, \
                 updated) \
             VALUES (?1, ?2, 'pending', 0, '', ?3, ?4, ?4) \
             RETURNING id",
            &[
                name.into(),
                payload.into(),
                to_micros(now + delay).into(),
                to_micros(now).into(),
            ],
        )
        .map(TaskId)
    }

    /// Claims the oldest runnable task whose name is not in `skip` (tasks this runner cannot
    /// run, left for another) and that is for this runner: a task naming a target (see
    /// [`enqueue_targeted_task`](Self::enqueue_targeted_task)) only when it is `target`, a task
    /// naming none always. Marks it running and counts the attempt.
    pub fn claim_task_skipping(
        &mut self,
        now: DateTime<Utc>,
        skip: &[&str],
        target: Option<&str>,
    ) -> Result<Option<TaskRow>> {
        let now = to_micros(now);
        let mut params: Vec<super::Param<'_>> = vec![now.into()];
        let skipped = if skip.is_empty() {
            String::new()
        } else {
            let marks: Vec<String> = (0..skip.len()).map(|i| format!("?{}", i + 2)).collect();
            params.extend(skip.iter().map(|n| super::Param::from(*n)));
            format!(" AND name NOT IN ({})", marks.join(", "))
        };
        let targeted = match target {
            Some(target) => {
                params.push(target.into());
                format!(" AND (target IS NULL OR target = ?{})", params.len())
            }
            None => " AND target IS NULL".to_owned(),
        };
        // On PostgreSQL, a task another worker is claiming is skipped, never waited for or
        // taken twice.
        let lock = match self.dialect() {
            super::Dialect::Postgres => " FOR UPDATE SKIP LOCKED",
            super::Dialect::Sqlite => "",
        };
        let sql = format!(
            "SELECT {TASK_COLUMNS} \
             FROM tasks \
             WHERE state = 'pending' AND run_after <= ?1{skipped}{targeted} \
             ORDER BY id LIMIT 1{lock}"
        );
        let Some(t) = self.optional(&sql, &params, task)? else {
            return Ok(None);
        };
        self.execute(
            "UPDATE tasks SET state = 'running', attempts = attempts + 1, updated = ?1 \
             WHERE id = ?2",
            &[now.into(), t.id.0.into()],
        )?;
        Ok(Some(TaskRow {
            state: "running".into(),
            attempts: t.attempts + 1,
            ..t
        }))
    }

    /// Claims the task `id` if it is pending (a runner that runs it right after the commit that
    /// enqueued it); `None` when another runner has it.
    pub fn claim_task_by_id(&mut self, id: TaskId, now: DateTime<Utc>) -> Result<Option<TaskRow>> {
        let n = self.execute(
            "UPDATE tasks SET state = 'running', attempts = attempts + 1, updated = ?1 \
             WHERE id = ?2 AND state = 'pending'",
            &[to_micros(now).into(), id.0.into()],
        )?;
        if n == 0 {
            return Ok(None);
        }
        self.task(id)
    }

    /// One task.
    pub fn task(&mut self, id: TaskId) -> Result<Option<TaskRow>> {
        self.optional(
            &format!("SELECT {TASK_COLUMNS} FROM tasks WHERE id = ?1"),
            &[id.0.into()],
            task,
        )
    }

    /// Sets a task's state, error and next run time.
    pub fn set_task_state(
        &mut self,
        id: TaskId,
        state: &str,
        error: &str,
        run_after: DateTime<Utc>,
    ) -> Result<()> {
        self.execute(
            "UPDATE tasks SET state = ?1, error = ?2, run_after = ?3, updated = ?4 WHERE id = ?5",
            &[
                state.into(),
                error.into(),
                to_micros(run_after).into(),
                to_micros(Utc::now()).into(),
                id.0.into(),
            ],
        )
        .map(drop)
    }

    /// Puts tasks left `running` by a crashed process back to `pending`: those naming no target
    /// and those for `target` (the caller's search index; a task for another index is its
    /// process's, which may be running it).
    pub fn requeue_running_tasks(&mut self, target: &str) -> Result<u64> {
        self.execute(
            "UPDATE tasks SET state = 'pending' \
             WHERE state = 'running' AND (target IS NULL OR target = ?1)",
            &[target.into()],
        )
    }

    /// Makes every unfinished task that names a target name `target` instead (a restore: the
    /// indexes those tasks were for belong to the database the restore replaced).
    pub fn retarget_open_tasks(&mut self, target: &str) -> Result<u64> {
        self.execute(
            "UPDATE tasks SET target = ?1 \
             WHERE state <> 'done' AND target IS NOT NULL AND target <> ?1",
            &[target.into()],
        )
    }

    /// Tasks not done (pending, running, failed), oldest first.
    pub fn open_tasks(&mut self, limit: u32) -> Result<Vec<TaskRow>> {
        self.rows(
            &format!("SELECT {TASK_COLUMNS} FROM tasks WHERE state <> 'done' ORDER BY id LIMIT ?1"),
            &[i64::from(limit).into()],
            task,
        )
    }

    /// Removes finished tasks.
    pub fn delete_done_tasks(&mut self) -> Result<u64> {
        self.execute("DELETE FROM tasks WHERE state = 'done'", &[])
    }
}
