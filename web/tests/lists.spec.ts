// What a person sees matches what exists: an edit is a link (a new tab, a copied address),
// one whose images were deleted says so with the date and offers nothing on them, and a
// notice goes once it was read.
import { test, expect, type Page } from '@playwright/test';
import { apiUrl, signIn, tokenOf, upload } from './support';

test('edits are links; one whose images were deleted says when and offers no repair', async ({ page }) => {
  await signIn(page, 'links');
  await upload(page, 'single_pet.png');
  await page.getByText('Embroidery', { exact: true }).click();
  await page.getByRole('button', { name: /Make it/ }).click();
  await expect(page.getByTestId('status')).toHaveAttribute('data-status', 'succeeded', { timeout: 60_000 });
  const edit = new URL(page.url()).pathname.split('/').pop() ?? '';
  await expect(page.getByRole('button', { name: 'Repair', exact: true })).toBeVisible();

  await page.getByRole('button', { name: 'History' }).click();
  const row = page.getByRole('region', { name: 'Your edits' }).getByRole('link', { name: /Edit: embroidery on pet/ });
  await expect(row).toHaveAttribute('href', `/edits/${edit}`);
  await page.getByRole('button', { name: 'Account' }).click();
  await expect(page.getByTestId('ledger').getByRole('link', { name: 'Paid for an edit' })).toHaveAttribute('href', `/edits/${edit}`);

  // The address opened in a new tab is the edit.
  const tab = await page.context().newPage();
  await tab.goto(`/edits/${edit}`);
  await expect(tab.getByTestId('status')).toHaveAttribute('data-status', 'succeeded');
  await tab.close();

  const gone = await page.request.delete(`${apiUrl}/v1/edits/${edit}/images`, { headers: { authorization: `Bearer ${await tokenOf(page)}` } });
  expect(gone.status()).toBe(200);
  await page.goto(`/edits/${edit}`);
  await expect(page.getByTestId('images-gone')).toContainText('Images deleted on');
  await expect(page.getByRole('button', { name: 'Repair', exact: true })).toHaveCount(0);
  await expect(page.getByLabel(/Not quite right/)).toHaveCount(0);
});

/** Buys the 50-credit pack from the Account page on the stand-in Checkout, back to the app. */
async function buyPack(page: Page): Promise<void> {
  await page.getByRole('button', { name: 'Account' }).click();
  await page.getByRole('button', { name: /^50 credits/ }).click();
  await page.getByRole('button', { name: 'Pay' }).click();
  await expect(page.getByTestId('notice')).toHaveText('+50 credits added. Thank you!', { timeout: 15_000 });
}

test('the credits-added notice can be dismissed and does not follow the person to other pages', async ({ page }) => {
  await signIn(page, 'notice');
  await buyPack(page);
  await page.getByRole('button', { name: 'History' }).click();
  await expect(page.getByTestId('notice')).toHaveCount(0);

  await buyPack(page);
  await page.getByRole('button', { name: 'Dismiss' }).click();
  await expect(page.getByTestId('notice')).toHaveCount(0);
  await expect(page.getByTestId('balance')).toHaveText('106');
});
