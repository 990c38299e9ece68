// First render of the web interface: the time from the start of a navigation to `/` until the
// documents table shows its first row, in headless Chromium (Debian's, driven by the pinned
// playwright-core), for a signed-in user. Each round opens a new browser context (an empty
// cache: every asset downloaded) with the session cookie, then the same page again (assets
// revalidated with their ETag). Prints the median and the 90th percentile of each.
//
// Usage: DOCMETA_URL=... DOCMETA_USER=alice DOCMETA_PASSWORD=... DOCMETA_BROWSER_TOOLS=...
//        [ROUNDS=20] node benches/ui/first-render.mjs   (benches/ui/first-render.sh runs it)
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const base = process.env.DOCMETA_URL;
const tools = process.env.DOCMETA_BROWSER_TOOLS;
const user = process.env.DOCMETA_USER || 'alice';
const password = process.env.DOCMETA_PASSWORD || 'demo-password';
const rounds = Number(process.env.ROUNDS || 20);
if (!base || !tools) {
  console.error('DOCMETA_URL and DOCMETA_BROWSER_TOOLS are required');
  process.exit(2);
}
const require = createRequire(join(tools, 'node_modules', '/'));
const { chromium } = require('playwright-core');

const profile = mkdtempSync(join(tmpdir(), 'docmeta-bench-'));
process.env.TMPDIR = profile;
const browser = await chromium.launch({
  executablePath: process.env.DOCMETA_CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
});

// The session cookie, made once through the interface's own sign-in.
const signIn = await fetch(`${base}/ui/session`, {
  method: 'POST',
  headers: { 'Content-Type': 'application/json' },
  body: JSON.stringify({ username: user, password }),
});
if (signIn.status !== 200) {
  console.error(`sign-in failed: ${signIn.status} ${await signIn.text()}`);
  process.exit(1);
}
const [pair] = signIn.headers.get('set-cookie').split(';');
const [name, value] = pair.split('=');
const url = new URL(base);

// Records, inside the page, when the documents table's first row link appears (set up before
// any script of the page runs; the page's policy does not apply to it).
const observe = () => {
  const seen = () => document.querySelector('table tbody tr a');
  const done = () => { window.__rendered = performance.now(); };
  new MutationObserver((_, observer) => {
    if (seen()) { done(); observer.disconnect(); }
  }).observe(document, { childList: true, subtree: true });
};

async function measure(page) {
  await page.goto(`${base}/`, { waitUntil: 'commit' });
  await page.waitForFunction(() => window.__rendered !== undefined, null, { timeout: 10000 });
  return page.evaluate(() => window.__rendered);
}

const cold = [];
const warm = [];
for (let i = 0; i < rounds; i++) {
  const context = await browser.newContext();
  await context.addCookies([{ name, value, domain: url.hostname, path: '/', httpOnly: true, sameSite: 'Strict' }]);
  await context.addInitScript(observe);
  const page = await context.newPage();
  cold.push(await measure(page));
  warm.push(await measure(page));
  await context.close();
}
await browser.close();
rmSync(profile, { recursive: true, force: true });

const stat = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q) => s[Math.min(s.length - 1, Math.floor(q * s.length))];
  return `median ${at(0.5).toFixed(0)} ms, p90 ${at(0.9).toFixed(0)} ms, min ${s[0].toFixed(0)} ms`;
};
console.log(`first render, empty cache (${rounds} rounds): ${stat(cold)}`);
console.log(`first render, assets revalidated (${rounds} rounds): ${stat(warm)}`);
