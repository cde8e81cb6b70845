// Errors: every failure reaches JS as a FusegraphError with a stable `code`.
// Errors from Rust arrive as JS Errors named FusegraphError with `code`
// already set; a wasm trap (a panic, which must not happen) becomes FG_PANIC
// with the message the panic hook recorded.

import { raw } from './wasm.js';

/** An error from fusegraph: `code` is stable (e.g. FG_SHAPE_MISMATCH), `message` names the op. */
export class FusegraphError extends Error {
  constructor(code, message, options) {
    super(message, options);
    this.name = 'FusegraphError';
    this.code = code;
  }
}

let trapped = null; // the message of the panic that poisoned this instance

/** A value for an error message; never throws (BigInt, cycles, symbols). */
export function show(v) {
  if (v === null) return 'null';
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'bigint') return `${v}n`;
  if (Array.isArray(v)) {
    const items = v.slice(0, 8).map((x) => (Array.isArray(x) ? '[...]' : show(x)));
    return `[${items.join(', ')}${v.length > 8 ? ', ...' : ''}]`;
  }
  if (typeof v === 'object') return v.constructor?.name ?? 'object';
  if (typeof v === 'function') return 'function';
  return String(v);
}

export function invalid(message) {
  return new FusegraphError('FG_INVALID_ARGUMENT', message);
}

function translate(e) {
  if (e instanceof FusegraphError) return e;
  if (e instanceof WebAssembly.RuntimeError) {
    let message;
    try {
      message = raw.takePanicMessage();
    } catch {
      message = undefined;
    }
    trapped = message ?? e.message;
    return new FusegraphError('FG_PANIC', `fusegraph trapped: ${trapped}`, { cause: e });
  }
  if (e instanceof Error && typeof e.code === 'string' && e.code.startsWith('FG_')) {
    return new FusegraphError(e.code, e.message, { cause: e });
  }
  // wasm-bindgen's own argument checks (e.g. a wrong class) throw plain Errors.
  if (e instanceof Error) return new FusegraphError('FG_INVALID_ARGUMENT', e.message, { cause: e });
  return new FusegraphError('FG_INVALID_ARGUMENT', String(e));
}

/**
 * Runs a call into wasm and turns whatever it throws into a FusegraphError.
 * After a trap the instance's state cannot be trusted (a panic aborts
 * mid-operation), so later calls fail with FG_PANIC rather than run on it.
 */
export function guard(call) {
  if (trapped !== null) {
    throw new FusegraphError('FG_PANIC', `fusegraph trapped earlier and must be reloaded: ${trapped}`);
  }
  try {
    return call();
  } catch (e) {
    throw translate(e);
  }
}

/** `guard` for a call that returns a promise (WebGPU read-back, adapter request). */
export async function guardAsync(call) {
  if (trapped !== null) {
    throw new FusegraphError('FG_PANIC', `fusegraph trapped earlier and must be reloaded: ${trapped}`);
  }
  try {
    return await call();
  } catch (e) {
    throw translate(e);
  }
}
