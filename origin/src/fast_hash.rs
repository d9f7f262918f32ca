//! The hasher of the maps looked up per event or per request (the writer's per-event maps, the
//! board registry): faster than the standard SipHash on these short keys, and seeded per
//! process like it.

/// See the module documentation.
pub(crate) type FastHash = foldhash::fast::RandomState;
