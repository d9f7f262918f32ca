//! The `standings` binary: `serve`, `rebuild`, `import` and `export` (see `standings --help`).

fn main() -> std::process::ExitCode {
    standings_origin::cli::main(std::env::args_os())
}
