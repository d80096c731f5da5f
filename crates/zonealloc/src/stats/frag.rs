//! placeholder, replaced by the stats helper
use super::FreeAreaSnapshot;
/// Placeholder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContigPageInfo;
/// Placeholder.
pub fn unusable_free_index(_s: &FreeAreaSnapshot, _order: u8) -> u32 {
    0
}
/// Placeholder.
pub fn fragmentation_index(_s: &FreeAreaSnapshot, _order: u8) -> i32 {
    0
}
/// Placeholder.
pub fn extfrag_for_order(_s: &FreeAreaSnapshot, _order: u8) -> u32 {
    0
}
