// Sign-in: OpenID Connect authorization code + PKCE by oidc-client-ts, the same code against
// Cognito's managed login in AWS (VITE_OIDC_AUTHORITY, VITE_OIDC_CLIENT_ID) and against the
// local runner's issuer (`/dev-issuer`, Cognito-shaped) otherwise. The API is called with the
// ID token: it carries the verified address the signup grant needs (docs/design.md). Tokens
// live in session storage (gone with the tab), never in the bundle. A new tab has none: it asks
// the issuer once, silently (`prompt=none`, a top-level redirect, so no third-party cookie is
// needed), and is signed in while the issuer's own session lasts; `login_required` brings the
// sign-in button.
import { ErrorResponse, UserManager, WebStorageStateStore, type User } from 'oidc-client-ts';
import { API_BASE } from './api/client';
import { parseRoute, pathOf } from './route';

const TOKEN_KEY = 'atelier.token';
/** Set once this tab asked the issuer silently (or signed out): never asked again in it. */
const SILENT_TRIED = 'atelier.silent';

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

/** After a sign-out this tab does not sign in silently again. */
export function stopSilentSignIn(): void {
  sessionStorage.setItem(SILENT_TRIED, '1');
}

/** Back to the page a sign-in started from (only ever one of the app's own pages). */
function returnTo(state: unknown): void {
  history.replaceState(null, '', typeof state === 'string' ? pathOf(parseRoute(state)) : '/');
  window.dispatchEvent(new PopStateEvent('popstate'));
}

/**
 * Completes an OIDC redirect when the URL carries one; the signed-in session otherwise; on a
 * tab without one, a silent sign-in (once per tab). `undefined`: the page is leaving for the
 * issuer; `null`: signed out.
 */
export function oidcSession(mgr: UserManager): Promise<Session | null | undefined> {
  // One answer for calls while one is pending (React runs a development effect twice): a
  // code is redeemed once, the issuer asked once.
  inflight ??= resolveSession(mgr).finally(() => { inflight = null; });
  return inflight;
}
let inflight: Promise<Session | null | undefined> | null = null;

async function resolveSession(mgr: UserManager): Promise<Session | null | undefined> {
  const params = new URLSearchParams(location.search);
  if (params.has('state') && (params.has('code') || params.has('error'))) {
    try {
      const user = await mgr.signinRedirectCallback();
      returnTo(user.state);
      return sessionOf(user);
    } catch (e) {
      // `login_required` (no session at the issuer) and any other refusal: the button.
      returnTo(e instanceof ErrorResponse ? e.state : null);
      return null;
    }
  }
  const user = await mgr.getUser();
  if (user && !user.expired) return sessionOf(user);
  if (sessionStorage.getItem(SILENT_TRIED)) return null;
  stopSilentSignIn();
  await mgr.signinRedirect({ prompt: 'none', state: location.pathname });
  return undefined;
}
