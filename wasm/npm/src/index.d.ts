/**
 * fusegraph: lazy tensor ops that fuse into few kernels. Runs on WebGPU when
 * `navigator.gpu` gives an adapter and on a SIMD128 wasm CPU path otherwise,
 * in browsers, Node 20+, Deno and workerd.
 *
 * ```ts
 * import { init } from 'fusegraph';
 * const fg = await init();                       // 'auto': WebGPU if available, else CPU
 * const a = fg.tensor(new Float32Array([1, -2, 3, -4]), [2, 2]);
 * const y = await a.matmul(a.t()).add(1).relu().toArray(); // Float32Array
 * ```
 * @packageDocumentation
 */

/** Element types. f16 and bf16 travel as their bits in a `Uint16Array`; bool as 0/1 in a `Uint8Array`. */
export type DType = 'f32' | 'f64' | 'f16' | 'bf16' | 'i32' | 'u8' | 'bool';

/** The typed array a dtype reads out as. */
export type ArrayOf<D extends DType> = D extends 'f32'
  ? Float32Array
  : D extends 'f64'
    ? Float64Array
    : D extends 'i32'
      ? Int32Array
      : D extends 'f16' | 'bf16'
        ? Uint16Array
        : Uint8Array;

/** Data accepted by {@link Fusegraph.tensor}. */
export type TensorData = Float32Array | Float64Array | Int32Array | Uint8Array | Uint16Array | number[];

/** Stable error codes (the `code` of a {@link FusegraphError}). */
export type ErrorCode =
  | 'FG_SHAPE_MISMATCH'
  | 'FG_BAD_SIZE'
  | 'FG_BAD_AXIS'
  | 'FG_OUT_OF_RANGE'
  | 'FG_BAD_DTYPE'
  | 'FG_NOT_SCALAR'
  | 'FG_INVALID_ARGUMENT'
  | 'FG_DEVICE_MISMATCH'
  | 'FG_DEVICE_UNAVAILABLE'
  | 'FG_OUT_OF_MEMORY'
  | 'FG_DEVICE_LOST'
  | 'FG_BACKEND'
  | 'FG_NOT_POSITIVE_DEFINITE'
  | 'FG_NO_CONVERGENCE'
  | 'FG_IMAGE_DECODE'
  | 'FG_IMAGE_TOO_LARGE'
  | 'FG_IMAGE_ENCODE'
  | 'FG_NOT_IN_BUILD'
  | 'FG_DISPOSED'
  | 'FG_PANIC'
  | 'FG_ERROR';

/**
 * Every failure of fusegraph: `code` is stable and machine-readable,
 * `message` names the op and the shapes or dtypes involved.
 * `FG_PANIC` means an internal bug trapped the wasm instance; reload it.
 */
export class FusegraphError extends Error {
  readonly name: 'FusegraphError';
  readonly code: ErrorCode;
}

export interface InitOptions {
  /**
   * `'auto'` (default): WebGPU when `navigator.gpu` gives an adapter, else the
   * CPU path (and `fallback` says why).
   * `'webgpu'`: WebGPU or a `FG_DEVICE_UNAVAILABLE` error, never a silent fallback.
   * `'cpu'`: the CPU path (SIMD128, or relaxed SIMD: see `simd`).
   *
   * The package ships two builds: the CPU-only .wasm and a larger one with
   * the WebGPU backend as well. The first `init()` of a realm loads the
   * WebGPU build when it finds an adapter (and the backend is not `'cpu'`),
   * else the CPU build; after the CPU build, `'webgpu'` throws `FG_DEVICE_UNAVAILABLE`.
   */
  backend?: 'auto' | 'cpu' | 'webgpu';
  /** Where the CPU build's .wasm comes from, overriding the entry point's default: a URL, bytes, a Response or a compiled module. */
  wasm?: WasmSource;
  /** Where the WebGPU build's .wasm comes from (same forms as `wasm`). */
  wasmWebGpu?: WasmSource;
  /**
   * Loads an image build: the same choice of CPU or CPU + WebGPU build, each
   * with the JPEG/PNG/WebP codecs and `fg.image` as well (larger .wasm
   * files, kept apart so the core-ops builds stay small). The
   * `fusegraph/image` entry points set it. Default false; in the core builds
   * `fg.image.*` throws `FG_NOT_IN_BUILD`, as does `image: true` once a
   * core build is loaded.
   */
  image?: boolean;
  /** Where the CPU image build's .wasm comes from (same forms as `wasm`). */
  wasmImage?: WasmSource;
  /** Where the CPU + WebGPU image build's .wasm comes from (same forms as `wasm`). */
  wasmImageWebGpu?: WasmSource;
  /**
   * Which CPU-only build the first `init()` of a realm loads.
   * `'auto'` (default): the relaxed-SIMD build (the CPU path compiled with
   * relaxed SIMD as well: matmul on `f32x4.relaxed_madd`, an FMA where the
   * hardware has one) when the runtime validates a relaxed-SIMD module, else
   * the SIMD128 build (a relaxed build that fails to load falls back too;
   * so does a `wasm` given without a `wasmRelaxed`).
   * `'relaxed'`: the relaxed-SIMD build or an error, never a silent fallback:
   * `FG_DEVICE_UNAVAILABLE` where the runtime lacks relaxed SIMD; only the
   * CPU-only build has it, so `backend: 'auto'` then stays on the CPU and
   * `backend: 'webgpu'` or `image: true` with it is `FG_INVALID_ARGUMENT`.
   * `'simd128'`: the SIMD128 build.
   *
   * Relaxed madd may be fused or not depending on the hardware, so matmul
   * results may differ by one rounding between machines. The WebGPU and
   * image builds, and the workerd entry point, are SIMD128 only.
   * After a build is loaded, a later `init()` whose `'relaxed'` or
   * `'simd128'` disagrees with it throws `FG_NOT_IN_BUILD`.
   */
  simd?: 'auto' | 'relaxed' | 'simd128';
  /** Where the relaxed-SIMD CPU build's .wasm comes from (same forms as `wasm`). */
  wasmRelaxed?: WasmSource;
}

/** What the wasm loader takes: a URL, bytes, a Response or a compiled module (or a promise of one). */
export type WasmSource = URL | string | BufferSource | Response | WebAssembly.Module | Promise<URL | string | BufferSource | Response | WebAssembly.Module>;

/** See {@link Fusegraph.tidy}. */
export function tidy<T>(fn: () => T): T;

/** Loads the wasm module (once per realm) and picks the backend new tensors use. */
export function init(options?: InitOptions): Promise<Fusegraph>;
export default init;

export interface CreateOptions {
  /** Element type (default: the typed array's own, or f32 for number arrays; Uint16Array defaults to f16). */
  dtype?: DType;
}

/** What {@link init} resolves to: the backend in use and the tensor factories. */
export interface Fusegraph {
  /** The backend new tensors are created on. */
  readonly backend: 'cpu' | 'webgpu';
  /** With `backend: 'auto'`, why WebGPU was not used; `null` otherwise. */
  readonly fallback: string | null;
  /** The WebGPU adapter and what it granted, in words (`null` on the CPU). */
  readonly adapter: string | null;
  /** The loaded build's CPU instruction set: `'relaxed'` (relaxed SIMD) or `'simd128'`. */
  readonly simd: 'relaxed' | 'simd128';
  /**
   * A tensor from row-major data (copied once into wasm memory; the array can be reused).
   * `shape` defaults to `[data.length]`. A `dtype` other than the array's own converts.
   */
  tensor(data: TensorData, shape?: number[], options?: CreateOptions): Tensor;
  zeros(shape: number[], options?: CreateOptions): Tensor;
  ones(shape: number[], options?: CreateOptions): Tensor;
  full(shape: number[], value: number, options?: CreateOptions): Tensor;
  /** `start, start+step, ...` below `end`, as NumPy's `arange`. */
  arange(start: number, end: number, step?: number, options?: CreateOptions): Tensor;
  /** Seeded uniform values in [0, 1) (computed lazily, on the device). */
  rand(shape: number[], options?: CreateOptions & { seed?: number }): Tensor;
  /** Seeded standard-normal values. */
  randn(shape: number[], options?: CreateOptions & { seed?: number }): Tensor;
  /** `cond ? a : b` elementwise, with broadcasting. */
  where(cond: Tensor, a: Tensor, b: Tensor): Tensor;
  /** Joins tensors along `axis`. */
  concat(tensors: Tensor[], axis?: number): Tensor;
  /**
   * Runs `fn` and disposes every tensor created during it except those it
   * returns (a Tensor, or an array or plain object of them). Use it around
   * chains: intermediates otherwise wait for garbage collection, which does
   * not see the wasm memory they hold.
   */
  tidy<T>(fn: () => T): T;
  /** Tensor handles not yet freed (by `dispose()` or garbage collection). */
  liveTensors(): number;
  /**
   * Bytes of the wasm instance's linear memory. It grows to the largest
   * working set seen and never shrinks (freed memory is reused), so a figure
   * that keeps rising over repeated work points at a leak.
   */
  wasmMemoryBytes(): number;
  /** Image ops on u8 tensors `[height, width, channels]`. */
  readonly image: ImageApi;
}

/** Image file formats read and written. WebP is written lossless (the encoder has no lossy mode). */
export type ImageFormat = 'jpeg' | 'png' | 'webp';

/** Resize filters. Downscales stretch the filter by the ratio (antialiased). */
export type ResizeFilter = 'lanczos3' | 'bilinear' | 'nearest';

/** Header facts, read without decoding pixels. */
export interface ImageInfo {
  width: number;
  height: number;
  format: ImageFormat;
}

/** Decode limits, checked on the header before any pixel buffer exists. */
export interface DecodeLimits {
  /** Most pixels (width × height); default 25,000,000. Over it: `FG_IMAGE_TOO_LARGE`. */
  maxPixels?: number;
  /** Most pixels a side; default 8192. Over it: `FG_IMAGE_TOO_LARGE`. */
  maxSide?: number;
}

export interface TransformOptions extends DecodeLimits {
  /** Output width; the height follows the aspect ratio when not given. */
  width?: number;
  height?: number;
  /** Default 'lanczos3'. */
  filter?: ResizeFilter;
  /** Output format; the input's when not given. */
  format?: ImageFormat;
  /** JPEG quality 1..100, default 80. */
  quality?: number;
  /** Gaussian blur sigma in pixels (0 = none). */
  blur?: number;
  /** Unsharp-mask amount 0..20 (0 = none), after the resize. */
  sharpen?: number;
  /** Sigma of the unsharp mask's blur; default 1. */
  sharpenSigma?: number;
}

export interface TransformResult {
  bytes: Uint8Array;
  width: number;
  height: number;
  format: ImageFormat;
  /** Milliseconds per stage. */
  timings: { decode: number; process: number; encode: number };
}

/**
 * `fg.image`: images are u8 tensors `[height, width, channels]` (1 grey,
 * 3 RGB, 4 RGBA). Ops return new lazy image tensors; colour ops fuse with
 * the final clamp and cast into one kernel. Corrupt or unsupported data
 * throws `FG_IMAGE_DECODE`, images over the limits `FG_IMAGE_TOO_LARGE`,
 * bad options `FG_INVALID_ARGUMENT`.
 */
export interface ImageApi {
  probe(bytes: Uint8Array | ArrayBuffer): ImageInfo;
  decode(bytes: Uint8Array | ArrayBuffer, limits?: DecodeLimits): Tensor;
  /** JPEG drops alpha; `quality` applies to JPEG only. */
  encode(img: Tensor, options?: { format?: ImageFormat; quality?: number }): Uint8Array;
  /** Give width, height or both (a missing side keeps the aspect ratio). */
  resize(img: Tensor, options: { width?: number; height?: number; filter?: ResizeFilter }): Tensor;
  /** Gaussian blur, sigma in pixels (0..100); edges replicate. */
  blur(img: Tensor, sigma: number): Tensor;
  /** Unsharp mask `x + amount * (x - blur(x, sigma))`. */
  sharpen(img: Tensor, amount: number, sigma?: number): Tensor;
  crop(img: Tensor, x: number, y: number, w: number, h: number): Tensor;
  /** 'h' mirrors left-right, 'v' top-bottom. */
  flip(img: Tensor, axis: 'h' | 'v'): Tensor;
  /** `k` quarter turns clockwise (negative: counter-clockwise). */
  rotate90(img: Tensor, k?: number): Tensor;
  /** Factors where 1 changes nothing: saturation about the luma, brightness, contrast about 128, then `255 (x/255)^(1/gamma)`. */
  adjust(img: Tensor, options: { brightness?: number; contrast?: number; saturation?: number; gamma?: number }): Tensor;
  /** Rec. 601 luma: `[H, W, 1]` from RGB, `[H, W, 2]` (luma, alpha) from RGBA. */
  grayscale(img: Tensor): Tensor;
  /** Row-major 3×3 (RGB/RGBA; alpha passes through) or 1×1 (grey) matrix and one offset per row, in 0..255 units. */
  colourMatrix(img: Tensor, matrix: ArrayLike<number>, offset?: ArrayLike<number>): Tensor;
  /** decode → resize → blur → sharpen → encode in one call. */
  transform(bytes: Uint8Array | ArrayBuffer, options: TransformOptions): TransformResult;
}

/** A number operand takes the tensor's dtype. */
type Operand = Tensor | number;

/**
 * A lazy tensor: ops and views return new tensors without computing;
 * {@link Tensor.toArray} realizes the graph (elementwise chains, matmul
 * epilogues and reductions fused) and reads the values.
 * Free memory early with {@link Tensor.dispose}; otherwise a
 * FinalizationRegistry frees it after garbage collection.
 */
export class Tensor {
  private constructor();
  readonly shape: number[];
  readonly dtype: DType;
  /** Number of elements. */
  readonly size: number;
  readonly ndim: number;
  /** `'cpu'` or `'wgpu'`. */
  readonly device: string;
  readonly disposed: boolean;
  isContiguous(): boolean;
  /** Frees this handle now; later use throws `FG_DISPOSED`. Idempotent. */
  dispose(): void;
  [Symbol.dispose](): void;

  // Elementwise, NumPy broadcasting.
  add(other: Operand): Tensor;
  sub(other: Operand): Tensor;
  mul(other: Operand): Tensor;
  /** Integer dtypes truncate; division by 0 gives 0 for them. */
  div(other: Operand): Tensor;
  pow(other: Operand): Tensor;
  /** NaN propagates. */
  maximum(other: Operand): Tensor;
  minimum(other: Operand): Tensor;
  /** Comparisons and logical ops give bool. */
  eq(other: Operand): Tensor;
  ne(other: Operand): Tensor;
  lt(other: Operand): Tensor;
  le(other: Operand): Tensor;
  gt(other: Operand): Tensor;
  ge(other: Operand): Tensor;
  logicalAnd(other: Operand): Tensor;
  logicalOr(other: Operand): Tensor;
  neg(): Tensor;
  abs(): Tensor;
  exp(): Tensor;
  log(): Tensor;
  sqrt(): Tensor;
  rsqrt(): Tensor;
  sin(): Tensor;
  cos(): Tensor;
  tanh(): Tensor;
  sigmoid(): Tensor;
  relu(): Tensor;
  /** GELU with the exact erf. */
  gelu(): Tensor;
  /** GELU with the tanh approximation. */
  geluTanh(): Tensor;
  silu(): Tensor;
  logicalNot(): Tensor;
  clamp(lo: number, hi: number): Tensor;
  cast(dtype: DType): Tensor;

  /** Matrix product with broadcast batch dims (a transposed view goes in without a copy). */
  matmul(other: Tensor): Tensor;

  // Reductions: `axes` a number or list (default: all axes).
  sum(axes?: number | number[], keepdim?: boolean): Tensor;
  mean(axes?: number | number[], keepdim?: boolean): Tensor;
  max(axes?: number | number[], keepdim?: boolean): Tensor;
  min(axes?: number | number[], keepdim?: boolean): Tensor;
  /** Variance with `correction` (default 1, as PyTorch). */
  var(axes?: number | number[], options?: { correction?: number; keepdim?: boolean }): Tensor;
  /** Index (i32) of the largest element along `axis` (all elements when omitted). */
  argmax(axis?: number, keepdim?: boolean): Tensor;
  softmax(axis?: number): Tensor;
  logSoftmax(axis?: number): Tensor;
  /** Normalises over the last `normalizedDims` axes, then scales and shifts. */
  layerNorm(normalizedDims?: number, options?: { weight?: Tensor; bias?: Tensor; eps?: number }): Tensor;
  indexSelect(axis: number, index: Tensor): Tensor;
  gather(axis: number, index: Tensor): Tensor;

  // Views: they change only shape, strides and offset, never copy.
  /** One entry may be -1 (inferred). */
  reshape(shape: number[]): Tensor;
  flatten(): Tensor;
  permute(axes: number[]): Tensor;
  transpose(a?: number, b?: number): Tensor;
  /** Swaps the last two axes. */
  t(): Tensor;
  narrow(axis: number, start: number, length: number): Tensor;
  expand(shape: number[]): Tensor;
  broadcastTo(shape: number[]): Tensor;
  squeeze(axis: number): Tensor;
  unsqueeze(axis: number): Tensor;
  /** A bounds-checked strided view of the same storage. */
  asStrided(shape: number[], strides: number[], offset?: number): Tensor;
  /** The same values row-major (a copy only when the layout needs one). */
  contiguous(): Tensor;

  /** Computes the tensor now and keeps the result. */
  realize(): this;
  /**
   * The values, row-major, in a fresh typed array of the dtype (one copy;
   * on WebGPU, after awaiting the GPU's copy to a staging buffer). The
   * tensor may be disposed while the read runs.
   */
  toArray(): Promise<Float32Array | Float64Array | Int32Array | Uint8Array | Uint16Array>;
  /**
   * The values written into `into` (returned): the dtype's typed array
   * class (`Uint8Array` for u8 and bool, `Uint16Array` for f16/bf16 bits)
   * with exactly `size` elements, else `FG_BAD_DTYPE` / `FG_BAD_SIZE`.
   * Reusing one array across calls skips the allocation, which for large
   * results costs more than the copy.
   */
  toArray<A extends Float32Array | Float64Array | Int32Array | Uint8Array | Uint16Array>(into: A): Promise<A>;
  /** `toArray()` without the promise: CPU tensors only (on WebGPU it throws `FG_BACKEND`). */
  toArraySync(): Float32Array | Float64Array | Int32Array | Uint8Array | Uint16Array;
  /** `toArray(into)` without the promise: CPU tensors only. */
  toArraySync<A extends Float32Array | Float64Array | Int32Array | Uint8Array | Uint16Array>(into: A): A;
}
