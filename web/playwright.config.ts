// Browser tests against the real local stack that `cargo xtask web-test` starts (it sets
// ATELIER_WEB_URL and friends); Debian's Chromium, since Playwright's download is not used.
import { defineConfig } from '@playwright/test';

export default defineConfig({
  testDir: './tests',
  // A `test.only` left in would run one test and report the rest as not there: always refused
  // (a focused run is `ATELIER_WEB_GREP=regex cargo xtask web-test`).
  forbidOnly: true,
  timeout: 120_000,
  fullyParallel: true,
  workers: 2,
  reporter: [['list'], ['json']],
  use: {
    baseURL: process.env.ATELIER_WEB_URL ?? 'http://127.0.0.1:4173',
    launchOptions: { executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] },
    acceptDownloads: true,
    trace: 'retain-on-failure',
  },
});
