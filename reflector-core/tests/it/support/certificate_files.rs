//! Certificate files as a mounted Secret holds them (`tls.key`, `tls.crt`, `ca.crt`),
//! for the suites that serve webhooks from a directory.

use std::path::Path;

/// A CA that may sign serving certificates.
pub type Ca = rcgen::CertifiedIssuer<'static, rcgen::KeyPair>;

/// A new self-signed CA.
pub fn new_ca() -> Ca {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    rcgen::CertifiedIssuer::self_signed(params, rcgen::KeyPair::generate().unwrap()).unwrap()
}

/// Writes a new key and a certificate for `dns_name` signed by `ca`, with `ca`'s own
/// certificate, into `dir`; each file appears whole (renamed into place, as kubelet
/// updates a Secret's volume).
pub fn write_signed(dir: &Path, dns_name: &str, ca: &Ca) {
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec![dns_name.to_owned()])
        .unwrap()
        .signed_by(&key, ca)
        .unwrap();
    let tmp = dir.join("..tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::write(tmp.join("tls.key"), key.serialize_pem()).unwrap();
    std::fs::write(tmp.join("tls.crt"), cert.pem()).unwrap();
    std::fs::write(tmp.join("ca.crt"), ca.pem()).unwrap();
    for name in ["tls.key", "tls.crt", "ca.crt"] {
        std::fs::rename(tmp.join(name), dir.join(name)).unwrap();
    }
}

/// Writes files for `dns_name` signed by a new CA into `dir`; answers the CA's PEM.
pub fn write_from_new_ca(dir: &Path, dns_name: &str) -> String {
    let ca = new_ca();
    write_signed(dir, dns_name, &ca);
    ca.pem()
}
