//! Test images, and comparing images byte for byte.

use crate::harness::Harness;

impl Harness {
    /// A small valid PNG.
    pub fn png(width: u32, height: u32) -> Vec<u8> {
        tiny_png(width, height)
    }
}

/// A solid-colour PNG of the given size.
pub fn tiny_png(width: u32, height: u32) -> Vec<u8> {
    let image = image::RgbaImage::from_pixel(width, height, image::Rgba([180, 120, 60, 255]));
    atelier_shared::domain::imaging::encode_png(&image).unwrap_or_else(|e| panic!("{e}"))
}

/// The SHA-256 of `bytes`, in hex: how tests compare images byte for byte.
pub fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}
