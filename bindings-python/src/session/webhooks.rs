//! `Session` methods: webhooks, the event log sent out as signed HTTP POSTs, and their
//! deliveries.

use docmeta_core as core;
use pyo3::prelude::*;

use super::Session;
use crate::errors::run;
use crate::records::{CreatedWebhook, Webhook, WebhookDelivery, all};

#[pymethods]
impl Session {
    /// Creates a webhook owned by this session's user, for `events` (event names; none: every
    /// event), signed with `secret` (`whsec_` and base64; None: generated). The answer is the
    /// only one that holds the secret.
    #[pyo3(signature = (url, *, events = None, secret = None))]
    fn create_webhook(
        &self,
        py: Python<'_>,
        url: String,
        events: Option<Vec<String>>,
        secret: Option<String>,
    ) -> PyResult<CreatedWebhook> {
        run(py, || {
            self.inner
                .create_webhook(&url, &events.unwrap_or_default(), secret.as_deref())
        })
        .map(Into::into)
    }

    /// The webhooks this session may view: its own (a superuser's: every one).
    fn webhooks(&self, py: Python<'_>) -> PyResult<Vec<Webhook>> {
        run(py, || self.inner.webhooks(core::PageRequest::ALL)).map(|page| all(page.items))
    }

    /// One webhook.
    fn webhook(&self, py: Python<'_>, id: i64) -> PyResult<Webhook> {
        run(py, || self.inner.webhook(core::WebhookId(id))).map(Into::into)
    }

    /// Changes a webhook: each argument given replaces the stored value.
    #[pyo3(signature = (id, *, url = None, events = None, secret = None, active = None))]
    fn update_webhook(
        &self,
        py: Python<'_>,
        id: i64,
        url: Option<String>,
        events: Option<Vec<String>>,
        secret: Option<String>,
        active: Option<bool>,
    ) -> PyResult<Webhook> {
        let update = core::WebhookUpdate {
            url,
            events,
            secret,
            active,
        };
        run(py, || {
            self.inner.update_webhook(core::WebhookId(id), update)
        })
        .map(Into::into)
    }

    /// Deletes a webhook with its deliveries.
    fn delete_webhook(&self, py: Python<'_>, id: i64) -> PyResult<()> {
        run(py, || self.inner.delete_webhook(core::WebhookId(id)))
    }

    /// A webhook's deliveries: pending first, then delivered and failed ones, newest first.
    fn webhook_deliveries(&self, py: Python<'_>, id: i64) -> PyResult<Vec<WebhookDelivery>> {
        run(py, || {
            self.inner
                .webhook_deliveries(core::WebhookId(id), core::PageRequest::ALL)
        })
        .map(|page| all(page.items))
    }

    /// Makes a pending or failed delivery due now.
    fn retry_webhook_delivery(
        &self,
        py: Python<'_>,
        id: i64,
        delivery: i64,
    ) -> PyResult<WebhookDelivery> {
        run(py, || {
            self.inner
                .retry_webhook_delivery(core::WebhookId(id), core::WebhookDeliveryId(delivery))
        })
        .map(Into::into)
    }
}
