// Every limit the edge worker enforces, in one place (SECURITY.md lists them).

/** Decoded images larger than this are refused (413) before decoding. */
export const MAX_PIXELS = 25_000_000;
/** Either side longer than this is refused (413) before decoding. */
export const MAX_SIDE = 8192;
/** Request bodies (POST /api/transform uploads) longer than this are refused (413). */
export const MAX_BODY_BYTES = 8 * 1024 * 1024;
/** Longest request URL accepted (414 past it). */
export const MAX_URL_LENGTH = 2048;
/** Longest If-None-Match header looked at; a longer one is ignored. */
export const MAX_IF_NONE_MATCH = 1024;

/**
 * Output widths the image endpoint produces. A requested width snaps up to
 * the next one (and down to the source width: no upscaling), so the number
 * of cache keys per image is fixed and nobody can fill the cache with
 * w=1, w=2, w=3, ...
 */
export const WIDTHS = [64, 128, 256, 320, 480, 640, 768, 1024, 1280, 1600, 1920];
/** Quality 1..100, snapped to a multiple of this step (80 when absent). */
export const QUALITY_STEP = 5;
export const DEFAULT_QUALITY = 80;
/** Gaussian blur sigma in output pixels: 0..MAX_BLUR, in steps of BLUR_STEP. */
export const MAX_BLUR = 20;
export const BLUR_STEP = 0.5;
/** Unsharp-mask amount: 0..MAX_SHARPEN, in steps of SHARPEN_STEP. */
export const MAX_SHARPEN = 5;
export const SHARPEN_STEP = 0.25;
export const FORMATS = ['jpeg', 'png', 'webp'];

/**
 * Processing-time budget, as work estimated before any decoding: source
 * pixels decoded, plus output pixels times the filter taps that blur and
 * sharpen add. A request over it is refused (413) instead of tying up the
 * isolate. One wasm call cannot be interrupted once started, so the budget is
 * enforced up front; the measured time of every transform is sent back in
 * Server-Timing.
 */
export const MAX_WORK = 400_000_000;

/** The response cache's bounds when the in-memory store is in use. */
export const CACHE_MAX_BYTES = 96 * 1024 * 1024;
export const CACHE_MAX_ENTRIES = 4096;
