// A person's whole journey, at desktop width and at 390 px: sign in → photo → paid edit →
// compare after a reload and from History → "you need N more credits" by the button → buy →
// "+50 credits" → the form kept → the edit made → export and delete → sign out. Axe finds no
// serious or critical violation on any screen, and the console shows no error but the ones
// listed. With ATELIER_SCREENSHOTS set it saves the screens (PNG) to docs/screenshots/.
import { test, expect, type ConsoleMessage, type Page } from '@playwright/test';
import { stat } from 'node:fs/promises';
import AxeBuilder from '@axe-core/playwright';
import { join } from 'node:path';
import { signIn, upload } from './support';

/** Console errors that are not the app's: the local issuer's sign-in page and the stand-in
 *  Stripe's checkout page have no icon, so the browser's request for one fails. */
const EXPECTED_CONSOLE = (m: ConsoleMessage): boolean => m.location().url.endsWith('/favicon.ico') && !m.location().url.startsWith(appOrigin);
let appOrigin = '';

async function axeClean(page: Page, where: string): Promise<void> {
  const found = (await new AxeBuilder({ page }).analyze()).violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${where}: ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
  expect(found).toEqual([]);
}

/** A screen for the README: the visible part only, at CSS pixels, kept under 200 KB. */
async function shot(page: Page, device: string, name: string): Promise<void> {
  if (!process.env.ATELIER_SCREENSHOTS) return;
  const path = join('..', 'docs', 'screenshots', `${device}-${name}.png`);
  const size = page.viewportSize() ?? { width: 1280, height: 800 };
  // A photo compresses badly as PNG: the result screen is cut to the compare's upper part.
  const clip = name === 'result' ? { x: 0, y: 0, width: size.width, height: Math.min(size.height, 520) } : undefined;
  await page.screenshot({ path, animations: 'disabled', scale: 'css', clip });
  expect((await stat(path)).size).toBeLessThanOrEqual(200_000);
}

for (const [device, viewport] of [['desktop', { width: 1280, height: 800 }], ['phone', { width: 390, height: 844 }]] as const) {
  test.describe(device, () => {
    test.use({ viewport });
    test(`the whole journey of a person (${device})`, async ({ page, baseURL }) => {
      appOrigin = new URL(baseURL ?? 'http://127.0.0.1').origin;
      const errors: string[] = [];
      page.on('console', (m) => { if (m.type() === 'error' && !EXPECTED_CONSOLE(m)) errors.push(`${m.text()} (${m.location().url})`); });
      page.on('pageerror', (e) => errors.push(e.message));

      await page.goto('/');
      await expect(page.getByRole('button', { name: 'Sign in' })).toBeVisible();
      await axeClean(page, 'sign-in');
      await signIn(page, `journey-${device}`);
      await upload(page, 'single_pet.png');
      await page.getByRole('radio', { name: /^Embroidery/ }).check({ force: true });
      await expect(page.getByTestId('price')).toHaveText('Price: 4 credits');
      await axeClean(page, 'editor');
      await shot(page, device, 'editor');
      await page.getByRole('button', { name: /Make it/ }).click();
      await expect(page.getByTestId('status')).toHaveAttribute('data-status', 'succeeded', { timeout: 60_000 });
      await expect(page.getByTestId('balance')).toHaveText('2');
      const edit = page.url();

      // The compare's "before" is the server's kept original: after a reload, and from History.
      await page.reload();
      await expect(page.getByTestId('status')).toHaveAttribute('data-status', 'succeeded');
      await expect(page.locator('img.before')).toHaveAttribute('src', /^https?:\/\//);
      await axeClean(page, 'result');
      await shot(page, device, 'result');
      await page.getByRole('button', { name: 'History' }).click();
      const entry = page.getByRole('region', { name: 'Your edits' }).getByRole('listitem');
      await expect(entry).toHaveCount(1);
      await expect(entry.locator('img.thumb')).toHaveJSProperty('complete', true);
      await expect(entry.getByTestId('listed-status')).toHaveText('Delivered');
      await axeClean(page, 'history');
      await shot(page, device, 'history');
      await entry.getByRole('link').click();
      await expect(page).toHaveURL(edit);
      await expect(page.locator('img.before')).toHaveAttribute('src', /^https?:\/\//);

      // Not enough for a second edit: said by the button, before pressing; buy, come back.
      await page.getByRole('button', { name: 'New edit' }).click();
      await upload(page, 'single_pet.png');
      await page.getByRole('radio', { name: /^Origami/ }).check({ force: true });
      await expect(page.getByTestId('short')).toHaveText('You need 2 more credits for this edit.');
      await expect(page.getByRole('button', { name: /Make it/ })).toBeDisabled();
      await axeClean(page, 'short');
      await page.getByRole('button', { name: /^50 credits/ }).click();
      await page.getByRole('button', { name: 'Pay' }).click();
      await expect(page.getByTestId('notice')).toHaveText('+50 credits added. Thank you!', { timeout: 15_000 });
      await expect(page.getByTestId('balance')).toHaveText('52');
      await expect(page.getByRole('radio', { name: /^Origami/ })).toBeChecked();
      await expect(page.getByTestId('preview')).toBeVisible();
      await shot(page, device, 'credits-added');
      await page.getByRole('button', { name: /Make it/ }).click();
      await expect(page.getByTestId('status')).toHaveAttribute('data-status', 'succeeded', { timeout: 60_000 });
      await expect(page.getByTestId('balance')).toHaveText('48');

      // Export, then delete the first edit's images, on the Account page.
      await page.getByRole('button', { name: 'Account' }).click();
      const download = page.waitForEvent('download');
      await page.getByRole('button', { name: 'Download my data' }).click();
      expect((await download).suggestedFilename()).toBe('atelier-export.zip');
      await expect(page.getByTestId('export-done')).toContainText('2 edit(s)');
      const first = page.getByTestId(`data-${edit.split('/').pop() ?? ''}`);
      await first.getByRole('button', { name: 'Delete its images' }).click();
      await first.getByRole('button', { name: 'Press again to delete its images' }).click();
      await expect(first.getByRole('status')).toContainText('are deleted');
      await axeClean(page, 'account');
      await shot(page, device, 'account');

      await page.getByRole('button', { name: /^Sign out/ }).click();
      await expect(page.getByRole('button', { name: 'Sign in' })).toBeVisible();
      expect(errors).toEqual([]);
    });
  });
}
