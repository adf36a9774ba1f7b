//! `Media`: one image or document for a prompt, as [`geode::media::Media`] reads it (the
//! Python layer's `geode.Image` and `geode.Document` each hold one). Files are read and types
//! sniffed here, from the bytes, so Python sees the same parts, limits and errors as `geode run
//! --image/--file` and the gateway. A part that cannot be used raises `geode.InputError`, whose
//! message names the file or the size, never the content.
//!
//! Reading a file and encoding it (up to 50 MiB) happens with the GIL released.

use crate::outcome::{config_error, input_error};
use geode::media::{Media, MediaKind, PartRecord};
use pyo3::prelude::*;
use std::path::PathBuf;

/// An image or a document, read and typed once; its ledger record is computed once too (the
/// record hashes the bytes, which a getter must not redo for every look).
#[pyclass(frozen, module = "geode._native", name = "Media")]
pub struct NativeMedia {
    media: Media,
    record: PartRecord,
}

impl NativeMedia {
    /// `media`, refused unless it is of `kind` (`what` names it in the error).
    fn checked(py: Python<'_>, media: Media, kind: MediaKind, what: &str) -> PyResult<Self> {
        let media = media
            .expect(kind, what)
            .map_err(|e| input_error(py, &e.to_string()))?;
        let record = media.record();
        Ok(Self { media, record })
    }

    /// The part for a prompt (the prompt owns its parts: one copy per call).
    pub fn media(&self) -> Media {
        self.media.clone()
    }
}

#[pymethods]
impl NativeMedia {
    /// The file at `path`, of `kind` (`image` or `document`); `title` names a document to the
    /// model (default: its file name).
    #[staticmethod]
    #[pyo3(signature = (path, kind, title=None))]
    fn from_path(
        py: Python<'_>,
        path: PathBuf,
        kind: &str,
        title: Option<String>,
    ) -> PyResult<Self> {
        let kind = parse_kind(py, kind)?;
        let read = py.detach(|| Media::from_path(&path));
        let media = titled(read.map_err(|e| input_error(py, &e.to_string()))?, title);
        Self::checked(py, media, kind, &path.display().to_string())
    }

    /// `data`, of `kind`; `title` names a document to the model.
    #[staticmethod]
    #[pyo3(signature = (data, kind, title=None))]
    fn from_bytes(
        py: Python<'_>,
        data: &[u8],
        kind: &str,
        title: Option<String>,
    ) -> PyResult<Self> {
        let kind = parse_kind(py, kind)?;
        let read = py.detach(|| Media::from_bytes(data, title));
        let media = read.map_err(|e| input_error(py, &e.to_string()))?;
        Self::checked(py, media, kind, "the bytes")
    }

    /// A `data:` URL (decoded; its declared type is not trusted) or an `https` URL (passed on
    /// to a wire that takes URLs, never fetched), of `kind`.
    #[staticmethod]
    #[pyo3(signature = (url, kind, title=None))]
    fn from_url(py: Python<'_>, url: &str, kind: &str, title: Option<String>) -> PyResult<Self> {
        let kind = parse_kind(py, kind)?;
        let read = if url.trim_start().starts_with("data:") {
            let url = url.trim();
            py.detach(|| Media::from_data_url(url, None))
        } else {
            Media::from_url(url.trim(), kind)
        };
        let media = titled(read.map_err(|e| input_error(py, &e.to_string()))?, title);
        Self::checked(py, media, kind, "the data URL")
    }

    /// `image` or `document`.
    #[getter]
    fn kind(&self) -> &'static str {
        self.media.kind.as_str()
    }

    /// `inline` (the bytes travel in the request) or `url` (the provider fetches them).
    #[getter]
    fn source(&self) -> &str {
        &self.record.source
    }

    /// The MIME type read from the bytes (`None` for a URL).
    #[getter]
    fn media_type(&self) -> Option<&str> {
        self.record.media_type.as_deref()
    }

    /// The size in bytes (`None` for a URL).
    #[getter]
    fn size(&self) -> Option<u64> {
        self.record.bytes
    }

    /// SHA-256 of the bytes (of the URL for a URL), in hex: what the ledger records.
    #[getter]
    fn sha256(&self) -> &str {
        &self.record.sha256
    }

    /// A document's name as the model is shown it (`None` for an image).
    #[getter]
    fn title(&self) -> Option<&str> {
        self.media.title.as_deref()
    }
}

/// `image` or `document`: the Python layer passes one of these, anything else is a bug there.
fn parse_kind(py: Python<'_>, kind: &str) -> PyResult<MediaKind> {
    match kind {
        "image" => Ok(MediaKind::Image),
        "document" => Ok(MediaKind::Document),
        other => Err(config_error(
            py,
            &format!("media kind {other:?}: expected \"image\" or \"document\""),
        )),
    }
}

/// `media` with the caller's title for a document; an image has none (no wire shows one).
fn titled(mut media: Media, title: Option<String>) -> Media {
    if let Some(title) = title.filter(|t| !t.is_empty())
        && media.kind == MediaKind::Document
    {
        media.title = Some(title);
    }
    media
}
