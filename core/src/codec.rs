//! The wire forms the core's formats (snapshot parts, checkpoints, cursors) share: a postcard
//! body that must fill its bytes, and the text fields read back from untrusted bytes.

use serde::de::DeserializeOwned;

use crate::error::DecodeError;

/// Decodes a postcard body that must fill `bytes` exactly.
pub(crate) fn decode_exact<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, DecodeError> {
    let (value, rest) = postcard::take_from_bytes::<T>(bytes).map_err(|_| DecodeError::Malformed)?;
    if !rest.is_empty() {
        return Err(DecodeError::TrailingBytes);
    }
    Ok(value)
}

/// UTF-8 text with no control characters: what the origin let into a name or metadata.
pub(crate) fn text(bytes: &[u8]) -> Result<&str, DecodeError> {
    let text = core::str::from_utf8(bytes).map_err(|_| DecodeError::Malformed)?;
    if text
        .chars()
        .any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
    {
        return Err(DecodeError::Inconsistent("text with control characters"));
    }
    Ok(text)
}

/// A country code: two ASCII capital letters.
pub(crate) fn country(bytes: &[u8]) -> Result<&str, DecodeError> {
    if bytes.len() != 2 || !bytes.iter().all(u8::is_ascii_uppercase) {
        return Err(DecodeError::Inconsistent(
            "a country that is not two capital letters",
        ));
    }
    core::str::from_utf8(bytes).map_err(|_| DecodeError::Malformed)
}
