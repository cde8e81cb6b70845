// Typed arrays in and out. In: one copy, from the JS array into wasm memory,
// which becomes the tensor's storage. Out: one copy, from the realized
// storage into a fresh typed array, or into the caller's (`into`).
// f16/bf16 travel as Uint16Array bits.

import { FusegraphError, invalid, show } from './errors.js';

const NATURAL = new Map([
  [Float32Array, 'f32'],
  [Float64Array, 'f64'],
  [Int32Array, 'i32'],
  [Uint8Array, 'u8'],
  [Uint16Array, 'f16'],
]);

const DTYPES = ['f32', 'f64', 'i32', 'u8', 'bool', 'f16', 'bf16'];

function badDtype(message) {
  return new FusegraphError('FG_BAD_DTYPE', message);
}

/** Creates a WasmTensor from a typed array or a plain array of numbers. */
export function fromData(WasmTensor, data, shape, dtype) {
  if (dtype !== undefined && !DTYPES.includes(dtype)) {
    throw badDtype(`tensor: unknown dtype ${show(dtype)} (one of ${DTYPES.join(', ')})`);
  }
  if (Array.isArray(data)) {
    const want = dtype ?? 'f32';
    const ctor = { f32: Float32Array, f64: Float64Array, i32: Int32Array, u8: Uint8Array, bool: Uint8Array }[want];
    if (ctor) return fromData(WasmTensor, ctor.from(data, Number), shape, want);
    const f32 = WasmTensor.fromF32(Float32Array.from(data, Number), shape);
    try {
      return f32.cast(want);
    } finally {
      f32.free();
    }
  }
  const natural = data == null ? undefined : NATURAL.get(data.constructor);
  if (natural === undefined) {
    const name = data?.constructor?.name ?? typeof data;
    throw badDtype(`tensor: data must be a Float32Array, Float64Array, Int32Array, Uint8Array, Uint16Array (f16/bf16) or an array of numbers, got ${name}`);
  }
  const want = dtype ?? natural;
  switch (natural) {
    case 'f32':
      return convert(WasmTensor.fromF32(data, shape), want);
    case 'f64':
      return convert(WasmTensor.fromF64(data, shape), want);
    case 'i32':
      return convert(WasmTensor.fromI32(data, shape), want);
    case 'u8':
      return want === 'bool' ? WasmTensor.fromU8(data, shape, true) : convert(WasmTensor.fromU8(data, shape, false), want);
    default:
      if (want !== 'f16' && want !== 'bf16') {
        throw badDtype(`tensor: a Uint16Array holds f16 or bf16 bits; dtype ${want} was asked`);
      }
      return WasmTensor.fromU16(data, shape, want);
  }
}

function convert(t, dtype) {
  if (t.dtype() === dtype) return t;
  try {
    return t.cast(dtype);
  } finally {
    t.free();
  }
}

const EMPTY = { f32: Float32Array, f64: Float64Array, i32: Int32Array, u8: Uint8Array, bool: Uint8Array, f16: Uint16Array, bf16: Uint16Array };

/** Reads a realized WasmTensor into the typed array of its dtype. */
export function readOut(h) {
  // An empty tensor has nothing to compute or copy (and the core's CPU
  // reads of some empty views panic): its typed array is made here.
  if (h.numel() === 0) return new (EMPTY[h.dtype()] ?? Float32Array)(0);
  switch (h.dtype()) {
    case 'f32':
      return h.toF32();
    case 'f64':
      return h.toF64();
    case 'i32':
      return h.toI32();
    case 'u8':
    case 'bool':
      return h.toU8();
    case 'f16':
    case 'bf16':
      return h.toU16();
    default:
      throw invalid(`toArray: unknown dtype ${h.dtype()}`);
  }
}

/**
 * Checks `into` for `toArray(into)` / `toArraySync(into)`: the typed array
 * class `readOut` would return for `h`'s dtype, with exactly `numel`
 * elements.
 */
export function checkInto(h, into, op) {
  const ctor = EMPTY[h.dtype()] ?? Float32Array;
  if (!(into instanceof ctor)) {
    throw badDtype(`${op}: into must be a ${ctor.name} for a ${h.dtype()} tensor, got ${show(into)}`);
  }
  const n = h.numel();
  if (into.length !== n) {
    throw new FusegraphError('FG_BAD_SIZE', `${op}: into has ${into.length} elements, the tensor of shape [${Array.from(h.shape()).join(', ')}] has ${n}`);
  }
}

/**
 * Reads a realized WasmTensor into the caller's typed array (checked by
 * `checkInto`): one copy out of wasm memory and no JS allocation, which
 * for large results is most of the read (a fresh array of 64 MB is fresh
 * pages for the OS to fault in and zero).
 */
export function readInto(h, into, op) {
  checkInto(h, into, op);
  if (into.length > 0) h.readInto(into);
  return into;
}
