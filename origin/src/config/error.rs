//! Why a configuration cannot be used, keeping the source (the TOML reader's, the file
//! system's) beneath the words, as the writer's errors do.

use std::path::PathBuf;

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file is not TOML of the configuration's shape.
    #[error("{}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The TOML reader's words.
        #[source]
        source: toml::de::Error,
    },
    /// A value breaks one of the configuration's rules.
    #[error("{}: {why}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The rule and the value.
        why: String,
    },
    /// The file cannot be read.
    #[error("cannot read {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The file system's error.
        #[source]
        source: std::io::Error,
    },
    /// A folder or file of the first start cannot be created.
    #[error("cannot create {}", path.display())]
    Create {
        /// What was to be created.
        path: PathBuf,
        /// The file system's error.
        #[source]
        source: std::io::Error,
    },
    /// The first start's file cannot be written.
    #[error("cannot write {}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The file system's error.
        #[source]
        source: std::io::Error,
    },
    /// The first start's configuration cannot be written as TOML.
    #[error("cannot write the configuration as TOML")]
    Serialize(#[source] toml::ser::Error),
    /// The operating system gave no randomness for a secret.
    #[error("no randomness from the OS")]
    Random(#[source] getrandom::Error),
}
