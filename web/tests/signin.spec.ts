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
