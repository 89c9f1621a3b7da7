//! The pending-submit journal: what makes "killed and rerun" safe for money.
//!
//! Before a paid request is first sent, an entry is written (and synced) under
//! `ATELIER_HOME/pending/`, named by a fingerprint of everything the command would send. It
//! holds the `Idempotency-Key` and the uploaded asset ids, so a rerun of the same command sends
//! the *same* request with the *same* key, and the server answers with the job it already
//! charged for (`200 Idempotent-Replayed`) instead of charging again. The entry is removed once
//! the job is finished and its result saved, or when the server refused the request outright.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// A fingerprint of one command's request: sha256 over tagged, length-prefixed parts (so
/// `("ab", "c")` and `("a", "bc")` differ).
pub struct Fingerprint(Sha256);

impl Fingerprint {
    /// Starts a fingerprint for an operation (`edit`, `repair`).
    pub fn new(operation: &str) -> Fingerprint {
        Fingerprint(Sha256::new()).part("operation", operation.as_bytes())
    }

    /// Adds one named part.
    pub fn part(mut self, name: &str, bytes: &[u8]) -> Fingerprint {
        for chunk in [name.as_bytes(), bytes] {
            self.0.update((chunk.len() as u64).to_be_bytes());
            self.0.update(chunk);
        }
        self
    }

    /// Adds an optional part; absent and empty are different.
    pub fn optional(self, name: &str, bytes: Option<&[u8]>) -> Fingerprint {
        match bytes {
            Some(b) => self.part(name, b).part("present", b"1"),
            None => self.part(name, b"").part("present", b"0"),
        }
    }

    pub fn finish(self) -> String {
        hex::encode(self.0.finalize())
    }
}

/// One pending paid request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub fingerprint: String,
    /// The command, for a person reading the folder.
    pub command: String,
    pub idempotency_key: String,
    /// Uploaded assets by role (`original`, `mask`, `style_reference`); only uploads whose PUT
    /// succeeded are recorded.
    #[serde(default)]
    pub assets: BTreeMap<String, String>,
    /// The job, once the server has answered the submit.
    #[serde(default)]
    pub job_id: Option<String>,
    /// Seconds since the Unix epoch.
    pub created_at: u64,
}

impl Entry {
    /// A new entry with a fresh Idempotency-Key.
    pub fn new(fingerprint: &str, command: &str) -> Entry {
        Entry {
            fingerprint: fingerprint.to_owned(),
            command: command.to_owned(),
            idempotency_key: uuid::Uuid::new_v4().to_string(),
            assets: BTreeMap::new(),
            job_id: None,
            created_at: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
        }
    }
}

/// The folder of pending entries.
pub struct Journal {
    dir: PathBuf,
}

impl Journal {
    pub fn new(home: &Path) -> Journal {
        Journal {
            dir: home.join("pending"),
        }
    }

    fn path(&self, fingerprint: &str) -> PathBuf {
        self.dir.join(format!("{fingerprint}.json"))
    }

    /// The entry for a fingerprint, if one is pending. An unreadable entry is an error, never
    /// "not found": guessing would risk a second charge.
    pub fn load(&self, fingerprint: &str) -> anyhow::Result<Option<Entry>> {
        let path = self.path(fingerprint);
        let text = match std::fs::read(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        let entry = serde_json::from_slice(&text).with_context(|| {
            format!(
                "{} is damaged; delete it (or pass --new) to start over",
                path.display()
            )
        })?;
        Ok(Some(entry))
    }

    /// Writes an entry durably (temporary file, fsync, rename), readable by the owner only.
    pub fn save(&self, entry: &Entry) -> anyhow::Result<()> {
        let path = self.path(&entry.fingerprint);
        let bytes = serde_json::to_vec_pretty(entry).context("encoding the journal entry")?;
        write_private(&path, &bytes)
    }

    /// Forgets an entry (absent is fine).
    pub fn remove(&self, fingerprint: &str) -> anyhow::Result<()> {
        let path = self.path(fingerprint);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(e).with_context(|| format!("removing {}", path.display()))
            }
            _ => Ok(()),
        }
    }
}

/// Writes a file atomically with mode 0600 (its folder is created 0700).
pub fn write_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = path
        .parent()
        .with_context(|| format!("{} has no parent folder", path.display()))?;
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(dir)
        .with_context(|| format!("creating {}", dir.display()))?;
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options
        .open(&tmp)
        .with_context(|| format!("creating {}", tmp.display()))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("saving {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_home(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "atelier-cli-journal-{name}-{}",
            uuid::Uuid::new_v4()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn fp(photo: &[u8], style: &str, mask: Option<&[u8]>) -> String {
        Fingerprint::new("edit")
            .part("api", b"http://127.0.0.1:8787")
            .part("user", b"alice")
            .part("photo", photo)
            .optional("mask", mask)
            .part("style", style.as_bytes())
            .finish()
    }

    #[test]
    fn the_same_command_has_the_same_fingerprint_and_any_change_another() {
        let base = fp(b"photo", "embroidery", None);
        assert_eq!(base, fp(b"photo", "embroidery", None), "deterministic");
        assert_eq!(base.len(), 64);
        for (other, why) in [
            (fp(b"photo2", "embroidery", None), "other photo bytes"),
            (fp(b"photo", "origami", None), "other option"),
            (
                fp(b"photo", "embroidery", Some(b"")),
                "an empty mask is not no mask",
            ),
            (fp(b"photo", "embroidery", Some(b"m")), "a mask"),
        ] {
            assert_ne!(base, other, "{why}");
        }
        let split_a = Fingerprint::new("edit").part("a", b"bc").finish();
        let split_b = Fingerprint::new("edit").part("ab", b"c").finish();
        assert_ne!(split_a, split_b, "parts are length-prefixed");
        assert_ne!(
            Fingerprint::new("edit").finish(),
            Fingerprint::new("repair").finish()
        );
    }

    #[test]
    fn an_entry_survives_save_and_load_and_is_gone_after_remove() {
        let home = temp_home("roundtrip");
        let journal = Journal::new(&home);
        let mut entry = Entry::new("abc", "edit photo.png --style embroidery --target pet");
        entry.assets.insert("original".into(), "ast_X".into());
        assert_eq!(
            journal.load("abc").ok().flatten(),
            None,
            "nothing pending yet"
        );

        journal.save(&entry).unwrap_or_else(|e| panic!("{e:#}"));
        entry.job_id = Some("job_1".into());
        journal.save(&entry).unwrap_or_else(|e| panic!("{e:#}"));

        assert_eq!(journal.load("abc").ok().flatten(), Some(entry.clone()));
        journal.remove("abc").unwrap_or_else(|e| panic!("{e:#}"));
        assert_eq!(journal.load("abc").ok().flatten(), None);
        journal
            .remove("abc")
            .unwrap_or_else(|e| panic!("removing twice is fine: {e:#}"));
        let _ = std::fs::remove_dir_all(home);
    }

    #[test]
    fn new_entries_get_distinct_keys() {
        assert_ne!(
            Entry::new("a", "x").idempotency_key,
            Entry::new("a", "x").idempotency_key
        );
    }

    #[cfg(unix)]
    #[test]
    fn entries_are_private_to_the_user() {
        use std::os::unix::fs::PermissionsExt;
        let home = temp_home("mode");
        let journal = Journal::new(&home);
        journal
            .save(&Entry::new("abc", "x"))
            .unwrap_or_else(|e| panic!("{e:#}"));
        let mode = std::fs::metadata(home.join("pending").join("abc.json"))
            .map(|m| m.permissions().mode() & 0o777)
            .unwrap_or(0);
        assert_eq!(mode, 0o600);
        let _ = std::fs::remove_dir_all(home);
    }

    #[test]
    fn a_damaged_entry_is_an_error_not_a_fresh_start() {
        let home = temp_home("damaged");
        let journal = Journal::new(&home);
        write_private(&home.join("pending").join("abc.json"), b"{not json")
            .unwrap_or_else(|e| panic!("{e:#}"));
        let err = journal.load("abc").err().map(|e| format!("{e:#}"));
        assert!(
            err.as_deref().is_some_and(|e| e.contains("--new")),
            "{err:?}"
        );
        let _ = std::fs::remove_dir_all(home);
    }
}
