//! Output files that are whole or absent: written beside their name, synced, renamed.

use std::io;
use std::path::{Path, PathBuf};

/// A run that failed after its input was accepted — an output that could not be written, a
/// dataflow that broke: `daqnet` exits with status 1 when an error carries it, where usage and
/// input errors give 2.
#[derive(Debug)]
pub struct RunFailed;

impl std::fmt::Display for RunFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "the run failed")
    }
}

/// The temporary name `path` is written under before it is renamed into place:
/// `.NAME.partial` in the same folder (a dot file: no tool mistakes it for the output).
pub fn partial_name(path: &Path) -> PathBuf {
    let name = path.file_name().map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.partial"))
}

/// Writes `path` through `write`, which fills a temporary file beside it, named after it and
/// this process (processes sharing a folder, as the tasks of a sweep on a cluster do, may write
/// the same file at once; the folder is created first); the file is then synced and renamed
/// into place, so a file by that name is always whole and the last rename wins. On failure the
/// temporary file is removed and the error returned.
pub fn write_atomically<E: From<io::Error>>(path: &Path, write: impl FnOnce(&Path) -> Result<(), E>) -> Result<(), E> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let name = path.file_name().map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
    let tmp = path.with_file_name(format!(".{name}.{}.partial", std::process::id()));
    let done = write(&tmp).and_then(|()| {
        std::fs::File::open(&tmp)?.sync_all()?;
        Ok(std::fs::rename(&tmp, path)?)
    });
    if done.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    done
}

/// Writes `bytes` to `path` whole or not at all ([`write_atomically`]).
pub fn write_whole(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomically(path, |tmp| std::fs::write(tmp, bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_write_leaves_neither_the_file_nor_its_partial() {
        let dir = std::env::temp_dir().join(format!("daqnet-output-{}", std::process::id()));
        let path = dir.join("report.json");
        write_whole(&path, b"{}").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"{}");
        let failed: io::Result<()> = write_atomically(&dir.join("other.json"), |tmp| {
            std::fs::write(tmp, b"half")?;
            Err(io::Error::other("disk full"))
        });
        assert!(failed.is_err());
        assert!(!dir.join("other.json").exists() && !partial_name(&dir.join("other.json")).exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
