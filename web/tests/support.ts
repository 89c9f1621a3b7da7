// What the browser tests share: a fresh user signed in through the local issuer, the API read
// with the app's own token, an upload as a person does it.
import { expect, type Page } from '@playwright/test';
import { join } from 'node:path';

export const samples = process.env.ATELIER_SAMPLES ?? '/tmp/samples';
export const apiUrl = process.env.ATELIER_API_URL ?? 'http://127.0.0.1:8787';

/** A fresh user per test (tests run in parallel against one stack). */
export function user(name: string): string {
  return `web-${name}-${String(Date.now())}-${String(Math.floor(Math.random() * 1e6))}`;
}

/** Signs a brand-new user in through the local issuer's OIDC flow (code + PKCE); its address. */
export async function signIn(page: Page, name: string): Promise<string> {
  const email = `${user(name)}@example.test`;
  await signInAs(page, email);
  await expect(page.getByTestId('balance')).toHaveText('6');
  return email;
}

/** Signs `email` in through the issuer's form, whatever its account holds. */
export async function signInAs(page: Page, email: string): Promise<void> {
  await page.goto('/');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByLabel('Email').fill(email);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/** The signed-in user's bearer token, as the app keeps it. */
export async function tokenOf(page: Page): Promise<string> {
  const raw = await page.evaluate(() => sessionStorage.getItem('atelier.token'));
  return (JSON.parse(raw ?? '{}') as { token: string }).token;
}

/** `GET path` on the API as the signed-in user: its status and body. */
export async function apiCall(page: Page, path: string): Promise<{ status: number; body: unknown }> {
  const res = await page.request.get(`${apiUrl}${path}`, { headers: { authorization: `Bearer ${await tokenOf(page)}` } });
  return { status: res.status(), body: await res.json().catch(() => null) };
}

export async function apiGet(page: Page, path: string): Promise<unknown> {
  const { status, body } = await apiCall(page, path);
  expect(status).toBe(200);
  return body;
}

export async function upload(page: Page, file: string): Promise<void> {
  await page.getByLabel('Choose a photo').setInputFiles(join(samples, file));
  await expect(page.getByText(/uploaded$/)).toBeVisible();
  // The photo is shown as soon as it is chosen, at its own size (not reduced).
  await expect(page.getByTestId('preview')).toBeVisible();
  await expect(page.getByTestId('reduced')).toHaveCount(0);
}

/** Chooses "An area I paint" and paints one horizontal stroke across the middle of the photo. */
export async function paintStroke(page: Page): Promise<void> {
  await page.getByLabel('An area I paint').check();
  const canvas = page.getByTestId('brush-canvas');
  await canvas.scrollIntoViewIfNeeded();
  const box = await canvas.boundingBox();
  if (!box) throw new Error('no canvas');
  await page.mouse.move(box.x + box.width * 0.3, box.y + box.height * 0.6);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.7, box.y + box.height * 0.6, { steps: 8 });
  await page.mouse.up();
}
