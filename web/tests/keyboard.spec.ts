// The brushed edit by keyboard alone: the brush is reached with Tab, moved with the arrows,
// grown with +, painted with Enter; the medium is chosen and the edit sent by keyboard, and
// focus lands on the job's status.
import { test, expect } from '@playwright/test';
import { signIn, upload } from './support';

test('a brushed edit made by keyboard alone, focus then on the job’s status', async ({ page }) => {
  await signIn(page, 'keys');
  await upload(page, 'single_pet.png');
  await page.getByLabel('An area I paint').check();
  const canvas = page.getByTestId('brush-canvas');
  // Tab from the brush's size reaches the canvas (Undo and Clear are off with nothing painted).
  await page.getByRole('slider', { name: 'Size' }).focus();
  await page.keyboard.press('Tab');
  await expect(canvas).toBeFocused();
  await page.keyboard.press('ArrowLeft');
  await expect(page.getByTestId('brush-cursor')).toBeVisible();
  const before = await page.getByTestId('brush-cursor').boundingBox();
  await page.keyboard.press('+');
  await page.keyboard.press('Enter');
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('Space');
  await expect(page.getByText('2 stroke(s) painted.')).toBeVisible();
  const after = await page.getByTestId('brush-cursor').boundingBox();
  expect(after?.width ?? 0).toBeGreaterThan(before?.width ?? 0);

  await page.getByRole('radio', { name: /^Embroidery/ }).focus();
  await page.keyboard.press('Space');
  await expect(page.getByTestId('price')).toHaveText('Price: 3 credits');
  await page.getByRole('button', { name: /Make it/ }).focus();
  await page.keyboard.press('Enter');
  await expect(page.getByTestId('status')).toBeFocused();
  await expect(page.getByTestId('status')).toHaveAttribute('data-status', 'succeeded', { timeout: 60_000 });
});
