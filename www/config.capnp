# workerd configuration of the edge demo: one Worker (www/dist/worker, built by
# scripts/build.mjs) on 127.0.0.1:8787, reading the photos from images/ and the
# lab page's browser bundle from dist/public/ through read-only disk services.
# It has no network service: the Worker cannot fetch any URL outside them.
using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "main", worker = .demo),
    (name = "images", disk = (path = "images", writable = false, allowDotfiles = false)),
    (name = "assets", disk = (path = "dist/public", writable = false, allowDotfiles = false)),
    # Outbound fetch() of the Worker goes here, and this network allows no address.
    (name = "no-network", network = (allow = [])),
  ],
  sockets = [
    (name = "http", address = "127.0.0.1:8787", http = (), service = "main"),
  ],
);

const demo :Workerd.Worker = (
  compatibilityDate = "2025-09-01",
  modules = [
    (name = "worker.js", esModule = embed "dist/worker/worker.js"),
    (name = "fusegraph_wasm_bg.wasm", wasm = embed "dist/worker/fusegraph_wasm_bg.wasm"),
  ],
  bindings = [
    (name = "IMAGES", service = "images"),
    (name = "ASSETS", service = "assets"),
  ],
  # fetch() to anything but the bindings above fails.
  globalOutbound = "no-network",
);
