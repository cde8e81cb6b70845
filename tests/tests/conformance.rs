//! The conformance suite: every test runs on every backend through the
//! `conformance!` macro and compares with the f64 reference path
//! (`reference::evaluate`), with the tolerances of `fusegraph_tests::Tol`.
//!
//! A backend that cannot run on this machine makes each of its tests print
//! `skipped: <backend> not available` and return early, so a missing GPU is
//! visible in the output instead of passing silently.

#![allow(clippy::approx_constant)]

use fusegraph_core::backend::cpu::reference;
use fusegraph_core::{DType, Device, Error, Limits, Result, Tensor};
use fusegraph_tests::*;

macro_rules! conformance {
    ($name:ident, $backend:literal, $device:expr) => {
        mod $name {
            #![allow(unused_imports)]
            use super::*;

            const BACKEND: &str = $backend;

            fn device() -> Option<Device> {
                available(BACKEND, $device)
            }

            /// The backend's device, or return early (the test is skipped).
            macro_rules! dev {
                () => {
                    match device() {
                        Some(d) => d,
                        None => return Ok(()),
                    }
                };
            }

            mod elementwise {
                use super::*;
                include!("conformance/elementwise.rs");
            }
            mod broadcast {
                use super::*;
                include!("conformance/broadcast.rs");
            }
            mod reduce {
                use super::*;
                include!("conformance/reduce.rs");
            }
            mod matmul {
                use super::*;
                include!("conformance/matmul.rs");
            }
            mod nn {
                use super::*;
                include!("conformance/nn.rs");
            }
            mod index {
                use super::*;
                include!("conformance/index.rs");
            }
            mod views {
                use super::*;
                include!("conformance/views.rs");
            }
            mod errors {
                use super::*;
                include!("conformance/errors.rs");
            }
            mod fusion {
                use super::*;
                include!("conformance/fusion.rs");
            }
            mod memory {
                use super::*;
                include!("conformance/memory.rs");
            }
            mod decomp {
                use super::*;
                include!("conformance/decomp.rs");
            }
            mod autograd {
                use super::*;
                include!("conformance/autograd.rs");
            }
            mod optim {
                use super::*;
                include!("conformance/optim.rs");
            }
            mod props {
                use super::*;
                include!("conformance/props.rs");
            }
        }
    };
}

conformance!(cpu, "cpu", Some(Device::Cpu));
#[cfg(feature = "wgpu")]
conformance!(wgpu, "wgpu", fusegraph_tests::wgpu_device());
#[cfg(feature = "cuda")]
conformance!(cuda, "cuda", fusegraph_tests::cuda_device());
conformance!(auto, "auto", fusegraph_tests::auto_device());
