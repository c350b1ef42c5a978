//! The preload library carried inside this binary, written once to a per-user cache directory.
//!
//! `build.rs` builds `libscalelock_preload.so` and this binary embeds its bytes. The first `run`
//! or `profile` that needs it writes them to `$XDG_CACHE_HOME/scalelock/` (else
//! `~/.cache/scalelock/`), a directory made private (0700), as
//! `libscalelock_preload-HASH.so`, named after a hash of the contents: a different build gets a
//! different file, and the same build finds its copy and checks it byte for byte before use. The
//! file is written under a temporary name and renamed into place, so a reader never sees half
//! of it.

use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The library's bytes.
static LIBRARY: &[u8] = include_bytes!(env!("SCALELOCK_PRELOAD_EMBED"));
/// A hash of [`LIBRARY`], computed when it was built.
const HASH: &str = env!("SCALELOCK_PRELOAD_HASH");

/// The per-user cache directory.
fn cache_dir() -> Result<PathBuf, String> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
                .map(|h| h.join(".cache"))
        })
        .ok_or("neither XDG_CACHE_HOME nor HOME is set: nowhere to put the preload library")?;
    Ok(base.join("scalelock"))
}

/// The path of the embedded library, written there first if need be.
pub fn library() -> Result<PathBuf, String> {
    let dir = cache_dir()?;
    library_in(&dir)
}

fn library_in(dir: &Path) -> Result<PathBuf, String> {
    let fail = |what: &str, e: std::io::Error| format!("{what} {}: {e}", dir.display());
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| fail("cannot create", e))?;
    let meta = std::fs::symlink_metadata(dir).map_err(|e| fail("cannot read", e))?;
    if !meta.is_dir() {
        return Err(format!("{} is not a directory", dir.display()));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| fail("cannot make private", e))?;
    }
    let path = dir.join(format!("libscalelock_preload-{HASH}.so"));
    if std::fs::read(&path).is_ok_and(|b| b == LIBRARY) {
        return Ok(path);
    }
    let tmp = dir.join(format!(
        ".libscalelock_preload-{HASH}.{}.tmp",
        std::process::id()
    ));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o700)
        .open(&tmp)
        .map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    let written = f.write_all(LIBRARY).and_then(|()| f.sync_all());
    drop(f);
    if let Err(e) = written.and_then(|()| std::fs::rename(&tmp, &path)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(format!("cannot write {}: {e}", path.display()));
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_library_is_written_once_and_rewritten_if_damaged() {
        let dir = std::env::temp_dir().join(format!("scalelock-embed-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let p = library_in(&dir).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), LIBRARY);
        assert!(LIBRARY.starts_with(b"\x7fELF"));
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        std::fs::write(&p, b"damaged").unwrap();
        assert_eq!(library_in(&dir).unwrap(), p);
        assert_eq!(std::fs::read(&p).unwrap(), LIBRARY);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
