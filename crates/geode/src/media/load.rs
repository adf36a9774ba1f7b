//! A part from where users have it: a file, bytes, a `data:` URL or an `https` URL.

use super::{Format, Media, MediaError, MediaKind, MediaSource};
use base64::Engine as _;
use std::io::Read as _;
use std::path::Path;

/// The largest part geode reads at all, whatever the route: 50 MiB, the largest any wire it
/// speaks takes in one request ([`super::Accepts`] bounds each route below this).
pub const MAX_PART_BYTES: u64 = 50 << 20;

impl Media {
    /// The file at `path`, read once, no more than [`MAX_PART_BYTES`]; its kind and type come
    /// from its bytes, its title from its file name. Symlinks are followed: the caller named
    /// the path (the gateway never takes paths at all).
    pub fn from_path(path: &Path) -> Result<Self, MediaError> {
        let read = |source| MediaError::Read {
            path: path.to_owned(),
            source,
        };
        let file = std::fs::File::open(path).map_err(read)?;
        if !file.metadata().map_err(read)?.is_file() {
            return Err(MediaError::NotAFile {
                path: path.to_owned(),
            });
        }
        let mut bytes = Vec::new();
        file.take(MAX_PART_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(read)?;
        let title = path.file_name().map(|n| n.to_string_lossy().into_owned());
        Self::inline(&bytes, path.display().to_string(), title)
    }

    /// `bytes`, their kind and type read from them; `title` names a document to the model.
    pub fn from_bytes(bytes: &[u8], title: Option<String>) -> Result<Self, MediaError> {
        Self::inline(bytes, "the bytes".to_owned(), title)
    }

    /// A `data:[TYPE][;base64],DATA` URL. The declared type is not trusted: the bytes say
    /// what they are.
    pub fn from_data_url(url: &str, title: Option<String>) -> Result<Self, MediaError> {
        let rest = url
            .strip_prefix("data:")
            .ok_or(MediaError::DataUrl("it does not start with data:"))?;
        let (meta, data) = rest
            .split_once(',')
            .ok_or(MediaError::DataUrl("no comma before the data"))?;
        if !meta
            .split(';')
            .any(|p| p.trim().eq_ignore_ascii_case("base64"))
        {
            return Err(MediaError::DataUrl("only base64 data URLs are taken"));
        }
        // The encoded size bounds the decoded one: refuse before decoding a huge string.
        if data.len() as u64 > MAX_PART_BYTES / 3 * 4 + 4 {
            return Err(MediaError::TooLarge {
                what: "the data URL".to_owned(),
                bytes: data.len() as u64 / 4 * 3,
                max: MAX_PART_BYTES,
            });
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .map_err(|_| MediaError::DataUrl("the data is not standard base64"))?;
        Self::inline(&bytes, "the data URL".to_owned(), title)
    }

    /// An `https` URL of an image or a document, passed to a wire that takes URLs (geode does
    /// not fetch it, so its type is unknown until the provider does).
    pub fn from_url(url: &str, kind: MediaKind) -> Result<Self, MediaError> {
        let parsed = reqwest::Url::parse(url)
            .map_err(|_| MediaError::Url("a text that is not a URL".to_owned()))?;
        if parsed.scheme() != "https" {
            return Err(MediaError::Url(format!("a {} URL", parsed.scheme())));
        }
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(MediaError::Url("a URL with credentials".to_owned()));
        }
        let title = parsed
            .path_segments()
            .and_then(|mut s| s.next_back())
            .filter(|s| !s.is_empty())
            .map(str::to_owned);
        Ok(Self {
            kind,
            source: MediaSource::Url {
                url: parsed.to_string(),
            },
            title: (kind == MediaKind::Document).then_some(title).flatten(),
        })
    }

    /// An image: as [`Self::from_path`], refused unless the bytes are an image.
    pub fn image_path(path: &Path) -> Result<Self, MediaError> {
        Self::from_path(path)?.expect(MediaKind::Image, &path.display().to_string())
    }

    /// Refused unless it is of `kind` (a URL's kind is what it was given as).
    pub fn expect(self, kind: MediaKind, what: &str) -> Result<Self, MediaError> {
        if self.kind == kind {
            return Ok(self);
        }
        Err(MediaError::WrongKind {
            what: what.to_owned(),
            found: self.source.format().map_or("non-image", Format::name),
            wanted: match kind {
                MediaKind::Image => "an image",
                MediaKind::Document => "a document",
            },
        })
    }

    fn inline(bytes: &[u8], what: String, title: Option<String>) -> Result<Self, MediaError> {
        let size = bytes.len() as u64;
        if size > MAX_PART_BYTES {
            return Err(MediaError::TooLarge {
                what,
                bytes: size,
                max: MAX_PART_BYTES,
            });
        }
        let format = Format::sniff(bytes).ok_or(MediaError::UnknownFormat { what, bytes: size })?;
        let kind = if format.is_image() {
            MediaKind::Image
        } else {
            MediaKind::Document
        };
        Ok(Self {
            kind,
            source: MediaSource::Base64 {
                media_type: format.mime().to_owned(),
                data: base64::engine::general_purpose::STANDARD.encode(bytes),
            },
            title: (kind == MediaKind::Document).then_some(title).flatten(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01";
    const PDF: &[u8] = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n";

    #[test]
    fn a_file_is_read_by_its_bytes_not_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let lying = dir.path().join("invoice.png");
        std::fs::write(&lying, PDF).unwrap();
        let part = Media::from_path(&lying).unwrap();
        assert_eq!(part.kind, MediaKind::Document);
        assert_eq!(part.record().media_type.as_deref(), Some("application/pdf"));
        assert_eq!(part.title.as_deref(), Some("invoice.png"));
        let err = Media::image_path(&lying).unwrap_err();
        assert!(
            err.to_string().contains("is a pdf file, not an image"),
            "{err}"
        );

        let exe = dir.path().join("scan.jpg");
        std::fs::write(&exe, b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0").unwrap();
        let err = Media::from_path(&exe).unwrap_err();
        assert!(
            matches!(err, MediaError::UnknownFormat { bytes: 16, .. }),
            "{err}"
        );
        assert!(matches!(
            Media::from_path(dir.path()).unwrap_err(),
            MediaError::NotAFile { .. }
        ));
        assert!(matches!(
            Media::from_path(&dir.path().join("missing.png")).unwrap_err(),
            MediaError::Read { .. }
        ));
    }

    #[test]
    fn a_huge_file_is_refused_without_reading_it_all() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big.pdf");
        let f = std::fs::File::create(&big).unwrap();
        f.set_len(MAX_PART_BYTES + 10).unwrap();
        let err = Media::from_path(&big).unwrap_err();
        assert!(matches!(err, MediaError::TooLarge { .. }), "{err}");
    }

    #[test]
    fn data_urls_are_decoded_and_their_declared_type_is_not_trusted() {
        let b64 = base64::engine::general_purpose::STANDARD.encode(PNG);
        let part =
            Media::from_data_url(&format!("data:application/pdf;base64,{b64}"), None).unwrap();
        assert_eq!(part.kind, MediaKind::Image);
        assert_eq!(part.source.format(), Some(Format::Png));
        assert_eq!(part.source.bytes().unwrap(), PNG);
        assert_eq!(
            part.source.data_url(),
            format!("data:image/png;base64,{b64}")
        );
        for bad in [
            "image/png;base64,AAAA",
            "data:image/png,raw",
            "data:;base64,%%%",
        ] {
            assert!(Media::from_data_url(bad, None).is_err(), "{bad}");
        }
    }

    #[test]
    fn only_https_urls_without_credentials_pass() {
        let ok =
            Media::from_url("https://example.com/docs/contract.pdf", MediaKind::Document).unwrap();
        assert_eq!(ok.title.as_deref(), Some("contract.pdf"));
        assert_eq!(ok.record().source, "url");
        assert_eq!(ok.record().bytes, None);
        for bad in [
            "http://example.com/a.png",
            "file:///etc/passwd",
            "https://user:pw@example.com/a.png",
            "not a url",
        ] {
            let err = Media::from_url(bad, MediaKind::Image).unwrap_err();
            assert!(!err.to_string().contains("pw@"), "{err}");
        }
    }

    #[test]
    fn debug_and_the_record_never_show_the_content() {
        let part = Media::from_bytes(b"the secret clause", Some("c.txt".into())).unwrap();
        let shown = format!("{part:?} {:?}", part.record());
        assert!(!shown.contains("secret clause"), "{shown}");
        let b64 = base64::engine::general_purpose::STANDARD.encode("the secret clause");
        assert!(!shown.contains(&b64), "{shown}");
        assert_eq!(part.record().bytes, Some(17));
        assert_eq!(
            part.record().sha256,
            crate::digest::sha256_hex("the secret clause")
        );
        let url = Media::from_url("https://x.example/s.png?sig=abc123", MediaKind::Image).unwrap();
        assert!(!format!("{url:?}").contains("abc123"));
    }
}
