// The web interface's tests in a real browser: Debian's headless Chromium driven by
// playwright-core, accessibility checked by axe-core, both from the npm packages pinned in
// scripts/pins/browser/ (installed under DOCMETA_BROWSER_TOOLS; no browser is downloaded).
//
// Against a running `docmeta serve` with the demo loaded (`docmeta demo`):
//   DOCMETA_URL             the server, e.g. http://127.0.0.1:8124
//   DOCMETA_ADMIN_USER      a superuser (setup through the JSON API with Basic auth)
//   DOCMETA_ADMIN_PASSWORD  its password
//   DOCMETA_SCREENSHOTS     a directory for a full-page PNG of each page visited (optional)
//   DOCMETA_BROWSER_TOOLS   the directory where the pinned npm packages are installed
//   DOCMETA_CHROMIUM        the browser (default /usr/bin/chromium)
//
// The tools: dir=target/browser-tools; mkdir -p $dir; cp scripts/pins/browser/package*.json $dir/;
// (cd $dir && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --silent)
//
// Plain async steps, no test framework: each prints `ok N - name` or `not ok N - name` with the
// reason; the run ends with `N passed, N failed` and exits 1 when a step failed. Every page is
// watched: a request to another host, a Content-Security-Policy error in the console, or an
// uncaught error in the page fails the step that caused it.

import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// ----- inputs -----------------------------------------------------------------------------------

function need(name) {
  const value = process.env[name];
  if (!value) {
    console.error(`run.mjs: set ${name} (see the comment at the top of this file)`);
    process.exit(2);
  }
  return value;
}

const BASE = new URL(need('DOCMETA_URL')).origin;
const ADMIN = { username: need('DOCMETA_ADMIN_USER'), password: need('DOCMETA_ADMIN_PASSWORD') };
const TOOLS = path.resolve(need('DOCMETA_BROWSER_TOOLS'));
const SHOTS = process.env.DOCMETA_SCREENSHOTS ? path.resolve(process.env.DOCMETA_SCREENSHOTS) : null;
const CHROMIUM = process.env.DOCMETA_CHROMIUM || '/usr/bin/chromium';
const DEMO_PASSWORD = 'demo-password';
const COOKIE = 'docmeta_session';
const PAYLOAD = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>';
// The same for the labels of types, which hold at most 48 characters.
const SHORT_PAYLOAD = '<img src=x onerror=window.__xss=3>';
// Unique names for what this run creates, so that it can run again on the same data.
const STAMP = Date.now().toString(36);

const require = createRequire(path.join(TOOLS, 'package.json'));
const { chromium } = require('playwright-core');
const AXE_SOURCE = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

if (SHOTS) fs.mkdirSync(SHOTS, { recursive: true });

// ----- the JSON API, as the administrator (Basic auth) ------------------------------------------

function basic({ username, password }) {
  return 'Basic ' + Buffer.from(`${username}:${password}`).toString('base64');
}

/** `method path` with a JSON body as `who` (default the administrator); the parsed answer. */
async function api(method, urlPath, body, { who = ADMIN, expect = [200, 201, 204] } = {}) {
  const headers = { Authorization: basic(who), Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const response = await fetch(BASE + urlPath, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (!expect.includes(response.status)) {
    throw new Error(`${method} ${urlPath} answered ${response.status}: ${text.slice(0, 300)}`);
  }
  return text ? JSON.parse(text) : null;
}

/** Every result of a paged list. */
async function all(urlPath, who) {
  const results = [];
  let next = urlPath + (urlPath.includes('?') ? '&' : '?') + 'page_size=500';
  while (next) {
    const page = await api('GET', next, undefined, { who });
    results.push(...page.results);
    next = page.next ? new URL(page.next, BASE).pathname + new URL(page.next, BASE).search : null;
  }
  return results;
}

const byLabel = async (label) => {
  const documents = await all('/api/v4/documents/');
  const found = documents.find((d) => d.label === label);
  if (!found) throw new Error(`no document labelled ${JSON.stringify(label)} (is the demo loaded?)`);
  return found;
};

async function valueOf(documentId, typeName) {
  const values = await all(`/api/v4/documents/${documentId}/metadata/`);
  const value = values.find((v) => v.metadata_type?.name === typeName);
  if (!value) throw new Error(`document ${documentId} has no ${typeName} value`);
  return value;
}

// ----- the browser ------------------------------------------------------------------------------

let browser;
/** What the watchers saw during the current step: each is a failure of that step. */
let problems = [];
/** Console errors that are neither a CSP report nor a refused request (logged below), for the log. */
let consoleErrors = [];
/** The page's requests answered 4xx or 5xx, for the log (the API's refusals are part of it). */
const httpErrors = [];
let shotNumber = 0;
let currentStep = '';

async function newContext() {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  context.setDefaultTimeout(5000);
  context.on('request', (request) => {
    const url = new URL(request.url());
    if (['http:', 'https:', 'ws:', 'wss:'].includes(url.protocol) && url.origin !== BASE) {
      problems.push(`a request to another host: ${request.method()} ${request.url()}`);
    } else if (!['http:', 'https:', 'ws:', 'wss:', 'data:', 'blob:', 'about:'].includes(url.protocol)) {
      problems.push(`a request of an unexpected kind: ${request.url()}`);
    }
  });
  context.on('response', (response) => {
    if (response.status() >= 400) httpErrors.push(`[${currentStep}] ${response.status()} ${response.request().method()} ${response.url().replace(BASE, '')}`);
  });
  context.on('console', (message) => {
    if (message.type() !== 'error' && message.type() !== 'warning') return;
    const text = message.text();
    if (/Content[- ]Security[- ]Policy|Refused to (execute|load|apply|connect|evaluate)/i.test(text)) {
      problems.push(`a Content-Security-Policy error in the console: ${text}`);
    } else if (message.type() === 'error' && !/^Failed to load resource: the server responded with a status of/.test(text)) {
      consoleErrors.push(`[${currentStep}] ${text}`);
    }
  });
  context.on('weberror', (error) => {
    problems.push(`an uncaught error in the page: ${error.error().stack || error.error()}`);
  });
  context.on('page', (page) => {
    page.on('dialog', (dialog) => {
      problems.push(`a dialog opened (${dialog.type()}: ${dialog.message()})`);
      dialog.dismiss().catch(() => {});
    });
  });
  return context;
}

/** A page signed in as `who` through `POST /ui/session` (the sign-in form is tested once). */
async function signedIn(who) {
  const context = await newContext();
  const response = await context.request.post(BASE + '/ui/session', {
    data: { username: who.username, password: who.password },
    headers: { Origin: BASE },
  });
  if (!response.ok()) {
    throw new Error(`POST /ui/session as ${who.username} answered ${response.status()}: ${await response.text()}`);
  }
  const page = await context.newPage();
  return { context, page };
}

async function shot(page, name) {
  shotNumber += 1;
  if (!SHOTS) return;
  const file = `${String(shotNumber).padStart(2, '0')}-${name.replace(/[^a-z0-9]+/gi, '-').toLowerCase()}.png`;
  await page.screenshot({ path: path.join(SHOTS, file), fullPage: true });
}

/**
 * Opens `/` + `hash` and waits until the interface has rendered it: a marker left in <main>
 * is gone (the router replaced the old page) and nothing in <main> is aria-busy (a page shows
 * its main data first, then marks busy what it completes later: "Sort by", what a user may do).
 */
async function go(page, hash) {
  const url = BASE + '/' + hash;
  await page.evaluate(() => document.getElementById('main')?.append(Object.assign(document.createElement('i'), { id: '__stale' }))).catch(() => {});
  if (page.url() === url) await page.reload();
  else await page.goto(url);
  await rendered(page);
}

async function rendered(page) {
  await page.waitForFunction(() => {
    const main = document.getElementById('main');
    return main && !document.getElementById('__stale') && !main.hasAttribute('aria-busy') && !main.querySelector('[aria-busy=true]') && !main.querySelector(':scope > .loading');
  }, null, { timeout: 5000 });
  // Two frames, so that the new page is painted (and hit-testable) before it is clicked.
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
}

function check(condition, message) {
  if (!condition) throw new Error(message);
}

/** Polls `read` until `accept(value)` holds, for up to `ms`; the last value otherwise. */
async function until(read, accept, ms = 5000, what = 'the expected state') {
  const deadline = Date.now() + ms;
  let last;
  for (;;) {
    last = await read();
    if (accept(last)) return last;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last seen: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// The UI contract's landmarks.
const documentsTable = (page) => page.getByRole('table', { name: 'Documents' });
const heading = (page, name) => page.getByRole('heading', { level: 1, name, exact: true });
const escape = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The labels of the documents table's rows, in order. */
async function rowLabels(page) {
  const table = documentsTable(page);
  await table.waitFor();
  return table.locator('tbody').getByRole('link').allInnerTexts();
}

/** The text of the role=alert elements of a field's group (beside the field). */
async function alertBeside(control) {
  return control.evaluate((element) => {
    // The nearest ancestor that holds an alert: the field's own group, if it holds one field.
    for (let node = element.parentElement; node && node !== document.body; node = node.parentElement) {
      const alerts = [...node.querySelectorAll('[role=alert]')].filter((a) => a.textContent.trim());
      if (alerts.length === 0) continue;
      const controls = node.querySelectorAll('input:not([type=hidden]), select, textarea');
      return { text: alerts.map((a) => a.textContent.trim()).join(' | '), controls: controls.length };
    }
    return null;
  });
}

async function noXss(page, where) {
  const state = await page.evaluate(() => ({
    xss: window.__xss,
    imgs: document.querySelectorAll('img[src="x"]').length,
    scripts: [...document.scripts].filter((s) => s.textContent.includes('__xss')).length,
  }));
  check(state.xss === undefined, `${where}: the payload ran (window.__xss = ${state.xss})`);
  check(state.imgs === 0, `${where}: the payload made ${state.imgs} <img src=x> element(s)`);
  check(state.scripts === 0, `${where}: the payload made a <script> element`);
}

async function axeCheck(page, where) {
  const started = Date.now();
  await page.evaluate(AXE_SOURCE);
  const results = await page.evaluate(() =>
    window.axe.run(document, { resultTypes: ['violations'] }),
  );
  const bad = results.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  console.log(`#   axe on ${where}: ${results.violations.length} violation(s), ${bad.length} serious or critical (${Date.now() - started} ms)`);
  for (const v of results.violations.filter((v) => !bad.includes(v))) {
    console.log(`#   axe (${where}, ${v.impact}, not failing): ${v.id}: ${v.help}`);
  }
  if (bad.length) {
    const lines = bad.map(
      (v) =>
        `  ${v.impact} ${v.id}: ${v.help}\n` +
        v.nodes.map((n) => `    ${n.target.join(' ')}: ${n.failureSummary.replace(/\n/g, ' ')}`).join('\n'),
    );
    throw new Error(`axe found serious or critical violations on ${where}:\n${lines.join('\n')}`);
  }
}

// ----- the steps --------------------------------------------------------------------------------

const results = { passed: 0, failed: 0 };
let stepNumber = 0;

async function step(name, body) {
  stepNumber += 1;
  currentStep = name;
  problems = [];
  const started = Date.now();
  const opened = [];
  try {
    await body(opened);
    if (problems.length) throw new Error(problems.join('\n'));
    results.passed += 1;
    console.log(`ok ${stepNumber} - ${name} (${Date.now() - started} ms)`);
  } catch (error) {
    results.failed += 1;
    console.log(`not ok ${stepNumber} - ${name} (${Date.now() - started} ms)`);
    const extra = problems.length && !String(error.message).includes(problems[0]) ? '\n' + problems.join('\n') : '';
    console.log(String(error.stack || error).replace(/^/gm, '#   ') + extra.replace(/^/gm, '#   '));
    // What the pages showed when the step failed.
    const contexts = [...opened, ...[...sessions.values()].map((s) => s.context)];
    for (const page of contexts.flatMap((c) => c.pages())) {
      await shot(page, `failed-step-${stepNumber}`).catch(() => {});
    }
  } finally {
    for (const context of opened) await context.close().catch(() => {});
  }
}

/** A signed-in page whose context the step closes at its end. */
async function open(opened, who) {
  const s = await signedIn(who);
  opened.push(s.context);
  return s;
}

/** The page of `who`, signed in once and shared by the steps (closed at the end of the run). */
const sessions = new Map();
async function as(who) {
  if (!sessions.has(who.username)) sessions.set(who.username, await signedIn(who));
  return sessions.get(who.username);
}

const alice = { username: 'alice', password: DEMO_PASSWORD };
const bob = { username: 'bob', password: DEMO_PASSWORD };

async function main() {
  // A fresh directory for the browser: `launch` makes its new empty profile (it refuses
  // --user-data-dir) under the temporary directory, here this one, removed at the end.
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'docmeta-browser-'));
  process.env.TMPDIR = userDataDir;
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage',
    ],
    env: { ...process.env, TMPDIR: userDataDir },
  });
  console.log(`# ${CHROMIUM}: Chromium ${browser.version()}; docmeta at ${BASE}`);

  // The demo's documents, as the API (the administrator) sees them.
  const invoice1 = await byLabel('Invoice 1');
  const invoice2 = await byLabel('Invoice 2');
  const contract = await byLabel('Contract with ACME Corp');
  // More documents than a page of the list holds (20), seen by the administrator alone.
  const total = (await api('GET', '/api/v4/documents/?page_size=1')).count;
  if (total < 25) {
    const type = await api('POST', '/api/v4/documents/types/', { label: `Paging ${STAMP}` });
    await api('POST', '/api/v4/documents/batch/', {
      documents: Array.from({ length: 25 - total }, (_, i) => ({ document_type_id: type.id, label: `Paging ${STAMP} ${i + 1}` })),
    });
  }

  await step('sign in: the sign-in page, a wrong password, alice, the session cookie', async (opened) => {
    const context = await newContext();
    opened.push(context);
    const page = await context.newPage();
    await go(page, '');
    await heading(page, 'Sign in to docmeta').waitFor();
    await shot(page, 'sign-in');
    await page.getByLabel('Username', { exact: true }).fill('alice');
    await page.getByLabel('Password', { exact: true }).fill('wrong-password');
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    const alert = page.getByRole('alert').filter({ hasText: /\S/ });
    await alert.first().waitFor();
    console.log(`#   wrong password: ${JSON.stringify(await alert.first().innerText())}`);
    await shot(page, 'sign-in-refused');
    check((await context.cookies()).every((c) => c.name !== COOKIE), 'a refused sign-in set a session cookie');
    // Then by keyboard alone: the refused form leaves the focus in the password field.
    const focused = await page.evaluate(() => document.activeElement && document.activeElement.labels?.[0]?.textContent.trim());
    check(focused === 'Password', `after the refusal the focus is on ${JSON.stringify(focused)}, not the password`);
    await page.keyboard.type(DEMO_PASSWORD);
    await page.keyboard.press('Enter');
    await heading(page, 'Documents').waitFor();
    await documentsTable(page).waitFor();
    const nav = page.getByRole('navigation', { name: 'Main' });
    await nav.getByRole('link', { name: 'Documents', exact: true }).waitFor();
    await nav.getByRole('button', { name: 'Sign out', exact: true }).waitFor();
    await shot(page, 'documents-alice');
    const cookie = (await context.cookies()).find((c) => c.name === COOKIE);
    check(cookie, `no ${COOKIE} cookie after signing in: ${JSON.stringify(await context.cookies())}`);
    check(cookie.httpOnly, 'the session cookie is not HttpOnly');
    check(cookie.sameSite === 'Strict', `the session cookie is SameSite=${cookie.sameSite}, not Strict`);
    check(cookie.path === '/', `the session cookie's path is ${cookie.path}, not /`);
    const readable = await page.evaluate(() => document.cookie);
    check(!readable.includes(COOKIE), 'the page script can read the session cookie');
  });

  await step('search, sort and page the documents list', async (opened) => {
    const { page } = await as(alice);
    // What the API answers alice, which the table must show.
    const labels = async (urlPath) => (await api('GET', urlPath, undefined, { who: alice })).results.map((d) => d.label);
    const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
    await go(page, '#/documents');
    const listed = await rowLabels(page);
    const answer = await api('GET', '/api/v4/documents/?page_size=20', undefined, { who: alice });
    const expected = answer.results.map((d) => d.label);
    check(same(listed, expected), `alice's list shows ${JSON.stringify(listed)}, the API ${JSON.stringify(expected)}`);
    for (const n of [1, 2, 3, 4, 5]) check(listed.includes(`Invoice ${n}`), `alice's list lacks Invoice ${n}`);
    check(listed.every((l) => !l.startsWith('Contract')), `alice's list shows a contract: ${JSON.stringify(listed)}`);
    await page.getByText(new RegExp(`^\\s*${answer.count} documents\\s*$`)).first().waitFor();
    const search = page.getByRole('search');
    const box = search.getByLabel('Search', { exact: true });
    const submit = search.getByRole('button', { name: 'Search', exact: true });
    // A field-bound term on a lookup value: the draft invoices, and only them.
    const drafts = await labels('/api/v4/search/documents/?q=status%3Adraft&page_size=20');
    check(drafts.length > 0 && drafts.length < answer.count, `the API finds the drafts ${JSON.stringify(drafts)}`);
    await box.fill('status:draft');
    await submit.click();
    await until(() => rowLabels(page), (l) => same(l, drafts), 5000, `the drafts ${JSON.stringify(drafts)}`);
    check(page.url().includes('q=status'), `the query is not in the address: ${page.url()}`);
    await page.getByText(new RegExp(`^\\s*${drafts.length} documents?\\s*$`)).first().waitFor();
    await shot(page, 'search-status-draft');
    // An invoice number, field-bound, finds that one invoice.
    await box.fill('invoice_number:1003');
    await submit.click();
    await until(() => rowLabels(page), (l) => same(l, ['Invoice 3']), 5000, 'Invoice 3 alone');
    // A malformed query is refused in an alert.
    await box.fill('nope:x');
    await submit.click();
    const refusal = page.getByRole('alert').filter({ hasText: /\S/ }).first();
    await refusal.waitFor();
    console.log(`#   nope:x: ${JSON.stringify(await refusal.innerText())}`);
    await shot(page, 'search-refused');
    // "Sort by" offers what each request does: a search has no id order (the server ignores
    // it there) and starts at relevance; the plain list starts at its own order, by id.
    const optionsOf = (select) => select.locator('option').evaluateAll((os) => os.map((o) => ({ value: o.value, text: o.textContent.trim(), selected: o.selected })));
    await go(page, '#/documents?q=status%3Adraft');
    const sort = page.getByLabel('Sort by', { exact: true });
    const searchOrders = await optionsOf(sort);
    check(searchOrders.find((o) => o.selected)?.text === 'Relevance', `a search starts at ${JSON.stringify(searchOrders.find((o) => o.selected))}`);
    check(searchOrders.every((o) => !['id', '-id'].includes(o.value)), `a search offers an id order: ${JSON.stringify(searchOrders.map((o) => o.text))}`);
    check(searchOrders.some((o) => o.value === '-invoice_number'), `a search offers no metadata order: ${JSON.stringify(searchOrders.map((o) => o.text))}`);
    // Sorting: an order of "Sort by" that differs from the list's own shows the API's order.
    await go(page, '#/documents');
    const options = await optionsOf(sort);
    check(options.find((o) => o.selected)?.text === 'ID ascending', `the plain list's "Sort by" starts at ${JSON.stringify(options.find((o) => o.selected))}`);
    check(options.every((o) => o.text !== 'Relevance'), `the plain list offers "Relevance": ${JSON.stringify(options.map((o) => o.text))}`);
    // Typing a query turns the choices into a search's.
    await box.fill('paid');
    await until(async () => (await optionsOf(sort)).map((o) => o.text), (t) => t[0] === 'Relevance' && !t.includes('ID descending'), 2000, 'the orders of a search');
    await box.fill('');
    await until(async () => (await optionsOf(sort)).map((o) => o.text), (t) => t[0] === 'ID ascending', 2000, 'the orders of the list');
    let chosen = null;
    for (const name of ['-invoice_number', '-due_date', '-id']) {
      const option = options.find((o) => o.value === name);
      if (!option) continue;
      const order = await labels(`/api/v4/documents/?page_size=20&ordering=${encodeURIComponent(name)}`);
      if (!same(order, expected)) {
        chosen = { option, order };
        break;
      }
    }
    check(chosen, `"Sort by" offers no order that changes the list: ${JSON.stringify(options)}`);
    await sort.selectOption(chosen.option.value);
    await submit.click();
    await until(() => rowLabels(page), (l) => same(l, chosen.order), 5000, `the order ${JSON.stringify(chosen.order)}`);
    check(page.url().includes('ordering=' + encodeURIComponent(chosen.option.value)), `the order is not in the address: ${page.url()}`);
    console.log(`#   sorted by ${JSON.stringify(chosen.option.text)}: ${chosen.order.join(', ')}`);
    await shot(page, 'documents-sorted');
    // Paging, as the administrator, who sees more documents than a page holds.
    const admin = await as(ADMIN);
    await go(admin.page, '#/documents');
    const count = Number((await admin.page.getByText(/^\s*\d+ documents\s*$/).first().innerText()).match(/\d+/)[0]);
    const first = await rowLabels(admin.page);
    check(first.length > 0 && first.length < count, `the first page shows ${first.length} of ${count} documents`);
    check((await admin.page.getByRole('link', { name: 'Previous page', exact: true }).count()) === 0, 'page 1 offers a previous page');
    await admin.page.getByRole('link', { name: 'Next page', exact: true }).click();
    const second = await until(() => rowLabels(admin.page), (l) => l.length > 0 && l[0] !== first[0], 5000, 'the second page');
    check(second.every((l) => !first.includes(l)), 'the second page repeats rows of the first');
    check(admin.page.url().includes('page=2'), `the page is not in the address: ${admin.page.url()}`);
    await shot(admin.page, 'documents-page-2');
    await admin.page.getByRole('link', { name: 'Previous page', exact: true }).click();
    await until(() => rowLabels(admin.page), (l) => same(l, first), 5000, 'the first page again');
  });

  await step('edit a value through a lookup drop-down', async (opened) => {
    const { page } = await as(alice);
    const old = await valueOf(invoice1.id, 'status');
    await go(page, `#/documents/${invoice1.id}`);
    await heading(page, 'Invoice 1').waitFor();
    await page.getByRole('heading', { level: 2, name: 'Metadata', exact: true }).waitFor();
    const select = page.getByRole('combobox', { name: /^Status\b/ }).first();
    await select.waitFor();
    check((await select.evaluate((e) => e.tagName)) === 'SELECT', 'Status is not a <select>');
    const choices = await select.locator('option').evaluateAll((os) => os.map((o) => o.value).filter(Boolean));
    for (const expected of ['draft', 'review', 'approved', 'paid']) {
      check(choices.includes(expected), `the Status drop-down offers ${JSON.stringify(choices)}, not ${expected}`);
    }
    check((await select.inputValue()) === old.value, `Status shows ${await select.inputValue()}, not ${old.value}`);
    const next = ['draft', 'review', 'approved', 'paid'].find((v) => v !== old.value);
    await select.selectOption(next);
    await page.getByRole('button', { name: 'Save Status', exact: true }).click();
    await until(async () => (await valueOf(invoice1.id, 'status')).value, (v) => v === next, 5000, `status ${next} saved`);
    await page.reload();
    await heading(page, 'Invoice 1').waitFor();
    const after = page.getByRole('combobox', { name: /^Status\b/ }).first();
    await until(() => after.inputValue(), (v) => v === next, 5000, `Status ${next} after the reload`);
    await shot(page, 'document-status-saved');
  });

  await step('required fields are marked', async () => {
    // Invoice: invoice_number, due_date and status are required; issued_at, delivery_time and
    // owner are not. As the administrator (who may read the document type's associations) and
    // as alice (who edits the invoice's values but may not read its document type).
    const marks = async (page) => {
      await go(page, `#/documents/${invoice1.id}`);
      await heading(page, 'Invoice 1').waitFor();
      return page.locator('form').evaluateAll((forms) => Object.fromEntries(forms
        .map((f) => f.querySelector('input:not([type=hidden]), select'))
        .filter((c) => c && c.labels && c.labels[0])
        .map((c) => [c.labels[0].textContent.replace(/\s*\(required\)\s*$/, '').trim(), {
          marked: /required/i.test(c.labels[0].textContent) || c.required || c.getAttribute('aria-required') === 'true',
        }])));
    };
    const expected = { 'Invoice number': true, 'Due date': true, Status: true, 'Issued at': false, 'Delivery time': false, Owner: false };
    const wrong = [];
    for (const [who, page] of [['admin', (await as(ADMIN)).page], ['alice', (await as(alice)).page]]) {
      const seen = await marks(page);
      for (const [label, required] of Object.entries(expected)) {
        if (!seen[label]) wrong.push(`${who}: no field ${label} (fields: ${Object.keys(seen).join(', ')})`);
        else if (seen[label].marked !== required) wrong.push(`${who}: ${label} is ${seen[label].marked ? '' : 'not '}marked required`);
      }
      await shot(page, `required-${who}`);
    }
    check(wrong.length === 0, wrong.join('; '));
  });

  await step('a refused value is shown beside its field and not saved', async (opened) => {
    const { page } = await as(alice);
    const old = await valueOf(invoice1.id, 'invoice_number');
    await go(page, `#/documents/${invoice1.id}`);
    await heading(page, 'Invoice 1').waitFor();
    const input = page.getByRole('textbox', { name: /^Invoice number\b/ }).first();
    check((await input.inputValue()) === old.value, `Invoice number shows ${await input.inputValue()}, not ${old.value}`);
    await input.fill('nope');
    await page.getByRole('button', { name: 'Save Invoice number', exact: true }).click();
    const beside = await until(() => alertBeside(input), (a) => a !== null, 5000, 'an alert beside Invoice number');
    check(beside.controls === 1, `the refusal is not in the field's own group (${beside.controls} fields around it)`);
    console.log(`#   refusal: ${JSON.stringify(beside.text)}`);
    const invalid = await input.getAttribute('aria-invalid');
    if (invalid !== 'true') console.log(`#   note: the refused field has aria-invalid=${invalid}`);
    await shot(page, 'document-value-refused');
    check((await valueOf(invoice1.id, 'invoice_number')).value === old.value, 'the refused value was saved');
    await page.reload();
    await heading(page, 'Invoice 1').waitFor();
    const again = page.getByRole('textbox', { name: /^Invoice number\b/ }).first();
    await until(() => again.inputValue(), (v) => v === old.value, 5000, `Invoice number ${old.value} after the reload`);
  });

  await step('upload a file and download it; no upload offered to whom the server refuses it', async () => {
    const invoice3 = await byLabel('Invoice 3');
    const name = `note-${STAMP}.txt`;
    const body = `uploaded by the browser test ${STAMP}\n`;
    const file = { name, mimeType: 'text/plain', buffer: Buffer.from(body) };
    // alice may edit the invoice's values but not add files to it (the demo grants no
    // documents.document_file_new): the page, once it knows, offers her no upload.
    const a = (await as(alice)).page;
    await go(a, `#/documents/${invoice3.id}`);
    await heading(a, 'Invoice 3').waitFor();
    await a.getByRole('heading', { level: 2, name: 'Files', exact: true }).waitFor();
    check((await a.getByLabel('Upload a file', { exact: true }).count()) === 0, 'alice is offered an upload the server refuses her');
    check((await a.getByRole('button', { name: 'Upload', exact: true }).count()) === 0, 'alice is offered an Upload button');
    await shot(a, 'file-no-upload-alice');
    const { page } = await as(ADMIN);
    await go(page, `#/documents/${invoice3.id}`);
    await heading(page, 'Invoice 3').waitFor();
    await page.getByLabel('Upload a file', { exact: true }).setInputFiles(file);
    await page.getByRole('button', { name: 'Upload', exact: true }).click();
    const link = page.getByRole('link', { name, exact: true });
    await link.waitFor();
    await shot(page, 'file-uploaded');
    const [download] = await Promise.all([page.waitForEvent('download'), link.click()]);
    const got = fs.readFileSync(await download.path(), 'utf8');
    check(got === body, `the download holds ${JSON.stringify(got.slice(0, 80))}`);
    check(download.suggestedFilename() === name, `the download is named ${download.suggestedFilename()}`);
  });

  await step('a user who may only view a document is offered nothing else', async (opened) => {
    // A new user whose role holds documents.document_view on Invoice 1 alone (granted on its
    // ACL) and metadata.document_metadata_view everywhere (values are seen where both the
    // document and the metadata type allow it): no upload, no Access link, no "Add a value",
    // no Save or Remove, the values read-only, and no claim that no workflow runs.
    const username = `viewer_${STAMP}`;
    const who = { username, password: 'ui-test-password-2' };
    const user = await api('POST', '/api/v4/users/', { username, password: who.password });
    const group = await api('POST', '/api/v4/groups/', { name: `Viewers ${STAMP}` });
    const role = await api('POST', '/api/v4/roles/', { label: `Viewers ${STAMP}` });
    await api('POST', `/api/v4/groups/${group.id}/users/add/`, { user_id: user.id });
    await api('POST', `/api/v4/roles/${role.id}/groups/add/`, { group_id: group.id });
    const base = `/api/v5/objects/documents/document/${invoice1.id}/acls/`;
    const acl = await api('POST', base, { role_id: role.id });
    await api('POST', `${base}${acl.id}/permissions/add/`, { permission: 'documents.document_view' });
    await api('POST', `/api/v4/roles/${role.id}/permissions/add/`, { permission: 'metadata.document_metadata_view' });
    const { page } = await open(opened, who);
    await go(page, `#/documents/${invoice1.id}`);
    await heading(page, 'Invoice 1').waitFor();
    await page.getByRole('heading', { level: 2, name: 'Files', exact: true }).waitFor();
    const number = page.getByRole('textbox', { name: /^Invoice number\b/ }).first();
    await number.waitFor();
    const seen = {
      upload: await page.getByLabel('Upload a file', { exact: true }).count(),
      uploadButton: await page.getByRole('button', { name: 'Upload', exact: true }).count(),
      access: await page.getByRole('link', { name: 'Access', exact: true }).count(),
      addValue: await page.getByRole('heading', { name: 'Add a value', exact: true }).count(),
      save: await page.getByRole('button', { name: /^Save\b/ }).count(),
      remove: await page.getByRole('button', { name: /^Remove\b/ }).count(),
    };
    check(Object.values(seen).every((n) => n === 0), `the view-only user is offered: ${JSON.stringify(seen)}`);
    check(await number.evaluate((e) => e.readOnly), 'the view-only user\'s Invoice number is editable');
    const workflow = await page.locator('section', { has: page.getByRole('heading', { level: 2, name: 'Workflow', exact: true }) }).innerText();
    check(!/No workflow runs/.test(workflow), `the Workflow section says ${JSON.stringify(workflow)}`);
    console.log(`#   Workflow section: ${JSON.stringify(workflow.replace(/\s+/g, ' ').trim())}`);
    await shot(page, 'view-only');
    // The administrator, on the same page, is offered all of it.
    const admin = (await as(ADMIN)).page;
    await go(admin, `#/documents/${invoice1.id}`);
    await heading(admin, 'Invoice 1').waitFor();
    for (const [what, locator] of [
      ['the upload', admin.getByLabel('Upload a file', { exact: true })],
      ['the Access link', admin.getByRole('link', { name: 'Access', exact: true })],
      ['"Add a value"', admin.getByRole('heading', { name: 'Add a value', exact: true })],
      ['Save Invoice number', admin.getByRole('button', { name: 'Save Invoice number', exact: true })],
      ['Remove Invoice number', admin.getByRole('button', { name: 'Remove Invoice number', exact: true })],
    ]) check((await locator.count()) === 1, `the administrator is not offered ${what}`);
  });

  await step('a workflow: its state, moved by a value edited through the form', async () => {
    // The demo's "Invoice approval" runs on invoices created after it: editing the status to
    // review takes the transition "submit" (a trigger with a condition on the value).
    const types = await all('/api/v4/documents/types/');
    const number = (await all('/api/v4/metadata/metadata-types/')).find((t) => t.name === 'invoice_number');
    const doc = await api('POST', '/api/v4/documents/', {
      document_type_id: types.find((t) => t.label === 'Invoice').id,
      label: `Workflow ${STAMP}`,
      metadata: [{ metadata_type_id: number.id, value: `INV-${String(Date.now()).slice(-6)}` }],
    });
    // As the administrator: the demo grants nobody else a view of workflows.
    const { page } = await as(ADMIN);
    await go(page, `#/documents/${doc.id}`);
    await heading(page, doc.label).waitFor();
    const section = page.locator('section', { has: page.getByRole('heading', { level: 2, name: 'Workflow', exact: true }) });
    const current = () => section.locator('p', { hasText: 'Current state:' }).first().innerText().catch(() => '');
    const before = await current();
    check(/draft/i.test(before), `the new invoice's workflow shows ${JSON.stringify(before || await section.innerText())}`);
    const buttons = await section.getByRole('button').allInnerTexts();
    console.log(`#   ${before.trim()}; transition buttons: ${JSON.stringify(buttons)}`);
    await page.getByRole('combobox', { name: /^Status\b/ }).first().selectOption('review');
    await page.getByRole('button', { name: 'Save Status', exact: true }).click();
    const after = await until(current, (t) => /review/i.test(t), 5000, 'the state review');
    console.log(`#   after Status = review: ${after.trim()}`);
    await shot(page, 'workflow');
  });

  await step('an XSS payload in values and labels is rendered as text', async (opened) => {
    // Through the form: bob (Legal) edits a contract's Counterparty.
    const { page } = await as(bob);
    await go(page, `#/documents/${contract.id}`);
    await heading(page, contract.label).waitFor();
    const party = page.getByRole('textbox', { name: /^Counterparty\b/ }).first();
    await party.fill(PAYLOAD);
    await page.getByRole('button', { name: 'Save Counterparty', exact: true }).click();
    await until(async () => (await valueOf(contract.id, 'party')).value, (v) => v === PAYLOAD, 5000, 'the payload saved');
    await page.reload();
    await heading(page, contract.label).waitFor();
    const shown = page.getByRole('textbox', { name: /^Counterparty\b/ }).first();
    await until(() => shown.inputValue(), (v) => v === PAYLOAD, 5000, 'the payload as the field value');
    await page.waitForTimeout(200);
    await noXss(page, 'the contract after the reload');
    await shot(page, 'xss-value');
    // Through the API: a document type, a metadata type and a document labelled with it.
    const label = `${PAYLOAD} ${STAMP}`;
    const typeLabel = `${SHORT_PAYLOAD} ${STAMP}`;
    const type = await api('POST', '/api/v4/documents/types/', { label: `T${typeLabel}` });
    const mt = await api('POST', '/api/v4/metadata/metadata-types/', { name: `xss_${STAMP}`, label: typeLabel });
    await api('POST', `/api/v4/documents/types/${type.id}/metadata-types/`, { metadata_type_id: mt.id, required: false });
    const doc = await api('POST', '/api/v4/documents/', {
      document_type_id: type.id,
      label,
      metadata: [{ metadata_type_id: mt.id, value: PAYLOAD }],
    });
    const admin = await as(ADMIN);
    await go(admin.page, '#/documents?ordering=-id');
    await documentsTable(admin.page).getByRole('link', { name: label, exact: true }).waitFor();
    await noXss(admin.page, 'the documents list');
    await shot(admin.page, 'xss-list');
    await go(admin.page, `#/documents/${doc.id}`);
    await heading(admin.page, label).waitFor();
    check((await heading(admin.page, label).innerText()).includes(PAYLOAD), 'the label is not shown as text in the heading');
    const valueBox = admin.page.getByRole('textbox', { name: new RegExp('^' + escape(typeLabel)) }).first();
    await until(() => valueBox.inputValue(), (v) => v === PAYLOAD, 5000, 'the payload as the value of the field it labels');
    await admin.page.waitForTimeout(200);
    await noXss(admin.page, 'the document page');
    await shot(admin.page, 'xss-document');
    await go(admin.page, `#/admin/metadata-types/${mt.id}`);
    await admin.page.getByText(typeLabel).first().waitFor();
    await noXss(admin.page, 'the metadata type page');
    await shot(admin.page, 'xss-metadata-type');
    await go(admin.page, '#/admin/metadata-types');
    await admin.page.getByRole('link', { name: typeLabel, exact: true }).waitFor();
    await noXss(admin.page, 'the metadata types list');
    await go(admin.page, '#/admin/document-types');
    await admin.page.getByRole('link', { name: `T${typeLabel}`, exact: true }).waitFor();
    await noXss(admin.page, 'the document types list');
    await go(admin.page, `#/acl/documents/document/${doc.id}`);
    await heading(admin.page, `Access to ${label}`).waitFor();
    await noXss(admin.page, 'the ACL page');
    await shot(admin.page, 'xss-acl');
  });

  await step('a grant shows a document to a user, a revoke hides it again', async (opened) => {
    const username = `ui_${STAMP}`;
    const who = { username, password: 'ui-test-password-1' };
    const user = await api('POST', '/api/v4/users/', { username, password: who.password });
    const group = await api('POST', '/api/v4/groups/', { name: `UI test ${STAMP}` });
    const role = await api('POST', '/api/v4/roles/', { label: `UI test ${STAMP}` });
    await api('POST', `/api/v4/groups/${group.id}/users/add/`, { user_id: user.id });
    await api('POST', `/api/v4/roles/${role.id}/groups/add/`, { group_id: group.id });
    const types = await all('/api/v4/documents/types/');
    const contractType = types.find((t) => t.label === 'Contract');
    const party = (await all('/api/v4/metadata/metadata-types/')).find((t) => t.name === 'party');
    const label = `Granted ${STAMP}`;
    const doc = await api('POST', '/api/v4/documents/', {
      document_type_id: contractType.id,
      label,
      metadata: [{ metadata_type_id: party.id, value: 'Grant test' }],
    });
    const base = `/api/v5/objects/documents/document/${doc.id}/acls/`;
    const { page } = await open(opened, who);
    await go(page, '#/documents');
    await heading(page, 'Documents').waitFor();
    await page.getByText(/^\s*0 documents\s*$/).first().waitFor();
    check((await page.getByRole('link', { name: label, exact: true }).count()) === 0, 'the document is listed before the grant');
    await shot(page, 'grant-before');
    // The administrator grants on the document's ACL page ("Grant a permission").
    const admin = (await as(ADMIN)).page;
    await go(admin, `#/acl/documents/document/${doc.id}`);
    await heading(admin, `Access to ${label}`).waitFor();
    await admin.getByLabel('Role', { exact: true }).selectOption({ label: role.label });
    await admin.getByLabel('Permission to grant', { exact: true }).selectOption('documents.document_view');
    await admin.getByRole('button', { name: 'Grant', exact: true }).click();
    const revoke = admin.getByRole('button', { name: `Revoke View documents from ${role.label}`, exact: true });
    await revoke.waitFor();
    await shot(admin, 'grant-acl-page');
    const acls = await all(base);
    check(acls.length === 1 && acls[0].role.id === role.id && acls[0].permissions.map((p) => p.pk).join() === 'documents.document_view',
      `after the grant the ACLs are ${JSON.stringify(acls)}`);
    await page.reload();
    await documentsTable(page).getByRole('link', { name: label, exact: true }).waitFor();
    await shot(page, 'grant-after');
    await documentsTable(page).getByRole('link', { name: label, exact: true }).click();
    await heading(page, label).waitFor();
    check(page.url().endsWith(`#/documents/${doc.id}`), `the row links to ${page.url()}`);
    await shot(page, 'grant-document');
    // The administrator revokes it on the same page.
    await revoke.click();
    await admin.getByText('No role holds a permission on this object itself', { exact: false }).waitFor();
    check((await all(base)).length === 0, 'the ACL is still there after the revoke');
    await go(page, '#/documents');
    await page.getByText(/^\s*0 documents\s*$/).first().waitFor();
    check((await page.getByRole('link', { name: label, exact: true }).count()) === 0, 'the document is still listed after the revoke');
    await go(page, `#/documents/${doc.id}`);
    await page.getByText(/not found|no such|does not exist/i).first().waitFor();
    check((await heading(page, label).count()) === 0, 'the revoked document still shows its heading');
    await shot(page, 'revoke-not-found');
  });

  await step('a change by someone else appears on an open document page', async (opened) => {
    const { page } = await as(alice);
    await go(page, `#/documents/${invoice2.id}`);
    await heading(page, 'Invoice 2').waitFor();
    const old = await valueOf(invoice2.id, 'delivery_time');
    const input = page.getByRole('textbox', { name: /^Delivery time\b/ }).first();
    await until(() => input.inputValue(), (v) => v === old.value, 5000, 'Delivery time shown');
    // Let the page's change feed connect before the change.
    await page.waitForTimeout(300);
    const wanted = old.value.startsWith('11:') ? '14:45' : '11:45';
    const changed = await api('PATCH', `/api/v4/documents/${invoice2.id}/metadata/${old.id}/`, { value: wanted });
    const started = Date.now();
    await until(() => input.inputValue(), (v) => v === changed.value, 10000, `Delivery time ${changed.value} without a reload`);
    await page.getByRole('status').filter({ hasText: /Updated/ }).first().waitFor({ timeout: 10000 });
    console.log(`#   shown ${Date.now() - started} ms after the change: ${JSON.stringify(await page.getByRole('status').filter({ hasText: /Updated/ }).first().innerText())}`);
    await shot(page, 'live-update');
  });

  await step('accessibility: no serious or critical axe violation', async (opened) => {
    const context = await newContext();
    opened.push(context);
    const page = await context.newPage();
    await go(page, '');
    await heading(page, 'Sign in to docmeta').waitFor();
    await axeCheck(page, 'the sign-in page');
    const a = await as(alice);
    await go(a.page, '#/documents');
    await documentsTable(a.page).waitFor();
    await axeCheck(a.page, 'the documents list');
    await go(a.page, `#/documents/${invoice1.id}`);
    await heading(a.page, 'Invoice 1').waitFor();
    await a.page.getByRole('heading', { level: 2, name: 'Files', exact: true }).waitFor();
    await axeCheck(a.page, 'a document page');
    const admin = await as(ADMIN);
    await go(admin.page, '#/admin');
    await heading(admin.page, 'Administration').waitFor();
    await axeCheck(admin.page, 'the administration page');
    await go(admin.page, '#/admin/metadata-types');
    await admin.page.getByRole('link', { name: 'Status', exact: true }).first().waitFor();
    await axeCheck(admin.page, 'the metadata types list');
    await go(admin.page, `#/acl/documents/document/${invoice1.id}`);
    await admin.page.getByRole('button', { name: 'Explain', exact: true }).waitFor();
    await axeCheck(admin.page, 'an ACL page');
  });

  await step('administration: metadata types, an ACL page and "why can this user see it?"', async (opened) => {
    const { page } = await as(ADMIN);
    await go(page, '#/documents');
    await heading(page, 'Documents').waitFor();
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Administration', exact: true }).click();
    await heading(page, 'Administration').waitFor();
    for (const name of ['Metadata types', 'Document types', 'Users', 'Groups', 'Roles']) {
      await page.getByRole('link', { name, exact: true }).first().waitFor();
    }
    await shot(page, 'admin');
    await page.getByRole('link', { name: 'Metadata types', exact: true }).first().click();
    await page.getByRole('heading', { level: 1, name: /Metadata types/ }).waitFor();
    await shot(page, 'admin-metadata-types');
    await page.getByRole('link', { name: 'Invoice number', exact: true }).first().click();
    const label = page.getByLabel('Label', { exact: true });
    await until(() => label.inputValue(), (v) => v === 'Invoice number', 5000, 'the form of Invoice number');
    const validator = await page.getByLabel('Validator', { exact: true }).inputValue();
    check(/RegularExpressionValidator$/.test(validator), `the validator picker shows ${JSON.stringify(validator)}`);
    const args = await page.getByLabel(/^Validation arguments/).inputValue();
    check(args.includes('INV-'), `the validation arguments show ${JSON.stringify(args)}`);
    await shot(page, 'admin-metadata-type');
    // A document's ACL page, from its "Access" link.
    await go(page, `#/documents/${invoice1.id}`);
    await heading(page, 'Invoice 1').waitFor();
    await page.getByRole('link', { name: 'Access', exact: true }).click();
    await page.getByRole('button', { name: 'Explain', exact: true }).waitFor();
    check(page.url().includes(`#/acl/documents/document/${invoice1.id}`), `"Access" leads to ${page.url()}`);
    const userSelect = page.getByLabel('User', { exact: true });
    const users = await userSelect.locator('option').evaluateAll((os) => os.map((o) => ({ value: o.value, text: o.textContent.trim() })));
    const aliceOption = users.find((o) => o.text === 'alice' || o.text.startsWith('alice'));
    check(aliceOption, `the User choices ${JSON.stringify(users.map((u) => u.text))} lack alice`);
    await userSelect.selectOption(aliceOption.value);
    const permission = page.getByLabel('Permission', { exact: true });
    const permissions = await permission.locator('option').evaluateAll((os) => os.map((o) => ({ value: o.value, text: o.textContent.trim() })));
    const view = permissions.find((o) => o.value === 'documents.document_view') || permissions.find((o) => /document_view|View document/i.test(o.text + o.value));
    check(view, `the Permission choices ${JSON.stringify(permissions)} lack documents.document_view`);
    await permission.selectOption(view.value);
    await page.getByRole('button', { name: 'Explain', exact: true }).click();
    const answer = page.getByRole('status').filter({ hasText: /\S/ }).last();
    await answer.waitFor();
    const text = await answer.innerText();
    console.log(`#   explain alice / ${view.value}: ${JSON.stringify(text.slice(0, 200))}`);
    check(/alice|allow|grant|may|yes|can/i.test(text), `the answer does not read as an answer: ${text}`);
    check(!/\brole \d/.test(text), `the answer names a role by its id: ${text}`);
    await shot(page, 'acl-explain');
  });

  await step('a metadata type form previews its templates before they are saved', async () => {
    const { page } = await as(ADMIN);
    const before = (await api('GET', '/api/v4/metadata/metadata-types/?page_size=1')).count;
    await go(page, '#/admin/metadata-types/new');
    await heading(page, 'New metadata type').waitFor();
    await page.getByLabel('Default (template)', { exact: true }).fill('{{ 6 * 7 }}');
    await page.getByLabel('Lookup (template)', { exact: true }).fill('draft, {{ 1 + 1 }}');
    await page.getByRole('button', { name: 'Preview', exact: true }).click();
    const output = page.locator('#preview-output');
    const shown = await until(() => output.innerText(), (t) => /42/.test(t), 5000, 'the default rendered as 42');
    const choices = await output.getByRole('listitem').allInnerTexts();
    check(JSON.stringify(choices) === JSON.stringify(['draft', '2']), `the lookup's choices show as ${JSON.stringify(choices)}`);
    check((await output.getAttribute('role')) === 'status', 'the preview is not in a role=status region');
    console.log(`#   preview: ${JSON.stringify(shown.replace(/\s+/g, ' ').trim())}`);
    await shot(page, 'metadata-type-preview');
    await axeCheck(page, 'a metadata type page with a preview');
    // An edit after the first preview renders again; a broken template is reported in an alert.
    await page.getByLabel('Default (template)', { exact: true }).fill('{{ 6 * ');
    const alert = page.getByRole('alert').filter({ hasText: /Default:/ }).first();
    await alert.waitFor();
    console.log(`#   broken default: ${JSON.stringify(await alert.innerText())}`);
    // For a document: its label, rendered as the template reads it.
    await page.getByLabel('Default (template)', { exact: true }).fill('{{ document.label }}');
    await page.getByLabel('Document ID (optional)', { exact: true }).fill(String(invoice2.id));
    await until(() => output.innerText(), (t) => t.includes('Invoice 2'), 5000, 'the default rendered for Invoice 2');
    await page.getByLabel('Document ID (optional)', { exact: true }).fill('999999');
    const refusal = await until(() => alertBeside(page.getByLabel('Document ID (optional)', { exact: true })), (a) => a !== null, 5000, 'an unknown document refused beside its field');
    console.log(`#   unknown document: ${JSON.stringify(refusal.text)}`);
    check((await api('GET', '/api/v4/metadata/metadata-types/?page_size=1')).count === before, 'the preview saved a metadata type');
    // On a saved type, the same form renders its current (unsaved) text.
    const status = (await all('/api/v4/metadata/metadata-types/')).find((t) => t.name === 'status');
    await go(page, `#/admin/metadata-types/${status.id}`);
    await page.getByRole('button', { name: 'Preview', exact: true }).click();
    await until(() => output.innerText(), (t) => /paid/.test(t) && /draft/.test(t), 5000, 'the choices of Status');
  });

  await step('sign out: back to the sign-in page, and the old cookie no longer works', async (opened) => {
    const { context, page } = await open(opened, alice);
    await go(page, '#/documents');
    await heading(page, 'Documents').waitFor();
    const cookie = (await context.cookies()).find((c) => c.name === COOKIE);
    check(cookie, 'no session cookie');
    const ask = () => fetch(BASE + '/ui/session', { headers: { Cookie: `${COOKIE}=${cookie.value}` } });
    check((await ask()).status === 200, 'GET /ui/session with the cookie is not 200 before the sign-out');
    // A sign-out the server refuses (500 here) leaves the user signed in, and says so.
    const failing = async (route) => (route.request().method() === 'DELETE'
      ? route.fulfill({ status: 500, contentType: 'application/json', body: '{"detail":"Something broke."}' })
      : route.continue());
    await page.route('**/ui/session', failing);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('button', { name: 'Sign out', exact: true }).click();
    const failure = page.getByRole('alert').filter({ hasText: /still signed in/ }).first();
    await failure.waitFor({ timeout: 5000 });
    console.log(`#   refused sign-out: ${JSON.stringify(await failure.innerText())}`);
    check(await heading(page, 'Documents').isVisible(), 'a refused sign-out left the documents page');
    check((await ask()).status === 200, 'the session does not work after a refused sign-out');
    await page.unroute('**/ui/session', failing);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('button', { name: 'Sign out', exact: true }).click();
    await heading(page, 'Sign in to docmeta').waitFor();
    await shot(page, 'signed-out');
    const after = await ask();
    check(after.status === 401, `GET /ui/session with the old cookie answers ${after.status}, not 401`);
    const apiAfter = await fetch(BASE + '/api/v4/documents/', { headers: { Cookie: `${COOKIE}=${cookie.value}` } });
    check(apiAfter.status === 401, `the API with the old cookie answers ${apiAfter.status}, not 401`);
    check((await context.cookies()).every((c) => c.name !== COOKIE || !c.value), 'the cookie is still set after the sign-out');
  });

  await step('the assets: size, Content-Security-Policy, first render', async (opened) => {
    let total = 0;
    for (const asset of ['/', '/ui/app.js', '/ui/app.css', '/ui/icon.svg']) {
      const response = await fetch(BASE + asset, { headers: { 'Accept-Encoding': 'identity' } });
      check(response.ok, `${asset} answered ${response.status}`);
      const bytes = (await response.arrayBuffer()).byteLength;
      total += bytes;
      const csp = response.headers.get('content-security-policy');
      check(csp, `${asset} has no Content-Security-Policy header`);
      check(!/unsafe-inline|unsafe-eval/.test(csp), `${asset}'s Content-Security-Policy allows inline code: ${csp}`);
      check(/default-src 'none'|default-src 'self'|script-src 'self'/.test(csp), `${asset}'s Content-Security-Policy: ${csp}`);
      console.log(`#   ${asset}: ${bytes} bytes, ${response.headers.get('content-type')}`);
    }
    console.log(`#   assets: ${total} bytes in all`);
    check(total <= 200 * 1024, `the assets weigh ${total} bytes, more than 200 KB`);
    const csp = (await fetch(BASE + '/')).headers.get('content-security-policy');
    console.log(`#   CSP: ${csp}`);
    // First render: from the navigation to the documents table, measured in the page.
    const { page } = await open(opened, alice);
    const times = [];
    for (let i = 0; i < 3; i++) {
      if (i > 0) await page.goto('about:blank');
      const started = Date.now();
      await page.goto(BASE + '/#/documents', { waitUntil: 'commit' });
      const inPage = await page.waitForFunction(
        () => {
          const caption = document.querySelector('table caption');
          return caption && caption.textContent.includes('Documents') && document.querySelector('tbody tr a') ? performance.now() : false;
        },
        null,
        { polling: 'raf', timeout: 5000 },
      );
      times.push({ page: Math.round(await inPage.jsonValue()), wall: Date.now() - started });
    }
    console.log(`first render: ${times[0].page} ms (${times.map((t) => `${t.page} ms in the page, ${t.wall} ms wall`).join('; ')})`);
    await shot(page, 'first-render');
  });

  for (const { context } of sessions.values()) await context.close().catch(() => {});
  await browser.close();
  fs.rmSync(userDataDir, { recursive: true, force: true });
  if (consoleErrors.length) {
    console.log(`# other console errors: ${consoleErrors.length}`);
    for (const e of consoleErrors.slice(0, 20)) console.log(`#   ${e}`);
  }
  if (httpErrors.length) {
    console.log(`# the pages' requests refused (4xx/5xx; the ones the steps provoke among them): ${httpErrors.length}`);
    for (const e of httpErrors.slice(0, 40)) console.log(`#   ${e}`);
  }
  console.log(`${results.passed} passed, ${results.failed} failed`);
  process.exit(results.failed ? 1 : 0);
}

const deadline = setTimeout(() => {
  console.log('not ok - the run took more than 120 s');
  console.log(`${results.passed} passed, ${results.failed + 1} failed`);
  process.exit(1);
}, 120_000);
deadline.unref();

main().catch(async (error) => {
  console.log(`not ok - ${currentStep || 'setup'}: ${error.stack || error}`);
  console.log(`${results.passed} passed, ${results.failed + 1} failed`);
  await browser?.close().catch(() => {});
  process.exit(1);
});
