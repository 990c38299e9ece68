//! Statements of durable tasks: enqueueing, claiming (one runner per task), outcomes.
//!
//! Part of `store` (layer 3): imports only `error`, `model`, `config`, `events` and its siblings.

use chrono::{DateTime, Utc};

use super::Tx;
use super::records::*;
use crate::error::Result;
use crate::model::*;

impl Tx<'_> {
    // ----- tasks ------------------------------------------------------------------------

    /// Enqueues a task, to run now.
    pub fn enqueue_task(&mut self, name: &str, payload: &str) -> Result<TaskId> {
        self.enqueue_task_after(name, payload, chrono::Duration::zero())
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
            "INSERT INTO tasks (name, payload, state, attempts, error, run_after, created, updated) VALUES (?1, ?2, 'pending', 0, '', ?3, ?4, ?4) RETURNING id",
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
    /// run, left for another): marks it running and counts the attempt.
    pub fn claim_task_skipping(
        &mut self,
        now: DateTime<Utc>,
        skip: &[&str],
    ) -> Result<Option<TaskRow>> {
        let now = to_micros(now);
        let skipped = if skip.is_empty() {
            String::new()
        } else {
            let marks: Vec<String> = (0..skip.len()).map(|i| format!("?{}", i + 2)).collect();
            format!(" AND name NOT IN ({})", marks.join(", "))
        };
        // On PostgreSQL, a task another worker is claiming is skipped, never waited for or
        // taken twice.
        let lock = match self.dialect() {
            super::Dialect::Postgres => " FOR UPDATE SKIP LOCKED",
            super::Dialect::Sqlite => "",
        };
        let sql = format!(
            "SELECT id, name, payload, state, attempts, error FROM tasks WHERE state = 'pending' AND run_after <= ?1{skipped} ORDER BY id LIMIT 1{lock}"
        );
        let mut params: Vec<super::Param<'_>> = vec![now.into()];
        params.extend(skip.iter().map(|n| super::Param::from(*n)));
        let Some(t) = self.optional(&sql, &params, task)? else {
            return Ok(None);
        };
        self.execute("UPDATE tasks SET state = 'running', attempts = attempts + 1, updated = ?1 WHERE id = ?2", &[now.into(), t.id.0.into()])?;
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
            "UPDATE tasks SET state = 'running', attempts = attempts + 1, updated = ?1 WHERE id = ?2 AND state = 'pending'",
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
            "SELECT id, name, payload, state, attempts, error FROM tasks WHERE id = ?1",
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

    /// Puts tasks left `running` by a crashed process back to `pending`.
    pub fn requeue_running_tasks(&mut self) -> Result<u64> {
        self.execute(
            "UPDATE tasks SET state = 'pending' WHERE state = 'running'",
            &[],
        )
    }

    /// Tasks not done (pending, running, failed), oldest first.
    pub fn open_tasks(&mut self, limit: u32) -> Result<Vec<TaskRow>> {
        self.rows(
            "SELECT id, name, payload, state, attempts, error FROM tasks WHERE state <> 'done' ORDER BY id LIMIT ?1",
            &[i64::from(limit).into()],
            task,
        )
    }

    /// Removes finished tasks.
    pub fn delete_done_tasks(&mut self) -> Result<u64> {
        self.execute("DELETE FROM tasks WHERE state = 'done'", &[])
    }
}
