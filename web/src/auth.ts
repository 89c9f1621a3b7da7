// Sign-in: OpenID Connect authorization code + PKCE by oidc-client-ts, the same code against
// Cognito's managed login in AWS (VITE_OIDC_AUTHORITY, VITE_OIDC_CLIENT_ID) and against the
// local runner's issuer (`/dev-issuer`, Cognito-shaped) otherwise. The API is called with the
// ID token: it carries the verified address the signup grant needs (docs/design.md). Tokens
// live in session storage (gone with the tab), never in the bundle.
import { UserManager, WebStorageStateStore, type User } from 'oidc-client-ts';
import { API_BASE } from './api/client';
import { parseRoute, pathOf } from './route';

const TOKEN_KEY = 'atelier.token';

export interface Session {
  token: string;
  user: string;
}

/** The OIDC client: the configured issuer (public values only), else the local issuer. */
export function oidcManager(): UserManager {
  const authority = import.meta.env.VITE_OIDC_AUTHORITY || `${API_BASE}/dev-issuer`;
  const clientId = import.meta.env.VITE_OIDC_CLIENT_ID || 'atelier';
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

/** The session a signed-in OIDC user gives: the ID token, named by its address. */
export function sessionOf(u: Pick<User, 'id_token' | 'profile'>): Session | null {
  return u.id_token ? { token: u.id_token, user: u.profile.email ?? u.profile.sub } : null;
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

/** Completes an OIDC redirect when the URL carries one; the signed-in session otherwise. */
export async function oidcSession(mgr: UserManager): Promise<Session | null> {
  const params = new URLSearchParams(location.search);
  if (params.has('code') && params.has('state')) {
    const user = await mgr.signinRedirectCallback();
    // Back to the page the sign-in started from (only ever one of the app's own pages).
    const back = typeof user.state === 'string' ? pathOf(parseRoute(user.state)) : '/';
    history.replaceState(null, '', back);
    window.dispatchEvent(new PopStateEvent('popstate'));
    return sessionOf(user);
  }
  const user = await mgr.getUser();
  return user && !user.expired ? sessionOf(user) : null;
}
