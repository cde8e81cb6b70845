//! Text form of a graph, printed by `FUSEGRAPH_DEBUG=graph`.

use std::fmt::Write;

use crate::graph::dag::{GOp, Graph};

/// One line per live node: `%index = op(inputs) : dtype shape [strides+offset]`.
pub fn graph_to_string(g: &Graph) -> String {
    let mut s = String::new();
    for (i, n) in g.nodes.iter().enumerate() {
        let what = match &n.op {
            GOp::Dead => continue,
            GOp::Input(l) => format!("input#{l}"),
            GOp::Op(op) => format!("{op:?}"),
            GOp::Kernel(k) => format!("kernel<{}>", k.kind()),
        };
        let args: Vec<String> = n.inputs.iter().map(|a| format!("%{a}")).collect();
        let out = if g.is_output(i) { "  <- output" } else { "" };
        let _ = writeln!(
            s,
            "%{i} = {what}({}) : {} {:?} strides {:?} +{}{out}",
            args.join(", "),
            n.dtype,
            n.layout.shape,
            n.layout.strides,
            n.layout.offset
        );
    }
    s
}

/// True when `FUSEGRAPH_DEBUG` lists `what` (comma-separated, e.g. `graph,kernels`).
pub fn debug_enabled(what: &str) -> bool {
    std::env::var("FUSEGRAPH_DEBUG")
        .is_ok_and(|v| v.split(',').any(|p| p.trim() == what || p.trim() == "all"))
}
