//! A process of the local cloud, and everything it started, stopped when dropped.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A process of the local cloud, stopped when dropped.
pub(super) struct Proc {
    pub(super) name: &'static str,
    pub(super) child: Child,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let pid = self.child.id();
        // ministack runs each function as a child process of its own (warm workers): collect
        // them first, because once ministack is gone they are reparented and out of reach.
        let descendants = descendants(pid);
        let _ = Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .stderr(Stdio::null())
            .status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        for d in descendants {
            let _ = Command::new("kill")
                .args(["-KILL", &d.to_string()])
                .stderr(Stdio::null())
                .status();
        }
        eprintln!("xtask: cloud: stopped {} (pid {pid})", self.name);
    }
}

/// Every process below `pid`, from `/proc` (Linux; elsewhere none are found).
fn descendants(pid: u32) -> Vec<u32> {
    let mut parent_of = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for e in entries.flatten() {
            let Some(child) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
            let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
                continue;
            };
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|p| p.parse::<u32>().ok());
            if let Some(ppid) = ppid {
                parent_of.push((child, ppid));
            }
        }
    }
    let mut found = vec![pid];
    let mut i = 0;
    while i < found.len() {
        let p = found[i];
        found.extend(parent_of.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    found.remove(0);
    found
}
