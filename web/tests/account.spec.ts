// The Account page's privacy controls, checked against what the API then has: the export
// downloads everything, an edit's images and its photo are deleted after a second press, the
// account after the typed word.
import { test, expect } from '@playwright/test';
import { readFile } from 'node:fs/promises';
import { apiGet, apiUrl, signIn, tokenOf, upload } from './support';

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
  expect((await download).suggestedFilename()).toBe('atelier-export.json');
  const exported = JSON.parse(await readFile(await (await download).path(), 'utf8')) as { account: { balance: number }; jobs: { id: string }[]; ledger: unknown[] };
  expect(exported.jobs.map((j) => j.id)).toEqual([edit]);
  expect(exported.account.balance).toBe(2);
  expect(exported.ledger).toHaveLength(2);
  await expect(page.getByTestId('export-done')).toContainText('1 edit(s) and 2 ledger row(s)');

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
