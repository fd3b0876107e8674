#!/usr/bin/env node
// Drive Neo4j Browser in headless Chromium: open it, connect to a Bolt server (user and password from the
// environment, as a person types them into the connect form), set query parameters (`:param`), run one Cypher
// query, wait for the result frame, take a screenshot.
//
//   node browser_query.mjs BROWSER_URL BOLT_URI QUERY OUT_PNG [--params JSON] [--width W] [--height H]
//                          [--timeout-s S] [--chromium PATH]
//
//   BROWSER_URL  e.g. http://127.0.0.1:7474/browser/  (harness-g's LocalNeo4j: .browser_url)
//   BOLT_URI     e.g. bolt://127.0.0.1:7687
//   NEO4J_USER, NEO4J_PASSWORD (environment, never arguments: a process list shows arguments) sign in with
//                the Browser's "Username / Password" form; without NEO4J_PASSWORD it picks "No authentication"
//   QUERY        Cypher text (may span lines)
//   OUT_PNG      where to write the screenshot
//   --params     JSON object, each entry set with `:param name => <value>` before the query runs
//   --style      a GraSS file, applied with `:style <its text>` before the parameters and the query
//
// Prints ONE JSON line on stdout describing what it saw:
//   {"ok", "connected", "query_ran", "command" (the text the Browser ran, as its frame shows it), "records",
//    "summary" ("Started streaming N records ..."), "graph_status" ("Displaying N nodes, M relationships."),
//    "nodes", "relationships", "view" ("graph" | "table"), "captions" (each drawn node's caption text), "styled"
//    (whether --style was applied), "error", "screenshot", "width", "height", "elapsed_s", "steps", and on failure
//    "frames" (the newest frames' text)}
// The query is typed into the Browser's editor; if the editor altered it (e.g. auto-closed a bracket of an
// unbalanced query) the run fails rather than run a different text.
// Exit status 0 when the query ran and the screenshot was written, 1 otherwise (the JSON says why).
// Everything is bounded by --timeout-s (default 90 s); the browser is always closed.
// Chromium: $CHROMIUM, --chromium, or `chromium` / `chromium-browser` / `google-chrome` on PATH.

import { existsSync, readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import puppeteer from 'puppeteer-core';

const started = Date.now();
const report = {
  ok: false, connected: false, query_ran: false, command: null, records: null, summary: null, graph_status: null,
  nodes: null, relationships: null, view: null, captions: null, styled: false, error: null, screenshot: null,
  width: null, height: null, elapsed_s: null, steps: [],
};

let emitted = false;
function emit(code) {
  if (emitted) return;
  emitted = true;
  report.elapsed_s = Math.round((Date.now() - started) / 100) / 10;
  process.stdout.write(JSON.stringify(report) + '\n');
  process.exitCode = code;
}

function usage(msg) {
  report.error = `usage: browser_query.mjs BROWSER_URL BOLT_URI QUERY OUT_PNG [--params JSON] [--width W] ` +
    `[--height H] [--timeout-s S] [--chromium PATH] (${msg})`;
  emit(2);
  process.exit(2);
}

function parseArgs(argv) {
  const pos = [];
  const opt = { params: {}, width: 1400, height: 900, timeoutS: 90, chromium: process.env.CHROMIUM || null,
    user: process.env.NEO4J_USER || 'neo4j', password: process.env.NEO4J_PASSWORD || null, style: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => { if (i + 1 >= argv.length) usage(`${a} needs a value`); return argv[++i]; };
    if (a === '--params') {
      try { opt.params = JSON.parse(next()); } catch (e) { usage(`--params is not JSON: ${e.message}`); }
      if (opt.params === null || typeof opt.params !== 'object' || Array.isArray(opt.params)) usage('--params must be a JSON object');
    } else if (a === '--width') opt.width = Number(next());
    else if (a === '--height') opt.height = Number(next());
    else if (a === '--timeout-s') opt.timeoutS = Number(next());
    else if (a === '--chromium') opt.chromium = next();
    else if (a === '--style') {
      const file = next();
      try { opt.style = readFileSync(file, 'utf8'); } catch (e) { usage(`--style ${file}: ${e.message}`); }
    } else if (a.startsWith('--')) usage(`unknown option ${a}`);
    else pos.push(a);
  }
  if (pos.length !== 4) usage(`expected 4 positional arguments, got ${pos.length}`);
  [opt.browserUrl, opt.bolt, opt.query, opt.out] = pos;
  for (const k of ['width', 'height', 'timeoutS']) if (!(opt[k] > 0)) usage(`bad --${k}`);
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

// Whitespace-insensitive form of a command (the frame header shows a query's lines joined, with &nbsp;s).
const squash = (text) => text.replace(/\s+/g, ' ').trim();

// A JSON value as a Cypher literal: JSON strings, numbers, booleans, null, lists are valid Cypher;
// objects become maps with backquoted keys.
function cypherLiteral(v) {
  if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
    const key = (k) => (/^[A-Za-z_][A-Za-z0-9_]*$/.test(k) ? k : `\`${k.replace(/`/g, '``')}\``);
    return '({' + Object.entries(v).map(([k, x]) => `${key(k)}: ${cypherLiteral(x)}`).join(', ') + '})';
  }
  if (Array.isArray(v)) return '[' + v.map(cypherLiteral).join(', ') + ']';
  return JSON.stringify(v);
}

const opt = parseArgs(process.argv.slice(2));
// steps share a deadline a few seconds short of the hard limit, which leaves time to report and close
const deadline = started + Math.max(opt.timeoutS * 0.5, opt.timeoutS - 10) * 1000;
const left = (capMs = Infinity) => Math.max(1000, Math.min(capMs, deadline - Date.now()));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// a timer that does not keep the process alive once everything else is done (for Promise.race guards)
const guard = (ms) => new Promise((r) => setTimeout(r, ms).unref());
const step = (s) => report.steps.push(`${((Date.now() - started) / 1000).toFixed(1)}s ${s}`);

let browser = null;
let page = null;
// Hard stop: whatever hangs, the process reports and exits within the deadline (+ a few seconds to close).
const watchdog = setTimeout(async () => {
  report.error = report.error || `timed out after ${opt.timeoutS} s (last step: ${report.steps.at(-1) || 'none'})`;
  emit(1);
  try { if (browser) await Promise.race([browser.close(), guard(5000)]); } catch { /* closing anyway */ }
  try { browser?.process()?.kill('SIGKILL'); } catch { /* already gone */ }
  process.exit(1);
}, opt.timeoutS * 1000);

async function frames(page) {
  // Frames of the Browser's stream, newest first: command text, body text, status bar text.
  return page.$$eval('[data-testid="frame"]', (els) => els.map((el) => ({
    command: (el.querySelector('[data-testid="frameCommand"]')?.innerText || '').trim(),
    text: (el.querySelector('[data-testid="frameContents"]')?.innerText || el.innerText || '').trim(),
    status: (el.querySelector('[data-testid="frameStatusbar"]')?.innerText || '').trim(),
    error: (el.querySelector('[data-testid="cypherFrameErrorMessage"]')?.innerText || '').trim(),
  })));
}

async function fillField(page, testId, value) {
  // replace whatever the form holds (the Browser may prefill the user name)
  const field = await page.$(`[data-testid="${testId}"]`);
  if (!field) throw new Error(`the connect form has no ${testId} field`);
  await field.click({ clickCount: 3 });
  await page.keyboard.press('Backspace');
  await field.type(value);
}

async function waitConnected(page) {
  // The connect form ("Username / Password" preselected by the URL when a password is given, else
  // "No authentication"): fill it in and click Connect, then wait for "Connected to Neo4j".
  let clicked = false;
  while (Date.now() < deadline) {
    const fs = await frames(page);
    if (fs.some((f) => /You are connected to|Connected to Neo4j/.test(f.text))) return true;
    const button = await page.$('[data-testid="connect"]');
    if (button && !clicked) {
      if (opt.password) {
        await fillField(page, 'username', opt.user);
        await fillField(page, 'password', opt.password);
      }
      step(`connect form shown: clicking Connect (${opt.password ? `user ${opt.user} and password` : 'no authentication'})`);
      await button.click();
      clicked = true;
    }
    const failed = fs.find((f) => /ServiceUnavailable|Could not perform discovery|connection refused|unauthorized/i.test(f.text));
    if (failed && clicked) { report.error = failed.text.slice(0, 500); return false; }
    await sleep(250);
  }
  return false;
}

async function dismissConsentBanner(page, waitMs) {
  // "To help make Neo4j Browser better we collect information on product usage..." (shown once connected):
  // close it so it does not cover the result in the screenshot.
  const span = await page.waitForFunction(() => [...document.querySelectorAll('[data-testid="main"] span')]
    .find((el) => el.textContent.startsWith('To help make Neo4j Browser better')), { timeout: left(waitMs), polling: 100 })
    .catch(() => null);
  if (!span) return;
  // the banner is <div><span>To help ...</span><DismissBanner/></div>: click its last child (the close icon)
  const close = await span.evaluateHandle((el) => el.parentElement.lastElementChild);
  await close.click().catch((e) => step(`could not dismiss the usage-data banner: ${e.message}`));
  await page.waitForFunction((el) => !el.isConnected, { timeout: left(2000), polling: 100 }, span).catch(() => {});
  // park the mouse in a corner, so no hover menu or tooltip opens where the banner was
  await page.mouse.move(opt.width - 8, opt.height - 8);
  step('dismissed the usage-data banner');
}

async function runInEditor(page, text, { clears = false } = {}) {
  // Type into the main editor (inserting text, so no autocompletion or bracket auto-closing interferes) and run it.
  const editor = await page.waitForSelector('[data-testid="activeEditor"]', { visible: true, timeout: left(15000) });
  await editor.click();
  await page.keyboard.down('Control'); await page.keyboard.press('KeyA'); await page.keyboard.up('Control');
  await page.keyboard.press('Backspace');
  await page.keyboard.sendCharacter(text);
  const before = (await frames(page)).length;
  await page.click('[data-testid="editor-Run"]');
  // a command adds a frame on top of the stream (`:clear` empties it instead)
  await page.waitForFunction((n, clears) => {
    const count = document.querySelectorAll('[data-testid="frame"]').length;
    return clears ? count === 0 : count > n;
  }, { timeout: left(15000), polling: 100 }, before, clears);
}

async function main() {
  const executablePath = findChromium(opt.chromium);
  if (!executablePath) throw new Error('no Chromium found (set CHROMIUM or install it: bash tools/browser-check/setup.sh)');
  step(`launch ${executablePath}`);
  browser = await puppeteer.launch({
    executablePath,
    headless: true,
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu', '--no-first-run', '--no-default-browser-check',
      `--window-size=${opt.width},${opt.height}`],
    defaultViewport: { width: opt.width, height: opt.height },
    timeout: left(30000),
  });
  page = await browser.newPage();
  page.setDefaultTimeout(left(30000));
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(String(e).slice(0, 200)));

  const url = new URL(opt.browserUrl);
  url.searchParams.set('dbms', opt.bolt);
  url.searchParams.set('preselectAuthMethod', opt.password ? 'NATIVE' : 'NO_AUTH');
  step(`open ${url}`);
  // The Browser also fetches things from the internet (unreachable here): wait for its own DOM, not network idle.
  await page.goto(url.toString(), { waitUntil: 'domcontentloaded', timeout: left(30000) });
  await page.waitForSelector('[data-testid="activeEditor"]', { visible: true, timeout: left(30000) });
  step('browser loaded');

  report.connected = await waitConnected(page);
  if (!report.connected) {
    report.error = report.error || 'Neo4j Browser did not connect';
    await page.screenshot({ path: opt.out });
    report.screenshot = opt.out;
    return 1;
  }
  step('connected');
  await dismissConsentBanner(page, 3000);

  await runInEditor(page, ':clear', { clears: true });
  if (opt.style !== null) {
    // `:style <GraSS>` sets the graph style (kept in the Browser's local storage); its frame shows the style or an error
    // one line: the editor runs each line of a multi-line text as its own command (GraSS ignores the line breaks)
    await runInEditor(page, `:style ${opt.style.replace(/\s+/g, ' ').trim()}`);
    const sf = (await frames(page))[0];
    if (!/^:style/.test(squash(sf.command)) || /Could not parse|error/i.test(sf.text + sf.error)) {
      throw new Error(`:style failed: ${(sf.error || sf.text).replace(/\s+/g, ' ').slice(0, 400)}`);
    }
    report.styled = true;
    step('style applied');
  }
  for (const [name, value] of Object.entries(opt.params)) {
    const cmd = `:param ${name} => ${cypherLiteral(value)}`;
    await runInEditor(page, cmd);
    // the :param frame reports "Successfully set your parameters." (status bar) once the server evaluated the value
    await page.waitForFunction(() => {
      const f = document.querySelector('[data-testid="frame"]');
      return f && ((f.querySelector('[data-testid="frameStatusbar"]')?.innerText || '').trim() ||
        /error/i.test(f.innerText));
    }, { timeout: left(15000), polling: 100 });
    const pf = (await frames(page))[0];
    if (squash(pf.command) !== squash(cmd)) throw new Error(`the Browser ran ${JSON.stringify(pf.command)} instead of ${JSON.stringify(cmd)}`);
    if (!/Successfully set/i.test(pf.status)) {
      throw new Error(`${cmd} failed: ${(pf.error || pf.status || pf.text).replace(/\s+/g, ' ').slice(0, 400)}`);
    }
    step(`set ${cmd}`);
  }

  await runInEditor(page, opt.query);
  step('query submitted');
  // Wait for the newest frame to finish: the graph drawn (its overview says "Displaying N nodes, M relationships."),
  // a table/summary status bar ("Started streaming N records ..."), or an error message.
  await page.waitForFunction(() => {
    const f = document.querySelector('[data-testid="frame"]');
    if (!f) return false;
    if (f.querySelector('[data-testid="cypherFrameErrorMessage"]')) return true;
    if (f.querySelector('svg g.node') && /Displaying [\d,]+ nodes?/.test(f.innerText)) return true;
    const status = f.querySelector('[data-testid="frameStatusbar"]')?.innerText || '';
    return /records|completed/i.test(status);
  }, { timeout: left(45000), polling: 200 });
  let top = (await frames(page))[0];
  report.command = top.command;
  if (squash(top.command) !== squash(opt.query)) {
    // the editor must run exactly what we typed (auto-closing brackets or quotes would change it)
    report.error = `the Browser ran a different text than the query given: ${JSON.stringify(top.command.slice(0, 300))}`;
    await page.screenshot({ path: opt.out });
    report.screenshot = opt.out;
    return 1;
  }
  if (top.error) {
    report.error = top.error.slice(0, 500);
    await page.screenshot({ path: opt.out });
    report.screenshot = opt.out;
    return 1;
  }
  report.query_ran = true;

  const graph = await page.$('[data-testid="frame"] svg g.node');
  if (graph) {
    report.view = 'graph';
    step('graph rendered; letting the layout settle');
    await sleep(Math.min(4000, Math.max(0, deadline - Date.now() - 15000)));
    // each node's caption as drawn (word-wrapped over several <text> lines, the last cut with an ellipsis)
    report.captions = await page.$$eval('[data-testid="frame"] svg g.node', (gs) => gs.map((g) =>
      [...g.querySelectorAll('text')].map((t) => t.textContent.trim()).filter(Boolean).join(' ')));
    top = (await frames(page))[0];
    const m = /Displaying ([\d,]+) nodes?, ([\d,]+) relationships?\.?/.exec(top.text);
    if (m) {
      report.graph_status = m[0];
      report.nodes = Number(m[1].replace(/,/g, ''));
      report.relationships = Number(m[2].replace(/,/g, ''));
    }
  } else {
    report.view = 'table';
  }
  await dismissConsentBanner(page, 500);
  await page.mouse.move(opt.width - 8, opt.height - 8);
  await page.screenshot({ path: opt.out });
  report.screenshot = opt.out;
  report.width = opt.width;
  report.height = opt.height;
  step('screenshot taken');

  if (report.view === 'graph') {
    // The record count is in the table view's summary: switch to it (after the screenshot).
    const tableButton = await page.$('[data-testid="frame"] [data-testid="cypherFrameSidebarTable"]');
    if (tableButton) {
      await tableButton.click();
      await page.waitForFunction(() => /records|completed/i.test(
        document.querySelector('[data-testid="frame"] [data-testid="frameStatusbar"]')?.innerText || ''),
      { timeout: left(10000), polling: 100 }).catch(() => {});
      top = (await frames(page))[0];
    }
  }
  report.summary = top.status || null;
  const rec = /started streaming ([\d,]+) records?/i.exec(top.status || '');
  report.records = rec ? Number(rec[1].replace(/,/g, '')) : (/completed/i.test(top.status || '') ? 0 : null);
  if (pageErrors.length) report.page_errors = pageErrors.slice(0, 5);
  report.ok = true;
  return 0;
}

let code = 1;
try {
  code = await main();
} catch (e) {
  report.error = report.error || String(e && e.message ? e.message : e).split('\n')[0].slice(0, 500);
  code = 1;
  // leave evidence: what the stream showed, and a screenshot of it
  try {
    if (page) {
      report.frames = (await Promise.race([frames(page), guard(3000).then(() => [])]))
        .slice(0, 3).map((f) => ({ command: f.command.slice(0, 200), text: f.text.slice(0, 300), status: f.status }));
      await Promise.race([page.screenshot({ path: opt.out }), guard(5000)]);
      if (existsSync(opt.out)) report.screenshot = opt.out;
    }
  } catch { /* best effort */ }
} finally {
  try { if (browser) await Promise.race([browser.close(), guard(5000)]); } catch { /* closing anyway */ }
  try { browser?.process()?.kill('SIGKILL'); } catch { /* already gone */ }
  clearTimeout(watchdog);
}
emit(code);
