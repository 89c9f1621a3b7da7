//! Why an image was refused: the one error type of every imaging stage, and the size check
//! they share (its own file, so each stage can name it without naming another).

use image::ImageFormat;

/// Why an image was refused or could not be processed.
#[derive(Debug, thiserror::Error)]
pub enum ImagingError {
    #[error("image is {bytes} bytes; the limit is {max}")]
    TooManyBytes { bytes: u64, max: u64 },
    #[error("not an image: PNG, JPEG or WebP expected")]
    NotAnImage,
    #[error("image format {format:?} is not accepted: PNG, JPEG or WebP expected")]
    UnsupportedFormat { format: ImageFormat },
    #[error(
        "image is {width}x{height}; the limit is {max_side} pixels a side and {max_pixels} pixels"
    )]
    TooLarge {
        width: u32,
        height: u32,
        max_side: u32,
        max_pixels: u64,
    },
    #[error("image would need more memory to decode than allowed")]
    LimitExceeded {
        #[source]
        source: image::ImageError,
    },
    #[error("image header could not be read")]
    Header {
        #[source]
        source: image::ImageError,
    },
    #[error("image data is corrupt or truncated")]
    Corrupt {
        #[source]
        source: image::ImageError,
    },
    #[error("JPEG data is corrupt or truncated")]
    CorruptJpeg {
        #[source]
        source: zune_jpeg::errors::DecodeErrors,
    },
    #[error("{what} is {width}x{height}; it must be {expected_width}x{expected_height}")]
    SizeMismatch {
        what: &'static str,
        width: u32,
        height: u32,
        expected_width: u32,
        expected_height: u32,
    },
    #[error("encoding an image failed")]
    Encode {
        #[source]
        source: image::ImageError,
    },
    #[error("encoding the JPEG rendition failed")]
    EncodeJpeg {
        #[source]
        source: jpeg_encoder::EncodingError,
    },
}

impl ImagingError {
    /// A stable machine code for a job's failure reason.
    pub fn code(&self) -> &'static str {
        match self {
            ImagingError::TooManyBytes { .. } => "image_too_many_bytes",
            ImagingError::NotAnImage => "not_an_image",
            ImagingError::UnsupportedFormat { .. } => "unsupported_image_format",
            ImagingError::TooLarge { .. } | ImagingError::LimitExceeded { .. } => "image_too_large",
            ImagingError::Header { .. }
            | ImagingError::Corrupt { .. }
            | ImagingError::CorruptJpeg { .. } => "image_corrupt",
            ImagingError::SizeMismatch { .. } => "image_size_mismatch",
            ImagingError::Encode { .. } | ImagingError::EncodeJpeg { .. } => "image_encode_failed",
        }
    }
}

pub(super) fn check_size(
    what: &'static str,
    got: (u32, u32),
    want: (u32, u32),
) -> Result<(), ImagingError> {
    if got == want {
        return Ok(());
    }
    Err(ImagingError::SizeMismatch {
        what,
        width: got.0,
        height: got.1,
        expected_width: want.0,
        expected_height: want.1,
    })
}
