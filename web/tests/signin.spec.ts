// A brand-new user signs in as in AWS: OpenID Connect authorization code + PKCE (here against
// the local issuer, shaped as Cognito's managed login), the API called with the ID token;
// the signup credits arrive and pay for an edit.
import { test, expect } from '@playwright/test';
import { join } from 'node:path';

const samples = process.env.ATELIER_SAMPLES ?? '/tmp/samples';

test('a new user signs in through the OIDC flow, gets the signup credits and makes a paid edit', async ({ page }) => {
  const email = `web-oidc-${String(Date.now())}-${String(Math.floor(Math.random() * 1e6))}@example.test`;
  await page.goto('/');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page).toHaveURL(/\/oauth2\/authorize\?/);
  expect(new URL(page.url()).searchParams.get('code_challenge_method')).toBe('S256');
  await page.getByLabel('Email').fill(email);
  await page.getByRole('button', { name: 'Sign in' }).click();

  await expect(page.getByTestId('balance')).toHaveText('6');
  await expect(page.getByRole('button', { name: `Sign out ${email}` })).toBeVisible();
  const token = await page.evaluate(() => (JSON.parse(sessionStorage.getItem('atelier.token') ?? '{}') as { token?: string }).token ?? '');
  const claims = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString()) as Record<string, unknown>;
  expect(claims.token_use).toBe('id');
  expect(claims.email_verified).toBe(true);

  await page.getByLabel('Choose a photo').setInputFiles(join(samples, 'single_pet.png'));
  await expect(page.getByText(/uploaded$/)).toBeVisible();
  await page.getByText('Embroidery', { exact: true }).click();
  await expect(page.getByTestId('price')).toHaveText('Price: 4 credits');
  await page.getByRole('button', { name: /Make it/ }).click();
  await expect(page.getByTestId('status')).toHaveAttribute('data-status', 'succeeded', { timeout: 60_000 });
  await expect(page.getByTestId('balance')).toHaveText('2');
});

test('a new tab is signed in silently while the issuer’s session lasts; another browser and a signed-out tab are not', async ({ page, context, browser }) => {
  const email = `web-tab-${String(Date.now())}-${String(Math.floor(Math.random() * 1e6))}@example.test`;
  await page.goto('/');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByLabel('Email').fill(email);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByTestId('balance')).toHaveText('6');

  // A new tab has no tokens (session storage is per tab): the issuer's session signs it in,
  // on the page it was opened at, without a press.
  const tab = await context.newPage();
  await tab.goto('/history');
  await expect(tab.getByRole('button', { name: `Sign out ${email}` })).toBeVisible();
  await expect(tab).toHaveURL(/\/history$/);
  await expect(tab.getByRole('heading', { name: 'Your edits' })).toBeVisible();

  // Another browser has no session at the issuer: the sign-in button.
  const other = await browser.newContext();
  const stranger = await other.newPage();
  await stranger.goto('/');
  await expect(stranger.getByRole('button', { name: 'Sign in' })).toBeVisible();
  await other.close();

  // Signed out, a tab stays signed out after a reload.
  await tab.getByRole('button', { name: `Sign out ${email}` }).click();
  await tab.reload();
  await expect(tab.getByRole('button', { name: 'Sign in' })).toBeVisible();
});
