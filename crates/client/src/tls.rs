//! TLS, for a mailbox reached at an `https://` URL (behind a TLS-terminating proxy or load
//! balancer): rustls, the system's root certificates, and those the caller adds.

use crate::Error;

/// What a client trusts: the system's root certificates unless told not to, and the PEM
/// certificates the caller added.
#[derive(Clone, Default)]
pub(crate) struct Trust {
    /// PEM text, each of one or more certificates.
    pub(crate) roots: Vec<Vec<u8>>,
    /// Trust only the added roots.
    pub(crate) added_only: bool,
}

impl Trust {
    /// `http` set up for a mailbox at an `https://` URL (`https`) or a plain one.
    ///
    /// The system's store is read only for `https://`: a plain mailbox needs none, and a
    /// machine without a readable store still reaches it. An `https://` client refuses to
    /// follow anything to plain HTTP (`https_only`).
    pub(crate) fn apply(
        &self,
        http: reqwest::ClientBuilder,
        https: bool,
    ) -> Result<reqwest::ClientBuilder, Error> {
        let mut http = http
            .tls_built_in_root_certs(https && !self.added_only)
            .https_only(https);
        for pem in &self.roots {
            let certs = reqwest::Certificate::from_pem_bundle(pem)
                .map_err(|e| Error::InvalidInput(format!("cannot read a root certificate: {e}")))?;
            if certs.is_empty() {
                return Err(Error::InvalidInput(
                    "a root certificate must be PEM text (-----BEGIN CERTIFICATE-----)".into(),
                ));
            }
            for cert in certs {
                http = http.add_root_certificate(cert);
            }
        }
        Ok(http)
    }
}

impl std::fmt::Debug for Trust {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trust")
            .field("system_roots", &!self.added_only)
            .field("added_roots", &self.roots.len())
            .finish()
    }
}
