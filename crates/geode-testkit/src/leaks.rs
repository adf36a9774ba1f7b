//! Leak probes read from `/proc`: processes (by an environment marker, children of this
//! process, or members of a process group), open descriptors, and sockets connected to one
//! port.

use std::time::Duration;

/// How long a probe waits for things to go away before reporting what is left.
pub const SETTLE: Duration = Duration::from_secs(5);

fn pids() -> impl Iterator<Item = u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
}

/// `(state, ppid, pgrp)` of a process, from `/proc/PID/stat` (the command name may hold
/// spaces, so fields are read after its closing `)`).
fn stat(pid: u32) -> Option<(char, u32, u32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = text.rsplit_once(')')?.1;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, ppid, pgrp))
}

/// Whether `pid` is a live process: a zombie is dead (this machine's init may not reap
/// orphans, so a killed grandchild can stay one, holding no resources).
pub fn alive(pid: u32) -> bool {
    stat(pid).is_some_and(|(state, _, _)| !matches!(state, 'Z' | 'X'))
}

/// Live processes of process group `pgid`.
pub fn group_members(pgid: u32) -> Vec<u32> {
    pids()
        .filter(|pid| stat(*pid).is_some_and(|(_, _, group)| group == pgid))
        .filter(|pid| alive(*pid))
        .collect()
}

/// Live processes (not this one) whose environment holds `marker` (e.g. `HOME=/tmp/x`).
pub fn processes_with_env(marker: &str) -> Vec<u32> {
    let me = std::process::id();
    pids()
        .filter(|pid| *pid != me)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|kv| kv == marker.as_bytes()))
        })
        .filter(|pid| alive(*pid))
        .collect()
}

/// Live children of this process.
pub fn live_children() -> Vec<u32> {
    let me = std::process::id();
    pids()
        .filter(|pid| stat(*pid).is_some_and(|(_, ppid, _)| ppid == me))
        .filter(|pid| alive(*pid))
        .collect()
}

/// Open descriptors of this process.
pub fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

/// Socket inodes of TCP connections with `port` at either end (this network namespace).
fn inodes_on_port(port: u16) -> Vec<String> {
    let mut out = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let port_of = |addr: &str| {
                addr.rsplit_once(':')
                    .and_then(|(_, p)| u16::from_str_radix(p, 16).ok())
            };
            if f.len() > 9 && (port_of(f[1]) == Some(port) || port_of(f[2]) == Some(port)) {
                out.push(f[9].to_owned());
            }
        }
    }
    out
}

/// Descriptors of this process that are TCP sockets with `port` at either end.
pub fn sockets_on_port(port: u16) -> usize {
    let inodes = inodes_on_port(port);
    if inodes.is_empty() {
        return 0;
    }
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return 0;
    };
    dir.flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .filter(|target| {
            let t = target.to_string_lossy();
            t.strip_prefix("socket:[")
                .and_then(|r| r.strip_suffix(']'))
                .is_some_and(|inode| inodes.iter().any(|i| i == inode))
        })
        .count()
}

/// Polls `probe` until it reports nothing or [`SETTLE`] passes; returns the last report.
pub async fn settle<T: Default + PartialEq>(probe: impl Fn() -> T) -> T {
    let until = tokio::time::Instant::now() + SETTLE;
    loop {
        let left = probe();
        if left == T::default() || tokio::time::Instant::now() > until {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}
