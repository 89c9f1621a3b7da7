//! Image work for the consumer: decoding untrusted uploads safely, reading masks, putting the
//! model's output back over the original, and measuring what changed where it must not.
//!
//! Invariants:
//! - Nothing is decoded before its byte length and its declared dimensions are checked, so a
//!   decompression bomb (a few kilobytes declaring 50000×50000) is refused without allocating
//!   its pixels; the decoder's own allocation limit is a second guard.
//! - [`composite`] returns the original's exact pixel wherever the mask's weight is 0: the soft
//!   edge is feathered only inward, so "outside the selection" means "untouched", pixel for pixel.
//! - Figures that are stored ([`Leakage`]) are integers (parts per million), never floats.
//!
//! Everything here is pure and synchronous; the consumer runs it on a blocking thread.

mod composite;
mod decode;
mod encode;
mod error;
mod feather;
mod leakage;
mod mask;
mod resize;

pub use composite::{MAX_FEATHER_PX, composite, composite_into};
pub use decode::{DecodeLimits, decode_limited};
pub use encode::{
    JPEG_QUALITY, THUMBNAIL_MAX_SIDE, delivered_png_max_bytes, encode_jpeg, encode_png,
    encode_png_for_model, encode_thumbnail,
};
pub use error::ImagingError;
pub use leakage::{LEAKAGE_TOLERANCE, Leakage, leakage, pixel_changed};
pub use mask::{Mask, mask_from_png};
pub use resize::{VISION_MAX_SIDE, downscale, fit_within, resize_exact};

#[cfg(test)]
mod test_images;
