#!/usr/bin/env node
// What a web page can do to a local Neo4j's HTTP API, seen from headless Chromium: the attack of a page the
// user happens to open while `harness-g neo4j` runs.
//
//   node cross_origin.mjs NEO4J_HTTP_URL [--timeout-s S] [--chromium PATH]
//
//   NEO4J_HTTP_URL  e.g. http://127.0.0.1:7474  (harness-g's LocalNeo4j: .http_uri)
//   NEO4J_USER, NEO4J_PASSWORD (environment): the real credentials, for the "with the password" attempts
//
// It serves a blank page from its own HTTP server on 127.0.0.1 (another port: another origin), opens it, and
// from that page's script POSTs to NEO4J_HTTP_URL/db/neo4j/tx/commit a write (CREATE (:CorsProbe)) and a read
// (RETURN 1):
//   foreign_json_no_auth     application/json, no credentials (needs a CORS preflight)
//   foreign_json_password    application/json with the right Basic credentials (needs a preflight)
//   foreign_simple_no_auth   text/plain, no credentials (a "simple" request: sent without a preflight)
// then opens NEO4J_HTTP_URL/browser/ (Neo4j Browser's own origin) and makes the password request from there:
//   same_origin_password     must succeed: proves the requests themselves are right
// Each result is {"status": N, "body": "..."} when the page could read the response, or
// {"blocked": true, "error": "..."} when the browser refused to hand it over (CORS).
// Prints ONE JSON line {"ok", "foreign_origin", "target_origin", "results": {...}, "error"}; exit 0 when every
// attempt ran (whatever it returned), 1 otherwise. The browser is always closed.

import { createServer } from 'node:http';
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import puppeteer from 'puppeteer-core';

const report = { ok: false, foreign_origin: null, target_origin: null, results: {}, error: null };

function parseArgs(argv) {
  const opt = { timeoutS: 60, chromium: process.env.CHROMIUM || null, target: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--timeout-s') opt.timeoutS = Number(argv[++i]);
    else if (a === '--chromium') opt.chromium = argv[++i];
    else if (!opt.target && !a.startsWith('--')) opt.target = a.replace(/\/+$/, '');
    else throw new Error(`usage: cross_origin.mjs NEO4J_HTTP_URL [--timeout-s S] [--chromium PATH] (bad argument ${a})`);
  }
  if (!opt.target || !(opt.timeoutS > 0)) throw new Error('usage: cross_origin.mjs NEO4J_HTTP_URL [--timeout-s S] [--chromium PATH]');
  return opt;
}

function findChromium(explicit) {
  if (explicit) return existsSync(explicit) ? explicit : null;
  for (const name of ['chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable']) {
    for (const dir of (process.env.PATH || '').split(delimiter)) {
      if (dir && existsSync(join(dir, name))) return join(dir, name);
    }
  }
  return null;
}

// Runs inside the page: one POST to the transaction endpoint, as a page's script would send it.
async function attempt([url, contentType, authorization]) {
  const headers = { 'Content-Type': contentType };
  if (authorization) headers.Authorization = authorization;
  const body = JSON.stringify({ statements: [{ statement: 'CREATE (:CorsProbe) RETURN 1 AS one' }] });
  try {
    const response = await fetch(url, { method: 'POST', headers, body });
    return { status: response.status, body: (await response.text()).slice(0, 300) };
  } catch (e) {
    return { blocked: true, error: String(e && e.message ? e.message : e).slice(0, 200) };
  }
}

let browser = null;
let server = null;
let code = 1;
let opt = null;
try {
  opt = parseArgs(process.argv.slice(2));
  const watchdog = setTimeout(() => {
    report.error = `timed out after ${opt.timeoutS} s`;
    process.stdout.write(JSON.stringify(report) + '\n');
    try { browser?.process()?.kill('SIGKILL'); } catch { /* already gone */ }
    process.exit(1);
  }, opt.timeoutS * 1000);
  watchdog.unref();

  server = createServer((req, res) => { res.writeHead(200, { 'Content-Type': 'text/html' }); res.end('<!doctype html><title>some page</title>'); });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const foreign = `http://127.0.0.1:${server.address().port}/`;
  report.foreign_origin = new URL(foreign).origin;
  report.target_origin = new URL(opt.target).origin;

  const executablePath = findChromium(opt.chromium);
  if (!executablePath) throw new Error('no Chromium found (set CHROMIUM or install it: bash tools/browser-check/setup.sh)');
  browser = await puppeteer.launch({
    executablePath, headless: true,
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu', '--no-first-run', '--no-default-browser-check'],
  });
  const page = await browser.newPage();
  const endpoint = `${opt.target}/db/neo4j/tx/commit`;
  const basic = 'Basic ' + Buffer.from(`${process.env.NEO4J_USER || 'neo4j'}:${process.env.NEO4J_PASSWORD || ''}`).toString('base64');

  await page.goto(foreign, { waitUntil: 'load', timeout: opt.timeoutS * 500 });
  report.results.foreign_json_no_auth = await page.evaluate(attempt, [endpoint, 'application/json', null]);
  report.results.foreign_json_password = await page.evaluate(attempt, [endpoint, 'application/json', basic]);
  report.results.foreign_simple_no_auth = await page.evaluate(attempt, [endpoint, 'text/plain', null]);

  await page.goto(`${opt.target}/browser/`, { waitUntil: 'domcontentloaded', timeout: opt.timeoutS * 500 });
  report.results.same_origin_password = await page.evaluate(attempt, [endpoint, 'application/json', basic]);
  report.ok = true;
  code = 0;
} catch (e) {
  report.error = String(e && e.message ? e.message : e).split('\n')[0].slice(0, 500);
} finally {
  try { if (browser) await browser.close(); } catch { /* closing anyway */ }
  try { browser?.process()?.kill('SIGKILL'); } catch { /* already gone */ }
  try { server?.close(); } catch { /* closing anyway */ }
}
process.stdout.write(JSON.stringify(report) + '\n');
process.exit(code);
