//! The webhook's secret token: Telegram does not sign updates; it sends back, in
//! `X-Telegram-Bot-Api-Secret-Token`, the `secret_token` given to `setWebhook`. A request
//! without it, or with another, is not from Telegram.

/// The header carrying the secret token.
pub const SECRET_TOKEN_HEADER: &str = "x-telegram-bot-api-secret-token";

/// Why a request's secret token is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SecretTokenError {
    /// No `X-Telegram-Bot-Api-Secret-Token` header.
    #[error("the X-Telegram-Bot-Api-Secret-Token header is missing")]
    Missing,
    /// A token other than ours.
    #[error("the secret token does not match")]
    Mismatch,
}

/// Checks the header's value against our token, in time independent of where they differ
/// (so the token cannot be guessed byte by byte from answer times).
pub fn verify_secret_token(expected: &[u8], header: Option<&str>) -> Result<(), SecretTokenError> {
    let given = header.ok_or(SecretTokenError::Missing)?.as_bytes();
    // An empty expected token would accept an empty header: never a match.
    let differs = given.len() != expected.len()
        || expected.is_empty()
        || given
            .iter()
            .zip(expected)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            != 0;
    if differs {
        return Err(SecretTokenError::Mismatch);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_same_token_verifies() {
        assert_eq!(
            verify_secret_token(b"s3cret_Token-1", Some("s3cret_Token-1")),
            Ok(())
        );
        assert_eq!(
            verify_secret_token(b"s3cret_Token-1", None),
            Err(SecretTokenError::Missing)
        );
        for wrong in [
            "",
            "s3cret_Token-2",
            "s3cret_Token-1 ",
            "S3CRET_TOKEN-1",
            "s3cret",
        ] {
            assert_eq!(
                verify_secret_token(b"s3cret_Token-1", Some(wrong)),
                Err(SecretTokenError::Mismatch),
                "{wrong:?}"
            );
        }
        assert_eq!(
            verify_secret_token(b"", Some("")),
            Err(SecretTokenError::Mismatch)
        );
    }
}
