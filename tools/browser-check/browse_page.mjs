#!/usr/bin/env node
// Open a `harness-g browse` page in headless Chromium, wait until its network is drawn, take a screenshot.
//
//   node browse_page.mjs PAGE_URL OUT_PNG [--width W] [--height H] [--timeout-s S] [--chromium PATH]
//
// The page sets window.harnessBrowse = {ready, nodes, edges, errors} once vis-network has stabilised the layout
// and drawn it (agent/browse_assets/page.js). Every request that is not file: or data: is refused and listed
// (the page must work offline). Prints ONE JSON line:
//   {"ok", "ready", "nodes", "edges", "page_errors", "console_errors", "requests_refused", "legend", "title",
//    "screenshot", "elapsed_s", "error"}
// Exit status 0 when the page was drawn and the screenshot written, 1 otherwise. Bounded by --timeout-s
// (default 90 s); the browser is always closed. Chromium: --chromium, $CHROMIUM, or chromium on PATH.

import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import puppeteer from 'puppeteer-core';

const started = Date.now();
const report = { ok: false, ready: false, nodes: null, edges: null, page_errors: [], console_errors: [],
  requests_refused: [], legend: null, title: null, screenshot: null, elapsed_s: null, error: null };

function emit(code) {
  report.elapsed_s = Math.round((Date.now() - started) / 100) / 10;
  process.stdout.write(JSON.stringify(report) + '\n');
  process.exitCode = code;
}

function parseArgs(argv) {
  const pos = [];
  const opt = { width: 1400, height: 900, timeoutS: 90, chromium: process.env.CHROMIUM || null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--width') opt.width = Number(argv[++i]);
    else if (a === '--height') opt.height = Number(argv[++i]);
    else if (a === '--timeout-s') opt.timeoutS = Number(argv[++i]);
    else if (a === '--chromium') opt.chromium = argv[++i];
    else pos.push(a);
  }
  if (pos.length !== 2) {
    report.error = 'usage: browse_page.mjs PAGE_URL OUT_PNG [--width W] [--height H] [--timeout-s S] [--chromium PATH]';
    emit(2);
    process.exit(2);
  }
  [opt.url, opt.out] = pos;
  return opt;
}

function findChromium(explicit) {
  if (explicit) return existsSync(explicit) ? explicit : null;
  for (const name of ['chromium', 'chromium-browser', 'google-chrome']) {
    for (const dir of (process.env.PATH || '').split(delimiter)) {
      if (dir && existsSync(join(dir, name))) return join(dir, name);
    }
  }
  return null;
}

const opt = parseArgs(process.argv.slice(2));
let browser = null;
const guard = (ms) => new Promise((r) => setTimeout(r, ms).unref());
const watchdog = setTimeout(async () => {
  report.error = report.error || `timed out after ${opt.timeoutS} s`;
  emit(1);
  try { if (browser) await Promise.race([browser.close(), guard(5000)]); } catch { /* closing anyway */ }
  try { browser?.process()?.kill('SIGKILL'); } catch { /* already gone */ }
  process.exit(1);
}, opt.timeoutS * 1000);

async function main() {
  const executablePath = findChromium(opt.chromium);
  if (!executablePath) throw new Error('no Chromium found (set CHROMIUM or install it: bash tools/browser-check/setup.sh)');
  browser = await puppeteer.launch({
    executablePath, headless: true, defaultViewport: { width: opt.width, height: opt.height },
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu', '--no-first-run', '--no-default-browser-check',
      `--window-size=${opt.width},${opt.height}`],
  });
  const page = await browser.newPage();
  page.setDefaultTimeout(opt.timeoutS * 1000);
  page.on('pageerror', (e) => report.page_errors.push(String(e).slice(0, 300)));
  page.on('console', (m) => { if (m.type() === 'error') report.console_errors.push(m.text().slice(0, 300)); });
  await page.setRequestInterception(true);
  page.on('request', (r) => {
    if (/^(file|data|about):/.test(r.url())) r.continue();
    else { report.requests_refused.push(r.url().slice(0, 200)); r.abort(); }
  });
  await page.goto(opt.url, { waitUntil: 'load' });
  await page.waitForFunction(() => window.harnessBrowse && window.harnessBrowse.ready,
    { timeout: Math.max(5000, opt.timeoutS * 1000 - (Date.now() - started) - 10000) });
  const state = await page.evaluate(() => ({ ...window.harnessBrowse,
    legend: document.getElementById('legend')?.innerText || null, title: document.title }));
  Object.assign(report, { ready: state.ready, nodes: state.nodes, edges: state.edges, legend: state.legend,
    title: state.title });
  report.page_errors.push(...state.errors);
  await page.screenshot({ path: opt.out });
  report.screenshot = opt.out;
  report.ok = true;
}

main().then(() => emit(0), (e) => { report.error = String(e && e.message || e).slice(0, 500); emit(1); })
  .finally(async () => {
    try { if (browser) await Promise.race([browser.close(), guard(5000)]); } catch { /* closing anyway */ }
    clearTimeout(watchdog);
  });
