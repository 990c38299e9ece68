//! Webhooks and their deliveries.

use std::time::SystemTime;

use docmeta_core as core;

/// A webhook: the events of the log its owner may see, POSTed signed to `url`.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct Webhook {
    /// Identifier.
    pub id: i64,
    /// The user it belongs to: it sends what they may see.
    pub owner_id: i64,
    /// Where events are POSTed.
    pub url: String,
    /// The event names it is for; empty: every event.
    pub events: Vec<String>,
    /// Whether events are queued and sent.
    pub active: bool,
    /// When it was created.
    pub created: SystemTime,
}

impl From<core::Webhook> for Webhook {
    fn from(w: core::Webhook) -> Self {
        Webhook {
            id: w.id.0,
            owner_id: w.owner.0,
            url: w.url,
            events: w.events,
            active: w.active,
            created: w.created.into(),
        }
    }
}

/// A webhook just created, with its signing secret: the only answer that holds it.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct CreatedWebhook {
    /// The webhook.
    pub webhook: Webhook,
    /// Its signing secret: `whsec_` and base64 (Standard Webhooks).
    pub secret: String,
}

impl From<core::CreatedWebhook> for CreatedWebhook {
    fn from(c: core::CreatedWebhook) -> Self {
        CreatedWebhook {
            webhook: c.webhook.into(),
            secret: c.secret,
        }
    }
}

/// Changes to a webhook; each field given replaces the stored one.
#[derive(Debug, Clone, Default, PartialEq, Eq, uniffi::Record)]
pub struct WebhookUpdate {
    /// A new URL.
    #[uniffi(default = None)]
    pub url: Option<String>,
    /// New event names (empty: every event).
    #[uniffi(default = None)]
    pub events: Option<Vec<String>>,
    /// A new signing secret.
    #[uniffi(default = None)]
    pub secret: Option<String>,
    /// Activate or deactivate it.
    #[uniffi(default = None)]
    pub active: Option<bool>,
}

impl From<WebhookUpdate> for core::WebhookUpdate {
    fn from(u: WebhookUpdate) -> Self {
        core::WebhookUpdate {
            url: u.url,
            events: u.events,
            secret: u.secret,
            active: u.active,
        }
    }
}

/// Where a delivery is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, uniffi::Enum)]
pub enum DeliveryStatus {
    /// Not sent yet, or to be tried again.
    Pending,
    /// The receiver answered `2xx`.
    Delivered,
    /// Every attempt failed, the last one more than a day after the event.
    Failed,
}

impl From<core::DeliveryStatus> for DeliveryStatus {
    fn from(s: core::DeliveryStatus) -> Self {
        match s {
            core::DeliveryStatus::Pending => DeliveryStatus::Pending,
            core::DeliveryStatus::Delivered => DeliveryStatus::Delivered,
            core::DeliveryStatus::Failed => DeliveryStatus::Failed,
        }
    }
}

/// One event to send to one webhook.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct WebhookDelivery {
    /// Identifier.
    pub id: i64,
    /// The `webhook-id` header of every attempt.
    pub message_id: String,
    /// The webhook.
    pub webhook_id: i64,
    /// The event.
    pub event_id: i64,
    /// Where it is.
    pub status: DeliveryStatus,
    /// How many times it was sent.
    pub attempts: i64,
    /// The HTTP status of the last answer.
    pub last_status_code: Option<u16>,
    /// When it was last sent.
    pub last_attempt: Option<SystemTime>,
    /// When it is sent next, when pending.
    pub next_attempt: SystemTime,
    /// Why the last attempt failed (empty when it did not).
    pub last_error: String,
    /// When it was queued.
    pub created: SystemTime,
}

impl From<core::WebhookDelivery> for WebhookDelivery {
    fn from(d: core::WebhookDelivery) -> Self {
        WebhookDelivery {
            id: d.id.0,
            message_id: d.message_id,
            webhook_id: d.webhook.0,
            event_id: d.event.0,
            status: d.status.into(),
            attempts: d.attempts,
            last_status_code: d.last_status_code,
            last_attempt: d.last_attempt.map(Into::into),
            next_attempt: d.next_attempt.into(),
            last_error: d.last_error,
            created: d.created.into(),
        }
    }
}
