// A photo dropped on the photo area or pasted is the photo; a file dropped anywhere else
// never opens in the tab (which would lose the form).
import { test, expect, type Page } from '@playwright/test';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { samples, signIn } from './support';

/** Dispatches `type` (drop or paste) carrying the sample photo, at `selector`; whether it was taken. */
async function deliver(page: Page, type: 'drop' | 'paste', selector: string): Promise<boolean> {
  const bytes = (await readFile(join(samples, 'single_pet.png'))).toString('base64');
  return page.evaluate(({ type, selector, bytes }) => {
    const file = new File([Uint8Array.from(atob(bytes), (c) => c.charCodeAt(0))], 'pet.png', { type: 'image/png' });
    const data = new DataTransfer();
    data.items.add(file);
    const target = document.querySelector(selector) ?? document.body;
    const event = type === 'drop'
      ? new DragEvent('drop', { dataTransfer: data, bubbles: true, cancelable: true })
      : new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true });
    target.dispatchEvent(event);
    return event.defaultPrevented;
  }, { type, selector, bytes });
}

test('a photo dropped on the photo area is uploaded; one dropped elsewhere does not leave the page', async ({ page }) => {
  await signIn(page, 'drop');
  await page.getByLabel('Which one? (optional; needed when there are several)').fill('the cat');
  expect(await deliver(page, 'drop', 'h2')).toBe(true);
  await expect(page).toHaveURL(/\/$/);
  await expect(page.getByText(/uploaded$/)).toHaveCount(0);

  expect(await deliver(page, 'drop', '[data-testid="drop-zone"]')).toBe(true);
  await expect(page.getByText(/uploaded$/)).toBeVisible();
  await expect(page.getByTestId('preview')).toBeVisible();
  await expect(page.getByLabel('Which one? (optional; needed when there are several)')).toHaveValue('the cat');
});

test('a photo pasted on the page is uploaded and the edit priced', async ({ page }) => {
  await signIn(page, 'paste');
  expect(await deliver(page, 'paste', 'body')).toBe(true);
  await expect(page.getByText(/uploaded$/)).toBeVisible();
  await page.getByText('Embroidery', { exact: true }).click();
  await expect(page.getByTestId('price')).toHaveText('Price: 4 credits');
});
