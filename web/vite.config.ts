// The app is served on its own origin; it calls the API (`VITE_API_BASE_URL`) and the bucket
// (presigned URLs) on theirs, with CORS, exactly as in AWS: no same-origin proxy.
import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

export default defineConfig({
  plugins: [react()],
  build: { sourcemap: false },
});
