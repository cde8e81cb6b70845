// Headless Chromium for the tests: Debian's /usr/bin/chromium (or CHROMIUM),
// driven by playwright-core, so no browser is downloaded.
import { chromium } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';

// What gives this Chromium a WebGPU adapter without a GPU: SwiftShader, a
// CPU implementation of Vulkan shipped with Chromium.
const WEBGPU_FLAGS = ['--enable-unsafe-webgpu', '--enable-unsafe-swiftshader', '--use-webgpu-adapter=swiftshader'];

/** --no-sandbox: the tests run as root (CI), where Chromium's sandbox refuses to start. */
export function launch({ webgpu = false } = {}) {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', ...(webgpu ? WEBGPU_FLAGS : [])] });
}

/**
 * Collects console errors, page errors and failed or >=400 responses of a
 * page. Console warnings are printed, not counted: Chromium itself warns
 * "No available adapters." when WebGPU has no adapter, which is the case
 * the lab handles by falling back.
 */
export function watch(page) {
  const problems = [];
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console error: ${m.text()}`);
    else if (m.type() === 'warning') console.log(`(console warning: ${m.text()})`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`));
  page.on('response', (r) => {
    if (r.status() >= 400) problems.push(`HTTP ${r.status()}: ${r.url()}`);
  });
  return problems;
}
