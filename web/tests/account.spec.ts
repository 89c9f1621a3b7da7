// The Account page's privacy controls, checked against what the API then has: the export
// downloads everything (a .zip of the data and the images, each compared with what the bucket
// serves), an edit's images and its photo are deleted after a second press, the account after
// the typed word.
import { test, expect, type Page } from '@playwright/test';
import { readFile } from 'node:fs/promises';
import { strFromU8, unzipSync } from 'fflate';
import { apiGet, apiUrl, signIn, signInAs, tokenOf, upload } from './support';

test('the account page exports the data, deletes an edit’s images and photo, then the account', async ({ page }) => {
  await signIn(page, 'privacy');
  await upload(page, 'single_pet.png');
  await page.getByText('Embroidery', { exact: true }).click();
  await page.getByRole('button', { name: /Make it/ }).click();
  await expect(page.getByTestId('status')).toHaveAttribute('data-status', 'succeeded', { timeout: 60_000 });
  const edit = new URL(page.url()).pathname.split('/').pop() ?? '';
  await page.getByRole('button', { name: 'Account' }).click();

  const download = page.waitForEvent('download');
  await page.getByRole('button', { name: 'Download my data' }).click();
  expect((await download).suggestedFilename()).toBe('atelier-export.zip');
  const files = unzipSync(new Uint8Array(await readFile(await (await download).path())));
  expect(Object.keys(files).sort()).toEqual(['README.txt', 'data.json', `photos/${edit}-original.png`, `results/${edit}.png`]);
  const exported = JSON.parse(strFromU8(files['data.json'] ?? new Uint8Array())) as { account: { balance: number }; jobs: { id: string }[]; ledger: unknown[] };
  expect(exported.jobs.map((j) => j.id)).toEqual([edit]);
  expect(exported.account.balance).toBe(2);
  expect(exported.ledger).toHaveLength(2);
  // The images are the bytes the bucket serves for this edit, fetched here on their own.
  const served = (await apiGet(page, `/v1/edits/${edit}?format=png`)) as { result: { url: string; original_url: string } };
  const bytes = async (url: string) => new Uint8Array(await (await page.request.get(url)).body());
  expect(files[`results/${edit}.png`]).toEqual(await bytes(served.result.url));
  expect(files[`photos/${edit}-original.png`]).toEqual(await bytes(served.result.original_url));
  expect(strFromU8(files['README.txt'] ?? new Uint8Array())).toContain('1 edit(s), 2 ledger row(s).');
  await expect(page.getByTestId('export-done')).toContainText('1 edit(s), 2 image(s) and 2 ledger row(s)');

  // One press only arms a button; the second deletes. The photo first: deleting the edit's
  // images also deletes the uploads it was made from.
  const row = page.getByTestId(`data-${edit}`);
  const photo = ((await apiGet(page, `/v1/edits/${edit}`)) as { settings: { original_asset_id: string } }).settings.original_asset_id;
  const token = await tokenOf(page);
  await row.getByRole('button', { name: 'Delete the uploaded photo' }).click();
  await row.getByRole('button', { name: 'Press again to delete the photo' }).click();
  await expect(row.getByRole('status')).toContainText('The uploaded photo is deleted');
  const again = await page.request.delete(`${apiUrl}/v1/assets/${photo}`, { headers: { authorization: `Bearer ${token}` } });
  expect(again.status()).toBe(404);

  await row.getByRole('button', { name: 'Delete its images' }).click();
  expect(((await apiGet(page, `/v1/edits/${edit}`)) as { images_deleted_at?: string }).images_deleted_at).toBeUndefined();
  await row.getByRole('button', { name: 'Press again to delete its images' }).click();
  await expect(row.getByRole('status')).toContainText('The images of this edit and its repairs');
  const after = (await apiGet(page, `/v1/edits/${edit}`)) as { images_deleted_at?: string; result?: unknown };
  expect(after.images_deleted_at).toEqual(expect.any(String));
  expect(after.result).toBeUndefined();
  await expect(row).toContainText('images deleted');

  const remove = page.getByRole('button', { name: 'Delete my account' });
  await expect(remove).toBeDisabled();
  await page.getByLabel('Type DELETE to confirm').fill('DELETE');
  await remove.click();
  await expect(page.getByTestId('goodbye')).toHaveText('Your account and every image in it are deleted.');
  await expect(page.getByRole('button', { name: 'Sign in' })).toBeVisible();
  const closed = await page.request.get(`${apiUrl}/v1/account`, { headers: { authorization: `Bearer ${token}` } });
  expect(((await closed.json()) as { deleted_at?: string }).deleted_at).toEqual(expect.any(String));
});

async function deleteAccount(page: Page): Promise<void> {
  await page.getByRole('button', { name: 'Account' }).click();
  await page.getByLabel('Type DELETE to confirm').fill('DELETE');
  await page.getByRole('button', { name: 'Delete my account' }).click();
  await expect(page.getByTestId('goodbye')).toBeVisible();
}

test('signing in again to a deleted account shows only that it was deleted and what was kept', async ({ page, browser }) => {
  const email = await signIn(page, 'closed');
  await deleteAccount(page);

  // Another browser: no session at the issuer, the address typed again as a person would.
  const other = await browser.newContext();
  const again = await other.newPage();
  await signInAs(again, email);
  const closed = again.getByTestId('closed-account');
  await expect(closed.getByRole('heading', { name: 'This account was deleted' })).toBeVisible();
  await expect(again.getByTestId('closed-when')).toContainText('Deleted on');
  await expect(closed).toContainText('ledger of credits bought, spent and refunded');
  // Nothing to spend, buy or open: no balance, no buy buttons, no History, no editor.
  await expect(again.getByTestId('balance')).toHaveCount(0);
  await expect(again.getByRole('button', { name: /Buy|credits for/ })).toHaveCount(0);
  await expect(again.getByRole('button', { name: 'History' })).toHaveCount(0);
  await expect(again.getByLabel('Choose a photo')).toHaveCount(0);
  // A history address shows the same page, not the deleted edits.
  await again.goto('/history');
  await expect(again.getByTestId('closed-account')).toBeVisible();
  await expect(again.getByRole('heading', { name: 'Your edits' })).toHaveCount(0);

  await again.getByRole('button', { name: 'Sign out' }).click();
  await expect(again.getByRole('button', { name: 'Sign in' })).toBeVisible();
  await other.close();
});
