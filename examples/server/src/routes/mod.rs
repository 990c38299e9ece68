//! The endpoints of spec section 4 and api.md. Handlers convert HTTP to core calls and core
//! errors to responses; they hold no rule of their own.

mod acls;
mod cabinets;
mod devices;
mod documents;
mod events;
pub(crate) mod files;
mod groups;
mod metadata;
mod permissions;
mod roles;
mod search;
mod sync;
mod system;
mod users;
mod webhooks;
mod workflows;

use utoipa_axum::router::OpenApiRouter;

use crate::state::AppState;

pub use events::{EVENTS, wants_event_stream};

/// Registers every route (each with its OpenAPI operation).
pub fn register(router: OpenApiRouter<AppState>) -> OpenApiRouter<AppState> {
    let router = metadata::register(router);
    let router = documents::register(router);
    let router = events::register(router);
    let router = files::register(router);
    let router = acls::register(router);
    let router = users::register(router);
    let router = groups::register(router);
    let router = roles::register(router);
    let router = permissions::register(router);
    let router = cabinets::register(router);
    let router = search::register(router);
    let router = workflows::register(router);
    let router = webhooks::register(router);
    let router = devices::register(router);
    let router = sync::register(router);
    system::register(router)
}
