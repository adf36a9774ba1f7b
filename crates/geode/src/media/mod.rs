//! What a prompt holds beside text: images and documents, each a [`Media`] part.
//!
//! A part comes from a file, bytes, a base64 `data:` URL or an `https` URL. Its type is read
//! from its bytes ([`Format::sniff`]), never from a name or a declared type; its size is bounded
//! here ([`MAX_PART_BYTES`]) and per route ([`Accepts`]); and what the ledger keeps of it is a
//! [`PartRecord`] (kind, type, size, SHA-256), never its content. geode never fetches a URL: one
//! goes to a wire that takes URLs, or the call is refused.
//!
//! | file | job |
//! |---|---|
//! | `sniff.rs` | [`Format`]: the magic numbers, the MIME types |
//! | `load.rs` | a part from a path, bytes, a data URL or a URL |
//! | `accepts.rs` | [`Accepts`]: what a route takes and how much; the check before a call |
//! | `error.rs` | [`MediaError`] |

mod accepts;
mod error;
mod load;
mod sniff;

pub use accepts::Accepts;
pub use error::MediaError;
pub use load::MAX_PART_BYTES;
pub use sniff::Format;

use base64::Engine as _;
use serde::{Deserialize, Serialize};

/// How a model takes a part: looked at, or read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MediaKind {
    /// An image (PNG, JPEG, GIF, WebP).
    Image,
    /// A document (PDF, plain text).
    Document,
}

impl MediaKind {
    /// `image` or `document`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Image => "image",
            Self::Document => "document",
        }
    }
}

/// Where a part's bytes are. Its JSON is the Messages API's `source` object.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum MediaSource {
    /// The bytes, in standard base64, with the type read from them.
    Base64 {
        /// The MIME type ([`Format::mime`]).
        media_type: String,
        /// The bytes, base64.
        data: String,
    },
    /// Plain text as text: how the Messages API takes a text document (its wire makes this
    /// from an inline `text/plain` part; the loaders never do).
    Text {
        /// `text/plain`.
        media_type: String,
        /// The text.
        data: String,
    },
    /// An `https` URL the provider fetches.
    Url {
        /// The URL.
        url: String,
    },
}

/// Shows the size and hash, never the bytes or the URL (a signed URL is a credential).
impl std::fmt::Debug for MediaSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let r = self.record(MediaKind::Document);
        f.debug_struct("MediaSource")
            .field("source", &r.source)
            .field("media_type", &r.media_type)
            .field("bytes", &r.bytes)
            .field("sha256", &r.sha256)
            .finish()
    }
}

impl MediaSource {
    /// The format of an inline part (`None` for a URL, or a type geode does not send).
    pub fn format(&self) -> Option<Format> {
        match self {
            Self::Base64 { media_type, .. } | Self::Text { media_type, .. } => {
                Format::from_mime(media_type)
            }
            Self::Url { .. } => None,
        }
    }

    /// The bytes of an inline part (`None` for a URL or base64 that does not decode).
    pub fn bytes(&self) -> Option<Vec<u8>> {
        match self {
            Self::Base64 { data, .. } => {
                base64::engine::general_purpose::STANDARD.decode(data).ok()
            }
            Self::Text { data, .. } => Some(data.as_bytes().to_vec()),
            Self::Url { .. } => None,
        }
    }

    /// `data:TYPE;base64,DATA` for an inline part, the URL itself for a URL: what the OpenAI
    /// wires take.
    pub fn data_url(&self) -> String {
        match self {
            Self::Base64 { media_type, data } => format!("data:{media_type};base64,{data}"),
            Self::Text { media_type, data } => format!(
                "data:{media_type};base64,{}",
                base64::engine::general_purpose::STANDARD.encode(data)
            ),
            Self::Url { url } => url.clone(),
        }
    }

    /// A document's file name: `title`, else `document.pdf` / `document.txt` (the wires that
    /// take a file's bytes require a name, and read its type from the extension too).
    pub fn file_name<'a>(&self, title: Option<&'a str>) -> std::borrow::Cow<'a, str> {
        match title {
            Some(t) if !t.is_empty() => std::borrow::Cow::Borrowed(t),
            _ => std::borrow::Cow::Borrowed(match self.format() {
                Some(Format::Text) => "document.txt",
                _ => "document.pdf",
            }),
        }
    }

    /// What the ledger keeps of this part: its kind, type, size and SHA-256 (of the bytes, or
    /// of the URL), never the content.
    pub fn record(&self, kind: MediaKind) -> PartRecord {
        match self {
            Self::Base64 { media_type, data } | Self::Text { media_type, data } => {
                let bytes = self.bytes().unwrap_or_default();
                PartRecord {
                    kind,
                    source: "inline".into(),
                    media_type: Some(media_type.clone()),
                    bytes: Some(if bytes.is_empty() {
                        base64_len(data)
                    } else {
                        bytes.len() as u64
                    }),
                    sha256: crate::digest::sha256_hex(&bytes),
                }
            }
            Self::Url { url } => PartRecord {
                kind,
                source: "url".into(),
                media_type: None,
                bytes: None,
                sha256: crate::digest::sha256_hex(url),
            },
        }
    }
}

/// The decoded size of `data`, from its length (base64 that does not decode has no bytes).
fn base64_len(data: &str) -> u64 {
    (data.len() as u64 / 4) * 3
}

/// One image or document for a prompt.
///
/// ```
/// use geode::media::{Media, MediaKind};
/// let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
/// let part = Media::from_bytes(png, None)?;
/// assert_eq!(part.kind, MediaKind::Image);
/// assert_eq!(part.record().media_type.as_deref(), Some("image/png"));
/// # Ok::<(), geode::media::MediaError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Media {
    /// Looked at or read.
    pub kind: MediaKind,
    /// Where the bytes are.
    pub source: MediaSource,
    /// A name a wire may show the model (a document's file name).
    pub title: Option<String>,
}

impl Media {
    /// What the ledger keeps of it.
    pub fn record(&self) -> PartRecord {
        self.source.record(self.kind)
    }
}

/// What the ledger says of one part: never its content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartRecord {
    /// `image` or `document`.
    pub kind: MediaKind,
    /// `inline` (the bytes travel in the request) or `url` (the provider fetches them).
    pub source: String,
    /// The MIME type read from the bytes (inline parts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// The size in bytes (inline parts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// SHA-256 of the bytes (inline) or of the URL, in hex.
    pub sha256: String,
}
