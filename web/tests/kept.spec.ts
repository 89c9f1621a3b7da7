// Nothing a person did is silently lost: painted strokes come back after the payment page and
// after a reload, and a text over its limit is said, kept as typed and not sent, never cut.
import { test, expect } from '@playwright/test';
import { paintStroke, signIn, upload } from './support';

test('painted strokes come back after a reload and after the payment page, and the edit can be made', async ({ page }) => {
  await signIn(page, 'keptbrush');
  await upload(page, 'single_pet.png');
  await paintStroke(page);
  await expect(page.getByText('1 stroke(s) painted.')).toBeVisible();
  await page.getByText('Embroidery', { exact: true }).click();
  await expect(page.getByTestId('price')).toHaveText('Price: 3 credits');

  await page.reload();
  await expect(page.getByRole('radio', { name: 'An area I paint' })).toBeChecked();
  await expect(page.getByText('1 stroke(s) painted.')).toBeVisible();
  await expect(page.getByTestId('price')).toHaveText('Price: 3 credits');

  // Credits bought from the Account page: the payment page is another site, then a new page.
  await page.getByRole('button', { name: 'Account' }).click();
  await page.getByRole('button', { name: /^50 credits/ }).click();
  await expect(page.getByRole('heading', { name: 'Stand-in Stripe Checkout' })).toBeVisible();
  await page.getByRole('button', { name: 'Pay' }).click();
  await expect(page.getByTestId('notice')).toHaveText('+50 credits added. Thank you!', { timeout: 15_000 });
  await expect(page.getByText('1 stroke(s) painted.')).toBeVisible();
  await expect(page.getByRole('radio', { name: /^Embroidery/ })).toBeChecked();
  await page.getByRole('button', { name: /Make it — 3 credits/ }).click();
  await expect(page.getByTestId('status')).toHaveAttribute('data-status', 'succeeded', { timeout: 60_000 });
  await expect(page.getByTestId('balance')).toHaveText('53');
});

test('a description over its limit says by how much, keeps every character and is not sent', async ({ page }) => {
  await signIn(page, 'limit');
  await upload(page, 'single_pet.png');
  await page.getByText('Embroidery', { exact: true }).click();
  const which = page.getByLabel('Which one? (optional; needed when there are several)');
  await which.fill('the grey cat on the left');
  await expect(page.getByTestId('description-count')).toHaveText('24 / 200');
  const long = 'the grey cat '.repeat(20); // 260 characters, pasted
  await which.fill(long);
  await expect(which).toHaveValue(long);
  await expect(page.getByTestId('description-count')).toHaveText('60 characters too many (260 / 200)');
  await expect(which).toHaveAttribute('aria-invalid', 'true');
  await expect(page.getByRole('button', { name: /Make it/ })).toBeDisabled();
  await which.fill(long.slice(0, 200));
  await expect(page.getByRole('button', { name: /Make it/ })).toBeEnabled();
});
