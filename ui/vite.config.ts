import { defineConfig } from 'vite';
import { svelte } from '@sveltejs/vite-plugin-svelte';

export default defineConfig({
  plugins: [svelte()],
  clearScreen: false,
  server: { port: 5173, strictPort: true, host: '127.0.0.1' },
  build: { target: 'es2022', outDir: 'dist', emptyOutDir: true, sourcemap: false },
  // `css: true`: a `?raw` import of a .css file is its text (style.test.ts reads app.css).
  test: { include: ['src/**/*.test.ts'], environment: 'node', css: true },
});
