//! The supervisor shim as a standalone executable, for hosts whose own `main` does not call
//! `c2_supervisor::shim::run_if_requested()`. Started by c2-supervisor only.

#[expect(clippy::print_stderr, reason = "the one line a mistaken start gets")]
fn main() -> std::process::ExitCode {
    c2_supervisor::shim::run_if_requested();
    eprintln!(
        "c2-supervisor-shim: this program is started by c2-supervisor only (first argument {})",
        c2_supervisor::shim::SHIM_FLAG
    );
    std::process::ExitCode::from(2)
}
