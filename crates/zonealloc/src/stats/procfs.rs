//! placeholder, replaced by the stats helper
use super::FreeAreaSnapshot;
use core::fmt;
/// Placeholder.
pub fn write_buddyinfo<W: fmt::Write>(_w: &mut W, _z: &[FreeAreaSnapshot]) -> fmt::Result {
    Ok(())
}
/// Placeholder.
pub fn write_pagetypeinfo<W: fmt::Write>(_w: &mut W, _z: &[FreeAreaSnapshot]) -> fmt::Result {
    Ok(())
}
/// Placeholder.
pub fn write_unusable_index<W: fmt::Write>(_w: &mut W, _z: &[FreeAreaSnapshot]) -> fmt::Result {
    Ok(())
}
/// Placeholder.
pub fn write_extfrag_index<W: fmt::Write>(_w: &mut W, _z: &[FreeAreaSnapshot]) -> fmt::Result {
    Ok(())
}
