//! Standard output. A reader that goes away (`lsaquery -p | head -1`) has
//! what it wanted: the write fails with EPIPE (Rust ignores SIGPIPE), and
//! lsaquery stops there with exit status 0, after the same clean-up as
//! any other stop (a subscription is withdrawn), instead of panicking as
//! `print!` does.

use std::io::Write as _;

use crate::stop::Stop;

/// Writes `text` to standard output, at once.
pub(crate) fn write(text: &str) -> Result<(), Stop> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(Stop::output_closed()),
        Err(e) => Err(Stop::new(
            4,
            format!("cannot write to standard output: {e}"),
        )),
    }
}

/// `print!` that returns the `write` error instead of panicking.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::stdout::write(&format!($($arg)*))
    };
}

/// `println!` that returns the `write` error instead of panicking.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::stdout::write(&format!("{}\n", format_args!($($arg)*)))
    };
}
