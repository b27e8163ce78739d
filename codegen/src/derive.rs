//! Building the [`Tables`] of a validated catalog.

use crate::load::Loaded;
use crate::tables::Tables;

/// Derives every table of a catalog that passed [`crate::validate::validate`].
pub fn derive(loaded: &Loaded) -> Tables {
    let _ = loaded;
    todo!("derive::derive")
}
