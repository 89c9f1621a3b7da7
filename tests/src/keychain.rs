//! A real OS keychain for the CLI's tests: a private D-Bus session bus with GNOME Keyring's
//! Secret Service on it (Debian's `dbus-daemon` and `gnome-keyring-daemon`, installed by
//! `cargo xtask test`), unlocked with a throwaway password, in a folder of its own. Read back
//! with `secret-tool` (libsecret, the Secret Service's reference client), never with our code.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running Secret Service; both daemons stop when it drops.
pub struct SecretService {
    dir: PathBuf,
    bus: Child,
    keyring: Child,
}

impl SecretService {
    /// Starts the bus and the keyring in `dir`; panics (a test's setup) when they do not start.
    pub fn start(dir: &Path) -> SecretService {
        std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{e}"));
        let socket = dir.join("bus");
        // A session bus that activates nothing: with the standard service folders, a client's
        // call made before our keyring owned the name made D-Bus start another keyring (not
        // unlocked, without our HOME), and every store then failed ("did not start in 20 s").
        let config = dir.join("bus.conf");
        std::fs::write(&config, BUS_CONFIG).unwrap_or_else(|e| panic!("{e}"));
        let bus = Command::new("dbus-daemon")
            .arg(format!("--config-file={}", config.display()))
            .args(["--nofork", "--nopidfile"])
            .arg(format!("--address=unix:path={}", socket.display()))
            .stdout(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("dbus-daemon (cargo xtask test installs it): {e}"));
        wait_for(|| socket.exists(), "the session bus's socket");
        let mut keyring = Command::new("gnome-keyring-daemon")
            .args(["--foreground", "--components=secrets", "--unlock"])
            .envs(bus_env(dir))
            .env("HOME", dir)
            .env("XDG_DATA_HOME", dir.join("data"))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("gnome-keyring-daemon (cargo xtask test installs it): {e}"));
        // `--unlock` reads the login keyring's password from standard input until it closes.
        if let Some(mut stdin) = keyring.stdin.take() {
            std::io::Write::write_all(&mut stdin, b"atelier-test")
                .unwrap_or_else(|e| panic!("{e}"));
        }
        let service = SecretService {
            dir: dir.to_owned(),
            bus,
            keyring,
        };
        wait_for(
            || service.store("atelier-test-probe", "probe", "ready"),
            "the Secret Service on the bus",
        );
        service
    }

    /// The environment a client needs to reach this Secret Service.
    pub fn env(&self) -> Vec<(String, String)> {
        bus_env(&self.dir)
    }

    /// `secret-tool store`: whether the keychain took it.
    fn store(&self, service: &str, account: &str, secret: &str) -> bool {
        let child = Command::new("secret-tool")
            .args(["store", "--label", account, "service", service])
            .args(["username", account])
            .envs(self.env())
            .stdin(Stdio::piped())
            .stderr(Stdio::null())
            .spawn();
        let Ok(mut child) = child else { return false };
        if let Some(mut stdin) = child.stdin.take() {
            let _ = std::io::Write::write_all(&mut stdin, secret.as_bytes());
        }
        child.wait().is_ok_and(|s| s.success())
    }

    /// `secret-tool lookup`: the secret kept for the service and account, if any.
    pub fn lookup(&self, service: &str, account: &str) -> Option<String> {
        let out = Command::new("secret-tool")
            .args(["lookup", "service", service, "username", account])
            .envs(self.env())
            .output()
            .unwrap_or_else(|e| panic!("secret-tool (cargo xtask test installs it): {e}"));
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

/// dbus-daemon's session configuration without `<standard_session_servicedirs/>`: no
/// activation. The listen address is replaced by `--address`.
const BUS_CONFIG: &str = r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:tmpdir=/tmp</listen>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"#;

fn bus_env(dir: &Path) -> Vec<(String, String)> {
    let address = format!("unix:path={}", dir.join("bus").display());
    vec![("DBUS_SESSION_BUS_ADDRESS".into(), address)]
}

fn wait_for(mut ready: impl FnMut() -> bool, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !ready() {
        assert!(Instant::now() < deadline, "{what} did not start in 20 s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl Drop for SecretService {
    fn drop(&mut self) {
        let _ = self.keyring.kill();
        let _ = self.bus.kill();
        let _ = self.keyring.wait();
        let _ = self.bus.wait();
    }
}
