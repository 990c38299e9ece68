//! Webhooks: a user's subscription to the event log, delivered by signed HTTP POSTs, and the
//! deliveries of each event to each webhook (the outbox).
//!
//! Part of `model` (layer 1 of `scripts/check-structure`): it imports only `error`.

use chrono::{DateTime, Utc};

use super::{EventId, UserId, WebhookDeliveryId, WebhookId};

/// A webhook: the events of the log its owner may see, POSTed as JSON to `url`, signed with a
/// secret that only the call that created it (or set it) ever returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Webhook {
    /// Identifier.
    pub id: WebhookId,
    /// The user who created it: it sends what this user may see when each event is sent, and
    /// stops while they are deactivated.
    pub owner: UserId,
    /// Where events are POSTed (`http` or `https`).
    pub url: String,
    /// The event names it is for ([`Event::NAMES`](crate::Event::NAMES)); empty: every event.
    pub events: Vec<String>,
    /// Whether events are queued and sent; an inactive webhook queues nothing.
    pub active: bool,
    /// When it was created.
    pub created: DateTime<Utc>,
}

/// A webhook just created, with its signing secret: the only answer that holds it.
#[derive(Clone, PartialEq, Eq)]
pub struct CreatedWebhook {
    /// The webhook.
    pub webhook: Webhook,
    /// Its signing secret: `whsec_` and the base64 of the key (Standard Webhooks).
    pub secret: String,
}

impl std::fmt::Debug for CreatedWebhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CreatedWebhook")
            .field("webhook", &self.webhook)
            .field("secret", &"<redacted>")
            .finish()
    }
}

/// Changes to a webhook; `None` leaves a field as it is. Every field is checked before any is
/// written: a refused update changes nothing.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct WebhookUpdate {
    /// A new URL (checked as at creation).
    pub url: Option<String>,
    /// New event names (empty: every event).
    pub events: Option<Vec<String>>,
    /// A new signing secret (`whsec_` and base64 of 24 to 64 bytes); deliveries not yet sent
    /// are signed with it.
    pub secret: Option<String>,
    /// Activate or deactivate the webhook.
    pub active: Option<bool>,
}

impl std::fmt::Debug for WebhookUpdate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookUpdate")
            .field("url", &self.url)
            .field("events", &self.events)
            .field("secret", &self.secret.as_ref().map(|_| "<redacted>"))
            .field("active", &self.active)
            .finish()
    }
}

/// Where a delivery is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeliveryStatus {
    /// Not sent yet, or to be tried again at `next_attempt`.
    Pending,
    /// The receiver answered with a `2xx` status.
    Delivered,
    /// Every attempt failed, the last one more than a day after the event: no more attempts
    /// unless retried ([`Session::retry_webhook_delivery`](crate::Session::retry_webhook_delivery)).
    Failed,
}

impl DeliveryStatus {
    /// `pending`, `delivered` or `failed`.
    pub fn key(self) -> &'static str {
        match self {
            DeliveryStatus::Pending => "pending",
            DeliveryStatus::Delivered => "delivered",
            DeliveryStatus::Failed => "failed",
        }
    }

    /// The status named `key` (see [`key`](Self::key)).
    pub fn from_key(key: &str) -> Option<DeliveryStatus> {
        match key {
            "pending" => Some(DeliveryStatus::Pending),
            "delivered" => Some(DeliveryStatus::Delivered),
            "failed" => Some(DeliveryStatus::Failed),
            _ => None,
        }
    }
}

impl std::fmt::Display for DeliveryStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.key())
    }
}

/// One event to send to one webhook, queued in the transaction that wrote the event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookDelivery {
    /// Identifier.
    pub id: WebhookDeliveryId,
    /// The `webhook-id` header of every attempt: the same for each attempt of this delivery and
    /// different from every other delivery's, so that a receiver drops repeats by it.
    pub message_id: String,
    /// The webhook.
    pub webhook: WebhookId,
    /// The event.
    pub event: EventId,
    /// Where it is.
    pub status: DeliveryStatus,
    /// How many times it was sent.
    pub attempts: i64,
    /// The HTTP status of the last attempt's answer; `None` before the first attempt and when
    /// the last one got no answer.
    pub last_status_code: Option<u16>,
    /// When it was last sent.
    pub last_attempt: Option<DateTime<Utc>>,
    /// When it is sent next, when pending (earlier deliveries of its webhook go first).
    pub next_attempt: DateTime<Utc>,
    /// Why the last attempt failed (empty when it did not).
    pub last_error: String,
    /// When it was queued (with its event).
    pub created: DateTime<Utc>,
}

/// The `webhook-id` of the delivery `id` queued at `created` (see
/// [`WebhookDelivery::message_id`]): the queue time keeps it unique even when a restored
/// backup hands out a delivery id again.
pub(crate) fn message_id(id: WebhookDeliveryId, created: DateTime<Utc>) -> String {
    format!("msg_{}_{}", id.0, created.timestamp_micros())
}
