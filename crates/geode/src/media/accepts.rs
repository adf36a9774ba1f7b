//! What a route takes beside text, and how much: one [`Accepts`] per wire (and per model
//! pattern where a provider's models differ), checked before any request. The bounds are the
//! providers' published limits; `docs/wire.md` gives each with its source.

use super::{Format, MediaError, MediaKind, PartRecord};

/// The image formats every wire that takes images takes.
const IMAGES: &[Format] = &[Format::Png, Format::Jpeg, Format::Gif, Format::Webp];
const MIB: u64 = 1 << 20;

/// What a route takes beside text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Accepts {
    /// The image formats it takes (none: no images).
    pub images: &'static [Format],
    /// The document formats it takes (none: no documents).
    pub documents: &'static [Format],
    /// Whether an image may be a URL the provider fetches.
    pub image_urls: bool,
    /// Whether a document may be a URL the provider fetches.
    pub document_urls: bool,
    /// The largest image, in bytes.
    pub image_bytes: u64,
    /// The largest document, in bytes.
    pub document_bytes: u64,
    /// The most bytes of parts in one request.
    pub request_bytes: u64,
    /// The most parts in one request.
    pub parts: usize,
}

impl Accepts {
    /// Text only: the local model, the CLIs, text models.
    pub const TEXT: Self = Self {
        images: &[],
        documents: &[],
        image_urls: false,
        document_urls: false,
        image_bytes: 0,
        document_bytes: 0,
        request_bytes: 0,
        parts: 0,
    };

    /// Everything geode reads, up to [`super::MAX_PART_BYTES`]: adapters outside the registry
    /// (scripted test adapters), which say nothing of their inputs.
    pub const ANY: Self = Self {
        images: IMAGES,
        documents: &[Format::Pdf, Format::Text],
        image_urls: true,
        document_urls: true,
        image_bytes: super::MAX_PART_BYTES,
        document_bytes: super::MAX_PART_BYTES,
        request_bytes: u64::MAX,
        parts: usize::MAX,
    };

    /// The OpenAI Responses API: `input_image` (a data URL or a URL) and `input_file`
    /// (`file_data` or `file_url`); 50 MB of payload and 500 images per request.
    pub const OPENAI_RESPONSES: Self = Self {
        images: IMAGES,
        documents: &[Format::Pdf, Format::Text],
        image_urls: true,
        document_urls: true,
        image_bytes: 50 * MIB,
        document_bytes: 50 * MIB,
        request_bytes: 50 * MIB,
        parts: 500,
    };

    /// The ChatGPT backend the Codex login reaches: `input_image` as a data URL, which is what
    /// the codex CLI sends; files and URLs are not known to be taken there.
    pub const CHATGPT: Self = Self {
        documents: &[],
        image_urls: false,
        document_urls: false,
        ..Self::OPENAI_RESPONSES
    };

    /// Anthropic Messages: `image` blocks of at most 5 MB of base64 (3.75 MiB of bytes) and
    /// `document` blocks (PDF, plain text); 32 MB and 100 parts per request; both by URL too.
    pub const ANTHROPIC: Self = Self {
        images: IMAGES,
        documents: &[Format::Pdf, Format::Text],
        image_urls: true,
        document_urls: true,
        image_bytes: 5 * MIB / 4 * 3,
        document_bytes: 32 * MIB,
        request_bytes: 32 * MIB,
        parts: 100,
    };

    /// The `claude` CLI: Anthropic's blocks, inline only, passed through its stream-json input.
    pub const CLAUDE_CLI: Self = Self {
        image_urls: false,
        document_urls: false,
        ..Self::ANTHROPIC
    };

    /// Chat Completions as OpenAI defines it: `image_url` parts (a data URL or a URL) and
    /// `file` parts, PDF only, by `file_data`.
    pub const OPENAI_CHAT: Self = Self {
        documents: &[Format::Pdf],
        document_urls: false,
        ..Self::OPENAI_RESPONSES
    };

    /// GLM's vision models on Chat Completions: `image_url` parts (a data URL or a URL), PNG
    /// and JPEG of at most 5 MB.
    pub const GLM_VISION: Self = Self {
        images: &[Format::Png, Format::Jpeg],
        documents: &[],
        image_urls: true,
        document_urls: false,
        image_bytes: 5 * MIB,
        document_bytes: 0,
        request_bytes: 50 * MIB,
        parts: 50,
    };

    /// A Chat Completions server declared to take `image` and/or `pdf` (`[providers.NAME]
    /// inputs`), with OpenAI's shapes and bounds.
    pub const fn chat(image: bool, pdf: bool) -> Self {
        Self {
            images: if image { IMAGES } else { &[] },
            documents: if pdf { &[Format::Pdf] } else { &[] },
            image_urls: image,
            ..Self::OPENAI_CHAT
        }
    }

    /// Whether it takes anything beside text.
    pub fn takes_parts(&self) -> bool {
        !self.images.is_empty() || !self.documents.is_empty()
    }

    /// The inputs in words, for `geode adapters` and the README: `text, image (png, jpeg),
    /// pdf, text file, URLs`.
    pub fn words(&self) -> String {
        let mut out = vec!["text".to_owned()];
        if !self.images.is_empty() {
            let names: Vec<&str> = self.images.iter().map(|f| f.name()).collect();
            out.push(format!("image ({})", names.join(", ")));
        }
        for d in self.documents {
            out.push(
                if *d == Format::Text {
                    "text file"
                } else {
                    "pdf"
                }
                .to_owned(),
            );
        }
        match (self.image_urls, self.document_urls) {
            (true, true) => out.push("URLs".to_owned()),
            (true, false) => out.push("image URLs".to_owned()),
            _ => {}
        }
        out.join(", ")
    }

    /// In a few characters, for the terminal table: `text+image+pdf+url`.
    pub fn short(&self) -> String {
        let mut out = vec!["text"];
        if !self.images.is_empty() {
            out.push("image");
        }
        for d in self.documents {
            out.push(if *d == Format::Text { "txt" } else { "pdf" });
        }
        if self.image_urls || self.document_urls {
            out.push("url");
        }
        out.join("+")
    }

    /// Whether it can take these parts: `Err` with the first reason it cannot, before any
    /// request.
    pub fn check(&self, parts: &[PartRecord]) -> Result<(), MediaError> {
        if parts.is_empty() {
            return Ok(());
        }
        let no = |why: String| Err(MediaError::NotAccepted(why));
        if !self.takes_parts() {
            return no("it takes text only".to_owned());
        }
        if parts.len() > self.parts {
            return no(format!(
                "{} parts, over its {} per request",
                parts.len(),
                self.parts
            ));
        }
        let mut total = 0u64;
        for p in parts {
            let (formats, urls, max) = match p.kind {
                MediaKind::Image => (self.images, self.image_urls, self.image_bytes),
                MediaKind::Document => (self.documents, self.document_urls, self.document_bytes),
            };
            let kind = p.kind.as_str();
            if formats.is_empty() {
                return no(format!("it takes no {kind}s"));
            }
            match (&p.media_type, p.bytes) {
                (None, _) if !urls => {
                    return no(format!("it takes no {kind} URLs (give the file instead)"));
                }
                (None, _) => {}
                (Some(mime), bytes) => {
                    let format = Format::from_mime(mime);
                    if !format.is_some_and(|f| formats.contains(&f)) {
                        let names: Vec<&str> = formats.iter().map(|f| f.name()).collect();
                        return no(format!(
                            "it takes {kind}s as {}, not {mime}",
                            names.join(", ")
                        ));
                    }
                    let bytes = bytes.unwrap_or(0);
                    if bytes > max {
                        return no(format!("a {kind} of {bytes} bytes is over its {max} bytes"));
                    }
                    total += bytes;
                }
            }
        }
        if total > self.request_bytes {
            return no(format!(
                "the parts total {total} bytes, over its {} per request",
                self.request_bytes
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::media::{Media, MediaKind};

    fn png() -> PartRecord {
        Media::from_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\r", None)
            .unwrap()
            .record()
    }
    fn pdf(bytes: u64) -> PartRecord {
        PartRecord {
            bytes: Some(bytes),
            ..Media::from_bytes(b"%PDF-1.4\n", None).unwrap().record()
        }
    }

    #[test]
    fn text_routes_refuse_every_part_and_take_none() {
        assert!(Accepts::TEXT.check(&[]).is_ok());
        let err = Accepts::TEXT.check(&[png()]).unwrap_err();
        assert_eq!(err.to_string(), "it takes text only");
    }

    #[test]
    fn formats_kinds_urls_and_sizes_are_checked() {
        let url = Media::from_url("https://x.example/a.pdf", MediaKind::Document)
            .unwrap()
            .record();
        assert!(
            Accepts::OPENAI_RESPONSES
                .check(&[png(), pdf(10), url.clone()])
                .is_ok()
        );
        assert!(
            Accepts::CHATGPT
                .check(&[pdf(10)])
                .unwrap_err()
                .to_string()
                .contains("no documents")
        );
        assert!(
            Accepts::OPENAI_CHAT
                .check(&[url])
                .unwrap_err()
                .to_string()
                .contains("no document URLs")
        );
        let gif = Media::from_bytes(b"GIF89a\0\0", None).unwrap().record();
        let err = Accepts::GLM_VISION.check(&[gif]).unwrap_err().to_string();
        assert_eq!(err, "it takes images as png, jpeg, not image/gif");
        let err = Accepts::ANTHROPIC
            .check(&[pdf(33 << 20)])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("a document of 34603008 bytes is over"),
            "{err}"
        );
        let err = Accepts::ANTHROPIC
            .check(&[pdf(20 << 20), pdf(20 << 20)])
            .unwrap_err()
            .to_string();
        assert!(err.contains("the parts total"), "{err}");
        let many = vec![png(); 101];
        assert!(
            Accepts::ANTHROPIC
                .check(&many)
                .unwrap_err()
                .to_string()
                .contains("101 parts")
        );
    }

    #[test]
    fn words_say_what_a_route_takes() {
        assert_eq!(Accepts::TEXT.words(), "text");
        assert_eq!(
            Accepts::ANTHROPIC.words(),
            "text, image (png, jpeg, gif, webp), pdf, text file, URLs"
        );
        assert_eq!(
            Accepts::chat(true, false).words(),
            "text, image (png, jpeg, gif, webp), image URLs"
        );
    }
}
