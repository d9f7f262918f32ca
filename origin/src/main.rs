//! The `standings` binary. The service itself arrives with the origin issue.

fn main() {
    eprintln!("standings: the origin service is not built yet; see the tracker's origin issue");
    std::process::exit(2);
}
