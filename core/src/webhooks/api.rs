//! The session's webhook operations: create, list, read, update and delete one's own webhooks,
//! list their deliveries and retry one.
//!
//! Who may: a user holding `webhooks.webhook_create` globally creates webhooks, which are theirs;
//! `webhook_view`, `webhook_edit` and `webhook_delete` (held globally) act on the holder's own
//! webhooks only. A superuser (and docmeta itself) acts on every webhook. Anybody else's webhook
//! is [`Error::NotFound`] whatever one holds: editing its URL would send its owner's events
//! elsewhere, and seeing its deliveries would show what its owner may see.
//!
//! Part of `webhooks` (layer 7 of `scripts/check-structure`): it may import only what
//! `webhooks` may (see `webhooks`' module documentation).

use std::collections::BTreeSet;

use super::address::check_url;
use super::sign::{generate_secret, secret_key};
use crate::access::Permission as P;
use crate::error::{Error, NON_FIELD_ERRORS, Result};
use crate::model::*;
use crate::session::Session;
use crate::store::{Tx, WebhookRow};

/// The most webhooks one user may have: each adds a delivery to every event it is for.
pub const MAX_WEBHOOKS_PER_USER: usize = 20;

/// The event names of a webhook, checked: each one docmeta writes, each once, sorted.
fn check_events(events: &[String]) -> Result<Vec<String>> {
    let mut out = BTreeSet::new();
    for name in events {
        if !Event::NAMES.contains(&name.as_str()) {
            return Err(Error::validation(
                "events",
                format!("\"{name}\" is not a valid choice."),
            ));
        }
        out.insert(name.clone());
    }
    Ok(out.into_iter().collect())
}

impl Session {
    /// The webhook `id` if this session may act on it with `permission`: [`Error::NotFound`]
    /// when it does not exist or is someone else's (for anybody but a superuser),
    /// [`Error::PermissionDenied`] when it is this user's own but the permission is not held.
    fn load_webhook(&self, tx: &mut Tx<'_>, id: WebhookId, permission: P) -> Result<WebhookRow> {
        let not_found = || Error::not_found(format!("webhook {id}"));
        let row = tx.webhook(id)?.ok_or_else(not_found)?;
        if let Actor::User(user) = self.actor
            && row.webhook.owner != user
            && !self.is_superuser()
        {
            return Err(not_found());
        }
        self.require_global(permission)?;
        Ok(row)
    }

    /// Creates a webhook owned by this session's user: every event of `events` (names of
    /// [`Event::NAMES`]; none: every event) that its owner may see when it is sent is POSTed
    /// to `url`, signed with `secret` (`whsec_` and the base64 of 24 to 64 bytes; `None`: 32
    /// random bytes). The answer is the only one that holds the secret. Needs
    /// `webhooks.webhook_create`; the URL must be `http` or `https` and its host resolve only to
    /// public addresses (unless `webhooks_allow_private_networks`); a user may have
    /// [`MAX_WEBHOOKS_PER_USER`]. docmeta itself owns no webhook ([`Error::InvalidInput`]).
    ///
    /// ```
    /// use docmeta_core::{Config, DeliveryStatus, Docmeta, PageRequest};
    ///
    /// // A receiver on this machine is refused unless private networks are allowed.
    /// let config = Config { webhooks_allow_private_networks: true, ..Config::default() };
    /// let db = Docmeta::builder().config(config).open()?;
    /// let admin = db.system();
    /// let ops = admin.create_user("ops", "a long password", true)?;
    /// let ops = db.session(ops.id);
    /// let events = ["documents.document_created".to_owned()];
    /// let created = ops.create_webhook("http://127.0.0.1:8080/hooks", &events, None)?;
    /// assert!(created.secret.starts_with("whsec_")); // shown once: the receiver checks with it
    ///
    /// let invoice = admin.create_document_type("Invoice")?;
    /// admin.create_document(invoice.id, "March", &[])?;
    /// // The worker (`Builder::worker(true)`) POSTs it, signed; until then it waits.
    /// let deliveries = ops.webhook_deliveries(created.webhook.id, PageRequest::new(1, 10))?;
    /// assert_eq!(deliveries.items[0].status, DeliveryStatus::Pending);
    /// # Ok::<(), docmeta_core::Error>(())
    /// ```
    pub fn create_webhook(
        &self,
        url: &str,
        events: &[String],
        secret: Option<&str>,
    ) -> Result<CreatedWebhook> {
        let Actor::User(owner) = self.actor else {
            return Err(Error::InvalidInput(
                "a webhook belongs to a user: create it in that user's session".into(),
            ));
        };
        self.require_global(P::WebhookCreate)?;
        check_url(url, self.db.config().webhooks_allow_private_networks)?;
        let events = check_events(events)?;
        let secret = match secret {
            Some(secret) => {
                secret_key(secret)?;
                secret.to_owned()
            }
            None => generate_secret()?,
        };
        let webhook = self.write(|u| {
            if u.tx.count_webhooks(Some(owner))? >= MAX_WEBHOOKS_PER_USER {
                return Err(Error::validation(
                    NON_FIELD_ERRORS,
                    format!("A user may have at most {MAX_WEBHOOKS_PER_USER} webhooks."),
                ));
            }
            // As the store keeps it (to the microsecond), so the answer equals what is read back.
            let now = u.now();
            let created =
                chrono::DateTime::from_timestamp_micros(now.timestamp_micros()).unwrap_or(now);
            let id = u.tx.insert_webhook(owner, url, &secret, true, created)?;
            u.tx.set_webhook_events(id, &events)?;
            Ok(Webhook {
                id,
                owner,
                url: url.to_owned(),
                events: events.clone(),
                active: true,
                created,
            })
        })?;
        Ok(CreatedWebhook { webhook, secret })
    }

    /// The webhooks this session may view, by id: its user's own (needs
    /// `webhooks.webhook_view`), or every one for a superuser.
    pub fn webhooks(&self, page: PageRequest) -> Result<Page<Webhook>> {
        let owner = match self.actor {
            Actor::User(user) if !self.is_superuser() => {
                self.require_global(P::WebhookView)?;
                Some(user)
            }
            _ => None,
        };
        self.read(|tx| {
            let count = tx.count_webhooks(owner)?;
            let range = page.range(count);
            let items = tx.webhooks(owner, range.start, range.len())?;
            Ok(Page { count, items })
        })
    }

    /// One webhook (see [`webhooks`](Self::webhooks)); needs `webhooks.webhook_view`.
    pub fn webhook(&self, id: WebhookId) -> Result<Webhook> {
        self.read(|tx| self.load_webhook(tx, id, P::WebhookView))
            .map(|row| row.webhook)
    }

    /// Changes a webhook: each field given replaces the stored one, checked as at creation,
    /// all before any is written. Needs `webhooks.webhook_edit`; only one's own webhook (a
    /// superuser: any).
    pub fn update_webhook(&self, id: WebhookId, update: WebhookUpdate) -> Result<Webhook> {
        // Refused (someone else's, no permission) before its fields are looked at.
        self.read(|tx| self.load_webhook(tx, id, P::WebhookEdit))?;
        if let Some(url) = &update.url {
            check_url(url, self.db.config().webhooks_allow_private_networks)?;
        }
        let events = update.events.as_deref().map(check_events).transpose()?;
        if let Some(secret) = &update.secret {
            secret_key(secret)?;
        }
        self.write(|u| {
            let mut row = self.load_webhook(&mut u.tx, id, P::WebhookEdit)?;
            if let Some(url) = &update.url {
                row.webhook.url = url.clone();
            }
            if let Some(secret) = &update.secret {
                row.secret = secret.clone();
            }
            if let Some(active) = update.active {
                row.webhook.active = active;
            }
            u.tx.update_webhook(id, &row.webhook.url, &row.secret, row.webhook.active)?;
            if let Some(events) = &events {
                u.tx.set_webhook_events(id, events)?;
                row.webhook.events = events.clone();
            }
            Ok(row.webhook)
        })
    }

    /// Deletes a webhook with its deliveries. Needs `webhooks.webhook_delete`; only one's own
    /// webhook (a superuser: any).
    pub fn delete_webhook(&self, id: WebhookId) -> Result<()> {
        self.write(|u| {
            self.load_webhook(&mut u.tx, id, P::WebhookDelete)?;
            u.tx.delete_webhook(id)
        })
    }

    /// A webhook's deliveries: the pending ones first, then the delivered and failed ones,
    /// each newest first. A pending delivery is listed only when the webhook's owner may see
    /// its event now (one they may not see is never sent, and nobody learns of it). Needs
    /// `webhooks.webhook_view`; only one's own webhook (a superuser: any). Delivered deliveries
    /// are kept for 7 days, failed ones for 30.
    pub fn webhook_deliveries(
        &self,
        id: WebhookId,
        page: PageRequest,
    ) -> Result<Page<WebhookDelivery>> {
        let (webhook, pending) = self.read(|tx| {
            let row = self.load_webhook(tx, id, P::WebhookView)?;
            Ok((row.webhook, tx.pending_webhook_deliveries(id)?))
        })?;
        let owner = Session::new(self.db.clone(), Actor::User(webhook.owner));
        let pending: Vec<WebhookDelivery> = pending
            .into_iter()
            .filter(|(_, target)| owner.may_view_event(target))
            .map(|(d, _)| d)
            .collect();
        let settled = self.read(|tx| tx.count_settled_webhook_deliveries(id))?;
        let count = pending.len() + settled;
        let range = page.range(count);
        let mut items: Vec<WebhookDelivery> = pending
            .get(range.start.min(pending.len())..range.end.min(pending.len()))
            .unwrap_or_default()
            .to_vec();
        let from = range.start.saturating_sub(pending.len());
        let more = range.len() - items.len();
        if more > 0 {
            items.extend(self.read(|tx| tx.settled_webhook_deliveries(id, from, more))?);
        }
        Ok(Page { count, items })
    }

    /// Makes a pending or failed delivery due now (a failed one is tried once more, then
    /// failed again if that attempt fails); the webhook's earlier pending deliveries still go
    /// first. A delivered one is a validation error. Needs `webhooks.webhook_edit`; only one's
    /// own webhook (a superuser: any).
    pub fn retry_webhook_delivery(
        &self,
        id: WebhookId,
        delivery: WebhookDeliveryId,
    ) -> Result<WebhookDelivery> {
        let not_found = || Error::not_found(format!("webhook delivery {delivery}"));
        let (webhook, found) = self.read(|tx| {
            let row = self.load_webhook(tx, id, P::WebhookEdit)?;
            let found = tx.webhook_delivery(id, delivery)?.ok_or_else(not_found)?;
            Ok((row.webhook, found))
        })?;
        if found.status == DeliveryStatus::Pending {
            // Listed only when its owner may see its event (see `webhook_deliveries`).
            let target = self.read(|tx| tx.event(found.event))?.map(|e| e.target);
            let owner = Session::new(self.db.clone(), Actor::User(webhook.owner));
            if !target.is_some_and(|t| owner.may_view_event(&t)) {
                return Err(not_found());
            }
        }
        if found.status == DeliveryStatus::Delivered {
            return Err(Error::validation(
                NON_FIELD_ERRORS,
                "Only a pending or failed delivery can be retried.",
            ));
        }
        let retried = self.write(|u| {
            self.load_webhook(&mut u.tx, id, P::WebhookEdit)?;
            let now = u.now();
            if !u.tx.retry_webhook_delivery(delivery, now)? {
                return Err(Error::validation(
                    NON_FIELD_ERRORS,
                    "Only a pending or failed delivery can be retried.",
                ));
            }
            u.tx.webhook_delivery(id, delivery)?.ok_or_else(not_found)
        })?;
        self.db.notify_deliveries();
        Ok(retried)
    }
}
