//! Optional HTTPS for a fake, needed by codex in ChatGPT mode (the routing origin
//! must be `https://`, and rustls rejects a self-signed leaf used as its own CA).
//!
//! [`TlsIdentity::generate`] makes a throwaway CA plus a leaf certificate for `127.0.0.1` and
//! `localhost`; hand [`TlsIdentity::ca_pem`] to the client (codex: `CODEX_CA_CERTIFICATE`).
//! [`TlsIdentity::from_pem`] uses an existing chain and key instead. Keys stay in memory only
//! and never appear in `Debug` output.

use std::fmt;
use std::path::Path;
use std::sync::Arc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::crypto::ring::default_provider;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// Why a TLS identity could not be made or used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// Certificate generation failed.
    #[error("cannot generate a certificate: {0}")]
    Generate(String),
    /// A PEM input held no usable certificate or key.
    #[error("bad PEM input: {0}")]
    Pem(String),
    /// rustls refused the certificate and key.
    #[error("TLS configuration refused: {0}")]
    Config(String),
    /// A PEM file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// A server certificate chain and key (and, when generated, the CA that signed it).
#[derive(Clone)]
pub struct TlsIdentity {
    cert_chain_pem: String,
    key_pem: String,
    ca_pem: Option<String>,
}

impl fmt::Debug for TlsIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsIdentity")
            .field("ca_pem", &self.ca_pem.as_ref().map(|_| "<pem>"))
            .field("key_pem", &"***")
            .finish_non_exhaustive()
    }
}

impl TlsIdentity {
    /// A fresh CA and a leaf for `127.0.0.1` and `localhost`, signed by it.
    pub fn generate() -> Result<TlsIdentity, TlsError> {
        use rcgen::{
            BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
            KeyPair, KeyUsagePurpose,
        };
        let fail = |e: rcgen::Error| TlsError::Generate(e.to_string());
        let ca_key = KeyPair::generate().map_err(fail)?;
        let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(fail)?;
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        ca.distinguished_name
            .push(DnType::CommonName, "geode-fakes throwaway CA");
        let ca_cert = ca.self_signed(&ca_key).map_err(fail)?;
        let issuer = Issuer::new(ca, ca_key);

        let leaf_key = KeyPair::generate().map_err(fail)?;
        let mut leaf = CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
            .map_err(fail)?;
        leaf.is_ca = IsCa::ExplicitNoCa;
        leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        leaf.distinguished_name
            .push(DnType::CommonName, "127.0.0.1");
        let leaf_cert = leaf.signed_by(&leaf_key, &issuer).map_err(fail)?;
        Ok(TlsIdentity {
            cert_chain_pem: format!("{}{}", leaf_cert.pem(), ca_cert.pem()),
            key_pem: leaf_key.serialize_pem(),
            ca_pem: Some(ca_cert.pem()),
        })
    }

    /// An identity from a PEM certificate chain (leaf first) and a PEM private key.
    pub fn from_pem(cert_chain_pem: impl Into<String>, key_pem: impl Into<String>) -> TlsIdentity {
        TlsIdentity {
            cert_chain_pem: cert_chain_pem.into(),
            key_pem: key_pem.into(),
            ca_pem: None,
        }
    }

    /// An identity from PEM files.
    pub fn from_files(cert_chain: &Path, key: &Path) -> Result<TlsIdentity, TlsError> {
        let read = |path: &Path| {
            std::fs::read_to_string(path).map_err(|source| TlsError::Read {
                path: path.display().to_string(),
                source,
            })
        };
        Ok(TlsIdentity::from_pem(read(cert_chain)?, read(key)?))
    }

    /// The PEM of the CA that signed a generated identity (`None` for [`Self::from_pem`]).
    pub fn ca_pem(&self) -> Option<&str> {
        self.ca_pem.as_deref()
    }

    /// The rustls acceptor for this identity (ring provider, HTTP/1.1 over ALPN).
    pub(crate) fn acceptor(&self) -> Result<TlsAcceptor, TlsError> {
        let certs = CertificateDer::pem_slice_iter(self.cert_chain_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| TlsError::Pem(e.to_string()))?;
        if certs.is_empty() {
            return Err(TlsError::Pem("no certificate found".to_owned()));
        }
        let key = PrivateKeyDer::from_pem_slice(self.key_pem.as_bytes())
            .map_err(|e| TlsError::Pem(e.to_string()))?;
        let mut config = ServerConfig::builder_with_provider(Arc::new(default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::Config(e.to_string()))?
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .map_err(|e| TlsError::Config(e.to_string()))?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(TlsAcceptor::from(Arc::new(config)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_identity_builds_an_acceptor_and_hides_its_key() {
        let identity = TlsIdentity::generate().unwrap();
        assert!(identity.ca_pem().unwrap().contains("BEGIN CERTIFICATE"));
        assert!(identity.acceptor().is_ok());
        assert!(!format!("{identity:?}").contains("PRIVATE KEY"));
    }

    #[test]
    fn garbage_pem_is_an_error() {
        let identity = TlsIdentity::from_pem("nope", "nope");
        assert!(matches!(identity.acceptor(), Err(TlsError::Pem(_))));
    }
}
