//! Starting `geode` with a given standard input, for the tests and the benches (which include
//! this file by path; it depends on nothing else in `support`).

use std::io::Write;
use std::process::{Child, Command, Stdio};

/// Spawns `cmd` with `input` written on its standard input, which is then closed; stdout and
/// stderr are as `cmd` sets them.
pub fn spawn_with_stdin(cmd: &mut Command, input: &[u8]) -> Child {
    let mut child = cmd.stdin(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child
}
