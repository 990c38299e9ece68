//! Statements of webhooks and their deliveries (the outbox): queuing a delivery with each event,
//! claiming the next one of a webhook (one sender per delivery, one delivery per webhook at a
//! time, in commit order), outcomes, retries and pruning.
//!
//! Part of `store` (layer 3): imports only `error`, `model`, `config`, `events` and its siblings.

use chrono::{DateTime, Utc};

use super::records::*;
use super::{Dialect, Row, Tx};
use crate::error::Result;
use crate::model::*;

/// A webhook as stored, with its signing secret (which no view record holds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WebhookRow {
    pub(crate) webhook: Webhook,
    pub(crate) secret: String,
}

/// A delivery claimed for sending, with what sending it needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClaimedDelivery {
    pub(crate) delivery: WebhookDelivery,
    pub(crate) owner: UserId,
    pub(crate) url: String,
    pub(crate) secret: String,
    /// The claim's own token: its outcome is recorded only while the claim is still this one.
    pub(crate) token: String,
}

/// The outcome of one attempt (see [`Tx::finish_webhook_delivery`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DeliveryOutcome<'a> {
    pub(crate) status: DeliveryStatus,
    pub(crate) status_code: Option<u16>,
    pub(crate) at: DateTime<Utc>,
    pub(crate) next_attempt: DateTime<Utc>,
    pub(crate) error: &'a str,
}

/// The columns [`delivery`] reads, in its order (`d` is `webhook_deliveries`).
const DELIVERY_COLUMNS: &str = "d.id, d.webhook_id, d.event_id, d.status, d.attempts, \
    d.last_status_code, d.last_attempt, d.next_attempt, d.last_error, d.created";

fn delivery(r: &Row) -> Result<WebhookDelivery> {
    let id = WebhookDeliveryId(r.int(0)?);
    let created = from_micros(r.int(9)?);
    Ok(WebhookDelivery {
        id,
        message_id: message_id(id, created),
        webhook: WebhookId(r.int(1)?),
        event: EventId(r.int(2)?),
        status: DeliveryStatus::from_key(&r.text(3)?).unwrap_or(DeliveryStatus::Pending),
        attempts: r.int(4)?,
        last_status_code: r.opt_int(5)?.and_then(|c| u16::try_from(c).ok()),
        last_attempt: r.opt_int(6)?.map(from_micros),
        next_attempt: from_micros(r.int(7)?),
        last_error: r.text(8)?,
        created,
    })
}

/// The columns [`webhook_row`] reads, in its order.
const WEBHOOK_COLUMNS: &str = "id, owner_id, url, active, created, secret";

fn webhook_row(r: &Row) -> Result<WebhookRow> {
    Ok(WebhookRow {
        webhook: Webhook {
            id: WebhookId(r.int(0)?),
            owner: UserId(r.int(1)?),
            url: r.text(2)?,
            events: Vec::new(),
            active: r.bool(3)?,
            created: from_micros(r.int(4)?),
        },
        secret: r.text(5)?,
    })
}

impl Tx<'_> {
    // ----- webhooks -----------------------------------------------------------------------

    /// Stores a new webhook (its event names apart: [`set_webhook_events`](Self::set_webhook_events)).
    pub fn insert_webhook(
        &mut self,
        owner: UserId,
        url: &str,
        secret: &str,
        active: bool,
        created: DateTime<Utc>,
    ) -> Result<WebhookId> {
        self.insert(
            "INSERT INTO webhooks (owner_id, url, secret, active, created) \
             VALUES (?1, ?2, ?3, ?4, ?5) \
             RETURNING id",
            &[
                owner.0.into(),
                url.into(),
                secret.into(),
                active.into(),
                to_micros(created).into(),
            ],
        )
        .map(WebhookId)
    }

    /// Replaces the event names a webhook is for (none: every event).
    pub fn set_webhook_events(&mut self, id: WebhookId, names: &[String]) -> Result<()> {
        self.execute(
            "DELETE FROM webhook_events WHERE webhook_id = ?1",
            &[id.0.into()],
        )?;
        for name in names {
            self.execute(
                "INSERT INTO webhook_events (webhook_id, name) VALUES (?1, ?2)",
                &[id.0.into(), name.into()],
            )?;
        }
        Ok(())
    }

    /// The event names a webhook is for, sorted.
    fn webhook_event_names(&mut self, id: WebhookId) -> Result<Vec<String>> {
        self.rows(
            "SELECT name \
             FROM webhook_events \
             WHERE webhook_id = ?1 \
             ORDER BY name",
            &[id.0.into()],
            |r| r.text(0),
        )
    }

    /// One webhook with its secret.
    pub fn webhook(&mut self, id: WebhookId) -> Result<Option<WebhookRow>> {
        let row = self.optional(
            &format!("SELECT {WEBHOOK_COLUMNS} FROM webhooks WHERE id = ?1"),
            &[id.0.into()],
            webhook_row,
        )?;
        match row {
            Some(mut row) => {
                row.webhook.events = self.webhook_event_names(id)?;
                Ok(Some(row))
            }
            None => Ok(None),
        }
    }

    /// `limit` webhooks from `offset`, by id: those of `owner`, or every one.
    pub fn webhooks(
        &mut self,
        owner: Option<UserId>,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<Webhook>> {
        let mut out = self.rows(
            &format!(
                "SELECT {WEBHOOK_COLUMNS} \
                 FROM webhooks \
                 WHERE (?1 = 0 OR owner_id = ?1) \
                 ORDER BY id \
                 LIMIT ?2 OFFSET ?3"
            ),
            &[
                owner.map_or(0, |o| o.0).into(),
                to_i64(limit).into(),
                to_i64(offset).into(),
            ],
            |r| webhook_row(r).map(|w| w.webhook),
        )?;
        for w in &mut out {
            w.events = self.webhook_event_names(w.id)?;
        }
        Ok(out)
    }

    /// How many webhooks `owner` has, or how many there are.
    pub fn count_webhooks(&mut self, owner: Option<UserId>) -> Result<usize> {
        self.optional(
            "SELECT count(*) \
             FROM webhooks \
             WHERE (?1 = 0 OR owner_id = ?1)",
            &[owner.map_or(0, |o| o.0).into()],
            |r| r.int(0),
        )
        .map(|n| usize::try_from(n.unwrap_or(0)).unwrap_or(0))
    }

    /// Writes a webhook's URL, secret and activity.
    pub fn update_webhook(
        &mut self,
        id: WebhookId,
        url: &str,
        secret: &str,
        active: bool,
    ) -> Result<()> {
        self.execute(
            "UPDATE webhooks \
             SET url = ?1, secret = ?2, active = ?3 \
             WHERE id = ?4",
            &[url.into(), secret.into(), active.into(), id.0.into()],
        )
        .map(drop)
    }

    /// Deletes a webhook with its event names and deliveries.
    pub fn delete_webhook(&mut self, id: WebhookId) -> Result<()> {
        self.execute("DELETE FROM webhooks WHERE id = ?1", &[id.0.into()])
            .map(drop)
    }

    // ----- deliveries ---------------------------------------------------------------------

    /// Queues a pending delivery of the event `event` (named `name`, written at `at`) for every
    /// active webhook of an active owner that is for every event or for `name`: one statement,
    /// in the transaction that appends the event.
    pub fn enqueue_webhook_deliveries(
        &mut self,
        event: EventId,
        name: &str,
        at: DateTime<Utc>,
    ) -> Result<()> {
        self.execute_later(
            "INSERT INTO webhook_deliveries \
                 (webhook_id, event_id, status, attempts, next_attempt, last_error, created) \
             SELECT w.id, ?1, 'pending', 0, ?2, '', ?2 \
             FROM webhooks w \
             JOIN users u ON u.id = w.owner_id \
             WHERE w.active = 1 \
             AND u.is_active = 1 \
             AND (NOT EXISTS (SELECT 1 FROM webhook_events f WHERE f.webhook_id = w.id) \
                 OR EXISTS (SELECT 1 FROM webhook_events f WHERE f.webhook_id = w.id AND f.name = ?3))",
            &[event.0.into(), to_micros(at).into(), name.into()],
        )
    }

    /// One delivery of a webhook.
    pub fn webhook_delivery(
        &mut self,
        webhook: WebhookId,
        id: WebhookDeliveryId,
    ) -> Result<Option<WebhookDelivery>> {
        self.optional(
            &format!(
                "SELECT {DELIVERY_COLUMNS} \
                 FROM webhook_deliveries d \
                 WHERE d.id = ?1 \
                 AND d.webhook_id = ?2"
            ),
            &[id.0.into(), webhook.0.into()],
            delivery,
        )
    }

    /// A webhook's pending deliveries, newest first, each with its event's target.
    pub fn pending_webhook_deliveries(
        &mut self,
        webhook: WebhookId,
    ) -> Result<Vec<(WebhookDelivery, crate::events::EventObject)>> {
        self.rows(
            &format!(
                "SELECT {DELIVERY_COLUMNS}, e.target_kind, e.target_id, e.target_label \
                 FROM webhook_deliveries d \
                 JOIN events e ON e.id = d.event_id \
                 WHERE d.webhook_id = ?1 \
                 AND d.status = 'pending' \
                 ORDER BY d.id DESC"
            ),
            &[webhook.0.into()],
            |r| {
                Ok((
                    delivery(r)?,
                    crate::events::EventObject {
                        kind: r.text(10)?,
                        id: r.int(11)?,
                        label: r.text(12)?,
                    },
                ))
            },
        )
    }

    /// `limit` of a webhook's delivered and failed deliveries from `offset`, newest first.
    pub fn settled_webhook_deliveries(
        &mut self,
        webhook: WebhookId,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<WebhookDelivery>> {
        self.rows(
            &format!(
                "SELECT {DELIVERY_COLUMNS} \
                 FROM webhook_deliveries d \
                 WHERE d.webhook_id = ?1 \
                 AND d.status <> 'pending' \
                 ORDER BY d.id DESC \
                 LIMIT ?2 OFFSET ?3"
            ),
            &[
                webhook.0.into(),
                to_i64(limit).into(),
                to_i64(offset).into(),
            ],
            delivery,
        )
    }

    /// How many of a webhook's deliveries are delivered or failed.
    pub fn count_settled_webhook_deliveries(&mut self, webhook: WebhookId) -> Result<usize> {
        self.optional(
            "SELECT count(*) \
             FROM webhook_deliveries \
             WHERE webhook_id = ?1 \
             AND status <> 'pending'",
            &[webhook.0.into()],
            |r| r.int(0),
        )
        .map(|n| usize::try_from(n.unwrap_or(0)).unwrap_or(0))
    }

    /// Makes a pending or failed delivery pending and due at `now`; false when it is delivered.
    pub fn retry_webhook_delivery(
        &mut self,
        id: WebhookDeliveryId,
        now: DateTime<Utc>,
    ) -> Result<bool> {
        self.execute(
            "UPDATE webhook_deliveries \
             SET status = 'pending', next_attempt = ?1 \
             WHERE id = ?2 \
             AND status <> 'delivered'",
            &[to_micros(now).into(), id.0.into()],
        )
        .map(|n| n > 0)
    }

    /// Claims the next delivery to send, if any, until `lease_until` under `token`: the oldest
    /// pending delivery of its webhook (in commit order), due at `now`, of an active webhook
    /// whose owner is active, and not claimed by a live claim. Only a webhook's oldest pending
    /// delivery is ever claimed, so its deliveries go one at a time and in order. On PostgreSQL
    /// only deliveries of transactions older than every running one count (a delivery of a
    /// transaction still running could commit before the one claimed), and a delivery another
    /// process is claiming is skipped, never waited for.
    pub fn claim_webhook_delivery(
        &mut self,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
        token: &str,
    ) -> Result<Option<ClaimedDelivery>> {
        let now = to_micros(now);
        let found = self.optional(&due_delivery(self.dialect(), true), &[now.into()], |r| {
            Ok(ClaimedDelivery {
                delivery: delivery(r)?,
                owner: UserId(r.int(10)?),
                url: r.text(11)?,
                secret: r.text(12)?,
                token: token.to_owned(),
            })
        })?;
        let Some(claimed) = found else {
            return Ok(None);
        };
        let n = self.execute(
            "UPDATE webhook_deliveries \
             SET lease_until = ?1, lease_token = ?2 \
             WHERE id = ?3 \
             AND status = 'pending' \
             AND (lease_until IS NULL OR lease_until < ?4)",
            &[
                to_micros(lease_until).into(),
                token.into(),
                claimed.delivery.id.0.into(),
                now.into(),
            ],
        )?;
        Ok((n == 1).then_some(claimed))
    }

    /// Whether a delivery is due at `now` (see
    /// [`claim_webhook_delivery`](Self::claim_webhook_delivery)), looked for without claiming
    /// it, so that a read finds out that nothing needs a write.
    pub fn webhook_delivery_due(&mut self, now: DateTime<Utc>) -> Result<bool> {
        self.optional(
            &due_delivery(self.dialect(), false),
            &[to_micros(now).into()],
            |r| r.int(0),
        )
        .map(|found| found.is_some())
    }

    /// Records the outcome of an attempt of a claimed delivery and ends the claim; false when
    /// the claim `token` is no longer the delivery's (it expired and another took it over).
    pub fn finish_webhook_delivery(
        &mut self,
        id: WebhookDeliveryId,
        token: &str,
        outcome: &DeliveryOutcome<'_>,
    ) -> Result<bool> {
        self.execute(
            "UPDATE webhook_deliveries \
             SET status = ?1, attempts = attempts + 1, last_status_code = ?2, \
                 last_attempt = ?3, next_attempt = ?4, last_error = ?5, \
                 lease_until = NULL, lease_token = NULL \
             WHERE id = ?6 \
             AND lease_token = ?7",
            &[
                outcome.status.key().into(),
                outcome.status_code.map(i64::from).into(),
                to_micros(outcome.at).into(),
                to_micros(outcome.next_attempt).into(),
                outcome.error.into(),
                id.0.into(),
                token.into(),
            ],
        )
        .map(|n| n > 0)
    }

    /// Removes a claimed delivery that will never be sent (its owner may not see its event).
    pub fn drop_webhook_delivery(&mut self, id: WebhookDeliveryId, token: &str) -> Result<()> {
        self.execute(
            "DELETE FROM webhook_deliveries \
             WHERE id = ?1 \
             AND lease_token = ?2",
            &[id.0.into(), token.into()],
        )
        .map(drop)
    }

    /// Ends a claim without an attempt.
    pub fn release_webhook_delivery(&mut self, id: WebhookDeliveryId, token: &str) -> Result<()> {
        self.execute(
            "UPDATE webhook_deliveries \
             SET lease_until = NULL, lease_token = NULL \
             WHERE id = ?1 \
             AND lease_token = ?2",
            &[id.0.into(), token.into()],
        )
        .map(drop)
    }

    /// Ends every claim (a process starting alone: the claims are those of a process that
    /// stopped while sending).
    pub fn release_webhook_deliveries(&mut self) -> Result<u64> {
        self.execute(
            "UPDATE webhook_deliveries \
             SET lease_until = NULL, lease_token = NULL \
             WHERE lease_until IS NOT NULL",
            &[],
        )
    }

    /// Removes delivered deliveries queued before `delivered_before` and failed ones queued
    /// before `failed_before`.
    pub fn prune_webhook_deliveries(
        &mut self,
        delivered_before: DateTime<Utc>,
        failed_before: DateTime<Utc>,
    ) -> Result<u64> {
        let delivered = self.execute(
            "DELETE FROM webhook_deliveries \
             WHERE status = 'delivered' \
             AND created < ?1",
            &[to_micros(delivered_before).into()],
        )?;
        let failed = self.execute(
            "DELETE FROM webhook_deliveries \
             WHERE status = 'failed' \
             AND created < ?1",
            &[to_micros(failed_before).into()],
        )?;
        Ok(delivered + failed)
    }
}

/// The statement that finds the delivery to claim next at `?1` (see
/// [`Tx::claim_webhook_delivery`]), locking it on PostgreSQL when `lock`.
fn due_delivery(dialect: Dialect, lock: bool) -> String {
    let (settled, lock) = match dialect {
        Dialect::Postgres => (
            " AND d.tx < (pg_snapshot_xmin(pg_current_snapshot())::text::bigint)",
            if lock {
                " FOR UPDATE OF d SKIP LOCKED"
            } else {
                ""
            },
        ),
        Dialect::Sqlite => ("", ""),
    };
    format!(
        "SELECT {DELIVERY_COLUMNS}, w.owner_id, w.url, w.secret \
         FROM webhooks w \
         JOIN users u ON u.id = w.owner_id \
         JOIN webhook_deliveries d ON d.id = \
             (SELECT h.id FROM webhook_deliveries h \
             WHERE h.webhook_id = w.id AND h.status = 'pending' \
             ORDER BY h.tx, h.id LIMIT 1) \
         WHERE w.active = 1 \
         AND u.is_active = 1 \
         AND d.next_attempt <= ?1 \
         AND (d.lease_until IS NULL OR d.lease_until < ?1){settled} \
         ORDER BY d.tx, d.id \
         LIMIT 1{lock}"
    )
}

fn to_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
