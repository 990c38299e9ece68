//! Webhooks: the event log sent out as signed HTTP POSTs, and their deliveries.

use docmeta_core as core;

use super::Session;
use crate::errors::Result;
use crate::records::{CreatedWebhook, Webhook, WebhookDelivery, WebhookUpdate};

#[uniffi::export]
impl Session {
    /// Creates a webhook owned by this session's user, for `events` (event names; empty: every
    /// event), signed with `secret` (`whsec_` and base64; `None`: generated). The answer is the
    /// only one that holds the secret.
    #[uniffi::method(default(secret = None))]
    pub fn create_webhook(
        &self,
        url: String,
        events: Vec<String>,
        secret: Option<String>,
    ) -> Result<CreatedWebhook> {
        Ok(self
            .inner
            .create_webhook(&url, &events, secret.as_deref())?
            .into())
    }

    /// The webhooks this session may view: its own (a superuser's: every one).
    pub fn webhooks(&self) -> Result<Vec<Webhook>> {
        Ok(self
            .inner
            .webhooks(core::PageRequest::ALL)?
            .items
            .into_iter()
            .map(Into::into)
            .collect())
    }

    /// One webhook.
    pub fn webhook(&self, id: i64) -> Result<Webhook> {
        Ok(self.inner.webhook(core::WebhookId(id))?.into())
    }

    /// Changes a webhook: each field of `update` given replaces the stored one.
    pub fn update_webhook(&self, id: i64, update: WebhookUpdate) -> Result<Webhook> {
        Ok(self
            .inner
            .update_webhook(core::WebhookId(id), update.into())?
            .into())
    }

    /// Deletes a webhook with its deliveries.
    pub fn delete_webhook(&self, id: i64) -> Result<()> {
        Ok(self.inner.delete_webhook(core::WebhookId(id))?)
    }

    /// A webhook's deliveries: pending first, then delivered and failed ones, newest first.
    pub fn webhook_deliveries(&self, id: i64) -> Result<Vec<WebhookDelivery>> {
        Ok(self
            .inner
            .webhook_deliveries(core::WebhookId(id), core::PageRequest::ALL)?
            .items
            .into_iter()
            .map(Into::into)
            .collect())
    }

    /// Makes a pending or failed delivery due now.
    pub fn retry_webhook_delivery(&self, id: i64, delivery: i64) -> Result<WebhookDelivery> {
        Ok(self
            .inner
            .retry_webhook_delivery(core::WebhookId(id), core::WebhookDeliveryId(delivery))?
            .into())
    }
}
