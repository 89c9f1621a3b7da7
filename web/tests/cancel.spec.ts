// A person's own cancel, and more edits than one page. The local consumer is held (a control
// only the local runner serves) so a job stays `queued` long enough to be canceled, as it does
// in AWS while the queue's mapping has not polled yet.
import { test, expect, type Page } from '@playwright/test';
import { apiUrl, apiGet, signIn, tokenOf, upload } from './support';

const hold = `${apiUrl}/_local/consumer/hold`;

/**
 * Runs `work` with the consumer kept from taking any job (this hold ends by itself after
 * `secs`, and when `work` ends, however it ends; another test's hold may keep it longer).
 */
async function whileHeld<T>(page: Page, secs: number, work: () => Promise<T>): Promise<T> {
  expect((await page.request.post(hold, { data: { secs } })).status()).toBe(204);
  try {
    return await work();
  } finally {
    expect((await page.request.delete(hold)).status()).toBe(204);
  }
}

/** Makes an edit from the form and cancels it while it waits; the job's id. */
async function makeAndCancel(page: Page): Promise<string> {
  await upload(page, 'single_pet.png');
  await page.getByText('Embroidery', { exact: true }).click();
  await page.getByRole('button', { name: /Make it/ }).click();
  await expect(page.getByTestId('status')).toHaveAttribute('data-status', 'queued');
  await expect(page.getByTestId('balance')).toHaveText('2');
  await page.getByRole('button', { name: 'Cancel and refund' }).click();
  await expect(page.getByTestId('status')).toHaveAttribute('data-status', 'canceled');
  await expect(page.getByTestId('status')).toHaveText('Canceled (refunded). 4 credits.');
  await expect(page.getByTestId('balance')).toHaveText('6');
  return new URL(page.url()).pathname.split('/').pop() ?? '';
}

test('an edit canceled while it waits is refunded, and the ledger names it a cancel, not a failure', async ({ page }) => {
  await signIn(page, 'cancel');
  const edit = await whileHeld(page, 20, () => makeAndCancel(page));
  await page.getByRole('button', { name: 'Account' }).click();
  const ledger = page.getByTestId('ledger');
  const refund = ledger.getByRole('link', { name: 'Canceled by you: refunded' });
  await expect(refund).toHaveAttribute('href', `/edits/${edit}`);
  await expect(ledger.getByText(/could not be made/)).toHaveCount(0);
  await expect(ledger.getByRole('row').filter({ hasText: 'Canceled by you: refunded' })).toContainText('+4');
});

/** Ten more edits of the photo of `first`, made and canceled through the API as another client would. */
async function tenMoreCanceled(page: Page, first: string): Promise<void> {
  const settings = ((await apiGet(page, `/v1/edits/${first}`)) as { settings: { original_asset_id: string } }).settings;
  const authorization = `Bearer ${await tokenOf(page)}`;
  for (let i = 0; i < 10; i += 1) {
    const made = await page.request.post(`${apiUrl}/v1/edits`, {
      headers: { authorization, 'idempotency-key': crypto.randomUUID() },
      data: { original_asset_id: settings.original_asset_id, target: 'pet', style: 'embroidery' },
    });
    expect(made.status()).toBe(202);
    const { id } = (await made.json()) as { id: string };
    const canceled = await page.request.post(`${apiUrl}/v1/edits/${id}/cancel`, { headers: { authorization } });
    expect(canceled.status()).toBe(200);
  }
}

test('History shows ten edits, then the rest on "Show more"', async ({ page }) => {
  await signIn(page, 'paging');
  const first = await whileHeld(page, 30, async () => {
    const made = await makeAndCancel(page);
    await tenMoreCanceled(page, made);
    return made;
  });
  await page.getByRole('button', { name: 'History' }).click();
  const edits = page.getByRole('region', { name: 'Your edits' });
  const rows = edits.getByRole('listitem');
  await expect(rows).toHaveCount(10);
  await edits.getByRole('button', { name: 'Show more' }).click();
  await expect(rows).toHaveCount(11);
  await expect(edits.getByRole('button', { name: 'Show more' })).toHaveCount(0);
  // The oldest, on the second page, is the one canceled from the form.
  await expect(rows.last().getByRole('link')).toHaveAttribute('href', `/edits/${first}`);
  await expect(rows.last()).toContainText('Canceled (refunded)');
});
