//! What every command prints and returns: stdout that survives a closed
//! pipe, a verdict's exit code, and a command-line time limit. A leaf: it
//! imports nothing from the rest of the binary, so every command can use it.

use std::time::Duration;

/// The exit code of a verdict, as the process returns it.
pub fn exit_code(v: checkers::Verdict) -> u8 {
    u8::try_from(v.exit_code()).unwrap_or(2)
}

/// A time limit from the command line: `0s` means none.
pub fn limit(d: Duration) -> Option<Duration> {
    (!d.is_zero()).then_some(d)
}

/// Writes `text` to stdout; a closed pipe (`harness ... | head`) is not an
/// error worth a panic.
pub fn print_out(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}
