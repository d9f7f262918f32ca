//! What every harness binary's `main` shares: its command line, parsed by clap and then checked
//! for what clap cannot say (flags that depend on each other), the value parsers of its numbers,
//! and the start-up that runs the harness on a tokio runtime and turns its outcome into the exit
//! code and a closing line.
//!
//! A binary's `main` is two lines: `let args: Args = harness::options();` and
//! `harness::block_on("name", threads, run(&args))`. A refused command line exits 2 with clap's
//! usage, as clap's own errors do; a failed run exits 1 with `name: FAILED: why` on stderr.

use std::ffi::OsString;
use std::process::ExitCode;
use std::time::Duration;

use clap::error::ErrorKind;

/// A harness's command line: clap's parse, then [`Options::check`] for what spans several flags.
pub trait Options: clap::Parser {
    /// Refuses a combination of flags that each parsed alone; the message names the flags.
    fn check(&self) -> Result<(), String> {
        Ok(())
    }
}

/// The process's command line, parsed and checked; on a refusal, or on `--help`, clap prints and
/// the process exits (2 for a refusal, with the usage).
pub fn options<A: Options>() -> A {
    let args = A::parse();
    if let Err(why) = args.check() {
        A::command().error(ErrorKind::ValueValidation, why).exit();
    }
    args
}

/// [`options`] over `argv` (its first item the program's name), with the refusal as text rather
/// than an exit: what the unit tests of each binary's flags call.
pub fn try_options<A, I, T>(argv: I) -> Result<A, String>
where
    A: Options,
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args = A::try_parse_from(argv).map_err(|e| e.to_string())?;
    args.check()?;
    Ok(args)
}

/// Runs a harness on a runtime of `threads` threads (1: a current-thread runtime, which leaves
/// the machine's cores to the service under test) and turns its outcome into the exit code:
/// `Ok(Some(summary))` prints `name: PASSED: summary` on stdout, `Ok(None)` nothing (the run
/// printed its own report), `Err(why)` prints `name: FAILED: why` on stderr and exits 1.
///
/// The run is driven inside a `LocalSet`, so a harness may `spawn_local` tasks that share
/// `Rc`s; with more threads, `tokio::spawn` still reaches the workers.
pub fn block_on(
    name: &str,
    threads: usize,
    run: impl Future<Output = Result<Option<String>, String>>,
) -> ExitCode {
    let runtime = match threads {
        0 | 1 => tokio::runtime::Builder::new_current_thread().enable_all().build(),
        threads => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .enable_all()
            .build(),
    };
    let runtime = match runtime {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("{name}: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match tokio::task::LocalSet::new().block_on(&runtime, run) {
        Ok(summary) => {
            if let Some(summary) = summary {
                println!("{name}: PASSED: {summary}");
            }
            ExitCode::SUCCESS
        }
        Err(why) => {
            eprintln!("{name}: FAILED: {why}");
            ExitCode::FAILURE
        }
    }
}

/// A whole number of at least 1: a count of members, connections or threads.
pub fn at_least_one<T: TryFrom<u64>>(value: &str) -> Result<T, String> {
    match value.parse::<u64>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => T::try_from(n).map_err(|_| "is too large".into()),
        Err(_) => Err("is not a whole number".into()),
    }
}

/// A whole number where 0 reads as 1, the least there is (how `crash` and `soak` always took
/// their counts).
pub fn zero_as_one(value: &str) -> Result<u64, String> {
    value
        .parse::<u64>()
        .map(|n| n.max(1))
        .map_err(|_| "is not a whole number".into())
}

/// A finite real number of at least 0 (a rate, a share, a number of seconds).
pub fn non_negative(value: &str) -> Result<f64, String> {
    value
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .ok_or_else(|| "is not a number of at least 0".into())
}

/// A finite number of seconds above 0, for a measured window.
pub fn positive(value: &str) -> Result<f64, String> {
    let v = non_negative(value)?;
    if v > 0.0 {
        Ok(v)
    } else {
        Err("must be more than zero".into())
    }
}

/// A number of seconds of at least 0, fractions allowed.
pub fn seconds(value: &str) -> Result<Duration, String> {
    non_negative(value).map(Duration::from_secs_f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value parsers refuse what the hand-written parsers refused.
    #[test]
    fn numbers_are_refused_as_before() {
        assert_eq!(at_least_one::<usize>("3"), Ok(3));
        assert!(at_least_one::<u64>("0").is_err());
        assert!(at_least_one::<u64>("x").is_err());
        assert_eq!(zero_as_one("0"), Ok(1));
        assert_eq!(non_negative("0.5"), Ok(0.5));
        assert!(non_negative("-1").is_err());
        assert!(non_negative("inf").is_err());
        assert!(positive("0").is_err());
        assert_eq!(seconds("1.5"), Ok(Duration::from_millis(1500)));
    }
}
