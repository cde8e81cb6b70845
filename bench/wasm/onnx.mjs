// Builds small ONNX models as protobuf bytes in JS (no file, nothing
// downloaded): a graph of named float inputs, a list of nodes, one output.
// Only the ModelProto fields these benchmarks need are encoded.

// Negative ints (e.g. Softmax's axis -1) are encoded as protobuf does: as
// their 64-bit two's complement, ten bytes (a plain shift of a negative
// BigInt never reaches zero).
function varint(n) {
  const out = [];
  let v = BigInt.asUintN(64, BigInt(n));
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v) b |= 0x80;
    out.push(b);
  } while (v);
  return out;
}

const enc = new TextEncoder();
const key = (field, wire) => varint((field << 3) | wire);
const int = (field, n) => [...key(field, 0), ...varint(n)];
const bytes = (field, b) => [...key(field, 2), ...varint(b.length), ...b];
const str = (field, s) => bytes(field, [...enc.encode(s)]);

function valueInfo(name, shape) {
  const dims = shape.flatMap((d) => bytes(1, int(1, d))); // Dimension.dim_value
  const tensorType = [...int(1, 1 /* FLOAT */), ...bytes(2, dims)];
  return [...str(1, name), ...bytes(2, bytes(1, tensorType))];
}

function node({ op, inputs, output, attrs = {} }) {
  const a = Object.entries(attrs).flatMap(([name, i]) => bytes(5, [...str(1, name), ...int(3, i), ...int(20, 2 /* INT */)]));
  return [...inputs.flatMap((i) => str(1, i)), ...str(2, output), ...str(3, `${op}_${output}`), ...str(4, op), ...a];
}

/** A model: `inputs` [{name, shape}], `nodes` [{op, inputs, output, attrs}], `output` {name, shape}. */
export function buildModel({ inputs, nodes, output }) {
  const graph = [
    ...nodes.flatMap((n) => bytes(1, node(n))),
    ...str(2, 'bench'),
    ...inputs.flatMap((i) => bytes(11, valueInfo(i.name, i.shape))),
    ...bytes(12, valueInfo(output.name, output.shape)),
  ];
  const model = [...int(1, 8 /* ir_version */), ...str(2, 'fusegraph-bench'), ...bytes(7, graph), ...bytes(8, [...str(1, ''), ...int(2, 17)])];
  return Uint8Array.from(model);
}
