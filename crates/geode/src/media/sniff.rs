//! A part's format, read from its first bytes (the magic numbers), never from a file name or a
//! declared type: a `.png` that is a PDF is a PDF, and an executable named `scan.jpg` is refused.

use serde::{Deserialize, Serialize};

/// The formats geode sends to a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// PNG: `89 50 4E 47 0D 0A 1A 0A`.
    Png,
    /// JPEG: `FF D8 FF`.
    Jpeg,
    /// GIF: `GIF87a` or `GIF89a`.
    Gif,
    /// WebP: `RIFF`, four size bytes, `WEBP`.
    Webp,
    /// PDF: `%PDF-` within the first 1,024 bytes, as readers allow.
    Pdf,
    /// Plain text: UTF-8 without NUL bytes.
    Text,
}

/// How far into a file a PDF header may start (readers tolerate leading junk up to here).
const PDF_WINDOW: usize = 1024;

impl Format {
    /// The format of `bytes`, or `None` when it is none of these.
    pub fn sniff(bytes: &[u8]) -> Option<Self> {
        let starts = |magic: &[u8]| bytes.starts_with(magic);
        if starts(b"\x89PNG\r\n\x1a\n") {
            Some(Self::Png)
        } else if starts(b"\xff\xd8\xff") {
            Some(Self::Jpeg)
        } else if starts(b"GIF87a") || starts(b"GIF89a") {
            Some(Self::Gif)
        } else if bytes.len() >= 12 && starts(b"RIFF") && &bytes[8..12] == b"WEBP" {
            Some(Self::Webp)
        } else if memchr::memmem::find(&bytes[..bytes.len().min(PDF_WINDOW)], b"%PDF-").is_some() {
            Some(Self::Pdf)
        } else if !bytes.is_empty() && !bytes.contains(&0) && std::str::from_utf8(bytes).is_ok() {
            Some(Self::Text)
        } else {
            None
        }
    }

    /// The MIME type every wire names it by.
    pub fn mime(self) -> &'static str {
        match self {
            Self::Png => "image/png",
            Self::Jpeg => "image/jpeg",
            Self::Gif => "image/gif",
            Self::Webp => "image/webp",
            Self::Pdf => "application/pdf",
            Self::Text => "text/plain",
        }
    }

    /// The format a MIME type names (`image/jpg` too, which some clients write).
    pub fn from_mime(mime: &str) -> Option<Self> {
        let mime = mime.split(';').next()?.trim().to_ascii_lowercase();
        Some(match mime.as_str() {
            "image/png" => Self::Png,
            "image/jpeg" | "image/jpg" => Self::Jpeg,
            "image/gif" => Self::Gif,
            "image/webp" => Self::Webp,
            "application/pdf" => Self::Pdf,
            "text/plain" => Self::Text,
            _ => return None,
        })
    }

    /// Whether it is shown to a model as an image (else it is read as a document).
    pub fn is_image(self) -> bool {
        matches!(self, Self::Png | Self::Jpeg | Self::Gif | Self::Webp)
    }

    /// The short name `geode adapters` and errors use.
    pub fn name(self) -> &'static str {
        match self {
            Self::Png => "png",
            Self::Jpeg => "jpeg",
            Self::Gif => "gif",
            Self::Webp => "webp",
            Self::Pdf => "pdf",
            Self::Text => "text",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Format;

    #[test]
    fn formats_come_from_the_bytes() {
        assert_eq!(Format::sniff(b"\x89PNG\r\n\x1a\n\0\0"), Some(Format::Png));
        assert_eq!(Format::sniff(b"\xff\xd8\xff\xe0rest"), Some(Format::Jpeg));
        assert_eq!(Format::sniff(b"GIF89a..."), Some(Format::Gif));
        assert_eq!(Format::sniff(b"RIFF\x10\0\0\0WEBPVP8 "), Some(Format::Webp));
        assert_eq!(Format::sniff(b"%PDF-1.7\n"), Some(Format::Pdf));
        assert_eq!(Format::sniff(b"\n\n%PDF-1.4"), Some(Format::Pdf));
        assert_eq!(
            Format::sniff("Invoice 12: 40 €".as_bytes()),
            Some(Format::Text)
        );
    }

    #[test]
    fn what_is_none_of_them_is_none() {
        assert_eq!(Format::sniff(b""), None);
        assert_eq!(Format::sniff(b"\x7fELF\x02\x01\x01\0"), None);
        assert_eq!(Format::sniff(b"RIFF\x10\0\0\0WAVEfmt "), None);
        assert_eq!(Format::sniff(b"\xff\xfe\0\0"), None);
        let late = [vec![b' '; 2000], b"%PDF-1.4".to_vec()].concat();
        assert_eq!(Format::sniff(&late), Some(Format::Text));
    }

    #[test]
    fn mime_types_round_trip() {
        for f in [
            Format::Png,
            Format::Jpeg,
            Format::Gif,
            Format::Webp,
            Format::Pdf,
            Format::Text,
        ] {
            assert_eq!(Format::from_mime(f.mime()), Some(f));
        }
        assert_eq!(Format::from_mime("IMAGE/JPG"), Some(Format::Jpeg));
        assert_eq!(
            Format::from_mime("text/plain; charset=utf-8"),
            Some(Format::Text)
        );
        assert_eq!(Format::from_mime("application/zip"), None);
    }
}
