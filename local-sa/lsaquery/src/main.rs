//! lsaquery: a saquery-style client for local-sa and any other SA (the
//! library's [`lsaquery::main`]).

fn main() -> std::process::ExitCode {
    lsaquery::main()
}
