import { existsSync, mkdtempSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import express from 'express';
import { chromium, type Browser, type Page } from 'playwright-core';
import { loadConfig, type Config } from '../../src/config/config';
import { createDevelopersHandler } from '../../src/developers/developers-page';

const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const PHONE = { width: 390, height: 844 };
const VIEWPORTS: [string, { width: number; height: number }][] = [
  ['a 390×844 phone', PHONE],
  ['a 1280×800 desktop', { width: 1280, height: 800 }],
];

interface Served {
  readonly url: string;
  close(): Promise<void>;
}

async function serve(config: Config): Promise<Served> {
  const app = express();
  app.get('/developers', createDevelopersHandler(config));
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/developers`,
    close: () => new Promise((resolve, reject) => server.close((e) => (e ? reject(e) : resolve()))),
  };
}

/** The figures as a person sees them: rendered text of every element marked data-figure. */
async function shownFigures(page: Page): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const element of await page.locator('[data-figure]').all()) {
    const name = await element.getAttribute('data-figure');
    if (name !== null && (await element.isVisible())) out[name] = (await element.innerText()).trim();
  }
  return out;
}

const configs: readonly [string, Config][] = [
  ['memory, 77 per minute, tier pro=600', loadConfig({ RATE_LIMIT_PER_MINUTE: '77', RATE_LIMIT_TIERS: 'pro=600', AUTH_FAILURES_PER_MINUTE: '9' })],
  [
    'rtdb fail-closed, 250 per minute, tiers partner=1200 and free=5',
    loadConfig({
      RATE_LIMIT_PER_MINUTE: '250',
      RATE_LIMIT_TIERS: 'partner=1200,free=5',
      RATE_LIMIT_BACKEND: 'rtdb',
      RATE_LIMIT_FAILURE_POLICY: 'fail-closed',
      RATE_LIMIT_TIMEOUT_MS: '900',
      FIREBASE_DATABASE_URL: 'https://demo-default-rtdb.firebaseio.com',
    }),
  ],
];

function expectedFigures(config: Config): Record<string, string> {
  const rl = config.rateLimit;
  const seconds = (ms: number): string => String(Math.round(ms / 1000));
  const expected: Record<string, string> = {
    'limit-default': String(rl.defaultTier.policies[0].limit),
    'window-default': seconds(rl.defaultTier.policies[0].windowMs),
    'limit-auth-failures': String(rl.authFailures.limit),
    'window-auth-failures': seconds(rl.authFailures.windowMs),
    'limit-unauthenticated': String(rl.unauthenticated.limit),
    'window-unauthenticated': seconds(rl.unauthenticated.windowMs),
    'limit-refused-requests': String(rl.refusedRequests.limit),
    'window-refused-requests': seconds(rl.refusedRequests.windowMs),
    'token-cache-seconds': seconds(config.tokens.cacheTtlMs),
    sharing: rl.backend === 'memory' ? 'Per instance' : 'Shared',
  };
  for (const tier of rl.tiers) {
    expected[`limit-tier-${tier.name}`] = String(tier.policies[0].limit);
    expected[`window-tier-${tier.name}`] = seconds(tier.policies[0].windowMs);
  }
  if (rl.backend !== 'memory') {
    expected['failure-policy'] = rl.failurePolicy;
    expected['timeout-ms'] = String(rl.timeoutMs);
  }
  return expected;
}

describe('/developers in headless Chromium', () => {
  let browser: Browser;
  const screenshotDir = mkdtempSync(path.join(os.tmpdir(), 'firelimit-developers-'));

  beforeAll(async () => {
    if (!existsSync(CHROMIUM_PATH)) {
      throw new Error(
        `Chromium not found at ${CHROMIUM_PATH}. Install Debian's package (apt-get install chromium) or set CHROMIUM_PATH; ` +
          'this test must run in a real browser and is not skipped.',
      );
    }
    browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS });
  });

  afterAll(async () => {
    await browser?.close();
  });

  it.each(configs)('shows the configured figures with JavaScript disabled (%s)', async (label, config) => {
    const served = await serve(config);
    const context = await browser.newContext({ javaScriptEnabled: false, viewport: PHONE });
    try {
      const page = await context.newPage();
      const response = await page.goto(served.url);
      expect(response?.status()).toBe(200);
      expect(await page.locator('h1').innerText()).not.toBe('');
      const shown = await shownFigures(page);
      const expected = expectedFigures(config);
      for (const [name, value] of Object.entries(expected)) expect([name, shown[name]]).toEqual([name, value]);
      // No figure outside the configuration: a tier that is not configured is not shown.
      const tierFigures = Object.keys(shown).filter((name) => name.startsWith('limit-tier-'));
      expect(tierFigures.sort()).toEqual(config.rateLimit.tiers.map((t) => `limit-tier-${t.name}`).sort());
      await page.screenshot({ path: path.join(screenshotDir, `${(label.split(',')[0] ?? 'page').replace(/\W+/g, '-')}-phone.png`), fullPage: true });
    } finally {
      await context.close();
      await served.close();
    }
  });

  it.each(VIEWPORTS)('has no horizontal overflow at %s', async (_label, viewport) => {
    const served = await serve(configs[1]![1]);
    // The page itself has no script; this context runs only the measurement.
    const context = await browser.newContext({ viewport });
    try {
      const page = await context.newPage();
      await page.goto(served.url);
      // Strings, not functions: the tsconfig has no DOM types, and these run in the page, not in Node.
      expect(await page.evaluate<number>('document.scripts.length')).toBe(0);
      const widths = await page.evaluate<{ scroll: number; body: number; viewport: number }>(
        '({ scroll: document.documentElement.scrollWidth, body: document.body.scrollWidth, viewport: window.innerWidth })',
      );
      expect(widths.scroll).toBeLessThanOrEqual(widths.viewport);
      expect(widths.body).toBeLessThanOrEqual(widths.viewport);
      // Long code lines scroll inside their own box instead of widening the page.
      const codeOverflow = await page.evaluate<string[]>(
        "Array.from(document.querySelectorAll('pre')).map((pre) => getComputedStyle(pre).overflowX)",
      );
      expect(codeOverflow.every((value) => value === 'auto')).toBe(true);
    } finally {
      await context.close();
      await served.close();
    }
  });
});

