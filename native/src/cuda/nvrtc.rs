//! Compiling generated CUDA C with NVRTC straight to a CUBIN for the
//! device's architecture (`sm_90` on an H200: no PTX JIT at load), with an
//! on-disk cache so a second process starts warm.
//!
//! The disk key is an FNV-1a hash of the source text, the architecture and
//! the NVRTC version; files live in `$FUSEGRAPH_CACHE_DIR`, else
//! `$XDG_CACHE_HOME/fusegraph/cuda`, else `~/.cache/fusegraph/cuda`. A file
//! is written under a temporary name and renamed, so concurrent processes
//! never read half a CUBIN; an unreadable or unwritable cache only costs a
//! compile.

use std::ffi::CString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use cudarc::nvrtc::{result, sys};
use fusegraph_core::{Error, Result};

use super::error;
use super::loader;

static COMPILES: AtomicU64 = AtomicU64::new(0);
static DISK_HITS: AtomicU64 = AtomicU64::new(0);

/// NVRTC compiles and disk-cache hits since start (for tests and benchmarks).
pub fn compile_stats() -> (u64, u64) {
    (
        COMPILES.load(Ordering::Relaxed),
        DISK_HITS.load(Ordering::Relaxed),
    )
}

/// The folder of the on-disk CUBIN cache (it may not exist yet).
pub fn cache_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("FUSEGRAPH_CACHE_DIR") {
        return Some(PathBuf::from(d).join("cuda"));
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("fusegraph").join("cuda"))
}

fn fnv(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for &b in *p {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        h ^= 0xff;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// NVRTC's version as `major.minor`.
pub fn nvrtc_version() -> Result<(i32, i32)> {
    static V: OnceLock<(i32, i32)> = OnceLock::new();
    if let Some(v) = V.get() {
        return Ok(*v);
    }
    if !loader::nvrtc_present() {
        return Err(Error::DeviceUnavailable {
            op: "nvrtc",
            device: "cuda".into(),
            why: "NVRTC (libnvrtc.so) was not found; add the CUDA toolkit's lib64 to LD_LIBRARY_PATH or set CUDA_HOME".into(),
        });
    }
    let (mut major, mut minor) = (0, 0);
    // SAFETY: two out-pointers to live locals.
    unsafe { sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .map_err(|e| error::nvrtc("nvrtc", "version", e, ""))?;
    Ok(*V.get_or_init(|| (major, minor)))
}

/// A CUBIN for `source` on `sm_<arch>` (e.g. 90), from the disk cache or NVRTC.
pub fn cubin(name: &str, source: &str, arch: u32) -> Result<Vec<u8>> {
    let (major, minor) = nvrtc_version()?;
    let version = format!("{major}.{minor}");
    let key = fnv(&[
        source.as_bytes(),
        arch.to_string().as_bytes(),
        version.as_bytes(),
    ]);
    let path = cache_dir().map(|d| d.join(format!("{key:016x}-sm_{arch}.cubin")));
    if let Some(p) = &path {
        if let Ok(bytes) = std::fs::read(p) {
            if !bytes.is_empty() {
                DISK_HITS.fetch_add(1, Ordering::Relaxed);
                return Ok(bytes);
            }
        }
    }
    let bin = compile(name, source, arch)?;
    if let Some(p) = &path {
        store(p, &bin);
    }
    Ok(bin)
}

fn store(path: &std::path::Path, bin: &[u8]) {
    let Some(dir) = path.parent() else { return };
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("k"),
        std::process::id()
    ));
    if std::fs::write(&tmp, bin).is_ok() && std::fs::rename(&tmp, path).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// Runs NVRTC on `source`, returning the CUBIN.
fn compile(name: &str, source: &str, arch: u32) -> Result<Vec<u8>> {
    COMPILES.fetch_add(1, Ordering::Relaxed);
    let src = CString::new(source).map_err(|_| Error::Backend {
        op: "nvrtc",
        message: format!("{name}: source contains a NUL byte"),
    })?;
    let cname = CString::new(format!("{name}.cu")).unwrap_or_default();
    let prog = result::create_program(&src, Some(&cname))
        .map_err(|e| error::nvrtc("nvrtc", name, e, ""))?;
    let mut opts = vec![
        format!("--gpu-architecture=sm_{arch}"),
        // No fast-math: results are checked against the f64 reference.
        "--std=c++17".to_string(),
    ];
    for d in loader::include_dirs() {
        opts.push(format!("--include-path={}", d.display()));
    }
    // SAFETY: `prog` is a live program; options are NUL-free strings.
    let compiled = unsafe { result::compile_program(prog, &opts) };
    let out = match compiled {
        Ok(()) => cubin_of(prog).map_err(|e| error::nvrtc("nvrtc", name, e, "")),
        Err(e) => Err(error::nvrtc("nvrtc", name, e, &log_of(prog))),
    };
    // SAFETY: destroyed once, after its last use.
    unsafe {
        let _ = result::destroy_program(prog);
    }
    out
}

fn cubin_of(prog: sys::nvrtcProgram) -> std::result::Result<Vec<u8>, result::NvrtcError> {
    let mut size = 0usize;
    // SAFETY: `prog` compiled successfully; the buffer has the size NVRTC reported.
    unsafe {
        sys::nvrtcGetCUBINSize(prog, &mut size).result()?;
        let mut buf = vec![0u8; size];
        sys::nvrtcGetCUBIN(prog, buf.as_mut_ptr() as *mut std::ffi::c_char).result()?;
        Ok(buf)
    }
}

fn log_of(prog: sys::nvrtcProgram) -> String {
    // SAFETY: `prog` is a live program.
    match unsafe { result::get_program_log(prog) } {
        Ok(chars) => {
            let bytes: Vec<u8> = chars
                .iter()
                .map(|&c| c as u8)
                .take_while(|&b| b != 0)
                .collect();
            String::from_utf8_lossy(&bytes).into_owned()
        }
        Err(_) => String::new(),
    }
}
