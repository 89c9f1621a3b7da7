// Development and preview servers proxy the API (and, locally, the storage) so the app, the
// API and the presigned URLs share one origin: no CORS locally. `ATELIER_API_URL` and
// `ATELIER_S3_URL` point at the local runner and ministack (the defaults of `cargo xtask dev`).
import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

const apiUrl = process.env.ATELIER_API_URL ?? 'http://127.0.0.1:8787';
const s3Url = process.env.ATELIER_S3_URL ?? 'http://127.0.0.1:4566';
const proxy = {
  '/v1': { target: apiUrl },
  '/dev-issuer': { target: apiUrl },
  '/s3': { target: s3Url, changeOrigin: true, rewrite: (p: string) => p.replace(/^\/s3/, '') },
};

export default defineConfig({
  plugins: [react()],
  server: { proxy },
  preview: { proxy },
  build: { sourcemap: false },
});
