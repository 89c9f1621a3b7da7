import { test, expect, type Page } from '@playwright/test';
import AxeBuilder from '@axe-core/playwright';
import { join } from 'node:path';

const samples = process.env.ATELIER_SAMPLES ?? '/tmp/samples';
const apiUrl = process.env.ATELIER_API_URL ?? 'http://127.0.0.1:8787';

/** A fresh user per test (tests run in parallel against one stack). */
function user(name: string): string {
  return `web-${name}-${String(Date.now())}-${String(Math.floor(Math.random() * 1e6))}`;
}

/** Signs a brand-new user in through the local issuer's OIDC flow (code + PKCE). */
async function signIn(page: Page, name: string): Promise<void> {
  await page.goto('/');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByLabel('Email').fill(`${user(name)}@example.test`);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByTestId('balance')).toHaveText('6');
}

async function apiGet(page: Page, path: string): Promise<unknown> {
  const raw = await page.evaluate(() => sessionStorage.getItem('atelier.token'));
  const { token } = JSON.parse(raw ?? '{}') as { token: string };
  const res = await page.request.get(`${apiUrl}${path}`, { headers: { authorization: `Bearer ${token}` } });
  expect(res.status()).toBe(200);
  return res.json();
}

/** With ATELIER_SCREENSHOTS set, saves the main screens for the README (docs/web/). */
async function shot(page: Page, name: string): Promise<void> {
  if (process.env.ATELIER_SCREENSHOTS) await page.screenshot({ path: join('..', 'docs', 'web', `${name}.jpg`), type: 'jpeg', quality: 70, fullPage: true });
}

async function upload(page: Page, file: string): Promise<void> {
  await page.getByLabel('Choose a photo').setInputFiles(join(samples, file));
  await expect(page.getByText(/uploaded$/)).toBeVisible();
}

test('a brushed edit: upload, paint, pick a medium, see the price, pay, watch it deliver, compare, download', async ({ page }) => {
  await signIn(page, 'brush');
  await upload(page, 'single_pet.png');
  await page.getByLabel('An area I paint').check();
  const canvas = page.getByTestId('brush-canvas');
  await canvas.scrollIntoViewIfNeeded();
  const box = await canvas.boundingBox();
  if (!box) throw new Error('no canvas');
  await page.mouse.move(box.x + box.width * 0.3, box.y + box.height * 0.6);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.7, box.y + box.height * 0.6, { steps: 8 });
  await page.mouse.up();
  await expect(page.getByText('1 stroke(s) painted.')).toBeVisible();
  await page.getByText('Embroidery', { exact: true }).click();
  await expect(page.getByTestId('price')).toHaveText('Price: 3 credits');
  await shot(page, 'editor');
  await page.getByRole('button', { name: /Make it/ }).click();
  await expect(page.getByTestId('status')).toHaveAttribute('data-status', 'succeeded', { timeout: 60_000 });
  await expect(page.getByTestId('balance')).toHaveText('3');
  await page.getByLabel('Compare before and after').fill('20');

  // Pixels away from the stroke (the top third) are the original's: the delivered JPEG within
  // a few levels (the lossless master is checked pixel for pixel by the Rust tests and below).
  const same = await page.evaluate(async () => {
    const load = async (src: string) => {
      const img = new Image();
      img.src = src;
      await img.decode();
      const c = document.createElement('canvas');
      c.width = img.naturalWidth;
      c.height = img.naturalHeight;
      const ctx = c.getContext('2d');
      if (!ctx) throw new Error('no 2d');
      ctx.drawImage(img, 0, 0);
      return ctx.getImageData(0, 0, c.width, Math.floor(c.height / 3)).data;
    };
    const before = document.querySelector<HTMLImageElement>('img.before');
    const after = document.querySelector<HTMLImageElement>('[data-testid=result]');
    if (!before || !after) return 'images missing';
    const [a, b] = await Promise.all([load(before.src), load(after.src)]);
    if (a.length !== b.length) return 'sizes differ';
    let sum = 0;
    let far = 0;
    for (let i = 0; i < a.length; i++) {
      if (i % 4 === 3) continue; // alpha
      const d = Math.abs((a[i] ?? 0) - (b[i] ?? 0));
      sum += d;
      if (d > 12) far++;
    }
    const channels = (a.length / 4) * 3;
    if (sum / channels > 2.5) return `mean difference ${String(sum / channels)}`;
    if (far / channels > 0.02) return `${String(far)} channels differ by more than 12 levels`;
    return 'same';
  });
  expect(same).toBe('same');

  await shot(page, 'result');
  const download = page.waitForEvent('download');
  await page.getByRole('link', { name: 'Download' }).click();
  expect((await download).suggestedFilename()).toMatch(/^atelier-.*\.jpg$/);
  const master = page.waitForEvent('download');
  await page.getByRole('button', { name: /Download lossless/ }).click();
  expect((await master).suggestedFilename()).toMatch(/^atelier-.*\.png$/);

  // A repair of it: charged like the edit, and the lineage lists both versions.
  await page.getByLabel(/Say what to improve/).fill('make the stitches finer');
  await page.getByRole('button', { name: 'Repair', exact: true }).click();
  await expect(page.getByRole('heading', { name: /^Repair:/ })).toBeVisible();
  await expect(page.getByTestId('status')).toHaveAttribute('data-status', 'succeeded', { timeout: 60_000 });
  await expect(page.getByTestId('balance')).toHaveText('0');
  const versions = page.getByRole('region', { name: 'Versions' }).getByRole('listitem');
  await expect(versions).toHaveCount(2);
  await expect(versions.first()).toContainText('Original edit');
});

test('two pets: the questions, an answer, then delivered (the first try refunded)', async ({ page }) => {
  await signIn(page, 'clarify');
  await upload(page, 'two_pets.png');
  await page.getByText('Linocut', { exact: true }).click();
  await page.getByRole('button', { name: /Make it/ }).click();
  await expect(page.getByTestId('status')).toHaveAttribute('data-status', 'failed', { timeout: 60_000 });
  await expect(page.getByText('Your credits were refunded.')).toBeVisible();
  await expect(page.getByTestId('balance')).toHaveText('6');
  await shot(page, 'clarification');
  await page.getByLabel('Your answer').fill('the cat on the left');
  await page.getByRole('button', { name: 'Try again with this answer' }).click();
  await expect(page.getByTestId('status')).toHaveAttribute('data-status', 'succeeded', { timeout: 60_000 });
  await expect(page.getByTestId('balance')).toHaveText('2');
});

test('a double click on submit makes one job and one charge', async ({ page }) => {
  await signIn(page, 'double');
  await upload(page, 'single_pet.png');
  await page.getByText('Needle felt', { exact: true }).click();
  await expect(page.getByTestId('price')).toHaveText('Price: 4 credits');
  await page.getByRole('button', { name: /Make it/ }).dblclick();
  await expect(page.getByTestId('status')).toHaveAttribute('data-status', 'succeeded', { timeout: 60_000 });
  const jobs = (await apiGet(page, '/v1/edits')) as { items: unknown[] };
  expect(jobs.items).toHaveLength(1);
  const ledger = (await apiGet(page, '/v1/account/ledger')) as { items: { kind: string; amount: number }[] };
  expect(ledger.items.filter((r) => r.kind === 'debit')).toEqual([expect.objectContaining({ amount: -4 })]);
  expect(((await apiGet(page, '/v1/account')) as { balance: number }).balance).toBe(2);
  // What the person sees agrees: one edit in the history, the grant and one debit in the ledger.
  await page.getByRole('button', { name: 'History' }).click();
  await expect(page.getByRole('region', { name: 'Your edits' }).getByRole('listitem')).toHaveCount(1);
  await page.getByRole('button', { name: 'Account' }).click();
  const rows = page.getByTestId('ledger').getByRole('row');
  await expect(rows).toHaveCount(2);
  await expect(rows.nth(0)).toContainText('-4');
  await expect(rows.nth(1)).toContainText('+6');
});

test('a reload while submitting sends the same key again: still one job and one charge', async ({ page }) => {
  await signIn(page, 'reload');
  await upload(page, 'single_pet.png');
  await page.getByText('Origami', { exact: true }).click();
  await expect(page.getByTestId('price')).toHaveText('Price: 4 credits');
  // Hold the first submit in flight, then reload: the key is already in session storage.
  await page.route('**/v1/edits', async (route) => {
    if (route.request().method() === 'POST') await new Promise((r) => setTimeout(r, 1500));
    await route.continue().catch(() => undefined);
  });
  await page.getByRole('button', { name: /Make it/ }).click();
  await page.waitForTimeout(300);
  await page.unroute('**/v1/edits');
  await page.reload();
  await expect(page.getByTestId('status')).toHaveAttribute('data-status', 'succeeded', { timeout: 60_000 });
  const ledger = (await apiGet(page, '/v1/account/ledger')) as { items: { kind: string }[] };
  expect(ledger.items.filter((r) => r.kind === 'debit')).toHaveLength(1);
});

test('not enough credits leads to buying a pack', async ({ page }) => {
  await signIn(page, 'buy');
  await upload(page, 'single_pet.png');
  await page.getByText('Crochet', { exact: true }).click();
  await page.getByRole('button', { name: /Make it/ }).click();
  await expect(page.getByTestId('status')).toHaveAttribute('data-status', 'succeeded', { timeout: 60_000 });
  await page.getByRole('button', { name: 'New edit' }).click();
  await upload(page, 'single_pet.png');
  await page.getByText('Crochet', { exact: true }).click();
  await page.getByRole('button', { name: /Make it/ }).click();
  await expect(page.getByRole('alert')).toContainText('Not enough credits');
  await page.getByRole('button', { name: /^50 credits/ }).click();
  await expect(page.getByRole('heading', { name: 'Stand-in Stripe Checkout' })).toBeVisible();
  await page.getByRole('button', { name: 'Pay' }).click();
  await page.goto('/');
  await expect(page.getByTestId('balance')).toHaveText('52', { timeout: 15_000 });
});

test.describe('at a phone width', () => {
  test.use({ viewport: { width: 390, height: 844 }, hasTouch: true });
  test('a pet edit fits and delivers', async ({ page }) => {
    await signIn(page, 'phone');
    await upload(page, 'single_pet.png');
    await page.getByText('Mosaic', { exact: true }).click();
    await expect(page.getByTestId('price')).toHaveText('Price: 4 credits');
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    await page.getByRole('button', { name: /Make it/ }).click();
    await expect(page.getByTestId('status')).toHaveAttribute('data-status', 'succeeded', { timeout: 60_000 });
  });
});

test('the sign-in page and the editor have no serious or critical accessibility violations', async ({ page }) => {
  await page.goto('/');
  const serious = async () =>
    (await new AxeBuilder({ page }).analyze()).violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
  expect(await serious()).toEqual([]);
  await signIn(page, 'axe');
  await upload(page, 'single_pet.png');
  await page.getByLabel('An area I paint').check();
  expect(await serious()).toEqual([]);
});
