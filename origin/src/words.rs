//! How counts read in log lines, tables and reports: "1 board", "22 boards".

/// `n` with the word that fits it: `counted(1u32, "board", "boards")` is "1 board". O(1).
pub(crate) fn counted(n: impl Into<u64>, one: &str, many: &str) -> String {
    let n: u64 = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(super::counted(1u32, "board", "boards"), "1 board");
        assert_eq!(super::counted(0u32, "board", "boards"), "0 boards");
        assert_eq!(super::counted(22u32, "partition", "partitions"), "22 partitions");
    }
}
