//! The one integration-test binary. Each module says what it pins.
