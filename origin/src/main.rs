//! The `standings` binary: `serve`, `rebuild` and `import`.

fn main() -> std::process::ExitCode {
    standings_origin::cli::main(std::env::args().skip(1).collect())
}
