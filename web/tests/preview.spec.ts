// The area before paying: a free look at what the checker would redraw, then that very area
// drawn at its price (docs/web.md, "The area before paying").
import { test, expect, type Page } from '@playwright/test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { apiGet, samples, signIn, upload } from './support';

interface Box { x0: number; y0: number; x1: number; y1: number }

/**
 * The sample stored sideways in a JPEG whose EXIF says "turn 90° clockwise to show"
 * (orientation 6), as a phone stores a photo taken turned.
 */
async function sidewaysJpeg(page: Page, file: string): Promise<Buffer> {
  const png = readFileSync(join(samples, file)).toString('base64');
  const jpeg64 = await page.evaluate(async (src) => {
    const img = new Image();
    img.src = `data:image/png;base64,${src}`;
    await img.decode();
    const c = document.createElement('canvas');
    [c.width, c.height] = [img.height, img.width];
    const ctx = c.getContext('2d');
    if (!ctx) throw new Error('no canvas');
    // Stored turned 90° counter-clockwise, so that the EXIF turn shows it upright.
    ctx.translate(0, c.height);
    ctx.rotate(-Math.PI / 2);
    ctx.drawImage(img, 0, 0);
    const blob = await new Promise<Blob | null>((r) => { c.toBlob(r, 'image/jpeg', 0.92); });
    if (!blob) throw new Error('no JPEG');
    let bytes = '';
    for (const b of new Uint8Array(await blob.arrayBuffer())) bytes += String.fromCharCode(b);
    return btoa(bytes);
  }, png);
  const jpeg = Buffer.from(jpeg64, 'base64');
  // APP1 "Exif", a big-endian TIFF with one entry: Orientation (0x0112), SHORT, 1, value 6.
  const exif = Buffer.from([
    0xff, 0xe1, 0x00, 0x22, 0x45, 0x78, 0x69, 0x66, 0x00, 0x00,
    0x4d, 0x4d, 0x00, 0x2a, 0x00, 0x00, 0x00, 0x08, 0x00, 0x01,
    0x01, 0x12, 0x00, 0x03, 0x00, 0x00, 0x00, 0x01, 0x00, 0x06, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00,
  ]);
  return Buffer.concat([jpeg.subarray(0, 2), exif, jpeg.subarray(2)]);
}

/** With ATELIER_SCREENSHOTS set, saves the screen for docs/web.md (docs/web/). */
async function shot(page: Page, name: string): Promise<void> {
  if (process.env.ATELIER_SCREENSHOTS) await page.screenshot({ path: join('..', 'docs', 'web', `${name}.jpg`), type: 'jpeg', quality: 70, fullPage: true });
}

/** Asks for the area first and waits for it; the area the API gives. */
async function previewArea(page: Page): Promise<Box> {
  await page.getByRole('button', { name: 'Show me the area first' }).click();
  await expect(page.getByTestId('status')).toHaveText(/^The area, before drawing\./, { timeout: 60_000 });
  const id = new URL(page.url()).pathname.split('/').pop() ?? '';
  const { candidates } = ((await apiGet(page, `/v1/edits/${id}`)) as { failure: { candidates: { area: Box }[] } }).failure;
  expect(candidates).toHaveLength(1);
  const area = candidates[0]?.area;
  if (!area) throw new Error('no area');
  return area;
}

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
  await shot(page, 'preview');
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

test('a photo a phone stored sideways gets the same area, outlined on the upright photo', async ({ page }) => {
  await signIn(page, 'sideways');
  await upload(page, 'single_pet.png');
  await page.getByText('Embroidery', { exact: true }).click();
  const upright = await previewArea(page);
  await page.getByRole('button', { name: 'New edit' }).click();

  const buffer = await sidewaysJpeg(page, 'single_pet.png');
  await page.getByLabel('Choose a photo').setInputFiles({ name: 'sideways.jpg', mimeType: 'image/jpeg', buffer });
  await expect(page.getByText('512 × 384 pixels, uploaded')).toBeVisible();
  await page.getByText('Embroidery', { exact: true }).click();
  const turned = await previewArea(page);

  // The checker saw the photo upright: the same pet, the same box (JPEG's loss aside).
  for (const side of ['x0', 'y0', 'x1', 'y1'] as const) {
    expect(Math.abs(turned[side] - upright[side])).toBeLessThanOrEqual(20);
  }
  // And the page shows it upright, the outline on the pet, inside the photo.
  await page.setViewportSize({ width: 390, height: 844 });
  const previewed = page.getByTestId('previewed');
  const photo = previewed.getByRole('img');
  await expect.poll(() => photo.evaluate((i: HTMLImageElement) => i.naturalWidth / i.naturalHeight)).toBeCloseTo(512 / 384, 2);
  const [a, p] = [await previewed.getByTestId('area').boundingBox(), await photo.boundingBox()];
  if (!a || !p) throw new Error('not shown');
  expect(Math.abs((a.x - p.x) / p.width - turned.x0 / 1000)).toBeLessThan(0.02);
  expect(Math.abs((a.y - p.y) / p.height - turned.y0 / 1000)).toBeLessThan(0.02);
  expect(a.x + a.width).toBeLessThanOrEqual(p.x + p.width + 1);
  expect(a.y + a.height).toBeLessThanOrEqual(p.y + p.height + 1);
  expect(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBeLessThanOrEqual(0);
  await expect(page.getByTestId('balance')).toHaveText('6');
});
