//! Why a part cannot be read or cannot go on a route. No variant holds a part's content: a
//! file is named by its path, bytes by their size.

use std::path::PathBuf;

/// Why an image or document was refused, always before any request.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MediaError {
    /// The file could not be opened or read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The path is not a regular file (a directory, a device, a FIFO).
    #[error("{} is not a regular file", path.display())]
    NotAFile {
        /// The path.
        path: PathBuf,
    },
    /// The bytes are none of the formats geode sends ([`super::Format`]).
    #[error(
        "{what} ({bytes} bytes) is not a PNG, JPEG, GIF, WebP, PDF or UTF-8 text file (the type is read from the bytes, not the name)"
    )]
    UnknownFormat {
        /// The file, or `bytes`.
        what: String,
        /// Its size.
        bytes: u64,
    },
    /// An image part that is not an image, or a document part that is an image.
    #[error("{what} is a {found} file, not {wanted}")]
    WrongKind {
        /// The file, or `bytes`.
        what: String,
        /// What the bytes are.
        found: &'static str,
        /// What the part was given as (`an image`, `a document`).
        wanted: &'static str,
    },
    /// A data URL that is not `data:[TYPE][;base64],DATA`, or base64 that does not decode.
    #[error("not a usable data URL: {0}")]
    DataUrl(&'static str),
    /// A URL that is not `https://` (or that carries a user name or password).
    #[error("{0}: only https URLs without credentials are passed on")]
    Url(String),
    /// A part over the largest geode reads at all ([`super::MAX_PART_BYTES`]).
    #[error("{what} is {bytes} bytes, over the {max} bytes any route takes")]
    TooLarge {
        /// The file, or `bytes`.
        what: String,
        /// Its size.
        bytes: u64,
        /// The bound.
        max: u64,
    },
    /// The route cannot take this part, or the parts together break its limits.
    #[error("{0}")]
    NotAccepted(String),
}
