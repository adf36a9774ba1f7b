//! A real `redis-server` (installed by `scripts/setup.sh`) on a free loopback port, without
//! persistence, stopped on drop; and `redis-cli` for what a test does by hand.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One redis-server process.
pub struct Redis {
    /// Its port on 127.0.0.1.
    pub port: u16,
    child: Option<Child>,
}

impl Redis {
    /// Starts a server on a free port and waits until it answers.
    pub fn start() -> Redis {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut r = Redis { port, child: None };
        r.spawn();
        r
    }

    fn spawn(&mut self) {
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args([
                "--save",
                "",
                "--appendonly",
                "no",
                "--protected-mode",
                "yes",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server is installed by scripts/setup.sh (make test)");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.cli(&["PING"]).trim() != "PONG" {
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Freezes (`SIGSTOP`) or thaws (`SIGCONT`) the server: it keeps its connections open and
    /// answers nothing while frozen.
    pub fn freeze(&self, frozen: bool) {
        let signal = if frozen {
            nix::sys::signal::Signal::SIGSTOP
        } else {
            nix::sys::signal::Signal::SIGCONT
        };
        let pid = self.child.as_ref().expect("the server runs").id();
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), signal).unwrap();
    }

    /// Kills the server (its data is gone: no persistence) and starts it again on the same port.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }

    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// `redis://127.0.0.1:PORT/NAME`.
    pub fn queue(&self, name: &str) -> String {
        format!("redis://127.0.0.1:{}/{name}", self.port)
    }

    /// Runs `redis-cli -p PORT ARGS` and returns its stdout.
    pub fn cli(&self, args: &[&str]) -> String {
        let out = Command::new("redis-cli")
            .args(["-p", &self.port.to_string()])
            .args(args)
            .output()
            .expect("redis-cli is installed by scripts/setup.sh (make test)");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.stop();
    }
}
