/// <reference types="vite/client" />

interface ImportMetaEnv {
  /** The API's base URL (the stack output WebApiBaseUrl; locally the runner's, http://127.0.0.1:8787). */
  readonly VITE_API_BASE_URL?: string;
  /** OpenID Connect issuer (e.g. the Cognito user pool's URL); absent: the dev sign-in box. */
  readonly VITE_OIDC_AUTHORITY?: string;
  /** The public OIDC client id of the web app (no secret: PKCE). */
  readonly VITE_OIDC_CLIENT_ID?: string;
}
