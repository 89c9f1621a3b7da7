/// <reference types="vite/client" />

interface ImportMetaEnv {
  /** `1`: presigned storage URLs go through the development server's `/s3` proxy. */
  readonly VITE_STORAGE_PROXY?: string;
  /** The API's base URL (the stack output WebApiBaseUrl); absent: the app's own origin. */
  readonly VITE_API_BASE_URL?: string;
  /** OpenID Connect issuer (e.g. the Cognito user pool's URL); absent: the dev sign-in box. */
  readonly VITE_OIDC_AUTHORITY?: string;
  /** The public OIDC client id of the web app (no secret: PKCE). */
  readonly VITE_OIDC_CLIENT_ID?: string;
}
