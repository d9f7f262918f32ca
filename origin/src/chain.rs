//! An error printed with every source beneath it, for logs and operator messages: each layer's
//! error keeps its source rather than flattening it into its own words, so whoever reports it
//! prints the whole chain once.

use std::fmt;

/// An error and every source beneath it, `context: cause: its cause`.
pub(crate) struct Chain<'a>(pub(crate) &'a (dyn std::error::Error + 'static));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut source = self.0.source();
        while let Some(cause) = source {
            write!(f, ": {cause}")?;
            source = cause.source();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] Inner);

    #[derive(Debug, thiserror::Error)]
    #[error("inner")]
    struct Inner;

    /// Every source is printed once, outermost first.
    #[test]
    fn prints_each_source_once() {
        assert_eq!(Chain(&Outer(Inner)).to_string(), "outer: inner");
    }
}
