// Headless Chromium for the browser tests: Debian's /usr/bin/chromium
// (FUSEGRAPH_CHROMIUM overrides), driven by playwright-core, which
// downloads no browser of its own.

import { chromium } from 'playwright-core';

const executablePath = process.env.FUSEGRAPH_CHROMIUM ?? '/usr/bin/chromium';
// What gives this Chromium a WebGPU adapter without a GPU: SwiftShader (a CPU
// Vulkan implementation shipped with Chromium) as the adapter.
export const WEBGPU_FLAGS = ['--enable-unsafe-webgpu', '--enable-unsafe-swiftshader', '--use-webgpu-adapter=swiftshader'];
// The page must be able to compile shaders and run 256x256 matmuls on a CPU
// emulating a GPU on a busy two-core machine.
const PAGE_TIMEOUT_MS = 120_000;

/**
 * Loads `url` in a fresh browser started with `args` and waits for the page
 * to set `window.fusegraphResult`; resolves to it plus the page's console log.
 */
export async function runPage(url, args) {
  // --no-sandbox: the tests run as root (CI), where Chromium's sandbox refuses to start.
  const browser = await chromium.launch({ executablePath, headless: true, args: ['--no-sandbox', ...args] });
  try {
    const page = await browser.newPage();
    const logs = [];
    page.on('console', (m) => logs.push(`${m.type()}: ${m.text()}`));
    page.on('pageerror', (e) => logs.push(`pageerror: ${e.message}`));
    await page.goto(url);
    try {
      await page.waitForFunction(() => window.fusegraphResult !== undefined, null, { timeout: PAGE_TIMEOUT_MS });
    } catch (e) {
      throw new Error(`${url}: no result within ${PAGE_TIMEOUT_MS} ms; page log:\n${logs.join('\n')}`, { cause: e });
    }
    const result = await page.evaluate(() => window.fusegraphResult);
    return { ...result, logs };
  } finally {
    await browser.close();
  }
}
