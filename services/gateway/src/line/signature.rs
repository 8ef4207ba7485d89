//! `x-line-signature` verification: base64(HMAC-SHA256(channel secret, raw body)).

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Name of the header LINE puts the signature in (HTTP header names are case-insensitive).
pub const SIGNATURE_HEADER: &str = "x-line-signature";

/// Length of an HMAC-SHA256 digest in bytes.
const DIGEST_LEN: usize = 32;

/// Longest header value worth decoding; a genuine one is 44 characters. Bounding it keeps a
/// hostile request from making us allocate for a huge header.
const MAX_HEADER_LEN: usize = 128;

/// Why a LINE webhook request was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// The configured channel secret is empty: every signature would be forgeable.
    #[error("LINE channel secret is empty")]
    InvalidSecret,
    /// The request carried no `x-line-signature` header (or an empty one).
    #[error("x-line-signature header is missing")]
    MissingSignature,
    /// The header is not base64 of a 32-byte digest.
    #[error("x-line-signature header is not base64 of a 32-byte HMAC-SHA256 digest")]
    MalformedSignature,
    /// Well-formed, but not the digest of this body under our secret.
    #[error("x-line-signature does not match the request body")]
    Mismatch,
}

/// Verifies a LINE webhook request against the raw (unparsed) body bytes.
///
/// The comparison is constant-time (`Mac::verify_slice`), so response timing reveals nothing
/// about how many bytes of a forged signature were right.
pub fn verify_signature(
    channel_secret: &[u8],
    raw_body: &[u8],
    header: Option<&str>,
) -> Result<(), SignatureError> {
    if channel_secret.is_empty() {
        return Err(SignatureError::InvalidSecret);
    }
    let header = match header.map(str::trim) {
        None | Some("") => return Err(SignatureError::MissingSignature),
        Some(h) => h,
    };
    if header.len() > MAX_HEADER_LEN {
        return Err(SignatureError::MalformedSignature);
    }
    let expected = STANDARD
        .decode(header)
        .map_err(|_| SignatureError::MalformedSignature)?;
    if expected.len() != DIGEST_LEN {
        return Err(SignatureError::MalformedSignature);
    }
    let mut mac = Hmac::<Sha256>::new_from_slice(channel_secret)
        .map_err(|_| SignatureError::InvalidSecret)?;
    mac.update(raw_body);
    mac.verify_slice(&expected)
        .map_err(|_| SignatureError::Mismatch)
}

/// Computes the signature LINE would send for `raw_body`; used by tests and local fakes.
pub fn sign(channel_secret: &[u8], raw_body: &[u8]) -> Result<String, SignatureError> {
    if channel_secret.is_empty() {
        return Err(SignatureError::InvalidSecret);
    }
    let mut mac = Hmac::<Sha256>::new_from_slice(channel_secret)
        .map_err(|_| SignatureError::InvalidSecret)?;
    mac.update(raw_body);
    Ok(STANDARD.encode(mac.finalize().into_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";
    const BODY: &[u8] = br#"{"destination":"U0","events":[]}"#;

    fn good() -> String {
        sign(SECRET, BODY).unwrap_or_default()
    }

    #[test]
    fn accepts_own_signature() {
        assert_eq!(verify_signature(SECRET, BODY, Some(&good())), Ok(()));
    }

    #[test]
    fn tolerates_surrounding_whitespace_in_header() {
        let h = format!(" {} ", good());
        assert_eq!(verify_signature(SECRET, BODY, Some(&h)), Ok(()));
    }

    #[test]
    fn missing_and_empty_header_are_missing() {
        assert_eq!(
            verify_signature(SECRET, BODY, None),
            Err(SignatureError::MissingSignature)
        );
        assert_eq!(
            verify_signature(SECRET, BODY, Some("  ")),
            Err(SignatureError::MissingSignature)
        );
    }

    #[test]
    fn non_base64_is_malformed() {
        assert_eq!(
            verify_signature(SECRET, BODY, Some("not*base64!")),
            Err(SignatureError::MalformedSignature)
        );
    }

    #[test]
    fn wrong_length_digest_is_malformed() {
        // Valid base64 of 16 bytes: decodes fine but cannot be an HMAC-SHA256 digest.
        let short = STANDARD.encode([7u8; 16]);
        assert_eq!(
            verify_signature(SECRET, BODY, Some(&short)),
            Err(SignatureError::MalformedSignature)
        );
    }

    #[test]
    fn oversized_header_is_malformed_without_decoding() {
        let huge = "A".repeat(MAX_HEADER_LEN + 4);
        assert_eq!(
            verify_signature(SECRET, BODY, Some(&huge)),
            Err(SignatureError::MalformedSignature)
        );
    }

    #[test]
    fn tampered_body_is_mismatch() {
        let sig = good();
        let tampered = br#"{"destination":"U1","events":[]}"#;
        assert_eq!(
            verify_signature(SECRET, tampered, Some(&sig)),
            Err(SignatureError::Mismatch)
        );
    }

    #[test]
    fn wrong_secret_is_mismatch() {
        let sig = good();
        assert_eq!(
            verify_signature(b"another-secret", BODY, Some(&sig)),
            Err(SignatureError::Mismatch)
        );
    }

    #[test]
    fn forged_digest_of_right_length_is_mismatch() {
        let forged = STANDARD.encode([0u8; DIGEST_LEN]);
        assert_eq!(
            verify_signature(SECRET, BODY, Some(&forged)),
            Err(SignatureError::Mismatch)
        );
    }

    #[test]
    fn empty_secret_is_refused() {
        assert_eq!(
            verify_signature(b"", BODY, Some(&good())),
            Err(SignatureError::InvalidSecret)
        );
        assert_eq!(sign(b"", BODY), Err(SignatureError::InvalidSecret));
    }
}
