// Sign-in. Locally: the dev issuer of the local runner (`POST /dev-issuer/token`, served only
// by `atelier-local`, never by a Lambda build). In AWS: OpenID Connect authorization code +
// PKCE against the configured issuer (Cognito's hosted UI), by oidc-client-ts. Tokens live in
// session storage (gone with the tab), never in the bundle.
import { UserManager, WebStorageStateStore } from 'oidc-client-ts';
import { API_BASE } from './api/client';

const TOKEN_KEY = 'atelier.token';

export interface Session {
  token: string;
  user: string;
}

/** The OIDC settings baked in at build time (public values only: issuer URL and client id). */
export function oidcManager(): UserManager | null {
  const authority = import.meta.env.VITE_OIDC_AUTHORITY;
  const clientId = import.meta.env.VITE_OIDC_CLIENT_ID;
  if (!authority || !clientId) return null;
  return new UserManager({
    authority,
    client_id: clientId,
    redirect_uri: `${location.origin}/`,
    post_logout_redirect_uri: `${location.origin}/`,
    response_type: 'code',
    scope: 'openid email',
    automaticSilentRenew: true,
    userStore: new WebStorageStateStore({ store: window.sessionStorage }),
  });
}

export function savedSession(): Session | null {
  const raw = sessionStorage.getItem(TOKEN_KEY);
  if (!raw) return null;
  try {
    return JSON.parse(raw) as Session;
  } catch {
    return null;
  }
}

export function saveSession(s: Session | null): void {
  if (s) sessionStorage.setItem(TOKEN_KEY, JSON.stringify(s));
  else sessionStorage.removeItem(TOKEN_KEY);
}

/** A dev token for `user` from the local runner's dev issuer. */
export async function devSignIn(user: string): Promise<Session> {
  const res = await fetch(`${API_BASE}/dev-issuer/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ user }),
  });
  if (!res.ok) throw new Error(`The dev issuer refused "${user}" (HTTP ${String(res.status)}).`);
  const body = (await res.json()) as { token: string };
  return { token: body.token, user };
}

/** Completes an OIDC redirect when the URL carries one; the signed-in session otherwise. */
export async function oidcSession(mgr: UserManager): Promise<Session | null> {
  const params = new URLSearchParams(location.search);
  if (params.has('code') && params.has('state')) {
    const user = await mgr.signinRedirectCallback();
    history.replaceState(null, '', '/');
    return { token: user.access_token, user: user.profile.email ?? user.profile.sub };
  }
  const user = await mgr.getUser();
  return user && !user.expired ? { token: user.access_token, user: user.profile.email ?? user.profile.sub } : null;
}
