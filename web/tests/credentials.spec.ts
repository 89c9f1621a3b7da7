// Every delivered result says it was edited with AI (issue 46): the label and the sentence of
// its content credentials (what changed, with which model, when), shown with the image and
// still there after a reload.
import { test, expect } from '@playwright/test';
import { apiGet, signIn, upload } from './support';

/** The catalogue's default image model (`DEFAULT_IMAGE_MODEL`), the one the local stack uses. */
const MODEL = 'gpt-image-2.5-sunburst';

test('a delivered result shows "Edited with AI" and what its content credentials say', async ({ page }) => {
  await signIn(page, 'credentials');
  await upload(page, 'single_pet.png');
  await page.getByRole('radio', { name: /^Embroidery/ }).check({ force: true });
  await page.getByRole('button', { name: /Make it/ }).click();
  await expect(page.getByTestId('status')).toHaveAttribute('data-status', 'succeeded', { timeout: 60_000 });

  const shown = page.getByTestId('credentials');
  await expect(shown.locator('.ai-label')).toHaveText('Edited with AI');
  await expect(shown).toBeVisible();
  await expect(shown).toContainText(`by the AI model ${MODEL}`);
  await expect(shown).toContainText(/^Edited with AI The pet was redrawn as embroidery/);
  const id = page.url().split('/').pop() ?? '';
  const job = await apiGet(page, `/v1/edits/${id}`) as { result: { content_credentials: { model: string; summary: string } } };
  expect(job.result.content_credentials.model).toBe(MODEL);
  await expect(shown).toContainText(job.result.content_credentials.summary);

  await page.reload();
  await expect(page.getByTestId('credentials')).toContainText(`Edited with AI The pet was redrawn as embroidery by the AI model ${MODEL}`);
});
