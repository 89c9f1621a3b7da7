// The area before paying: a free look at what the checker would redraw, then that very area
// drawn at its price (docs/web.md, "The area before paying").
import { test, expect } from '@playwright/test';
import { apiGet, signIn, upload } from './support';

interface Box { x0: number; y0: number; x1: number; y1: number }

test('the area is shown first for free, then "Draw it" draws that area at its price', async ({ page }) => {
  await signIn(page, 'preview');
  await upload(page, 'single_pet.png');
  await page.getByText('Embroidery', { exact: true }).click();
  await page.getByRole('button', { name: 'Show me the area first' }).click();

  const status = page.getByTestId('status');
  await expect(status).toHaveAttribute('data-status', 'failed', { timeout: 60_000 });
  await expect(status).toHaveText(/^The area, before drawing\./);
  await expect(page.getByTestId('balance')).toHaveText('6');
  const previewed = page.getByTestId('previewed');
  const photo = previewed.getByRole('img');
  await expect.poll(() => photo.evaluate((i: HTMLImageElement) => i.naturalWidth)).toBeGreaterThan(0);
  // The outline lies on the photo, inside its edges.
  const [a, p] = [await previewed.getByTestId('area').boundingBox(), await photo.boundingBox()];
  if (!a || !p) throw new Error('not shown');
  expect(a.width).toBeGreaterThan(10);
  expect(a.x).toBeGreaterThanOrEqual(p.x - 1);
  expect(a.x + a.width).toBeLessThanOrEqual(p.x + p.width + 1);
  const looked = new URL(page.url()).pathname.split('/').pop() ?? '';
  const { candidates } = ((await apiGet(page, `/v1/edits/${looked}`)) as { failure: { candidates: { area: Box }[] } }).failure;
  expect(candidates).toHaveLength(1);
  const shown = candidates[0]?.area;

  await previewed.getByRole('button', { name: 'Draw it — 4 credits' }).click();
  await expect(status).toHaveAttribute('data-status', 'succeeded', { timeout: 60_000 });
  await expect(page.getByTestId('balance')).toHaveText('2');
  const drawn = new URL(page.url()).pathname.split('/').pop() ?? '';
  expect(drawn).not.toBe(looked);
  const done = (await apiGet(page, `/v1/edits/${drawn}`)) as { result: { area: Box } };
  expect(done.result.area).toEqual(shown);

  // The ledger names the look for what it was, not a failure.
  await page.getByRole('button', { name: 'Account' }).click();
  const ledger = page.getByTestId('ledger');
  await expect(ledger.getByRole('row').filter({ hasText: 'Area shown first: refunded' })).toContainText('+4');
  await expect(ledger.getByText(/could not be made/)).toHaveCount(0);
});
