//! `docmeta webhook list|deliveries|retry`: webhooks and their deliveries, as docmeta itself.

use docmeta_core::{PageRequest, WebhookDeliveryId, WebhookId};

use super::{AnyError, WebhookCommand, open};

pub(super) fn run(command: WebhookCommand) -> Result<(), AnyError> {
    match command {
        WebhookCommand::List { data } => {
            let db = open(&data, false)?;
            let hooks = db.system().webhooks(PageRequest::ALL)?;
            println!("id\towner\tactive\tevents\turl");
            for w in hooks.items {
                let events = if w.events.is_empty() {
                    "*".to_owned()
                } else {
                    w.events.join(",")
                };
                println!("{}\t{}\t{}\t{events}\t{}", w.id, w.owner, w.active, w.url);
            }
        }
        WebhookCommand::Deliveries {
            data,
            webhook,
            limit,
        } => {
            let db = open(&data, false)?;
            let page = db
                .system()
                .webhook_deliveries(WebhookId(webhook), PageRequest::new(1, limit))?;
            println!("id\tevent\tstatus\tattempts\tcode\tnext attempt\terror");
            for d in &page.items {
                let code = d.last_status_code.map_or("-".to_owned(), |c| c.to_string());
                println!(
                    "{}\t{}\t{}\t{}\t{code}\t{}\t{}",
                    d.id,
                    d.event,
                    d.status,
                    d.attempts,
                    d.next_attempt
                        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                    d.last_error
                );
            }
            if page.count > page.items.len() {
                println!("({} of {})", page.items.len(), page.count);
            }
        }
        WebhookCommand::Retry {
            data,
            webhook,
            delivery,
        } => {
            let db = open(&data, false)?;
            let d = db
                .system()
                .retry_webhook_delivery(WebhookId(webhook), WebhookDeliveryId(delivery))?;
            println!(
                "delivery {} of webhook {} is due now ({} attempts so far)",
                d.id, d.webhook, d.attempts
            );
        }
    }
    Ok(())
}
