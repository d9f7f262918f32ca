//! The domain, pure: no sqlx, no tokio, no axum; time is an argument. Board definitions, events,
//! actions and results, periods, seasons and the moderation state, as the rest of the origin names
//! them. Being pure, all of it is tested without a database or a runtime, and `store/` maps rows to
//! these records and back.

mod actions;
mod boards;
mod events;
pub(crate) mod feed;
mod moderation;
pub(crate) mod periods;
pub(crate) mod player_pages;
pub mod profile_book;
pub mod profiles;
mod refusals;
pub(crate) mod rewards;
pub(crate) mod seasons;
pub(crate) mod webhooks;

pub(crate) use actions::{
    Action, ActionResult, ActionRow, Change, Correction, RankedEntry, ResultRow, UnreadableAction,
    erased_request, same_request,
};
pub(crate) use boards::{BoardDef, FeedSpec, Proposed, band_name, event_segments};
pub use events::EventStatus;
pub(crate) use events::{InvalidLoggedEvent, LoggedEvent, NewEvent};
pub use moderation::{Moderation, ModerationState};
pub(crate) use refusals::{ActionRefusal, Refusal};
