// The balance a tab shows has one source, the account, read again whenever it may have moved:
// after a paid call, after a `402` (which proves the tab's number old) and when the tab comes
// back. Two tabs of one person spend from one balance.
import { test, expect, type Page } from '@playwright/test';
import { signIn, upload } from './support';

async function readyToEdit(page: Page): Promise<void> {
  await upload(page, 'single_pet.png');
  await page.getByText('Embroidery', { exact: true }).click();
  await expect(page.getByTestId('price')).toHaveText('Price: 4 credits');
}

/** A second tab of the same person (signed in silently), which spends 4 of the 6 credits. */
async function spendInAnotherTab(page: Page): Promise<void> {
  const other = await page.context().newPage();
  await other.goto('/');
  await expect(other.getByTestId('balance')).toHaveText('6');
  await readyToEdit(other);
  await other.getByRole('button', { name: /Make it/ }).click();
  await expect(other.getByTestId('balance')).toHaveText('2');
  await other.close();
}

test('after a 402 the header, the message and the form all show the real balance', async ({ page }) => {
  await signIn(page, 'stale402');
  await readyToEdit(page);
  await spendInAnotherTab(page);

  // This tab still offers the edit at 4 of its last-read 6; the API refuses it.
  await page.getByRole('button', { name: /Make it/ }).click();
  await expect(page.getByRole('alert')).toContainText('you have 2');
  await expect(page.getByTestId('balance')).toHaveText('2');
  await expect(page.getByTestId('short')).toHaveText('You need 2 more credits for this edit.');
});

test('a tab that comes back shows what another tab spent meanwhile', async ({ page }) => {
  await signIn(page, 'stalefocus');
  await spendInAnotherTab(page);
  // Focus returning to the window is what the browser signals when the person comes back.
  await page.evaluate(() => window.dispatchEvent(new Event('focus')));
  await expect(page.getByTestId('balance')).toHaveText('2');
  await page.getByRole('button', { name: 'Account' }).click();
  await expect(page.getByText('Balance: 2 credits.')).toBeVisible();
});
