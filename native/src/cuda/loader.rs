//! Finding the CUDA libraries at run time. cudarc opens them by name
//! (`libcuda.so`, `libnvrtc.so.13`, `libcublasLt.so.13`, ...) through the
//! dynamic loader; when the loader's search path does not reach a toolkit,
//! the library is loaded here first from the usual install folders
//! (`$CUDA_HOME`, `$CUDA_PATH`, `/usr/local/cuda`), so the later open by
//! name finds it already in the process. Missing libraries become
//! `DeviceUnavailable` errors instead of cudarc's panic.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Toolkit roots to look in, in order.
fn roots() -> Vec<PathBuf> {
    let mut r: Vec<PathBuf> = ["CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"]
        .iter()
        .filter_map(|v| std::env::var_os(v).map(PathBuf::from))
        .collect();
    r.push(PathBuf::from("/usr/local/cuda"));
    r
}

/// Library folders under the toolkit roots.
pub(crate) fn lib_dirs() -> Vec<PathBuf> {
    roots()
        .into_iter()
        .flat_map(|r| {
            [
                r.join("lib64"),
                r.join("lib"),
                r.join("targets/x86_64-linux/lib"),
            ]
        })
        .filter(|d| d.is_dir())
        .collect()
}

/// Header folders NVRTC may need for `cuda_fp16.h` / `cuda_bf16.h`.
pub(crate) fn include_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = roots()
        .into_iter()
        .flat_map(|r| [r.join("include"), r.join("targets/x86_64-linux/include")])
        .collect();
    if let Some(extra) = std::env::var_os("FUSEGRAPH_CUDA_INCLUDE") {
        dirs.insert(0, PathBuf::from(extra));
    }
    dirs.into_iter()
        .filter(|d| d.join("cuda_fp16.h").is_file())
        .collect()
}

/// Loads the first file in `dirs` whose name starts with `stem` (e.g.
/// `libnvrtc.so`) and keeps it loaded for the life of the process.
fn preload(stem: &str, dirs: &[PathBuf]) -> bool {
    for d in dirs {
        let Ok(entries) = std::fs::read_dir(d) else {
            continue;
        };
        let mut names: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| file_name_starts(p, stem))
            .collect();
        // Prefer the versioned soname (libnvrtc.so.13) over builtins or aliases.
        names.sort();
        for p in names.iter().rev() {
            // SAFETY: loading a CUDA library runs its initialisers, which is
            // what cudarc would do when it opens the same library by name.
            if let Ok(lib) = unsafe { libloading::Library::new(p) } {
                std::mem::forget(lib);
                return true;
            }
        }
    }
    false
}

fn file_name_starts(p: &Path, stem: &str) -> bool {
    p.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with(stem) && !n.contains("builtins") && !n.contains("alt"))
}

/// Whether the CUDA driver library can be opened.
pub(crate) fn driver_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: only tries to open the library.
    *PRESENT.get_or_init(|| unsafe { cudarc::driver::sys::is_culib_present() })
}

/// Whether NVRTC can be opened (preloading it from a toolkit folder if needed).
pub(crate) fn nvrtc_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    *PRESENT.get_or_init(|| {
        // SAFETY: only tries to open the library.
        let found = || unsafe { cudarc::nvrtc::sys::is_culib_present() };
        found() || (preload("libnvrtc.so", &lib_dirs()) && found())
    })
}

/// Whether cuBLASLt can be opened (preloading it from a toolkit folder if needed).
pub(crate) fn cublaslt_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    *PRESENT.get_or_init(|| {
        // SAFETY: only tries to open the library.
        let found = || unsafe { cudarc::cublaslt::sys::is_culib_present() };
        found() || (preload("libcublasLt.so", &lib_dirs()) && found())
    })
}

/// Folders that may hold cuDNN besides the toolkit's: `$CUDNN_PATH`
/// (`$CUDNN_HOME`) and its `lib`/`lib64`, as cuDNN's own packages set it.
fn cudnn_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = ["CUDNN_PATH", "CUDNN_HOME"]
        .iter()
        .filter_map(|v| std::env::var_os(v).map(PathBuf::from))
        .flat_map(|r| [r.join("lib"), r.join("lib64"), r])
        .filter(|d| d.is_dir())
        .collect();
    dirs.extend(lib_dirs());
    dirs
}

/// Whether cuDNN convolutions are on and cuDNN can be opened. They are on
/// wherever cuDNN is installed (a ResNet-18 bf16 step ran 2.8x faster than
/// with im2col + matmul on an H100); `FUSEGRAPH_CUDNN=0` turns them off,
/// to compare with im2col + matmul, the path used without cuDNN. cuDNN 9
/// opens its sub-libraries by name when first used, so when it is found in
/// a folder the loader does not search, those are loaded from that folder
/// first (their dependencies before them).
pub(crate) fn cudnn_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    *PRESENT.get_or_init(|| {
        if std::env::var("FUSEGRAPH_CUDNN").is_ok_and(|v| v == "0") {
            return false;
        }
        // SAFETY: only tries to open the library.
        let found = || unsafe { cudarc::cudnn::sys::is_culib_present() };
        if found() {
            return true;
        }
        let dirs = cudnn_dirs();
        for stem in [
            "libcudnn_graph.so",
            "libcudnn_engines_precompiled.so",
            "libcudnn_engines_runtime_compiled.so",
            "libcudnn_heuristic.so",
            "libcudnn_ops.so",
            "libcudnn_cnn.so",
            "libcudnn_adv.so",
        ] {
            preload(stem, &dirs);
        }
        preload("libcudnn.so", &dirs) && found()
    })
}

/// Whether cuSOLVER can be opened (preloading it from a toolkit folder if needed).
pub(crate) fn cusolver_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    *PRESENT.get_or_init(|| {
        // SAFETY: only tries to open the library.
        let found = || unsafe { cudarc::cusolver::sys::is_culib_present() };
        found() || (preload("libcusolver.so", &lib_dirs()) && found())
    })
}
